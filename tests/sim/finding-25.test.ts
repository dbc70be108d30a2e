/**
 * Finding 25 (docs/simulation.md; seed 240007662 of the 300,000-schedule run, liveness-replicas):
 * an agent restarted while its PostgreSQL was starting up found it, as LocalPostgres does, and
 * must adopt it instead of failing every start for a minute. The model's start refused any
 * postmaster not stopped ("another server might be running"), so the new agent's start was
 * retried every 200 ms for its whole timeout: the member stayed `starting` past the bound.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 25', () => {
  it('seed 240007662: an agent restarted during its PostgreSQL start-up adopts the postmaster and the member streams again', async () => {
    const faults: Fault[] = [
      { kind: 'freeze', at: 2, node: 'n2', steps: 8 },
      { kind: 'net-delay', at: 18, node: 'n2', steps: 30, ms: 925 },
      { kind: 'slow-loop', at: 28, node: 'n2', steps: 13, ms: 1395 },
      { kind: 'net-delay', at: 56, node: 'n3', steps: 17, ms: 320 },
      { kind: 'switchover', at: 58, node: 'n1' },
      { kind: 'agent-crash', at: 59, node: 'n2', steps: 10 },
    ];
    const { result, world } = await runSchedule(240007662, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    const journal = world.journalJsonl();
    // The restarted agent's start of the postmaster its predecessor launched ends in `running`.
    const n2 = journal.split('\n').filter((l) => l.includes('"node":"n2"') && l.includes('"machine":"database"'));
    const restart = n2.findIndex((l) => l.includes('"kind":"start"') && n2.indexOf(l) > 0);
    expect(restart).toBeGreaterThan(0);
    expect(n2.slice(restart).some((l) => /"from":"starting","to":"running"/.test(l))).toBe(true);
    expect(result.replicasAfterHealMs).toBeDefined();
  });
});
