#!/usr/bin/env node
// The `delivery` command of the installed package: the CLI compiled to JavaScript (no tsx).
require('../dist/client/cli.js')
  .main(process.argv.slice(2))
  .then((code) => process.exit(code));
