// The workflows a worker registers (its `workflowsPath` points here), each with its versioning
// behavior (docs/operations.md, "Deploying a change"): a delivery and a quote finish on the build
// they started on (PINNED), so any change ships without breaking them; the pacing gate lives for
// ever and moves to the current build at its next task (AUTO_UPGRADE), so its code and messages
// must stay compatible (contract/gate-messages.ts). Unversioned workers ignore these.
import { setWorkflowOptions } from '@temporalio/workflow';
import { delivery, quoteOnly } from './delivery';
import { pacingGate } from './gate';

setWorkflowOptions({ versioningBehavior: 'PINNED' }, delivery);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, quoteOnly);
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, pacingGate);

export { delivery, quoteOnly, pacingGate };
