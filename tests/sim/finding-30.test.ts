/**
 * Finding 30 (docs/simulation.md; seed 600125215 of round 4's 3-member scan, sync-no-loss, mode
 * quorum+strict): n3's agent froze while its PostgreSQL went on receiving, and acknowledging,
 * the leader's WAL. n2 (its own postmaster restarted behind) raced after the leader was fenced
 * and counted n3's vote from n3's status document right after n3 thawed: a document served from
 * the probe taken before the freeze, behind commits acknowledged through n3. n2 promoted without
 * 2 of them. The status document now says how old its probe is (`probe_age_ms`), and a vote counts
 * only when its position was read after the former primary could last send WAL.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 30', () => {
  it('seed 600125215: a quorum vote from a status document probed before its agent froze does not count', async () => {
    const faults: Fault[] = [
      { kind: 'slow-loop', at: 10, node: 'n1', steps: 14, ms: 798 },
      { kind: 'heal', at: 18 },
      { kind: 'slow-loop', at: 22, node: 'n2', steps: 24, ms: 274 },
      { kind: 'slow-loop', at: 26, node: 'n1', steps: 18, ms: 1041 },
      { kind: 'freeze', at: 38, node: 'n1', steps: 23 },
      { kind: 'pg-crash', at: 44, node: 'n2' },
      { kind: 'freeze', at: 46, node: 'n3', steps: 18 },
    ];
    const { result } = await runSchedule(600125215, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' });
    expect(result.violations).toEqual([]);
  });
});
