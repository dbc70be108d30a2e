/**
 * Finding 24 (docs/simulation.md): seed 1610011577, `liveness-primary`. Failsafe mode on. n3 took
 * the leader lock while n1 was cut from the DCS (n1's member key had expired), wrote the
 * `failsafe` key {n2, n3} and died before its next cycle; n1 came back holding one write more
 * than n2 and n3. Nobody leads again: n1 is vetoed ("not listed in the failsafe key"), n2 and n3
 * deferred to n1 ("wal position of n1 is ahead of my wal position"), and only a leader rewrites
 * the key.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 24', () => {
  it('seed 1610011577 (liveness-primary): a member the failsafe key does not list holds up nobody in the leader race', async () => {
    const faults: Fault[] = [
      { kind: 'agent-crash', at: 8, node: 'n1', steps: 14 },
      { kind: 'dcs-partition', at: 15, node: 'n1', steps: 18 },
      { kind: 'net-partition', at: 18, node: 'n3', peer: 'n2', steps: 12 },
      { kind: 'slow-loop', at: 30, node: 'n2', steps: 25, ms: 1173 },
      { kind: 'agent-crash', at: 32, node: 'n3', steps: 22 },
      { kind: 'pg-crash', at: 42, node: 'n2' },
    ];
    const { result, world } = await runSchedule(1610011577, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.failsafe).toBe(true);
    expect(result.violations).toEqual([]);
    // n2, listed and within maximum_lag_on_failover of n1, takes the lock and promotes; n1, whose
    // WAL went past n2's switch point, is rewound and follows it; n1 never promotes after its
    // bootstrap.
    const journal = world.journalJsonl();
    expect(journal).toMatch(/"node":"n2","machine":"database","kind":"event","event":\{"type":"cmd.promote"/);
    expect(journal).toMatch(/"node":"n1","machine":"ha","kind":"event","event":\{"type":"ha.diverged","reason":"diverged from leader n2/);
    expect(journal).not.toMatch(/"node":"n1"[^\n]*"cmd.promote"/);
    expect(result.primaryAfterHealMs).toBeDefined();
  });
});
