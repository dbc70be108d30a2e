import { describe, expect, it } from 'vitest';
import { leaderDeadlineMs, stopAcknowledgingBoundS } from '../../src/domain/leader-deadline.ts';

describe('leaderDeadlineMs', () => {
  it('is the last renewal + ttl − retry_timeout', () => {
    expect(leaderDeadlineMs({ lastRenewalMs: 1_000_000, ttlMs: 10 * 1000, retryTimeoutMs: 3 * 1000 })).toBe(1_007_000);
    expect(leaderDeadlineMs({ lastRenewalMs: 1_000_000, ttlMs: 30 * 1000, retryTimeoutMs: 10 * 1000 })).toBe(1_020_000);
  });

  it('a failsafe round accepted after the renewal moves it', () => {
    expect(leaderDeadlineMs({ lastRenewalMs: 1_000_000, failsafeSentMs: 1_005_000, ttlMs: 10 * 1000, retryTimeoutMs: 3 * 1000 })).toBe(
      1_012_000,
    );
    expect(leaderDeadlineMs({ lastRenewalMs: 1_006_000, failsafeSentMs: 1_005_000, ttlMs: 10 * 1000, retryTimeoutMs: 3 * 1000 })).toBe(
      1_013_000,
    );
  });

  it('under the timing rule it leaves the next cycle its full retry_timeout, and stays before the lease can expire', () => {
    for (const [ttl, loopWait, rt] of [
      [10, 2, 3],
      [30, 10, 10],
      [7, 1, 3],
      [20, 4, 8],
    ] as const) {
      expect(loopWait + 2 * rt).toBeLessThanOrEqual(ttl);
      const renewal = 5_000_000;
      const deadline = leaderDeadlineMs({ lastRenewalMs: renewal, ttlMs: ttl * 1000, retryTimeoutMs: rt * 1000 });
      // the next cycle starts at renewal + loop_wait at the latest; its keepalive may take retry_timeout
      expect(deadline).toBeGreaterThanOrEqual(renewal + (loopWait + rt) * 1000);
      // the lease (sent at `renewal`) cannot expire before renewal + ttl
      expect(deadline).toBeLessThanOrEqual(renewal + ttl * 1000 - rt * 1000);
      expect(stopAcknowledgingBoundS({ ttl, retry_timeout: rt })).toBe(ttl - rt);
    }
  });
});
