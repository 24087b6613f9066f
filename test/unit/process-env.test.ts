import { childEnv } from '../../scripts/processes';

describe("a child process's environment", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("does not pass on the caller's NODE_OPTIONS (a profiler's, jest's), only one the spec sets", () => {
    process.env.NODE_OPTIONS = '--cpu-prof --max-old-space-size=8192';
    expect(childEnv({ env: {} }).NODE_OPTIONS).toBeUndefined();
    expect(childEnv({ env: {}, isolated: true }).NODE_OPTIONS).toBeUndefined();
    expect(childEnv({ env: { NODE_OPTIONS: '--require ./clock.cjs' } }).NODE_OPTIONS).toBe('--require ./clock.cjs');
  });

  it("keeps the rest of the caller's environment, less the project's settings when isolated", () => {
    process.env.DELIVERY_API_KEY = 'the-callers-key';
    process.env.LANG = 'C.UTF-8';
    expect(childEnv({ env: {} })).toMatchObject({ DELIVERY_API_KEY: 'the-callers-key', LANG: 'C.UTF-8' });
    const isolated = childEnv({ env: { DELIVERY_TASK_QUEUE: 'q' }, isolated: true });
    expect(isolated.DELIVERY_API_KEY).toBeUndefined();
    expect(isolated).toMatchObject({ LANG: 'C.UTF-8', DELIVERY_TASK_QUEUE: 'q' });
  });
});
