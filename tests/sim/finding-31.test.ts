/**
 * Finding 31 (docs/simulation.md): seed 930067785 of issue 28's 300,000-schedule scan,
 * `promotion-lag`, asynchronous mode. n3, cut off from the leader n2 for a while, fell 1 MB
 * behind; n1 (a replica 1 MB ahead of n3) lost its agent; the leader n2 stopped on a DCS
 * partition. n3 raced while n1's agent was down and promoted in the same simulated instant as
 * n1's agent came back (its postmaster still running, no WAL position read yet), 1,071,552 bytes
 * behind n1. It replays the same on 63d3060 (round 5's scanned code): older than the quorum mode.
 *
 * Fixed: the restarted agent had answered n3 without any WAL position (role uninitialized, not
 * yet having read its running postmaster), and an answer hid the member key, which still held
 * n1's position. A peer whose answer carries no position now counts by its member key, as a peer
 * that did not answer (only beyond maximum_lag_on_failover: finding 21).
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 31', () => {
  it('seed 930067785: a candidate promoted as a peer 1 MB ahead came back (promotion-lag): its member key holds the race', async () => {
    const faults: Fault[] = [
      { kind: 'pg-crash', at: 0, node: 'n3' },
      { kind: 'net-partition', at: 15, node: 'n3', peer: 'n2', steps: 21 },
      { kind: 'net-partition', at: 23, node: 'n3', peer: 'n2', steps: 27 },
      { kind: 'dcs-partition', at: 41, node: 'n2', steps: 25 },
      { kind: 'agent-crash', at: 51, node: 'n1', steps: 16 },
    ];
    const { result, world } = await runSchedule(930067785, { nodes: 3, steps: 60, freeze: true, faults }, true);
    expect(result.violations).toEqual([]);
    // n3 is held by n1's member key; n1, the most advanced, takes over instead.
    const promotions = world
      .journalJsonl()
      .split('\n')
      .filter((l) => l.includes('"type":"cmd.promote"'))
      .map((l) => (JSON.parse(l) as { node: string }).node);
    expect(promotions).toEqual(['n1']);
  });
});
