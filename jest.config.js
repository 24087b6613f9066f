// Three projects: `unit` runs without any server (mocks allowed only here); `http` starts real
// HTTP servers on 127.0.0.1 (simulator, bridge); `temporal` also shares one Temporal dev server,
// started once in globalSetup.
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'http',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/http/**/*.test.ts'],
    },
    {
      displayName: 'temporal',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/temporal/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      setupFiles: ['<rootDir>/test/helpers/quiet-runtime.ts'],
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
  ],
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.js'],
};
