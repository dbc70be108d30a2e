import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import { decideCycle, type CycleInput } from '../../src/domain/ha-cycle.ts';
import type { MemberData } from '../../src/domain/member.ts';

const member = (name: string, extra: Partial<MemberData> = {}) => ({
  name,
  data: { conn_url: `postgres://127.0.0.1:${5432 + Number(name.slice(-1))}/postgres`, api_url: `http://127.0.0.1:800${name.slice(-1)}/ha`, state: 'running', role: 'replica', version: '0.1.0', ...extra } as MemberData,
});

/** A cycle's facts; unless told, this agent holds the lock exactly when the view names it (n1). */
function input(over: Partial<CycleInput> = {}, view: Partial<ClusterView> = {}): CycleInput {
  return {
    holdsLock: view.leader?.name === 'n1',
    name: 'n1',
    nowMs: 1_000_000,
    config: withDefaults({}),
    view: { members: [member('n1'), member('n2')], initialize: '7000000000000000001', history: [], ...view },
    dcsOk: true,
    db: { state: 'running', role: 'replica', busy: false },
    hasData: true,
    walBytes: 1000n,
    timeline: 1,
    gracefulDemotion: false,
    initializedByMe: false,
    tags: {},
    peers: [],
    ...over,
  };
}

const leaderIs = (name: string) => ({ leader: { name, leaseId: '1', revision: '1', createRevision: '1' } });
const kinds = (i: CycleInput) => decideCycle(i).actions.map((a) => a.kind);

describe('decideCycle', () => {
  it.each([
    ['empty data dir, no initialize key → bootstrap race', input({ hasData: false, db: { state: 'stopped', role: 'uninitialized', busy: false } }, { initialize: undefined, members: [] }), ['bootstrap']],
    ['empty data dir, initialize taken, no leader → wait', input({ hasData: false, db: { state: 'stopped', role: 'uninitialized', busy: false } }, { initialize: '' }), []],
    ['empty data dir, nofailover never bootstraps', input({ hasData: false, tags: { nofailover: true }, db: { state: 'stopped', role: 'uninitialized', busy: false } }, { initialize: undefined }), []],
    ['empty data dir, leader exists → clone', input({ hasData: false, db: { state: 'stopped', role: 'uninitialized', busy: false } }, leaderIs('n2')), ['clone']],
    ['bootstrap winner running → finish bootstrap', input({ initializedByMe: true, db: { state: 'running', role: 'primary', busy: false } }, { initialize: '' }), ['finishBootstrap']],
    ['busy → wait', input({ db: { state: 'creating_replica', role: 'uninitialized', busy: true } }, leaderIs('n2')), []],
    ['lock holder with dead database → start as primary', input({ db: { state: 'crashed', role: 'primary', busy: false } }, leaderIs('n1')), ['start']],
    ['lock holder whose start failed → release the lock', input({ db: { state: 'start_failed', role: 'primary', busy: false } }, leaderIs('n1')), ['releaseLock']],
    ['stopped replica with a leader → start as replica', input({ db: { state: 'stopped', role: 'replica', busy: false }, local: { clusterState: 'shut down in recovery', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 10n } }, leaderIs('n2')), ['start']],
    ['crashed former primary behind a newer timeline → stays stopped (diverged)', input({ db: { state: 'stopped', role: 'uninitialized', busy: false }, local: { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n } }, { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] }), []],
    ['crashed former primary, remove_data_directory_on_diverged_timelines → reinitialize', input({ config: withDefaults({ database: { remove_data_directory_on_diverged_timelines: true } }), db: { state: 'stopped', role: 'uninitialized', busy: false }, local: { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n } }, { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] }), ['reinitialize']],
    ['clean former primary before the switch point → start as replica', input({ db: { state: 'stopped', role: 'uninitialized', busy: false }, local: { clusterState: 'shut down', timeline: 1, checkpointLsn: 400n, minRecoveryLsn: 0n } }, { ...leaderIs('n2'), history: [[1, 500, 'x']] }), ['start']],
    ['leader renews and does its duties', input({ db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'ok' }, leaderIs('n1')), ['leaderDuties']],
    ['leader whose renewal failed demotes', input({ db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'failed' }, leaderIs('n1')), ['demote']],
    ['lock holder running as replica promotes', input({ lockRenewal: 'ok' }, leaderIs('n1')), ['promote']],
    ['replica follows the leader', input({}, leaderIs('n2')), ['follow']],
    ['primary without the lock demotes', input({ db: { state: 'running', role: 'primary', busy: false } }, leaderIs('n2')), ['demote']],
    ['DCS unreachable: a primary demotes', input({ dcsOk: false, db: { state: 'running', role: 'primary', busy: false } }, leaderIs('n1')), ['demote']],
    ['DCS unreachable: a replica does nothing', input({ dcsOk: false }, leaderIs('n2')), []],
    ['no leader, healthiest → acquire', input({ peers: [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 900n }] }), ['acquireLock']],
    ['no leader, a peer is ahead → wait', input({ peers: [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 2000n }] }), []],
    ['no leader, old primary still alive → wait', input({ peers: [{ name: 'n2', reachable: true, role: 'primary', state: 'running', walBytes: 900n }] }), []],
    ['no leader, too far behind the last optime → wait', input({}, { status: { optime: 1000 + 2 * 1048576 } }), []],
    ['no leader, paused → no failover', input({ config: withDefaults({ pause: true }) }), []],
    ['no leader, paused, I am the manual candidate → acquire', input({ config: withDefaults({ pause: true }) }, { failover: { value: { leader: 'n2', member: 'n1' }, revision: '3' } }), ['acquireLock']],
    ['no leader, unreachable peers are ignored', input({ peers: [{ name: 'n2', reachable: false }] }), ['acquireLock']],
  ])('%s', (_name, i, expected) => {
    expect(kinds(i)).toEqual(expected);
  });

  it('every decision carries one sentence', () => {
    expect(decideCycle(input({}, leaderIs('n2'))).message).toBe('no action. I am (n1), a secondary, and following a leader (n2)');
    expect(decideCycle(input({ db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'ok' }, leaderIs('n1'))).message).toBe(
      'no action. I am (n1), the leader with the lock',
    );
  });

  describe('switchover carried out by the leader', () => {
    const leaderIn = (failover: object, peers: CycleInput['peers'], nowMs = 1_000_000) =>
      input({ nowMs, db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'ok', peers }, { ...leaderIs('n1'), failover: { value: failover, revision: '5' } });
    const healthy = [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 1000n }];
    it.each([
      ['immediate switchover to a healthy candidate → graceful demotion', leaderIn({ leader: 'n1', member: 'n2' }, healthy), ['demote']],
      ['candidate unreachable → clear the key', leaderIn({ leader: 'n1', member: 'n2' }, [{ name: 'n2', reachable: false }]), ['clearFailover', 'leaderDuties']],
      ['candidate lagging beyond maximum_lag_on_failover → clear the key', leaderIn({ leader: 'n1', member: 'n2' }, [{ ...healthy[0]!, walBytes: 0n }].map((p) => ({ ...p, walBytes: -2_000_000n }))), ['clearFailover', 'leaderDuties']],
      ['wrong leader name → clear the key', leaderIn({ leader: 'n9', member: 'n2' }, healthy), ['clearFailover', 'leaderDuties']],
      ['scheduled in the future → wait', leaderIn({ leader: 'n1', scheduled_at: new Date(1_000_000 + 60_000).toISOString() }, healthy), ['leaderDuties']],
      ['scheduled now → demote', leaderIn({ leader: 'n1', scheduled_at: new Date(1_000_000).toISOString() }, healthy), ['demote']],
      ['scheduled more than 1.5 × loop_wait ago → stale, cleared', leaderIn({ leader: 'n1', scheduled_at: new Date(1_000_000 - 15_001).toISOString() }, healthy), ['clearFailover', 'leaderDuties']],
    ])('%s', (_n, i, expected) => {
      expect(kinds(i)).toEqual(expected);
    });
  });
});
