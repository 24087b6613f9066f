/**
 * A traced workflow run's context storage is on only during its own activations
 * (workflows/tracing-interceptors.ts, OwnActivationContext): off between them, so other runs'
 * promises do not carry it, and a promise made in one activation still resumes in its span's
 * context in a later one, even when nothing else in that activation (a timer firing, say)
 * turns the storage back on. The SDK's workflow context manager and Node's AsyncLocalStorage are
 * real; what stands in for the workflow sandbox is this process's global.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import * as otel from '@opentelemetry/api';

// The sandbox provides AsyncLocalStorage as a global; the SDK's context manager takes it from there.
Object.assign(globalThis, { AsyncLocalStorage });
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ContextManager } = require('@temporalio/interceptors-opentelemetry/lib/workflow/context-manager') as typeof import('@temporalio/interceptors-opentelemetry/lib/workflow/context-manager');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { OwnActivationContext } = require('../../workflows/tracing-interceptors') as typeof import('../../workflows/tracing-interceptors');

const KEY = otel.createContextKey('span');
const activation = { activation: {}, batchIndex: 0 };

afterEach(() => otel.context.disable());

it('keeps a run’s context across its activations while its storage is off between them', async () => {
  otel.context.setGlobalContextManager(new ContextManager());
  const own = new OwnActivationContext();
  const inSpan = otel.ROOT_CONTEXT.setValue(KEY, 'RunWorkflow');
  const waiting = () => {
    let fire!: () => void;
    const resumed = new Promise<void>((resolve) => (fire = resolve)).then(() => otel.context.active().getValue(KEY));
    return { fire, resumed };
  };
  let timer!: ReturnType<typeof waiting>;
  let probe!: ReturnType<typeof waiting>;
  // Activation 1: the workflow waits, inside its span, on something a later activation resolves (a timer).
  own.activate(activation, () => otel.context.with(inSpan, () => ((timer = waiting()), (probe = waiting()))));
  own.concludeActivation({ commands: [] }, (i) => i);
  // Between activations the storage is off: even a continuation made in the span finds no context in it.
  probe.fire();
  expect(await probe.resumed).toBeUndefined();
  // Activation 2: the timer fires; the waiting code resumes in its span's context.
  own.activate(activation, () => timer.fire());
  expect(await timer.resumed).toBe('RunWorkflow');
  own.concludeActivation({ commands: [] }, (i) => i);
});
