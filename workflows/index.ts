// The workflows a worker registers (its `workflowsPath` points here).
export { delivery, quoteOnly } from './delivery';
export { pacingGate } from './gate';
