/**
 * The alert rules (deploy/prometheus/alerts.yml) with Debian's promtool: every rule parses, fires
 * on the series its test file says should fire it and stays quiet on the others
 * (deploy/prometheus/tests/*.yml), and has a test and a runbook entry in docs/monitoring.md ("Alerts").
 * The scrape configuration parses too. .ci/run installs the `prometheus` package.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const ROOT = join(__dirname, '..', '..');
const DIR = join(ROOT, 'deploy', 'prometheus');

function promtool(args: string[]): { code: number | null; output: string } {
  const run = spawnSync('promtool', args, { cwd: DIR, encoding: 'utf8' });
  if (run.error) throw new Error(`promtool could not be run (${run.error.message}): install Debian's prometheus package (.ci/run does)`);
  return { code: run.status, output: run.stdout + run.stderr };
}

const rules = (): { alert: string; expr: string }[] => (parse(readFileSync(join(DIR, 'alerts.yml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((g) => g.rules);
const testFiles = () => readdirSync(join(DIR, 'tests')).filter((f) => f.endsWith('.yml'));

describe('deploy/prometheus', () => {
  it('every alert rule parses', () => {
    const r = promtool(['check', 'rules', 'alerts.yml']);
    expect(r).toEqual({ code: 0, output: expect.stringContaining(`SUCCESS: ${rules().length} rules found`) });
  });

  it('every alert fires when its test says it should, and is quiet when not (promtool test rules)', () => {
    const r = promtool(['test', 'rules', ...testFiles().map((f) => join('tests', f))]);
    expect(r.output).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  it('every alert has a firing case and a quiet case in a test file', () => {
    const cases = testFiles().flatMap((f) => (parse(readFileSync(join(DIR, 'tests', f), 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests.flatMap((t) => t.alert_rule_test));
    for (const { alert } of rules()) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect({ alert, fires: mine.some((c) => c.exp_alerts.length > 0), quiet: mine.some((c) => c.exp_alerts.length === 0) }).toEqual({ alert, fires: true, quiet: true });
    }
  });

  it('every alert has a runbook entry in docs/monitoring.md', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'monitoring.md'), 'utf8');
    for (const { alert } of rules()) expect({ alert, documented: new RegExp(`\\*\\*${alert}\\*\\*`).test(doc) }).toEqual({ alert, documented: true });
  });

  it('the scrape configuration parses', () => {
    const out = execFileSync('promtool', ['check', 'config', '--syntax-only', 'prometheus.yml'], { cwd: DIR, encoding: 'utf8' });
    expect(out).toContain('SUCCESS');
  });
});
