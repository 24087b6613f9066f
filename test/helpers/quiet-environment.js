// Jest's node environment, with the console of passing tests kept quiet: what a test (or the
// code it runs in-process) writes with console.* is held back, and handed to jest's own console,
// which prints it with the file's results, only when that test or one of its hooks fails. A
// passing run then prints little more than its results; a failing test still shows everything
// it said. Output written straight to process.stdout (a figure of record) is not held back.
// TEST_CONSOLE=all shows every test's console output as it comes (e.g. with CLUSTER_TEST_OUTPUT).
const { setTimeout: sleep } = require('node:timers/promises');
const { TestEnvironment } = require('jest-environment-node');

const METHODS = ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dir', 'table', 'group', 'groupEnd', 'time', 'timeEnd', 'count'];

/**
 * The Temporal runtime of the file that just ran (test/helpers/quiet-runtime.ts leaves its class
 * here; jest gives each file its own copy of the SDK), if it still runs after all the file's
 * hooks: a worker or native connection left open. Its native handle keeps the jest worker process
 * alive, and jest force-exits it at the end of the run ("failed to exit gracefully") without
 * saying which file; said here. A runtime ends just after its last worker's run ends: waited a moment.
 */
async function openRuntime() {
  const runtimeClass = globalThis.__testFileRuntime;
  delete globalThis.__testFileRuntime;
  for (let waited = 0; runtimeClass?._instance && waited < 2_000; waited += 50) await sleep(50);
  return runtimeClass?._instance;
}

class QuietEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
  }

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
    const open = await openRuntime();
    if (open) process.stderr.write(`${this.testPath}: a Temporal worker or native connection is still open after the file's last hook (${open.backRefs?.size ?? '?'} of them): close it in afterAll\n`);
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
