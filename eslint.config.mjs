import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Dependencies through their public APIs only (README, "Ground rules"): no import of a package's
 * private path (`lib/`, `dist/` internals, which any release may move), no reach into the Temporal
 * SDK's workflow runtime (`__TEMPORAL_ACTIVATOR__` and its kin). `ajv/dist/2020` is ajv's documented
 * entry for JSON Schema 2020-12. test/unit/private-imports-lint.test.ts checks the rules fire.
 */
const PRIVATE = 'a package\'s private path: use its public entry (any release may move its internals)';
const privatePath = /^(?!\.)(?:@[^/]+\/)?[^/]+\/(?:lib|dist)(?:\/|$)/.source;
export const publicApisOnly = {
  'no-restricted-imports': ['error', { patterns: [{ group: ['@*/*/lib', '@*/*/lib/*', '*/lib/*', '@*/*/dist/*', '*/dist/*', '!ajv/dist/2020', '!./**', '!../**'], message: PRIVATE }] }],
  'no-restricted-syntax': [
    'error',
    { selector: `CallExpression[callee.name='require'] > Literal[value=/${privatePath}/]`, message: PRIVATE },
    { selector: `CallExpression[callee.property.name='resolve'] > Literal[value=/${privatePath}/]`, message: PRIVATE },
    { selector: `ImportExpression > Literal[value=/${privatePath}/]`, message: PRIVATE },
    { selector: 'Identifier[name=/^__TEMPORAL_/]', message: 'the Temporal SDK\'s workflow runtime is private: use @temporalio/workflow\'s API' },
    { selector: 'Literal[value=/^__TEMPORAL_/]', message: 'the Temporal SDK\'s workflow runtime is private: use @temporalio/workflow\'s API' },
  ],
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'packages/*/dist/**', 'bench/results/**', 'test/artifacts/**', '.data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      ...publicApisOnly,
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly', process: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
