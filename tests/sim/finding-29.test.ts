/**
 * Finding 29 (docs/simulation.md; seed 620040985 of round 4's 5-member scan, discarded-receipt):
 * n5, frozen through a switchover that made n4's timeline 2, thawed and acted on its old race:
 * it took the free leader lock during the next switchover and promoted from timeline 1 to another
 * timeline 2 at the same switch point (the stale race itself is open, below). n1 and n3 had
 * followed n4's timeline 2: their WAL went past n5's own on the same number, so they were
 * re-cloned, and the history could not place the fork, so no receipt was taken for the 14
 * commits they discarded. A fork seen by position while the data directory ran now places the
 * fork where the local timeline starts (its local history), so the receipt lists them.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 29', () => {
  it('seed 620040985: a same-number fork seen by position is discarded with a receipt of every commit', async () => {
    const faults: Fault[] = [
      { kind: 'switchover', at: 9, node: 'n1' },
      { kind: 'freeze', at: 17, node: 'n1', steps: 17 },
      { kind: 'freeze', at: 18, node: 'n5', steps: 19 },
      { kind: 'agent-crash', at: 19, node: 'n2', steps: 17 },
      { kind: 'switchover', at: 32, node: 'n3' },
    ];
    const { result, world } = await runSchedule(620040985, { nodes: 5, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    const journal = world.journalJsonl().split('\n');
    for (const name of ['n1', 'n3']) {
      const own = journal.filter((l) => l.includes(`"node":"${name}"`));
      // Still the finding's path: judged a same-number fork by position, then re-cloned…
      expect(own.some((l) => l.includes("goes past the leader's own") && l.includes('"type":"ha.diverged"'))).toBe(true);
      const discarded = own.findIndex((l) => l.includes('"type":"ha.discarded"'));
      const reinit = own.findIndex((l) => l.includes('"type":"cmd.reinitialize"'));
      // …with the receipt taken first (the checker compared it with the commits thrown away).
      expect(discarded).toBeGreaterThan(-1);
      expect(reinit).toBeGreaterThan(discarded);
    }
  });
});
