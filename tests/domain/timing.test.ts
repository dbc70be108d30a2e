import { describe, expect, it } from 'vitest';
import { timingOf, withDefaults } from '../../src/domain/dynamic-config.ts';

describe("timingOf: the dynamic configuration's durations in ms", () => {
  it('converts ttl, loop_wait and retry_timeout (seconds in the DCS document) to ms', () => {
    expect(timingOf(withDefaults({ ttl: 30, loop_wait: 10, retry_timeout: 10 }))).toEqual({
      ttlMs: 30_000,
      loopWaitMs: 10_000,
      retryTimeoutMs: 10_000,
    });
    expect(timingOf({ ttl: 7, loop_wait: 1, retry_timeout: 3 })).toEqual({ ttlMs: 7_000, loopWaitMs: 1_000, retryTimeoutMs: 3_000 });
  });

  it('converts once per configuration object; a new configuration gets its own', () => {
    const a = withDefaults({ ttl: 20 });
    expect(timingOf(a)).toBe(timingOf(a));
    const b = withDefaults({ ttl: 40 });
    expect(timingOf(b).ttlMs).toBe(40_000);
    expect(timingOf(a).ttlMs).toBe(20_000);
  });
});
