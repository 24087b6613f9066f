// After jest's own summary: the ten slowest test files (where the run's time goes), then one plain
// closing line, `jest: N passed, N failed, N skipped`, that any CI log reader understands; it stays last.
const path = require('node:path');

const SLOWEST = 10;

class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const suites = results.testResults
      .map((r) => ({ file: path.relative(this.rootDir, r.testFilePath), s: (r.perfStats.end - r.perfStats.start) / 1000 }))
      .filter((r) => r.s > 0)
      .sort((a, b) => b.s - a.s)
      .slice(0, SLOWEST);
    if (suites.length > 0) process.stdout.write(`\nslowest test files:\n${suites.map((r) => `  ${r.s.toFixed(1).padStart(7)} s  ${r.file}`).join('\n')}\n`);
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(`\njest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
