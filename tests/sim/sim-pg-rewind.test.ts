/**
 * SimPg.rewind (docs/simulation.md "pg_rewind"): decided with timeline numbers and switch points
 * as the real tool; the diverged WAL past the fork is dropped, the data takes the source's
 * history, and a crashed target goes through crash recovery first.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/sim/prng.ts';
import { SimClock } from '../../src/sim/sim-clock.ts';
import { divergencePoint, SimPg, type WalData } from '../../src/sim/sim-pg.ts';

function world() {
  const clock = new SimClock(0);
  const pgs = new Map<string, SimPg>();
  let uid = 100;
  const w = {
    clock,
    rng: new Prng(1),
    nextUid: () => ++uid,
    nextSysid: () => '7000000000000000001',
    nextCommitId: () => 1,
    peer: (name: string) => pgs.get(name),
    canConnect: () => true,
    standbysOf: () => [],
    changed: () => undefined,
    flushStandbys: () => undefined,
  };
  const make = (name: string) => {
    const pg = new SimPg(name, w);
    pgs.set(name, pg);
    return pg;
  };
  /** Runs `p` to completion on the simulated clock. */
  const settle = async <T>(p: Promise<T>): Promise<T> => {
    let done = false;
    const r = p.finally(() => (done = true));
    r.catch(() => undefined); // observed below; not an unhandled rejection while the clock runs
    for (let i = 0; i < 100 && !done; i++) await clock.runUntil(clock.now() + 1000);
    return r;
  };
  return { make, settle };
}

const data = (segments: WalData['segments'], lsn: bigint): WalData => ({
  sysid: '7000000000000000001',
  segments,
  lsn,
  checkpoints: [0x1000000n],
});
const up = (name: string) => ({ host: name, port: 5432, name });

describe('SimPg.rewind', () => {
  it('a crashed former primary: crash recovery, then its WAL past the fork is dropped and it takes the leader history', async () => {
    const { make, settle } = world();
    const leader = make('n2');
    const old = make('n1');
    // Both on timeline 1 (uid 1) up to 5000; n2 promoted there (timeline 2, uid 2) and wrote on; n1 wrote on timeline 1.
    leader.data = data(
      [
        { timeline: 1, uid: 1, start: 0n },
        { timeline: 2, uid: 2, start: 5000n },
      ],
      9000n,
    );
    leader.run = 'running';
    leader.clusterState = 'in production';
    old.data = data([{ timeline: 1, uid: 1, start: 0n }], 7000n);
    old.clusterState = 'in production';
    await settle(old.rewind(up('n2')));
    expect(old.data!.segments.map((s) => [s.timeline, s.uid])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(old.data!.lsn).toBe(leader.data!.lsn);
    expect(divergencePoint(old.data!, leader.data!)).toBeUndefined();
    expect(old.clusterState).toBe('in archive recovery');
    expect(old.rewinds).toBe(1);
  });

  it('a target ending before the fork: no rewind required, data untouched', async () => {
    const { make, settle } = world();
    const leader = make('n2');
    const old = make('n1');
    leader.data = data(
      [
        { timeline: 1, uid: 1, start: 0n },
        { timeline: 2, uid: 2, start: 5000n },
      ],
      9000n,
    );
    leader.run = 'running';
    old.data = data([{ timeline: 1, uid: 1, start: 0n }], 4000n);
    old.clusterState = 'shut down';
    await settle(old.rewind(up('n2')));
    expect(old.data!.lsn).toBe(4000n);
    expect(old.rewinds).toBe(0);
  });

  it('fails: source down, other system, a running target', async () => {
    const { make, settle } = world();
    const leader = make('n2');
    const old = make('n1');
    leader.data = data(
      [
        { timeline: 1, uid: 1, start: 0n },
        { timeline: 2, uid: 2, start: 5000n },
      ],
      9000n,
    );
    old.data = data([{ timeline: 1, uid: 1, start: 0n }], 7000n);
    old.clusterState = 'shut down';
    await expect(settle(old.rewind(up('n2')))).rejects.toThrow(/could not connect/);
    leader.run = 'running';
    leader.data = { ...leader.data, sysid: '7000000000000000002' };
    await expect(settle(old.rewind(up('n2')))).rejects.toThrow(/different systems/);
    old.run = 'running';
    await expect(settle(old.rewind(up('n2')))).rejects.toThrow(/postmaster runs/);
  });

  it('a timeline that only looks common (same number and switch point, another promotion): the target keeps what it wrote before the fork by numbers', async () => {
    const { make, settle } = world();
    const leader = make('n2');
    const old = make('n1');
    // n1 and n2 both made "timeline 2" at 5000 (uids 3 and 2); n2 then made timeline 3 at 8000; n1 wrote on to 9000.
    leader.data = data(
      [
        { timeline: 1, uid: 1, start: 0n },
        { timeline: 2, uid: 2, start: 5000n },
        { timeline: 3, uid: 4, start: 8000n },
      ],
      12000n,
    );
    leader.run = 'running';
    old.data = data(
      [
        { timeline: 1, uid: 1, start: 0n },
        { timeline: 2, uid: 3, start: 5000n },
      ],
      9000n,
    );
    old.clusterState = 'shut down';
    await settle(old.rewind(up('n2')));
    // Still holds its own timeline-2 piece: the invariants see a diverged lineage.
    expect(divergencePoint(old.data!, leader.data!)).toBe(5000n);
  });
});

describe('the real agent with use_db_rewind in the simulator', () => {
  it('seed 117 (a partitioned leader, failovers): diverged members are rewound, and no invariant breaks', async () => {
    const { World } = await import('../../src/sim/world.ts');
    const world = new World({ seed: 117, rewind: true, sync: 'off', keepJournal: true });
    const r = await world.run();
    expect(r.violations).toEqual([]);
    expect(r.rewinds).toBeGreaterThanOrEqual(1);
    const events = world.journalJsonl();
    expect(events).toContain('ha.rewind.done');
    expect(events).not.toContain('ha.rewind.failed');
  });
});
