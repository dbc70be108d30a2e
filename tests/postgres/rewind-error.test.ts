/** Which pg_rewind failures leave the target untouched and may be tried again (src/postgres/rewind-error.ts). */
import { describe, expect, it } from 'vitest';
import { isRewindNotStarted, pgRewindMayRetry, pgRewindTouchedTarget, RewindNotStartedError } from '../../src/postgres/rewind-error.ts';

describe('pg_rewind failures', () => {
  it('a failure on the source before anything was copied may be retried', () => {
    expect(
      pgRewindMayRetry(
        'pg_rewind: error: could not connect to server: connection to server at "127.0.0.1", port 5433 failed: Connection refused',
      ),
    ).toBe(true);
    expect(pgRewindMayRetry('pg_rewind: error: connection to server at "127.0.0.1", port 5433 failed: timeout expired')).toBe(true);
    expect(pgRewindMayRetry('pg_rewind: error: source server must not be in recovery mode')).toBe(true);
  });

  it('failures that would repeat, or that came after pg_rewind began to change the target, are not', () => {
    expect(pgRewindMayRetry("pg_rewind: error: could not find common ancestor of the source and target cluster's timelines")).toBe(false);
    expect(pgRewindMayRetry('pg_rewind: error: target server needs to use either data checksums or "wal_log_hints = on"')).toBe(false);
    const midway =
      'pg_rewind: servers diverged at WAL location 0/3000060 on timeline 1\npg_rewind: need to copy 68 MB (total source directory size is 86 MB)\npg_rewind: error: could not receive data from server: server closed the connection unexpectedly';
    expect(pgRewindTouchedTarget(midway)).toBe(true);
    expect(pgRewindMayRetry(midway)).toBe(false);
  });

  it('RewindNotStartedError carries its code (the simulator throws plain objects with it too)', () => {
    expect(isRewindNotStarted(new RewindNotStartedError('x'))).toBe(true);
    expect(isRewindNotStarted({ code: 'pg_rewind_not_started' })).toBe(true);
    expect(isRewindNotStarted(new Error('pg_rewind exited 1'))).toBe(false);
    expect(isRewindNotStarted(undefined)).toBe(false);
  });
});
