/**
 * SyncManager writes the `sync` key only while the leader key is still this member's
 * (src/node/replication/sync-manager.ts; finding 34, docs/simulation.md): the write compares the
 * leader key (value and mod_revision as the view shows them) with the `sync` key's revision in one
 * transaction (Dcs.setSyncUnderLeader). CI's seed 224850351: a leader whose key had been taken by
 * quorum failover, its cycle slow, refreshed its view mid-round, found the key naming its successor
 * and "took it over with no standby"; nobody else could then take over.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView, LeaderLock, SyncState } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import type { PgStatus } from '../../../src/domain/pg-status.ts';
import type { Clock } from '../../../src/node/clock.ts';
import { SyncManager, type SyncManagerDeps } from '../../../src/node/replication/sync-manager.ts';
import { member, pgStatus } from '../fixtures.ts';

const clock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn) => ({ id: setImmediate(fn) }),
  clearTimeout: (h) => h && clearImmediate(h.id as NodeJS.Immediate),
};

/** n1's manager; the store holds `leader` and `sync`; `setSyncUnderLeader` compares both as etcd's transaction does. */
function fixture(store: { leader?: LeaderLock; sync?: { value: SyncState; revision: string } }) {
  const writes: { value: SyncState; leader: { name: string; revision: string } }[] = [];
  const view = (): ClusterView => ({
    members: [member('n1', { role: 'primary' }), member('n2'), member('n3')],
    ...(store.leader ? { leader: store.leader } : {}),
    ...(store.sync ? { sync: store.sync } : {}),
  });
  const deps: SyncManagerDeps = {
    name: 'n1',
    clock,
    log: { warn: () => undefined },
    dcs: {
      setSync: async () => {
        throw new Error('the leader writes the sync key only under its leader key');
      },
      setSyncUnderLeader: async (value, syncRevision, leader) => {
        const ok =
          (store.sync?.revision ?? '0') === syncRevision && store.leader?.name === leader.name && store.leader.revision === leader.revision;
        if (ok) {
          writes.push({ value, leader });
          store.sync = { value, revision: String(Number(store.sync?.revision ?? '0') + 10) };
        }
        return ok;
      },
      refresh: async () => view(),
    },
    state: { config: withDefaults({ synchronous_mode: true }), initializedByMe: false },
    notice: () => undefined,
    probeNow: async () => undefined,
    probe: () => probe,
  };
  const probe: PgStatus = pgStatus({ flushLsn: 100n, synchronousStandbyNames: '', replication: [] });
  return { sync: new SyncManager(deps), view, writes, probe };
}

const lock = (name: string, revision: string): LeaderLock => ({ name, leaseId: '1', revision, createRevision: '3' });

describe("SyncManager: the sync key is written only under this member's leader key", () => {
  it('takes over a key naming another leader, comparing the leader key it holds', async () => {
    const store = {
      leader: lock('n1', '12'),
      sync: { value: { leader: 'n0', sync_standby: null, quorum: 0 } as SyncState, revision: '4' },
    };
    const f = fixture(store);
    await f.sync.run(f.view(), f.probe, async () => undefined);
    expect(f.writes[0]).toEqual({ value: expect.objectContaining({ leader: 'n1' }), leader: { name: 'n1', revision: '12' } });
    expect(store.sync.value.leader).toBe('n1');
  });

  it('a leader whose key was taken after its view was read writes nothing (the transaction fails)', async () => {
    const store: Parameters<typeof fixture>[0] = {
      leader: lock('n1', '12'),
      sync: { value: { leader: 'n0', sync_standby: null, quorum: 0 }, revision: '4' },
    };
    const f = fixture(store);
    const stale = f.view();
    // The take (Dcs.takeLeader) puts the key with n3's name: a new mod_revision; n3 then writes sync.
    store.leader = lock('n3', '20');
    store.sync = { value: { leader: 'n3', sync_standby: null, quorum: 0 }, revision: '21' };
    await f.sync.run({ ...stale, sync: store.sync }, f.probe, async () => undefined);
    expect(f.writes).toEqual([]);
    expect(store.sync.value.leader).toBe('n3');
  });

  it('a view that shows the leader key naming another member writes nothing', async () => {
    const store: Parameters<typeof fixture>[0] = {
      leader: lock('n3', '20'),
      sync: { value: { leader: 'n3', sync_standby: null, quorum: 0 }, revision: '21' },
    };
    const f = fixture(store);
    await f.sync.run(f.view(), f.probe, async () => undefined);
    expect(f.writes).toEqual([]);
    expect(store.sync?.value.leader).toBe('n3');
  });
});
