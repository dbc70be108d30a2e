/**
 * checkDivergence (src/domain/timeline-history.ts) with the WAL end read from the WAL itself
 * (issue 24, docs/ha.md "Divergence"): a former primary that did not shut down cleanly is judged
 * by where its valid WAL ends, not presumed diverged; an end that cannot be read counts as
 * diverged.
 */
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../src/domain/cluster.ts';
import { checkDivergence, shutDownCleanly, type LocalPosition } from '../../src/domain/timeline-history.ts';

/** The leader left timeline 1 at 500 (its history key); it runs on timeline 2. */
const history: HistoryEntry[] = [[1, 500, 'no recovery target specified', '2026-11-27T00:00:00Z', 'n2']];
const crashed = (over: Partial<LocalPosition> = {}): LocalPosition => ({
  clusterState: 'in production',
  timeline: 1,
  checkpointLsn: 100n,
  minRecoveryLsn: 0n,
  ...over,
});

describe('checkDivergence with the WAL end', () => {
  it.each([
    ['ends before the switch point', 400n, 'ok'],
    ['ends exactly at the switch point (the new leader received all of it)', 500n, 'ok'],
    ['ends one record past it', 540n, 'diverged'],
  ] as const)('a crashed former primary whose WAL %s → %s', (_n, walEndLsn, kind) => {
    expect(checkDivergence(crashed({ walEndLsn }), 2, history).kind).toBe(kind);
  });

  it('the reason says where the WAL ends and where the switch point is', () => {
    expect(checkDivergence(crashed({ walEndLsn: 540n }), 2, history)).toEqual({
      kind: 'diverged',
      reason: 'local WAL (ends at 540) goes past the switch point (500) of timeline 1',
    });
  });

  it('an end that could not be read: a crashed data directory counts as diverged (never a guess), with the reason', () => {
    const v = checkDivergence(crashed({ walEndError: 'pg_waldump: could not find file' }), 2, history);
    expect(v).toEqual({
      kind: 'diverged',
      reason:
        "former primary of timeline 1 did not shut down cleanly ('in production') and where its WAL ends could not be read: pg_waldump: could not find file",
    });
    expect(checkDivergence(crashed({ clusterState: 'in archive recovery', minRecoveryLsn: 300n }), 2, history).kind).toBe('diverged');
  });

  it('without a WAL end a clean shutdown still has its exact rules (checkpoint, minimum recovery point)', () => {
    expect(checkDivergence({ clusterState: 'shut down', timeline: 1, checkpointLsn: 400n, minRecoveryLsn: 0n }, 2, history).kind).toBe(
      'ok',
    );
    expect(checkDivergence({ clusterState: 'shut down', timeline: 1, checkpointLsn: 500n, minRecoveryLsn: 0n }, 2, history).kind).toBe(
      'diverged',
    );
    expect(
      checkDivergence({ clusterState: 'shut down in recovery', timeline: 1, checkpointLsn: 100n, minRecoveryLsn: 500n }, 2, history).kind,
    ).toBe('ok');
    expect(
      checkDivergence({ clusterState: 'shut down in recovery', timeline: 1, checkpointLsn: 100n, minRecoveryLsn: 501n }, 2, history).kind,
    ).toBe('diverged');
  });

  it("a crashed replica that followed the leader's new timeline is judged on that timeline, not on its last restartpoint's (the soak's false verdict)", () => {
    // Its restartpoint is still on timeline 1 and its minimum recovery point (on timeline 2) lies
    // past timeline 1's switch point: read as a timeline 1 position that looked diverged. Its WAL
    // is on timeline 2, the leader's own: it may follow.
    const local: LocalPosition = {
      clusterState: 'in archive recovery',
      timeline: 2,
      checkpointLsn: 100n,
      minRecoveryLsn: 900n,
      walEndLsn: 950n,
      history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }],
    };
    expect(checkDivergence(local, 2, history)).toEqual({ kind: 'ok' });
  });

  it('the WAL end does not override the lineage checks (another promotion made the same timeline)', () => {
    const local: LocalPosition = {
      clusterState: 'in production',
      timeline: 2,
      checkpointLsn: 100n,
      minRecoveryLsn: 0n,
      walEndLsn: 600n,
      history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }],
      promotedBy: 'n1',
    };
    expect(checkDivergence(local, 2, history).kind).toBe('diverged');
  });

  it('shutDownCleanly names the two clean states', () => {
    expect(
      ['shut down', 'shut down in recovery', 'in production', 'in archive recovery', 'in crash recovery'].map(shutDownCleanly),
    ).toEqual([true, true, false, false, false]);
  });
});
