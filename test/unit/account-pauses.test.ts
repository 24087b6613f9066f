/**
 * A paused account's calls outside the pacing gate, driven with a plain clock: the first refusal
 * starts one pause (one log line, one count), one probe per period goes out and every other call
 * waits until after it, an accepted key ends the pause, and accounts never share one.
 */
import { AccountPauses } from '../../activities/account-pauses';

describe('AccountPauses', () => {
  let t = 0;
  const pauses = () => new AccountPauses(() => t, 5_000);
  beforeEach(() => (t = 1_000));

  it('lets every call out until a refusal; then one probe per period, the others told to come back after it', () => {
    const p = pauses();
    expect(p.admit('shop-b')).toBeUndefined();
    expect(p.refused('shop-b')).toEqual({ started: true, retryInMs: 5_000 });
    // Calls that were out when the key was revoked are refused too: still one pause.
    expect(p.refused('shop-b')).toEqual({ started: false, retryInMs: 5_000 });
    t += 2_000;
    expect(p.admit('shop-b')).toEqual({ retryInMs: 3_000 + 1_000 });
    t += 3_000;
    expect(p.admit('shop-b')).toBeUndefined(); // the probe
    expect(p.admit('shop-b')).toEqual({ retryInMs: 5_000 + 1_000 }); // the next one waits for the next period
    expect(p.refused('shop-b')).toEqual({ started: false, retryInMs: 5_000 });
  });

  it("ends the pause when the key is accepted, saying how long it lasted; another account is never held", () => {
    const p = pauses();
    p.refused('shop-b');
    expect(p.admit('shop-a')).toBeUndefined();
    expect(p.accepted('shop-a')).toBeUndefined();
    t += 7_000;
    expect(p.accepted('shop-b')).toBe(7_000);
    expect(p.admit('shop-b')).toBeUndefined();
    expect(p.accepted('shop-b')).toBeUndefined(); // ended once
    expect(p.refused('shop-b').started).toBe(true); // a new revocation is a new pause
  });
});
