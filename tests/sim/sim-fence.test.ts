/**
 * The fence in the simulator (src/sim/sim-fence.ts, docs/simulation.md "World model", finding 9):
 * the real FenceCore on the simulated clock, driven by the agent's real Fencing; not delayed by
 * the agent's slow event loop; stops the simulated PostgreSQL at a missed deadline and when an
 * armed agent crashes.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule, type RunOptions } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

const BASE: RunOptions = { nodes: 3, steps: 60, freeze: false };

/** Finding 9's replay: the leader n2 answers 710 ms late, its postmaster crashes, then its event loop runs 1.5 s late. */
const SEED_72: Fault[] = [
  { kind: 'net-delay', at: 14, node: 'n2', steps: 20, ms: 710 },
  { kind: 'pg-crash', at: 15, node: 'n2' },
  { kind: 'slow-loop', at: 21, node: 'n2', steps: 21, ms: 1486 },
];

describe('the simulated fence', () => {
  it('finding 9, seed 72: the fence stops the late leader before its lease runs out (no violation)', async () => {
    const { result } = await runSchedule(72, { ...BASE, faults: SEED_72 });
    expect(result.violations).toEqual([]);
    expect(result.fenceFirings?.deadline).toBeGreaterThanOrEqual(1);
  });

  it('finding 9, seed 72 without a fence (watchdog.mode off): leader-lease and single-writer break', async () => {
    const { result } = await runSchedule(72, { ...BASE, faults: SEED_72, watchdog: 'off' });
    expect(result.violations.map((v) => v.invariant)).toContain('leader-lease');
    expect(result.fenceFirings).toEqual({ deadline: 0, agentGone: 0 });
  });

  it("an armed leader's agent crash closes the pipe: the fence stops its PostgreSQL", async () => {
    let agentGone = 0;
    for (const node of ['n1', 'n2', 'n3']) {
      const { result } = await runSchedule(7, { ...BASE, faults: [{ kind: 'agent-crash', at: 2, node, steps: 4 }] });
      expect(result.violations).toEqual([]);
      agentGone += result.fenceFirings?.agentGone ?? 0;
    }
    expect(agentGone).toBe(1);
  });

  it('a leader cut from the DCS demotes itself before its fence fires', async () => {
    for (const node of ['n1', 'n2', 'n3']) {
      const { result } = await runSchedule(7, { ...BASE, faults: [{ kind: 'dcs-partition', at: 2, node, steps: 30 }] });
      expect(result.violations).toEqual([]);
      expect(result.fenceFirings).toEqual({ deadline: 0, agentGone: 0 });
    }
  });
});
