/**
 * Finding 33 (open; docs/simulation.md): seed 930144409 of issue 28's 300,000-schedule scan,
 * `diverged-streaming`, asynchronous mode, failsafe on. n1, its agent frozen for 14 s, streams
 * from n2 on timeline 2 although their histories differ from byte 17,006,772 (n1's WAL runs to
 * 17,216,324); n2's postmaster had crashed in between. It replays the same on 63d3060 (round 5's
 * scanned code): older than the quorum mode.
 *
 * Kept as an open regression schedule: this asserts the violation is still there, so the test
 * turns red when a fix lands; then it must assert no violation instead.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 33 (open)', () => {
  it('seed 930144409: a thawed replica streaming from a primary whose history differs (still breaks diverged-streaming)', async () => {
    const faults: Fault[] = [
      { kind: 'switchover', at: 1, node: 'n2' },
      { kind: 'net-partition', at: 2, node: 'n1', peer: 'n3', steps: 13 },
      { kind: 'freeze', at: 7, node: 'n1', steps: 28 },
      { kind: 'dcs-partition', at: 13, node: 'n2', steps: 15 },
      { kind: 'pg-crash', at: 17, node: 'n2' },
      { kind: 'slow-loop', at: 20, node: 'n3', steps: 23, ms: 477 },
      { kind: 'slow-loop', at: 29, node: 'n3', steps: 22, ms: 1098 },
      { kind: 'dcs-partition', at: 33, node: 'n3', steps: 25 },
      { kind: 'pg-crash', at: 41, node: 'n3' },
    ];
    const { result } = await runSchedule(930144409, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' });
    expect([...new Set(result.violations.map((v) => v.invariant))]).toEqual(['diverged-streaming']);
  });

  it('seed 224839313 (CI, stop 37): a replica of a timeline 2 whose promoter crashed before writing the history key streams from a member of another timeline 2 (still breaks diverged-streaming)', async () => {
    const faults: Fault[] = [
      { kind: 'net-delay', at: 5, node: 'n2', steps: 6, ms: 642 },
      { kind: 'switchover', at: 6, node: 'n3' },
      { kind: 'agent-crash', at: 9, node: 'n3', steps: 21 },
      { kind: 'pg-crash', at: 10, node: 'n1' },
      { kind: 'net-delay', at: 11, node: 'n2', steps: 7, ms: 378 },
      { kind: 'heal', at: 13 },
      { kind: 'net-delay', at: 22, node: 'n2', steps: 11, ms: 915 },
      { kind: 'pg-crash', at: 26, node: 'n2' },
      { kind: 'net-delay', at: 26, node: 'n1', steps: 30, ms: 302 },
      { kind: 'agent-crash', at: 27, node: 'n3', steps: 10 },
      { kind: 'agent-crash', at: 32, node: 'n1', steps: 24 },
      { kind: 'freeze', at: 38, node: 'n3', steps: 24 },
    ];
    const { result } = await runSchedule(224839313, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' });
    expect([...new Set(result.violations.map((v) => v.invariant))]).toEqual(['diverged-streaming']);
  });
});
