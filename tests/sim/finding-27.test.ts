/**
 * Finding 27 (docs/simulation.md; seed 550042192 of round 3's 5-member scan, discarded-receipt):
 * n4 won a switchover and wrote its promotion marker ("timeline 2, made by n4") before promoting;
 * its agent crashed and the fence stopped its postmaster before the promotion took effect. n2 then
 * promoted to timeline 2 and n4, restarted, followed it and streamed n2's timeline 2. After n4's
 * next agent restart the stale marker named n4 for the timeline n2 made: the divergence check
 * called it a same-number fork and re-cloned it, with a receipt listing 15 commits the new lineage
 * kept. A marker whose timeline the data directory never made (no history file of it) is now
 * removed before the postmaster starts.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 27', () => {
  it('seed 550042192: a marker whose promotion never happened does not make a same-number fork', async () => {
    const faults: Fault[] = [
      { kind: 'switchover', at: 1, node: 'n4' },
      { kind: 'pg-crash', at: 9, node: 'n5' },
      { kind: 'agent-crash', at: 14, node: 'n4', steps: 20 },
      { kind: 'agent-crash', at: 40, node: 'n4', steps: 10 },
    ];
    const { result, world } = await runSchedule(550042192, { nodes: 5, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    const n4 = world
      .journalJsonl()
      .split('\n')
      .filter((l) => l.includes('"node":"n4"'));
    // The schedule still does what made the finding: n4's promotion command, then a start as a
    // replica of n2 with no promotion done in between.
    expect(n4.some((l) => l.includes('"type":"cmd.promote"'))).toBe(true);
    expect(n4.some((l) => l.includes('"type":"xstate.done.actor.promote"'))).toBe(false);
    // n4 is never judged diverged, never re-cloned, and discards nothing.
    expect(n4.some((l) => l.includes('"type":"ha.diverged"'))).toBe(false);
    expect(n4.some((l) => l.includes('"type":"cmd.reinitialize"'))).toBe(false);
    expect(n4.some((l) => l.includes('"type":"ha.discarded"'))).toBe(false);
    // Its data directory ends on n2's timeline 2 with no marker naming n4.
    const m4 = world.members.find((m) => m.name === 'n4')!;
    expect(m4.pg.data?.promotion?.member).not.toBe('n4');
  });
});
