/**
 * Configuration writes land in the order they were asked for, each with the options of its turn
 * (ConfigApplier.write), and the synchronous-replication manager writes its set again when the
 * one in force is not the one it wrote (SyncManager.run). CI caught the race these close:
 * tests/e2e/sync-rules.test.ts, synchronous_node_count 2 -> 1, the key shrank but PostgreSQL kept
 * FIRST 2: the reconfiguration started by the config change landed after the manager's write of
 * FIRST 1, and the manager, whose written set equalled its target, never wrote it again.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView, SyncState } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import type { PgStatus } from '../../../src/domain/pg-status.ts';
import type { Clock } from '../../../src/node/clock.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import { SyncManager, type SyncManagerDeps } from '../../../src/node/replication/sync-manager.ts';
import { configApplierDeps, databaseAt, member, pgStatus } from '../fixtures.ts';
import type { ConfigureOptions } from '../../../src/postgres/types.ts';

/** A clock whose timers fire on the next turn of the event loop. */
const immediateClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn) => ({ id: setImmediate(fn) }),
  clearTimeout: (h) => h && clearImmediate(h.id as NodeJS.Immediate),
};

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('ConfigApplier.write: one write at a time, options computed at its turn', () => {
  it('a reconfiguration started by a config change cannot land after a newer write', async () => {
    let names = 'FIRST 2 ("node2","node3")';
    const landed: string[] = [];
    const started: string[] = [];
    const gates: ReturnType<typeof deferred>[] = [];
    let reloads = 0;
    const pg = {
      configure: async (o: ConfigureOptions) => {
        const v = String(o.parameters['synchronous_standby_names']);
        started.push(v);
        const gate = deferred();
        gates.push(gate);
        await gate.promise;
        landed.push(v);
      },
      reload: async () => void reloads++,
    };
    const deps = configApplierDeps({
      pg,
      state: { config: withDefaults({ synchronous_mode: true, synchronous_node_count: 2 }), localParameters: {}, tags: {} },
      sync: { parameterValue: () => names },
      db: () => databaseAt('running', 'primary'),
    });
    const applier = new ConfigApplier(deps);
    applier.applyDynamic({ members: [], config: { value: { synchronous_mode: true, synchronous_node_count: 2 }, revision: '5' } });
    // synchronous_node_count 1: the reconfiguration starts (with the set in force: FIRST 2) and
    // stays in flight while the manager writes its new set.
    applier.applyDynamic({ members: [], config: { value: { synchronous_mode: true, synchronous_node_count: 1 }, revision: '6' } });
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['FIRST 2 ("node2","node3")']);
    names = 'FIRST 1 ("node2")';
    const managerWrite = applier.writeAndReload('primary');
    await new Promise((r) => setImmediate(r));
    // The manager's write waits for the one in flight.
    expect(started).toEqual(['FIRST 2 ("node2","node3")']);
    gates[0]!.resolve();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['FIRST 2 ("node2","node3")', 'FIRST 1 ("node2")']);
    gates[1]!.resolve();
    await managerWrite;
    expect(landed).toEqual(['FIRST 2 ("node2","node3")', 'FIRST 1 ("node2")']);
    expect(landed.at(-1)).toBe('FIRST 1 ("node2")');
    expect(reloads).toBe(2);
  });

  it('a failed write does not stop the next one', async () => {
    const calls: string[] = [];
    let fail = true;
    const pg = {
      configure: async (o: ConfigureOptions) => {
        calls.push(o.role);
        if (fail) {
          fail = false;
          throw new Error('disk full');
        }
      },
      reload: async () => undefined,
    };
    const applier = new ConfigApplier(configApplierDeps({ pg }));
    const first = applier.write('replica');
    const second = applier.write('primary');
    await expect(first).rejects.toThrow('disk full');
    await second;
    expect(calls).toEqual(['replica', 'primary']);
  });
});

describe('SyncManager: the written set not in force is written again', () => {
  function fixture(running: { names: string }) {
    let key: SyncState = { leader: 'a', sync_standby: 'b', quorum: 0 };
    let rev = 1;
    const view = (): ClusterView => ({
      members: [member('a', { role: 'primary' }), member('b')],
      sync: { value: key, revision: String(rev) },
    });
    const probe = (): PgStatus =>
      pgStatus({
        flushLsn: 100n,
        synchronousStandbyNames: running.names,
        replication: [
          {
            usename: 'replicator',
            application_name: 'b',
            client_addr: null,
            state: 'streaming',
            sync_state: running.names === '' ? 'async' : 'sync',
            sync_priority: 1,
            flush_lsn: 100n,
          },
        ],
      });
    const notices: string[] = [];
    const deps: SyncManagerDeps = {
      name: 'a',
      clock: immediateClock,
      log: { warn: () => undefined },
      dcs: {
        setSync: async (s: SyncState | null) => {
          if (s) key = s;
          rev++;
          return true;
        },
        setSyncUnderLeader: async (s: SyncState) => {
          key = s;
          rev++;
          return true;
        },
        refresh: async () => view(),
      },
      state: { config: withDefaults({ synchronous_mode: true }), initializedByMe: false },
      notice: (_t: string, text: string) => notices.push(text),
      probeNow: async () => undefined,
      probe,
    };
    const sync = new SyncManager(deps);
    return { sync, view, probe, notices, key: () => key };
  }

  it('writes FIRST 1 again when PostgreSQL runs another value at the next round', async () => {
    const running = { names: 'FIRST 1 ("b")' };
    const f = fixture(running);
    let rewrites = 0;
    const rewrite = async () => {
      rewrites++;
    };
    await f.sync.run(f.view(), f.probe(), rewrite);
    expect(rewrites).toBe(0);
    expect(f.sync.current()?.standbyNames).toBe('FIRST 1 ("b")');
    // A stale write (or a hand edit) leaves PostgreSQL asynchronous.
    running.names = '';
    await f.sync.run(f.view(), f.probe(), async () => {
      rewrites++;
      running.names = 'FIRST 1 ("b")';
    });
    expect(rewrites).toBe(1);
    expect(
      f.notices.some((n) => /in force is "", not "FIRST 1 \(\\"b\\"\)" as written: writing it again/.test(n)),
      f.notices.join('\n'),
    ).toBe(true);
    // In force again: nothing more is written.
    await f.sync.run(f.view(), f.probe(), rewrite);
    expect(rewrites).toBe(1);
    expect(f.key().sync_standby).toBe('b');
  });

  it('keeps writing, one write per round, while the value does not take', async () => {
    const running = { names: 'FIRST 1 ("b")' };
    const f = fixture(running);
    await f.sync.run(f.view(), f.probe(), async () => undefined);
    running.names = '';
    let rewrites = 0;
    const stuck = async () => void rewrites++;
    await f.sync.run(f.view(), f.probe(), stuck);
    await f.sync.run(f.view(), f.probe(), stuck);
    expect(rewrites).toBe(2);
    expect(f.key().sync_standby).toBe('b');
  });
});
