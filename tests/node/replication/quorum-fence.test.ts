/**
 * QuorumFenceWatch (src/node/replication/quorum-fence.ts; issue 28): when a running replica
 * fences its leader, leaves the fence, and lets its stream point at the leader again; driven tick
 * by tick on a manual clock, with an in-memory view of the DCS.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView, SyncState } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import type { MemberData } from '../../../src/domain/member.ts';
import type { PgStatus } from '../../../src/domain/pg-status.ts';
import type { Clock } from '../../../src/node/clock.ts';
import { fenceStepMs, QuorumFenceWatch } from '../../../src/node/replication/quorum-fence.ts';

const ON = withDefaults({ synchronous_mode: 'quorum', synchronous_mode_strict: true, quorum_failover_window: 2 } as Record<
  string,
  unknown
>);

const member = (name: string, role = 'replica') => ({
  name,
  data: {
    conn_url: `postgres://${name}:5432/postgres`,
    api_url: `http://${name}:8008/ha`,
    state: 'running',
    role,
    version: '0',
  } as MemberData,
});

/** n2's watch; n1 leads with sync key {n2, n3}. `leaderUp` / `streaming` are switched by the test. */
function harness() {
  let nowMs = 1_000_000;
  const clock: Clock = { now: () => nowMs, setTimeout: () => ({ id: 0 }), clearTimeout: () => undefined };
  const s = {
    leaderUp: true,
    streaming: true,
    fencedFrom: undefined as string | undefined,
    notices: [] as string[],
    wakes: 0,
    leaderRevision: '7',
    /** The leader key's revision in the store (a take changes it before the view shows it). */
    storedLeaderRevision: '7',
  };
  let sync: { value: SyncState; revision: string } = { value: { leader: 'n1', sync_standby: 'n2,n3', quorum: 1 }, revision: '1' };
  const v = (): ClusterView => ({
    members: [member('n1', 'primary'), member('n2'), member('n3')],
    leader: { name: 'n1', leaseId: '1', revision: s.leaderRevision, createRevision: '7' },
    history: [],
    sync,
  });
  const probe = (): PgStatus => ({ streaming: s.streaming, inRecovery: true, receiveLsn: 5000n, replayLsn: 4000n }) as unknown as PgStatus;
  const watch = new QuorumFenceWatch({
    name: 'n2',
    clock,
    dcs: {
      view: v,
      refresh: async () => v(),
      setSync: async (value, rev) => {
        if (rev !== sync.revision) return false;
        sync = { value: value!, revision: String(Number(sync.revision) + 1) };
        return true;
      },
      setSyncUnderLeader: async (value, rev, leader) => {
        if (rev !== sync.revision || leader.name !== 'n1' || leader.revision !== s.storedLeaderRevision) return false;
        sync = { value, revision: String(Number(sync.revision) + 1) };
        return true;
      },
    },
    config: () => ON,
    holdsLock: () => false,
    database: () => ({ value: 'running', role: 'replica' }),
    freshProbe: async () => probe(),
    probeAfter: async () => probe(),
    fetchStatus: async () => (s.leaderUp ? { state: 'running' } : undefined),
    stopStreaming: async (leader) => {
      s.fencedFrom = leader;
      s.streaming = false;
    },
    unfence: () => {
      s.fencedFrom = undefined;
    },
    fenced: () => s.fencedFrom,
    wake: () => s.wakes++,
    notice: (_t, text) => s.notices.push(text),
  });
  return {
    s,
    watch,
    advance: (ms: number) => (nowMs += ms),
    sync: () => sync,
    setSync: (x: typeof sync) => (sync = x),
  };
}

describe('QuorumFenceWatch', () => {
  it('steps a quarter of the window, 100 ms to 1 s', () => {
    expect([200, 2000, 10_000].map(fenceStepMs)).toEqual([100, 500, 1000]);
  });

  it('fences once the leader has not answered and no WAL came for the whole window: stream stopped, entry recorded at its WAL end', async () => {
    const h = harness();
    h.s.leaderUp = false;
    h.s.streaming = false;
    await h.watch.tick();
    h.advance(1999);
    await h.watch.tick();
    expect(h.s.fencedFrom).toBeUndefined();
    h.advance(1);
    await h.watch.tick();
    expect(h.s.fencedFrom).toBe('n1');
    expect(h.sync().value.fence).toEqual({ leader: 'n1', members: { n2: 5000 } });
    expect(h.s.wakes).toBe(1);
    expect(h.s.notices[0]).toMatch(/^fenced n1: no WAL received and its agent unreachable for 2000 ms; WAL ends at 5000/);
  });

  it('no fence while the leader answers, or while WAL streams (a slow primary), or after a blip shorter than the window', async () => {
    const h = harness();
    h.s.streaming = false;
    for (let n = 0; n < 10; n++) {
      await h.watch.tick();
      h.advance(500);
    }
    h.s.leaderUp = false;
    h.s.streaming = true;
    for (let n = 0; n < 10; n++) {
      await h.watch.tick();
      h.advance(500);
    }
    h.s.streaming = false;
    await h.watch.tick();
    h.advance(1500);
    h.s.leaderUp = true;
    await h.watch.tick();
    h.s.leaderUp = false;
    h.advance(1500);
    await h.watch.tick();
    expect(h.s.fencedFrom).toBeUndefined();
    expect(h.sync().value.fence).toBeUndefined();
  });

  it('no fence of a key without synchronous standbys', async () => {
    const h = harness();
    h.setSync({ value: { leader: 'n1', sync_standby: null, quorum: 0 }, revision: '3' });
    h.s.leaderUp = false;
    h.s.streaming = false;
    await h.watch.tick();
    h.advance(3000);
    await h.watch.tick();
    expect(h.s.fencedFrom).toBeUndefined();
  });

  it('leaves an incomplete fence when the leader answers again, and may stream from it again', async () => {
    const h = harness();
    h.s.leaderUp = false;
    h.s.streaming = false;
    await h.watch.tick();
    h.advance(2000);
    await h.watch.tick();
    h.s.leaderUp = true;
    await h.watch.tick();
    expect(h.sync().value.fence).toBeUndefined();
    expect(h.s.fencedFrom).toBeUndefined();
    expect(h.s.notices.at(-1)).toBe('left the fence of n1: it answers again');
  });

  it('leaves a complete fence only after the leader answered for 2 × the window (its taker did not act), and only under the same leader key', async () => {
    const h = harness();
    h.setSync({
      value: { leader: 'n1', sync_standby: 'n2,n3', quorum: 1, fence: { leader: 'n1', members: { n2: 5000, n3: 4000 } } },
      revision: '5',
    });
    h.s.fencedFrom = 'n1';
    h.s.leaderUp = true;
    await h.watch.tick();
    h.advance(3999);
    await h.watch.tick();
    expect(h.sync().revision).toBe('5');
    expect(h.s.fencedFrom).toBe('n1');
    // The leader key changed in the store meanwhile (a take): the transaction fails, nothing is left.
    h.s.storedLeaderRevision = '8';
    h.advance(1);
    await h.watch.tick();
    expect(h.sync().revision).toBe('5');
    expect(h.s.fencedFrom).toBe('n1');
    h.s.storedLeaderRevision = '7';
    await h.watch.tick();
    expect(h.sync().value.fence).toEqual({ leader: 'n1', members: { n3: 4000 } });
    expect(h.s.fencedFrom).toBeUndefined();
    expect(h.s.notices.at(-1)).toBe('left the complete fence of n1: it answers again');
  });

  it('the stream follows the record: once no fence of the leader lists this member, it is unfenced', async () => {
    const h = harness();
    h.s.fencedFrom = 'n1';
    await h.watch.tick();
    expect(h.s.fencedFrom).toBeUndefined();
    expect(h.s.notices[0]).toBe('no longer fenced from n1: the fence record is gone or the leader key changed');
  });
});
