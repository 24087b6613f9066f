// Jest's node environment, with the console of passing tests kept quiet: what a test (or the
// code it runs in-process) writes with console.* is held back, and handed to jest's own console,
// which prints it with the file's results, only when that test or one of its hooks fails. A
// passing run then prints little more than its results; a failing test still shows everything
// it said. Output written straight to process.stdout (a figure of record) is not held back.
// TEST_CONSOLE=all shows every test's console output as it comes (e.g. with CLUSTER_TEST_OUTPUT).
const { TestEnvironment } = require('jest-environment-node');

const METHODS = ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dir', 'table', 'group', 'groupEnd', 'time', 'timeEnd', 'count'];

class QuietEnvironment extends TestEnvironment {
  async setup() {
    await super.setup();
    this.held = [];
    if (process.env.TEST_CONSOLE === 'all') return;
    const jestConsole = this.global.console;
    this.release = () => {
      for (const [method, args] of this.held.splice(0)) jestConsole[method](...args);
    };
    const quiet = Object.create(jestConsole);
    for (const method of METHODS) quiet[method] = (...args) => this.held.push([method, args]);
    this.global.console = quiet;
    // The Temporal runtime's log (test/helpers/quiet-runtime.ts) reaches the file under way here.
    globalThis.__quietTestLog = (text) => this.held.push(['warn', [text]]);
  }

  async teardown() {
    delete globalThis.__quietTestLog;
    await super.teardown();
  }

  release() {}

  handleTestEvent(event) {
    if (event.name === 'test_done') {
      if (event.test.errors.length > 0) this.release();
      else this.held.length = 0;
    } else if (event.name === 'hook_failure' || event.name === 'test_fn_failure') {
      this.release();
    } else if (event.name === 'run_finish') {
      this.held.length = 0; // afterAll's chatter of a file whose hooks passed
    }
  }
}

module.exports = QuietEnvironment;
