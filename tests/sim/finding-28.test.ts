/**
 * Finding 28 (docs/simulation.md; seed 600072801 of round 4's 3-member scan, promotion-lag): the
 * leader n1's postmaster crashed and its agent crashed; the postmaster had written WAL past the
 * last optime the agent published. An operator's switchover named n3, about 1 MB behind. When n3
 * raced, n1's restarted agent answered `starting` with no WAL position, so n3 promoted 1,053,651
 * bytes behind n1's real WAL end (maximum_lag_on_failover 1 MB). A member whose PostgreSQL does
 * not run now publishes where its data directory's WAL ends (`local_wal_end`), and the race
 * counts it under the lag rule.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 28', () => {
  it('seed 600072801: a switchover candidate does not promote past the lag limit behind a restarting former leader', async () => {
    const faults: Fault[] = [
      { kind: 'net-partition', at: 11, node: 'n3', peer: 'n1', steps: 29 },
      { kind: 'pg-crash', at: 31, node: 'n1' },
      { kind: 'agent-crash', at: 39, node: 'n1', steps: 23 },
      { kind: 'dcs-partition', at: 42, node: 'n3', steps: 12 },
      { kind: 'slow-loop', at: 52, node: 'n3', steps: 21, ms: 1317 },
      { kind: 'switchover', at: 55, node: 'n3' },
    ];
    const { result } = await runSchedule(600072801, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' });
    expect(result.violations).toEqual([]);
  });
});
