// Preloaded into a worker process (NODE_OPTIONS=--require) to shift its wall clock by
// TEST_CLOCK_OFFSET_MS: a worker whose clock is off, for the pacing gate's clock test.
const offset = Number(process.env.TEST_CLOCK_OFFSET_MS || 0);
const realNow = Date.now;
Date.now = () => realNow() + offset;
