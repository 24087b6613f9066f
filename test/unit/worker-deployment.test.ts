/** The worker's deployment version from its environment and code, the stranded report, the rollout command's arguments. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRolloutArgs } from '../../scripts/rollout';
import { defaultBuildId, deploymentVersionFromEnv, strandedReport } from '../../temporal/worker-deployment';

/** A source tree with the folders the workflow bundle is made of. */
function tree(): string {
  const root = mkdtempSync(join(tmpdir(), 'deployment-'));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ version: '9.9.9' }));
  for (const dir of ['workflows', 'contract', 'provider', 'activities']) {
    mkdirSync(join(root, dir));
    writeFileSync(join(root, dir, 'a.ts'), `export const where = '${dir}';\n`);
  }
  return root;
}

const git = (root: string, ...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: root, stdio: 'pipe' }).toString().trim();

describe('the deployment version', () => {
  const roots: string[] = [];
  afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

  it('is delivery-orchestrator and WORKER_BUILD_ID when it is set', () => {
    expect(deploymentVersionFromEnv({ WORKER_BUILD_ID: '0.2.0-abc' })).toEqual({ deploymentName: 'delivery-orchestrator', buildId: '0.2.0-abc' });
    expect(deploymentVersionFromEnv({ WORKER_BUILD_ID: 'b', WORKER_DEPLOYMENT_NAME: 'orders-eu' }).deploymentName).toBe('orders-eu');
  });

  it('refuses a name or build id the server would split, naming the variable and the rule', () => {
    expect(() => deploymentVersionFromEnv({ WORKER_DEPLOYMENT_NAME: 'a.b', WORKER_BUILD_ID: 'x' })).toThrow(/WORKER_DEPLOYMENT_NAME: must be letters, digits, - or _/);
    expect(() => deploymentVersionFromEnv({ WORKER_BUILD_ID: 'a:b' })).toThrow(/WORKER_BUILD_ID: must be letters, digits, \., - or _/);
  });

  it('is named by the package version and a digest of the workflow sources where there is no git (a Docker image)', () => {
    const [one, two] = [tree(), tree()];
    roots.push(one, two);
    expect(defaultBuildId(one)).toMatch(/^9\.9\.9-src-[0-9a-f]{12}$/);
    expect(defaultBuildId(two)).toBe(defaultBuildId(one)); // the same code, wherever it is
    writeFileSync(join(two, 'workflows', 'a.ts'), 'export const where = 1;\n');
    expect(defaultBuildId(two)).not.toBe(defaultBuildId(one));
  });

  it('is named by the package version and the commit, with the sources digest while they have uncommitted changes', () => {
    const root = tree();
    roots.push(root);
    git(root, 'init', '-q');
    git(root, 'add', '.');
    git(root, 'commit', '-qm', 'one');
    const commit = git(root, 'rev-parse', '--short=12', 'HEAD');
    expect(defaultBuildId(root)).toBe(`9.9.9-${commit}`);
    writeFileSync(join(root, 'README.md'), 'docs only\n');
    expect(defaultBuildId(root)).toBe(`9.9.9-${commit}`); // a change outside the workflow code is the same build
    writeFileSync(join(root, 'contract', 'a.ts'), 'export const where = 2;\n');
    expect(defaultBuildId(root)).toMatch(new RegExp(`^9\\.9\\.9-${commit}-dirty-[0-9a-f]{12}$`));
  });
});

describe('the stranded report', () => {
  it('names the version, its open deliveries and both ways out', () => {
    const lines = strandedReport([{ version: { deploymentName: 'delivery-orchestrator', buildId: '0.2.0-0123456789ab' }, openPinned: 7 }], { deploymentName: 'delivery-orchestrator', buildId: '0.3.0-ba9876543210' });
    const text = lines.join('\n');
    expect(text).toContain('version delivery-orchestrator:0.2.0-0123456789ab: 7 open pinned deliveries and NO worker polling for it');
    expect(text).toContain('check out commit 0123456789ab and run them with WORKER_BUILD_ID=0.2.0-0123456789ab');
    expect(text).toContain(
      `temporal workflow update-options --query "TemporalWorkerDeploymentVersion='delivery-orchestrator:0.2.0-0123456789ab' AND ExecutionStatus='Running'" --yes --versioning-override-behavior pinned --versioning-override-deployment-name delivery-orchestrator --versioning-override-build-id 0.3.0-ba9876543210`,
    );
    expect(lines.every((l) => l.startsWith('!!!'))).toBe(true);
  });
});

describe('npm run rollout arguments', () => {
  it.each([
    [['--ramp', '10'], '--ramp: needs --build-id'],
    [['--build-id', 'b', '--ramp', '0'], '--ramp: must be a whole percentage from 1 to 99'],
    [['--build-id', 'b', '--ramp', '100'], '--ramp: must be a whole percentage from 1 to 99'],
    [['--build-id', 'b:c'], '--build-id: must be letters, digits'],
    [['--abort', '--build-id', 'b'], '--abort: takes no --build-id'],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseRolloutArgs(argv)).toThrow(message);
  });

  it('reads a ramp, a switch and an abort', () => {
    expect(parseRolloutArgs(['--build-id', '0.2.0-x', '--ramp', '10'])).toEqual({ buildId: '0.2.0-x', ramp: 10, abort: false, watch: false });
    expect(parseRolloutArgs(['--abort', '--watch'])).toEqual({ buildId: undefined, ramp: undefined, abort: true, watch: true });
  });
});
