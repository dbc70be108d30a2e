/**
 * Findings 28 and 30 (docs/simulation.md), open: their replays still break an invariant. Each is
 * kept here as `it.fails`, which passes while the schedule still breaks it: the day a fix (or a
 * change of timing) makes the schedule pass, this test fails and must become a regression test
 * like tests/sim/finding-29.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('open findings (expected to fail until fixed)', () => {
  it.fails('finding 28, seed 600072801: a switchover candidate promoted past the lag limit behind a restarting former leader', async () => {
    const faults = [
      { kind: 'net-partition', at: 11, node: 'n3', peer: 'n1', steps: 29 },
      { kind: 'pg-crash', at: 31, node: 'n1' },
      { kind: 'agent-crash', at: 39, node: 'n1', steps: 23 },
      { kind: 'dcs-partition', at: 42, node: 'n3', steps: 12 },
      { kind: 'slow-loop', at: 52, node: 'n3', steps: 21, ms: 1317 },
      { kind: 'switchover', at: 55, node: 'n3' },
    ] as Fault[];
    const { result } = await runSchedule(600072801, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' });
    expect(result.violations.map((v) => v.invariant)).toEqual([]);
  });

  it.fails('finding 30, seed 600125215: a quorum vote counted from a status document probed before its agent froze', async () => {
    const faults = [
      { kind: 'slow-loop', at: 10, node: 'n1', steps: 14, ms: 798 },
      { kind: 'heal', at: 18 },
      { kind: 'slow-loop', at: 22, node: 'n2', steps: 24, ms: 274 },
      { kind: 'slow-loop', at: 26, node: 'n1', steps: 18, ms: 1041 },
      { kind: 'freeze', at: 38, node: 'n1', steps: 23 },
      { kind: 'pg-crash', at: 44, node: 'n2' },
      { kind: 'freeze', at: 46, node: 'n3', steps: 18 },
    ] as Fault[];
    const { result } = await runSchedule(600125215, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' });
    expect(result.violations.map((v) => v.invariant)).toEqual([]);
  });
});
