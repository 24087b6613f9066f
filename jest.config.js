// Four projects: `unit` runs without any server (mocks allowed only here); `http` starts real
// HTTP servers on 127.0.0.1 (simulator, bridge); `temporal` also shares one Temporal dev server,
// started once in globalSetup; every project that starts workers reads one workflow bundle built
// in globalSetup (test/helpers/workflow-bundle.ts); `cluster` provisions a multi-process Temporal cluster on PostgreSQL
// per test file (test/helpers/cluster.ts).
// Every project's tests run in test/helpers/quiet-environment.js: a passing test's console
// output is dropped, a failing test's printed with its result.
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: '<rootDir>/test/helpers/quiet-environment.js',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'http',
      testEnvironment: '<rootDir>/test/helpers/quiet-environment.js',
      transform,
      testMatch: ['<rootDir>/test/http/**/*.test.ts'],
    },
    {
      displayName: 'temporal',
      testEnvironment: '<rootDir>/test/helpers/quiet-environment.js',
      transform,
      testMatch: ['<rootDir>/test/temporal/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      setupFiles: ['<rootDir>/test/helpers/quiet-runtime.ts'],
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
    {
      // A production-shaped Temporal cluster on PostgreSQL (scripts/cluster/), nginx and several
      // worker and bridge processes; each test file provisions its own on free ports.
      displayName: 'cluster',
      testEnvironment: '<rootDir>/test/helpers/quiet-environment.js',
      transform,
      testMatch: ['<rootDir>/test/cluster/**/*.test.ts'],
      // The run's workflow bundle (test/helpers/workflow-bundle.ts), if the temporal project has not built it.
      globalSetup: '<rootDir>/test/helpers/bundle-global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/bundle-global-teardown.ts',
      setupFiles: ['<rootDir>/test/helpers/quiet-runtime.ts'],
    },
  ],
  testTimeout: 60_000,
  // Two test files at once: most files wait on servers, timers and worker kills rather than CPU,
  // and two at once take about half the time of one (`.ci/run` ~16 min against ~26 on 2 cores).
  // Each failure that only this load brought out was found and fixed at its root, none retried.
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.js'],
};
