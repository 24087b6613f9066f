import { devServerArgs } from '../../scripts/temporal-dev-server';

const dynamicConfig = (args: string[]) => args.filter((_, i) => args[i - 1] === '--dynamic-config-value');

describe('the dev server arguments', () => {
  it('turn fairness on, and a value given again by the caller replaces ours instead of following it', () => {
    expect(dynamicConfig(devServerArgs({ port: 7233, namespace: 'default' }))).toContain('matching.enableFairness=true');
    const off = devServerArgs({ port: 7233, namespace: 'default', extraArgs: ['--dynamic-config-value', 'matching.enableFairness=false', '--metrics-port', '9090'] });
    expect(dynamicConfig(off).filter((v) => v.startsWith('matching.enableFairness='))).toEqual(['matching.enableFairness=false']);
    expect(dynamicConfig(off)).toContain('matching.useNewMatcher=true');
    expect(off.slice(-2)).toEqual(['--metrics-port', '9090']);
  });
});
