/**
 * Quorum failover in the simulator (issue 28; docs/ha.md "Quorum failover"): the mode's own runs
 * and the regression schedules of what the first scans of the branch found.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule, type RunOptions } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

/** What the scans found (docs/simulation.md "Quorum failover"), each replayed with its seed and faults. */
const REGRESSIONS: { name: string; seed: number; options: Pick<RunOptions, 'nodes'> & Partial<RunOptions>; faults: Fault[] }[] = [
  {
    name: 'seed 880000494: a fence joined while the key lost its standbys is left once the leader answers (liveness-replicas)',
    seed: 880000494,
    options: { nodes: 3, failsafe: 'draw', quorumFailover: 'draw' },
    faults: [
      { kind: 'net-partition', at: 23, node: 'n2', peer: 'n3', steps: 5 },
      { kind: 'net-delay', at: 23, node: 'n2', steps: 18, ms: 204 },
    ],
  },
  {
    name: 'seed 880000038: a fenced primary running on an older timeline, never acknowledging, is no second writer (timeline-monotonic)',
    seed: 880000038,
    options: { nodes: 3, failsafe: 'draw', quorumFailover: 'draw' },
    faults: [
      { kind: 'dcs-partition', at: 2, node: 'n2', steps: 10 },
      { kind: 'slow-loop', at: 4, node: 'n3', steps: 29, ms: 227 },
      { kind: 'switchover', at: 5, node: 'n3' },
      { kind: 'agent-crash', at: 10, node: 'n1', steps: 16 },
      { kind: 'switchover', at: 32, node: 'n1' },
      { kind: 'agent-crash', at: 36, node: 'n2', steps: 9 },
      { kind: 'freeze', at: 42, node: 'n3', steps: 21 },
      { kind: 'freeze', at: 43, node: 'n2', steps: 5 },
      { kind: 'slow-loop', at: 43, node: 'n2', steps: 30, ms: 1384 },
    ],
  },
  {
    name: 'seed 882000110 (5 members): a follow written while the stream was fenced and unfenced is written again (liveness-replicas)',
    seed: 882000110,
    options: { nodes: 5, failsafe: 'draw', quorumFailover: 'draw' },
    faults: [
      { kind: 'switchover', at: 27, node: 'n5' },
      { kind: 'agent-crash', at: 42, node: 'n5', steps: 11 },
      { kind: 'slow-loop', at: 42, node: 'n4', steps: 15, ms: 566 },
      { kind: 'dcs-partition', at: 46, node: 'n3', steps: 25 },
    ],
  },
  {
    name: 'seed 886002893: a former primary restarted as primary after its key was taken, never acknowledging, loses nothing (sync-no-loss judged at its first acknowledgement)',
    seed: 886002893,
    options: { nodes: 3, sync: 'true+strict', quorumFailover: true },
    faults: [
      { kind: 'pg-crash', at: 9, node: 'n3' },
      { kind: 'slow-loop', at: 10, node: 'n3', steps: 24, ms: 681 },
      { kind: 'freeze', at: 14, node: 'n2', steps: 7 },
      { kind: 'pg-crash', at: 23, node: 'n3' },
      { kind: 'net-delay', at: 26, node: 'n3', steps: 21, ms: 1304 },
    ],
  },
  {
    name: 'seed 886011386: the taker does not take over more than maximum_lag_on_failover behind the reachable former primary (promotion-lag)',
    seed: 886011386,
    options: { nodes: 3, sync: 'true+strict', quorumFailover: true },
    faults: [
      { kind: 'agent-crash', at: 10, node: 'n1', steps: 8 },
      { kind: 'agent-crash', at: 18, node: 'n1', steps: 4 },
      { kind: 'slow-loop', at: 22, node: 'n1', steps: 5, ms: 708 },
      { kind: 'net-partition', at: 26, node: 'n2', peer: 'n3', steps: 27 },
      { kind: 'dcs-partition', at: 40, node: 'n1', steps: 27 },
      { kind: 'agent-crash', at: 46, node: 'n3', steps: 17 },
    ],
  },
  {
    name: 'seed 887001840 (5 members): sync-no-loss of a restarted former primary, judged at its first acknowledgement',
    seed: 887001840,
    options: { nodes: 5, sync: 'quorum+strict', quorumFailover: true },
    faults: [
      { kind: 'slow-loop', at: 20, node: 'n1', steps: 30, ms: 856 },
      { kind: 'pg-crash', at: 21, node: 'n1' },
      { kind: 'net-delay', at: 31, node: 'n1', steps: 24, ms: 1374 },
    ],
  },
  {
    name: 'seed 886009305: a complete fence whose taker may not act (past the lag limit) is left once the fenced leader has answered for 2 × the window (liveness-replicas)',
    seed: 886009305,
    options: { nodes: 3, sync: 'true+strict', quorumFailover: true },
    faults: [
      { kind: 'net-partition', at: 5, node: 'n2', peer: 'n3', steps: 10 },
      { kind: 'net-partition', at: 8, node: 'n3', peer: 'n1', steps: 10 },
      { kind: 'agent-crash', at: 18, node: 'n1', steps: 26 },
    ],
  },
  {
    name: 'seed 224850351 (CI): a deposed leader that had not yet noticed the take does not rewrite the sync key of its successor (liveness-primary, finding 34)',
    seed: 224850351,
    options: { nodes: 3, failsafe: 'draw', quorumFailover: 'draw' },
    faults: [
      { kind: 'slow-loop', at: 10, node: 'n1', steps: 23, ms: 991 },
      { kind: 'net-partition', at: 12, node: 'n2', peer: 'n1', steps: 24 },
      { kind: 'net-partition', at: 13, node: 'n1', peer: 'n3', steps: 29 },
      { kind: 'agent-crash', at: 28, node: 'n3', steps: 29 },
    ],
  },
];

describe('quorum failover', () => {
  it('the leader node lost (agent and postmaster): the fenced standbys take over, no acknowledged commit lost', async () => {
    const faults: Fault[] = [
      { kind: 'agent-crash', at: 20, node: 'n3', steps: 30 },
      { kind: 'pg-crash', at: 20, node: 'n3' },
    ];
    const { result, world } = await runSchedule(
      1000,
      { nodes: 3, steps: 60, freeze: true, faults, sync: 'quorum+strict', quorumFailover: true },
      true,
    );
    expect(result.violations).toEqual([]);
    expect(world.journalJsonl()).toContain('took the leader key from n3');
  });

  it.each(REGRESSIONS)('$name', async ({ seed, options, faults }) => {
    const { result } = await runSchedule(seed, { steps: 60, freeze: true, faults, ...options });
    expect(result.violations).toEqual([]);
  });
});
