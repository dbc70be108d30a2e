/**
 * Finding 22 (docs/simulation.md): a live leader key cleared as a ghost. The replay of issue 24,
 * seed 1540007367: n2 won the race and created the leader key while its member key (gone with its
 * old lease during a DCS partition) was not published yet; n1, thawed after a freeze, finished a
 * cycle that had begun 12 s earlier and dated its first sighting of that key by the cycle's start.
 * Its next cycle found the key "12 s" without a member key and deleted it while n2 promoted: n2
 * accepted writes with no leader key (leader-lease).
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 22', () => {
  it('seed 1540007367 (leader-lease): a leader key created while another agent was frozen is not cleared as a ghost', async () => {
    const faults: Fault[] = [
      { kind: 'dcs-partition', at: 27, node: 'n1', steps: 8 },
      { kind: 'slow-loop', at: 32, node: 'n1', steps: 26, ms: 1493 },
      { kind: 'dcs-partition', at: 35, node: 'n2', steps: 14 },
      { kind: 'slow-loop', at: 37, node: 'n2', steps: 24, ms: 914 },
      { kind: 'freeze', at: 39, node: 'n1', steps: 20 },
      { kind: 'slow-loop', at: 40, node: 'n3', steps: 17, ms: 933 },
      { kind: 'slow-loop', at: 52, node: 'n2', steps: 13, ms: 165 },
    ];
    const { result, world } = await runSchedule(1540007367, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    const journal = world.journalJsonl();
    // n1 still sees the key as a ghost (n2's member key is not there yet) but leaves it alone.
    expect(journal).toMatch(
      /"node":"n1","machine":"ha","kind":"event","event":\{"type":"ha.lock.ghost","reason":"the leader key names 'n2', which has no member key"/,
    );
    expect(journal).not.toMatch(/ha\.lock\.ghostCleared/);
    // n2 promotes once, under the key it created, and keeps it; n1 starts as n2's replica.
    expect(journal.match(/"node":"n2","machine":"database","kind":"event","event":\{"type":"cmd\.promote"/g)).toHaveLength(1);
    expect(journal).not.toMatch(/"node":"n2"[^\n]*"ha\.lock\.lost"/);
    expect(journal).toMatch(
      /"node":"n1","machine":"database","kind":"transition","event":"cmd\.start","from":"stopped","to":"starting","reason":"starting as a secondary","term":\{"leader":"n2"\}/,
    );
  });
});
