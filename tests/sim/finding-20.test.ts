/**
 * Finding 20 (docs/simulation.md): in synchronous mode `quorum` with failsafe_mode, a member
 * counted a quorum vote read while the former primary still ran on POST /failsafe calls, after
 * its leader key had gone, and promoted without commits acknowledged through the voter.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 20 (seed 1530007157, sync-no-loss)', () => {
  it('quorum votes count only once the POST /failsafe calls binding the racer have ended', async () => {
    // n2 leads (ANY 1 ("n1","n3"), sync key n1, n3 with quorum 2) and loses the DCS; n1 and n3
    // accept its POST /failsafe at 14.2 s; n2's agent is frozen from 15 s to 22.5 s, its leader
    // key expires at 19.7 s, and its PostgreSQL keeps acknowledging commits through n1 while n3 is
    // cut from n2 (21.5 s). n3's cycle started at 22.5 s read n1's status (a probe from before
    // commits #41 and #42 reached n1) and, once its acceptance had run out (24.2 s, after the 2 s
    // timeout on n2), counted n1's vote: the settle delay ran from the key's disappearance
    // (19.7 s + 1.5 s), not from the end of the failsafe calls.
    const faults: Fault[] = [
      { kind: 'freeze', at: 3, node: 'n1', steps: 17 },
      { kind: 'net-delay', at: 10, node: 'n2', steps: 11, ms: 910 },
      { kind: 'heal', at: 20 },
      { kind: 'freeze', at: 22, node: 'n2', steps: 15 },
      { kind: 'net-partition', at: 35, node: 'n2', peer: 'n3', steps: 22 },
    ];
    const { result, world } = await runSchedule(1530007157, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.sync).toBe('quorum');
    expect(result.failsafe).toBe(true);
    expect(result.violations).toEqual([]);
    expect(result.lost).toBe(0);
    // n3 waits for the votes to settle and never promotes; n2, the sync key's former leader (it
    // holds every commit it had acknowledged), takes the lock and promotes.
    const journal = world.journalJsonl();
    expect(journal).not.toMatch(/"node":"n3"[^\n]*"cmd.promote"/);
    expect(journal).toMatch(
      /"node":"n2"[^\n]*"type":"ha.sync.key","reason":"wrote the sync key before promoting: leader n2, standbys none"/,
    );
    expect(journal).toMatch(/"node":"n2"[^\n]*"cmd.promote"/);
  });
});
