import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import { decideCycle, type CycleInput } from '../../src/domain/ha-cycle.ts';
import type { MemberData } from '../../src/domain/member.ts';
import {
  publishedRole,
  remoteText,
  remoteUpstream,
  standbyBootstrapMethods,
  standbyClusterOf,
  standbyLeaderParameters,
} from '../../src/domain/standby-cluster.ts';

const SC = { host: '10.0.0.9', port: 5433 };
const standby = (extra: Record<string, unknown> = {}) => withDefaults({ standby_cluster: { ...SC, ...extra } });

const member = (name: string, extra: Partial<MemberData> = {}) => ({
  name,
  data: {
    conn_url: `postgres://127.0.0.1:${5432 + Number(name.slice(-1))}/postgres`,
    api_url: `http://127.0.0.1:800${name.slice(-1)}/ha`,
    state: 'running',
    role: 'replica',
    version: '0.1.0',
    ...extra,
  } as MemberData,
});

/** A standby cluster's cycle facts for n1; n2 is the standby leader unless the view says otherwise. */
function input(over: Partial<CycleInput> = {}, view: Partial<ClusterView> = {}): CycleInput {
  return {
    holdsLock: view.leader?.name === 'n1',
    name: 'n1',
    nowMs: 1_000_000,
    config: standby(),
    view: {
      members: [member('n1'), member('n2', { role: view.leader?.name === 'n2' ? 'standby_leader' : 'replica' })],
      initialize: '7000000000000000001',
      history: [],
      ...view,
    },
    dcsOk: true,
    db: { state: 'running', role: 'replica', busy: false },
    hasData: true,
    walBytes: 1000n,
    timeline: 3,
    demoted: false,
    initializedByMe: false,
    tags: {},
    peers: [],
    ...over,
  };
}

const leaderIs = (name: string) => ({ leader: { name, leaseId: '1', revision: '1', createRevision: '1' } });
const decide = (i: CycleInput) => decideCycle(i);
const kinds = (i: CycleInput) => decide(i).actions.map((a) => a.kind);
const stopped = (role: 'replica' | 'primary' | 'uninitialized' = 'replica') => ({ state: 'stopped' as const, role, busy: false });

describe('decideCycle in a standby cluster', () => {
  it('the bootstrap race of a standby cluster clones the remote (the executor), never initdb', () => {
    const d = decide(input({ hasData: false, db: stopped('uninitialized') }, { initialize: undefined, members: [] }));
    expect(d.actions).toEqual([{ kind: 'bootstrap' }]);
    expect(d.message).toBe('trying to bootstrap a new standby cluster from 10.0.0.9:5433');
  });

  it('the race winner whose clone failed clones again (after the back-off)', () => {
    const base = { hasData: false, initializedByMe: true, db: stopped('uninitialized') };
    expect(kinds(input(base, { initialize: '', members: [] }))).toEqual(['bootstrap']);
    expect(kinds(input({ ...base, nextStartAtMs: 1_005_000 }, { initialize: '', members: [] }))).toEqual([]);
    // Not the winner: waits, as in a normal cluster.
    expect(kinds(input({ hasData: false, db: stopped('uninitialized') }, { initialize: '', members: [] }))).toEqual([]);
  });

  it('the winner running as a replica of the remote finishes the bootstrap (initialize, config, lock)', () => {
    expect(kinds(input({ initializedByMe: true }, { initialize: '' }))).toEqual(['finishBootstrap']);
    // Outside a standby cluster a replica is not a finished bootstrap.
    expect(kinds(input({ initializedByMe: true, config: withDefaults({}) }, { initialize: '' }))).not.toContain('finishBootstrap');
  });

  it('the lock holder running as a replica stays a replica: follows the remote and does the duties, no promotion', () => {
    const d = decide(input({ lockRenewal: 'ok' }, leaderIs('n1')));
    expect(d.actions).toEqual([{ kind: 'followRemote' }, { kind: 'leaderDuties' }]);
    expect(d.message).toBe('no action. I am (n1), the standby leader with the lock, replicating from 10.0.0.9:5433');
  });

  it('promote-cluster: without standby_cluster the same lock holder is promoted', () => {
    expect(kinds(input({ lockRenewal: 'ok', config: withDefaults({}) }, leaderIs('n1')))).toEqual(['promote']);
  });

  it('demote-cluster: a primary holding the lock stops and keeps the lock', () => {
    const d = decide(input({ lockRenewal: 'ok', db: { state: 'running', role: 'primary', busy: false } }, leaderIs('n1')));
    expect(d.actions).toEqual([{ kind: 'demote', mode: 'demote-cluster', releaseLock: false }]);
  });

  it('the stopped lock holder starts as the standby leader (remote), and releases the lock after a failed start', () => {
    expect(decide(input({ db: stopped('replica') }, leaderIs('n1'))).actions).toEqual([{ kind: 'start', role: 'replica', remote: true }]);
    // Also after demote-cluster (the machine's role is replica then) and after a crash of a primary.
    expect(decide(input({ db: { state: 'crashed', role: 'primary', busy: false } }, leaderIs('n1'))).actions).toEqual([
      { kind: 'start', role: 'replica', remote: true },
    ]);
    expect(kinds(input({ db: { state: 'start_failed', role: 'replica', busy: false } }, leaderIs('n1')))).toEqual(['releaseLock']);
  });

  it('a lock holder whose renewal failed does not start', () => {
    expect(kinds(input({ db: stopped('replica'), lockRenewal: 'failed' }, leaderIs('n1')))).toEqual([]);
  });

  it('replicas follow the standby leader (no divergence check against the remote timelines)', () => {
    const d = decide(input({ replication: { upstream: undefined, streaming: false } }, leaderIs('n2')));
    expect(d.actions).toEqual([{ kind: 'follow', leader: 'n2' }]);
    expect(d.message).toBe('no action. I am (n1), a secondary, and following a leader (n2)');
  });

  it('a stopped replica starts as a secondary of the standby leader', () => {
    const local = { clusterState: 'shut down in recovery', timeline: 3, checkpointLsn: 10n, minRecoveryLsn: 10n };
    expect(decide(input({ db: stopped('replica'), local }, leaderIs('n2'))).actions).toEqual([
      { kind: 'start', role: 'replica', leader: 'n2' },
    ]);
  });

  it('replicas wait while the standby leader does not run', () => {
    const view = { ...leaderIs('n2'), members: [member('n1'), member('n2', { role: 'standby_leader', state: 'starting' })] };
    expect(kinds(input({ replication: { upstream: undefined, streaming: false } }, view))).toEqual([]);
    expect(decide(input({ replication: { upstream: undefined, streaming: false } }, view)).message).toBe(
      'waiting for leader n2 to run as standby leader before following it',
    );
  });

  it('an empty member clones from the standby leader', () => {
    expect(decide(input({ hasData: false, db: stopped('uninitialized') }, leaderIs('n2'))).actions).toEqual([
      { kind: 'clone', from: 'n2' },
    ]);
  });

  it('failover inside the standby cluster: no leader → the healthiest races; the next cycle it is the standby leader, not a primary', () => {
    const race = decide(input({ peers: [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 900n }] }));
    expect(race.actions).toEqual([{ kind: 'acquireLock' }]);
    expect(race.message).toMatch(/^acquiring the leader lock as the standby leader/);
    expect(kinds(input({ lockRenewal: 'ok' }, leaderIs('n1')))).not.toContain('promote');
  });

  it('synchronous mode is ignored in the race of a standby cluster', () => {
    const config = withDefaults({ synchronous_mode: true, standby_cluster: SC });
    const sync = { value: { leader: 'n2', sync_standby: 'n3' }, revision: '5' };
    expect(kinds(input({ config }, { sync } as Partial<ClusterView>))).toEqual(['acquireLock']);
  });

  it('a switchover hands the standby leader role over (graceful demotion, lock released)', () => {
    const peers = [{ name: 'n2', reachable: true, role: 'replica' as const, state: 'running' as const, walBytes: 1000n }];
    const d = decide(
      input({ lockRenewal: 'ok', peers }, { ...leaderIs('n1'), failover: { value: { leader: 'n1', member: 'n2' }, revision: '3' } }),
    );
    expect(d.actions).toEqual([{ kind: 'demote', mode: 'graceful', releaseLock: true }]);
  });

  it('a standby_cluster with neither host nor restore_command is not a standby cluster', () => {
    expect(kinds(input({ lockRenewal: 'ok', config: withDefaults({ standby_cluster: { port: 5433 } }) }, leaderIs('n1')))).toEqual([
      'promote',
    ]);
  });

  it('a standby cluster fed by its archive alone: bootstrap, standby leader, never a promotion', () => {
    const config = withDefaults({ standby_cluster: { restore_command: 'fetch %f %p', create_replica_methods: ['repo'] } });
    const boot = decide(input({ config, hasData: false, db: stopped('uninitialized') }, { initialize: undefined, members: [] }));
    expect(boot.actions).toEqual([{ kind: 'bootstrap' }]);
    expect(boot.message).toBe('trying to bootstrap a new standby cluster from the archive (restore_command)');
    const holder = decide(input({ config, lockRenewal: 'ok' }, leaderIs('n1')));
    expect(holder.actions.map((a) => a.kind)).toEqual(['followRemote', 'leaderDuties']);
    expect(holder.message).toBe('no action. I am (n1), the standby leader with the lock, replicating from the archive (restore_command)');
  });
});

describe('a member with no data and no leader (no_leader methods)', () => {
  const plain = withDefaults({});
  const empty = (over: Partial<CycleInput> = {}) => ({ config: plain, hasData: false, db: stopped('uninitialized'), ...over });

  it('in an initialized cluster without a leader, clones by its no_leader method (bootstrap without leader)', () => {
    const d = decide(input(empty({ noLeaderClone: true })));
    expect(d.actions).toEqual([{ kind: 'cloneWithoutLeader' }]);
    expect(d.message).toBe('no leader: creating the replica by a no_leader method (bootstrap without leader)');
  });

  it('waits without such a method, during a bootstrap under way, in pause, and during the back-off after a failed clone', () => {
    expect(decide(input(empty())).message).toBe('waiting for leader to bootstrap');
    expect(kinds(input(empty({ noLeaderClone: true }), { initialize: '' }))).toEqual([]);
    expect(kinds(input(empty({ noLeaderClone: true, config: withDefaults({ pause: true }) })))).toEqual([]);
    const backoff = decide(input(empty({ noLeaderClone: true, nextStartAtMs: 1_004_000 })));
    expect(backoff.actions).toEqual([]);
    expect(backoff.message).toBe('clone failed: next attempt in 4 s');
  });

  it('with a leader it clones from the leader as always; with no initialize key the bootstrap race comes first', () => {
    expect(decide(input(empty({ noLeaderClone: true }), leaderIs('n2'))).actions).toEqual([{ kind: 'clone', from: 'n2' }]);
    expect(kinds(input(empty({ noLeaderClone: true }), { initialize: undefined, members: [] }))).toEqual(['bootstrap']);
  });
});

describe('standby cluster helpers', () => {
  it('standbyClusterOf fills the port and keeps the honoured keys', () => {
    expect(standbyClusterOf({ standby_cluster: { host: 'h' } })).toEqual({ host: 'h', port: 5432 });
    expect(standbyClusterOf({ standby_cluster: null })).toBeUndefined();
    expect(standbyClusterOf({})).toBeUndefined();
    expect(
      standbyClusterOf({
        standby_cluster: {
          host: 'h',
          port: 6000,
          primary_slot_name: 's1',
          restore_command: 'cp /a/%f %p',
          recovery_min_apply_delay: '5min',
        },
      }),
    ).toEqual({
      host: 'h',
      port: 6000,
      primary_slot_name: 's1',
      restore_command: 'cp /a/%f %p',
      recovery_min_apply_delay: '5min',
    });
  });

  it('standbyClusterOf: restore_command without host is a standby cluster fed by its archive; neither is none', () => {
    expect(standbyClusterOf({ standby_cluster: { restore_command: 'r', create_replica_methods: ['repo'] } })).toEqual({
      port: 5432,
      restore_command: 'r',
      create_replica_methods: ['repo'],
    });
    expect(standbyClusterOf({ standby_cluster: { port: 5 } })).toBeUndefined();
  });

  it('remoteUpstream, remoteText, standbyBootstrapMethods', () => {
    expect(remoteUpstream({ host: 'h', port: 5 })).toEqual({ host: 'h', port: 5, name: 'standby_cluster' });
    expect(remoteUpstream({ port: 5432, restore_command: 'r' })).toBeUndefined();
    expect(remoteText({ host: 'h', port: 5 })).toBe('h:5');
    expect(remoteText({ port: 5432, restore_command: 'r' })).toBe('the archive (restore_command)');
    expect(standbyBootstrapMethods({ host: 'h', port: 5 })).toEqual(['basebackup']);
    expect(standbyBootstrapMethods({ port: 5432, restore_command: 'r', create_replica_methods: ['repo'] })).toEqual(['repo']);
  });

  it('standbyLeaderParameters: the recovery settings of the standby leader', () => {
    expect(
      standbyLeaderParameters({ host: 'h', port: 1, restore_command: 'x', archive_cleanup_command: 'y', recovery_min_apply_delay: 1000 }),
    ).toEqual({
      restore_command: 'x',
      archive_cleanup_command: 'y',
      recovery_min_apply_delay: 1000,
    });
  });

  it('publishedRole: standby_leader only for the lock holder of a standby cluster running as a replica', () => {
    expect(publishedRole('replica', true, true)).toBe('standby_leader');
    expect(publishedRole('replica', false, true)).toBe('replica');
    expect(publishedRole('replica', true, false)).toBe('replica');
    expect(publishedRole('primary', true, true)).toBe('primary');
  });
});
