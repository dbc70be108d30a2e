/**
 * Finding 21 (docs/simulation.md, issue 24): a member promoted more than maximum_lag_on_failover
 * behind a member whose status answer a network cut had swallowed, the leader's last optime
 * being older than the WAL the leader wrote before it stopped.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 21', () => {
  it('seed 1530014777 (promotion-lag): a member that did not answer still counts through its member key', async () => {
    // Failsafe mode on, asynchronous. n3 is cut from the leader n2 and stops streaming (733 kB
    // behind the leader's last optime); n2 is cut from the DCS, keeps writing while it asks for
    // POST /failsafe (n1 accepts, n3 cannot be reached), then demotes: n1 holds 380 kB past the
    // optime. n3 is cut from n1 while it asks for n1's status; the cut heals before the answer's
    // 2 s timeout, n3 counts n1 as unreachable, wins the race and promotes 1.11 MB behind n1.
    const faults: Fault[] = [
      { kind: 'net-partition', at: 5, node: 'n3', peer: 'n2', steps: 22 },
      { kind: 'net-partition', at: 12, node: 'n2', peer: 'n3', steps: 27 },
      { kind: 'net-delay', at: 14, node: 'n2', steps: 22, ms: 400 },
      { kind: 'dcs-partition', at: 27, node: 'n2', steps: 28 },
      { kind: 'net-partition', at: 36, node: 'n3', peer: 'n1', steps: 10 },
    ];
    const { result, world } = await runSchedule(1530014777, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.failsafe).toBe(true);
    expect(result.violations).toEqual([]);
    // Now n3 stays out of the race ("wal position of n1 (its member key; it did not answer) is
    // more than maximum_lag_on_failover ahead of mine"); n1, holding the most WAL, takes over
    // once its failsafe acceptance has aged out, and nobody has to rewind: no commit is lost.
    const journal = world.journalJsonl();
    expect(journal).toMatch(/"node":"n1","machine":"database","kind":"event","event":\{"type":"cmd.promote"/);
    expect(journal).not.toMatch(/"node":"n3"[^\n]*"cmd.promote"/);
    expect(journal).not.toMatch(/"node":"n1"[^\n]*"cmd.rewind"/);
    expect(result.lost).toBe(0);
  });
});
