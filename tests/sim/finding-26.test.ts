/**
 * Finding 26 (docs/simulation.md; seed 352774007 of CI's 30,000-schedule run, discarded-receipt):
 * a replica cut off from the leader read the leader's position once the partition healed, then
 * streamed for a second (the leader's last commit and its shutdown checkpoint) without any cycle's
 * probe seeing it stream, so its notStreamingSinceMs still dated from the partition. The next
 * cycle compared its newer WAL with the older answer, took it for a same-number fork, stopped
 * and re-cloned from the new leader: a commit discarded without a receipt. The read now counts
 * only when asked more than 1 s after the local WAL end last moved.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 26', () => {
  it('seed 352774007: a replica that streamed between two cycles is not taken for a same-number fork', async () => {
    const faults: Fault[] = [
      { kind: 'net-partition', at: 18, node: 'n2', peer: 'n1', steps: 18 },
      { kind: 'pg-crash', at: 20, node: 'n2' },
      { kind: 'dcs-partition', at: 27, node: 'n1', steps: 28 },
      { kind: 'net-partition', at: 38, node: 'n3', peer: 'n1', steps: 18 },
    ];
    const { result, world } = await runSchedule(352774007, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    const n2 = world
      .journalJsonl()
      .split('\n')
      .filter((l) => l.includes('"node":"n2"'));
    // No same-number fork is claimed against n1; after n3's promotion, n2's WAL past the switch
    // point (n1's last commit) is rewound with its receipt taken first.
    expect(n2.some((l) => l.includes('on the same timeline'))).toBe(false);
    expect(n2.some((l) => l.includes('"type":"cmd.reinitialize"'))).toBe(false);
    const discarded = n2.findIndex((l) => l.includes('"type":"ha.discarded"'));
    const rewind = n2.findIndex((l) => l.includes('"type":"ha.rewind"'));
    expect(discarded).toBeGreaterThan(-1);
    expect(rewind).toBeGreaterThan(discarded);
  });
});
