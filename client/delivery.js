#!/usr/bin/env node
// The `delivery` command (package bin): runs the TypeScript CLI through tsx.
require('tsx/cjs');
require('./cli.ts')
  .main(process.argv.slice(2))
  .then((code) => process.exit(code));
