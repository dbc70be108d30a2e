/**
 * Finding 23 (docs/simulation.md; issue 24): a switchover's candidate promoted from the parent
 * timeline while a member it could reach ran, with more WAL, on the newer timeline of a leader
 * that had died before writing the `history` key: a second "timeline 2" at the same switch point,
 * and that member then streamed from it (diverged-streaming).
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('ha simulate: finding 23', () => {
  it("seed 1570002001 (diverged-streaming): a switchover candidate behind a reachable member's newer timeline does not promote", async () => {
    // n2 leads; frozen, its fence stops it, its lease runs out; thawed, it wins the race and
    // promotes to timeline 2 (n3 streams it), then its agent crashes and the fence stops it before
    // it wrote the history key. The operator asks for a switchover to n1 (still on timeline 1, at
    // the very point where n2 promoted); when n2's lock runs out n1 raced as the candidate, without
    // comparing WAL, and promoted to its own timeline 2 at the same switch point: n3 (n2's timeline
    // 2, 191 KB further) followed it, the divergence check seeing the same numbers.
    const faults: Fault[] = [
      { kind: 'freeze', at: 5, node: 'n2', steps: 19 },
      { kind: 'freeze', at: 12, node: 'n1', steps: 17 },
      { kind: 'net-delay', at: 12, node: 'n3', steps: 23, ms: 1280 },
      { kind: 'net-partition', at: 26, node: 'n1', peer: 'n2', steps: 14 },
      { kind: 'net-delay', at: 26, node: 'n2', steps: 12, ms: 1240 },
      { kind: 'agent-crash', at: 37, node: 'n2', steps: 11 },
      { kind: 'switchover', at: 44, node: 'n1' },
      { kind: 'freeze', at: 48, node: 'n2', steps: 25 },
    ];
    const { result, world } = await runSchedule(1570002001, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    const journal = world.journalJsonl();
    // n1, the candidate, never promotes; n3, on n2's timeline 2 with the most WAL, takes the lock
    // and promotes to timeline 3; n2, the crashed former primary of timeline 2, is rewound from it.
    expect(journal).not.toMatch(/"node":"n1"[^\n]*"cmd.promote"/);
    expect(journal).toMatch(/"node":"n3"[^\n]*"type":"cmd.promote"/);
    expect(journal).toMatch(/"node":"n2"[^\n]*"type":"ha.rewind","reason":"running pg_rewind from n3 \(timeline 3\)"/);
    expect(world.members.find((m) => m.name === 'n3')?.pg.timeline).toBe(3);
  });
});
