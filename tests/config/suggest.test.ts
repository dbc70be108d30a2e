import { describe, expect, it } from 'vitest';
import { closestKey, editDistance, unknownKeyProblem } from '../../src/config/suggest.ts';
import { DYNAMIC_TOP_KEYS } from '../../src/config/dynamic-keys.ts';

describe('editDistance (optimal string alignment)', () => {
  it.each([
    ['loop_wait', 'loop_wait', 0],
    ['loop_wiat', 'loop_wait', 1],
    ['loop_wai', 'loop_wait', 1],
    ['loopwait', 'loop_wait', 1],
    ['lop_waitt', 'loop_wait', 2],
    ['', 'ttl', 3],
    ['candidate', 'check_timeline', 11],
  ])('%s ~ %s = %i', (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
    expect(editDistance(b, a)).toBe(d);
  });
});

describe('closestKey', () => {
  it('suggests the known key one letter away (a swap, a missing, a doubled or a wrong letter)', () => {
    expect(closestKey('loop_wiat', DYNAMIC_TOP_KEYS)).toBe('loop_wait');
    expect(closestKey('maximum_lag_on_failvoer', DYNAMIC_TOP_KEYS)).toBe('maximum_lag_on_failover');
    expect(closestKey('synchronous_mod', DYNAMIC_TOP_KEYS)).toBe('synchronous_mode');
    expect(closestKey('retry_timeoutt', DYNAMIC_TOP_KEYS)).toBe('retry_timeout');
    expect(closestKey('TTL', DYNAMIC_TOP_KEYS)).toBe('ttl');
    expect(closestKey('tll', DYNAMIC_TOP_KEYS)).toBe('ttl');
  });

  it('suggests nothing for a key that is no typo of a known one, nor for a known key', () => {
    for (const key of [
      'candidate',
      'force',
      'from-leader',
      'restart_pending',
      'database_version',
      'scheduled_at',
      'leader',
      'timeout',
      'loop_wait',
    ]) {
      expect(closestKey(key, DYNAMIC_TOP_KEYS), key).toBeUndefined();
    }
  });

  it('unknownKeyProblem says "did you mean" only with a suggestion', () => {
    expect(unknownKeyProblem('loop_wiat', DYNAMIC_TOP_KEYS)).toBe('unknown key; did you mean loop_wait?');
    expect(unknownKeyProblem('candidate', DYNAMIC_TOP_KEYS)).toBe('unknown key');
  });
});
