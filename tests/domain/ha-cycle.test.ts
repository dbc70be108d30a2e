import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import { decideCycle, ghostSighting, type CycleInput } from '../../src/domain/ha-cycle.ts';
import type { MemberData } from '../../src/domain/member.ts';

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

/** The view with the leader's member key showing it running as primary (its promotion finished), unless the key says otherwise. */
function withLeaderRunning(view: ClusterView): ClusterView {
  const leader = view.leader?.name;
  return {
    ...view,
    members: view.members.map((m) =>
      m.name === leader && m.data.role === 'replica' && !m.data.timeline ? { ...m, data: { ...m.data, role: 'primary' } } : m,
    ),
  };
}

/** A cycle's facts; unless told, this agent holds the lock exactly when the view names it (n1). */
function input(over: Partial<CycleInput> = {}, view: Partial<ClusterView> = {}): CycleInput {
  return {
    holdsLock: view.leader?.name === 'n1',
    name: 'n1',
    nowMs: 1_000_000,
    config: withDefaults({}),
    view: withLeaderRunning({ members: [member('n1'), member('n2')], initialize: '7000000000000000001', history: [], ...view }),
    dcsOk: true,
    db: { state: 'running', role: 'replica', busy: false },
    hasData: true,
    walBytes: 1000n,
    timeline: 1,
    demoted: false,
    initializedByMe: false,
    tags: {},
    peers: [],
    ...over,
  };
}

const leaderIs = (name: string) => ({ leader: { name, leaseId: '1', revision: '1', createRevision: '1' } });
/** The dynamic configuration with use_db_rewind off (default on): the rules without pg_rewind. */
const noRewind = (database: Record<string, unknown> = {}) => withDefaults({ database: { use_db_rewind: false, ...database } });
const kinds = (i: CycleInput) => decideCycle(i).actions.map((a) => a.kind);

describe('decideCycle', () => {
  it.each([
    [
      'empty data dir, no initialize key → bootstrap race',
      input({ hasData: false, db: { state: 'stopped', role: 'uninitialized', busy: false } }, { initialize: undefined, members: [] }),
      ['bootstrap'],
    ],
    [
      'empty data dir, initialize taken, no leader → wait',
      input({ hasData: false, db: { state: 'stopped', role: 'uninitialized', busy: false } }, { initialize: '' }),
      [],
    ],
    [
      'empty data dir, nofailover never bootstraps',
      input(
        { hasData: false, tags: { nofailover: true }, db: { state: 'stopped', role: 'uninitialized', busy: false } },
        { initialize: undefined },
      ),
      [],
    ],
    [
      'empty data dir, leader exists → clone',
      input({ hasData: false, db: { state: 'stopped', role: 'uninitialized', busy: false } }, leaderIs('n2')),
      ['clone'],
    ],
    [
      'failed bootstrap this member won, no leader → give the initialize key back (issue 30, item 1)',
      input(
        {
          hasData: false,
          initializedByMe: true,
          bootstrapFailed: 'initdb failed: permission denied',
          db: { state: 'initdb_failed', role: 'uninitialized', busy: false },
        },
        { initialize: '' },
      ),
      ['cancelBootstrap'],
    ],
    [
      'failed bootstrap, but the key holds a system identifier → not given back',
      input(
        {
          hasData: false,
          initializedByMe: true,
          bootstrapFailed: 'initdb failed: x',
          db: { state: 'initdb_failed', role: 'uninitialized', busy: false },
        },
        { initialize: '7000000000000000001' },
      ),
      [],
    ],
    [
      'failed bootstrap of another agent (not won here) → wait',
      input(
        { hasData: false, bootstrapFailed: 'initdb failed: x', db: { state: 'initdb_failed', role: 'uninitialized', busy: false } },
        { initialize: '' },
      ),
      [],
    ],
    [
      'key given back, start back-off running → no race yet',
      input(
        { hasData: false, nextStartAtMs: 1_005_000, db: { state: 'initdb_failed', role: 'uninitialized', busy: false } },
        { initialize: undefined, members: [] },
      ),
      [],
    ],
    [
      'key given back, back-off over → the race again',
      input(
        { hasData: false, nextStartAtMs: 999_000, db: { state: 'initdb_failed', role: 'uninitialized', busy: false } },
        { initialize: undefined, members: [] },
      ),
      ['bootstrap'],
    ],
    [
      'bootstrap winner running → finish bootstrap',
      input({ initializedByMe: true, db: { state: 'running', role: 'primary', busy: false } }, { initialize: '' }),
      ['finishBootstrap'],
    ],
    ['busy → wait', input({ db: { state: 'creating_replica', role: 'uninitialized', busy: true } }, leaderIs('n2')), []],
    [
      'lock holder with dead database → start as primary',
      input({ db: { state: 'crashed', role: 'primary', busy: false } }, leaderIs('n1')),
      ['start'],
    ],
    [
      'lock holder whose start failed → release the lock',
      input({ db: { state: 'start_failed', role: 'primary', busy: false } }, leaderIs('n1')),
      ['releaseLock'],
    ],
    [
      'stopped replica with a leader → start as replica',
      input(
        {
          db: { state: 'stopped', role: 'replica', busy: false },
          local: { clusterState: 'shut down in recovery', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 10n },
        },
        leaderIs('n2'),
      ),
      ['start'],
    ],
    [
      'crashed former primary whose WAL ends at the switch point → start as replica',
      input(
        {
          db: { state: 'stopped', role: 'uninitialized', busy: false },
          local: { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n, walEndLsn: 500n },
        },
        { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] },
      ),
      ['start'],
    ],
    [
      'crashed former primary whose WAL ends past the switch point → rewind (the default)',
      input(
        {
          db: { state: 'stopped', role: 'uninitialized', busy: false },
          local: { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n, walEndLsn: 501n },
        },
        { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] },
      ),
      ['rewind'],
    ],
    [
      'crashed former primary whose WAL end could not be read → rewind (the default)',
      input(
        {
          db: { state: 'stopped', role: 'uninitialized', busy: false },
          local: { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n, walEndError: 'pg_waldump failed' },
        },
        { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] },
      ),
      ['rewind'],
    ],
    [
      'crashed former primary, WAL end unknown, use_db_rewind off → stays stopped (diverged)',
      input(
        {
          config: noRewind(),
          db: { state: 'stopped', role: 'uninitialized', busy: false },
          local: { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n },
        },
        { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] },
      ),
      [],
    ],
    [
      'crashed former primary, use_db_rewind off, remove_data_directory_on_diverged_timelines → reinitialize',
      input(
        {
          config: noRewind({ remove_data_directory_on_diverged_timelines: true }),
          db: { state: 'stopped', role: 'uninitialized', busy: false },
          local: { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n },
        },
        { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] },
      ),
      ['reinitialize'],
    ],
    [
      "crashed replica that followed the leader's timeline (its checkpoint still on the old one) → start as replica",
      input(
        {
          db: { state: 'stopped', role: 'replica', busy: false },
          local: { clusterState: 'in archive recovery', timeline: 2, checkpointLsn: 10n, minRecoveryLsn: 900n, walEndLsn: 900n },
        },
        { ...leaderIs('n2'), history: [[1, 500, 'no recovery target specified']] },
      ),
      ['start'],
    ],
    [
      'clean former primary before the switch point → start as replica',
      input(
        {
          db: { state: 'stopped', role: 'uninitialized', busy: false },
          local: { clusterState: 'shut down', timeline: 1, checkpointLsn: 400n, minRecoveryLsn: 0n },
        },
        { ...leaderIs('n2'), history: [[1, 500, 'x']] },
      ),
      ['start'],
    ],
    [
      'leader renews and does its duties',
      input({ db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'ok' }, leaderIs('n1')),
      ['leaderDuties'],
    ],
    [
      'leader whose renewal failed demotes',
      input({ db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'failed' }, leaderIs('n1')),
      ['demote'],
    ],
    ['lock holder running as replica promotes', input({ lockRenewal: 'ok' }, leaderIs('n1')), ['promote']],
    ['replica follows the leader', input({}, leaderIs('n2')), ['follow']],
    ['primary without the lock demotes', input({ db: { state: 'running', role: 'primary', busy: false } }, leaderIs('n2')), ['demote']],
    [
      'DCS unreachable: a primary demotes',
      input({ dcsOk: false, db: { state: 'running', role: 'primary', busy: false } }, leaderIs('n1')),
      ['demote'],
    ],
    ['DCS unreachable: a replica does nothing', input({ dcsOk: false }, leaderIs('n2')), []],
    [
      'no leader, healthiest → acquire',
      input({ peers: [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 900n }] }),
      ['acquireLock'],
    ],
    [
      'no leader, a peer is ahead → wait',
      input({ peers: [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 2000n }] }),
      [],
    ],
    [
      'no leader, old primary still alive → wait',
      input({ peers: [{ name: 'n2', reachable: true, role: 'primary', state: 'running', walBytes: 900n }] }),
      [],
    ],
    ['no leader, too far behind the last optime → wait', input({}, { status: { optime: 1000 + 2 * 1048576 } }), []],
    ['no leader, paused → no failover', input({ config: withDefaults({ pause: true }) }), []],
    [
      'no leader, paused, I run as primary of this cluster → acquire (the reference: its leader key expired during a takeover)',
      input({
        config: withDefaults({ pause: true }),
        db: { state: 'running', role: 'primary', busy: false },
        sysid: '7000000000000000001',
      }),
      ['acquireLock'],
    ],
    [
      'no leader, paused, I run as primary, no initialize key → acquire',
      input({ config: withDefaults({ pause: true }), db: { state: 'running', role: 'primary', busy: false } }, { initialize: undefined }),
      ['acquireLock'],
    ],
    [
      'no leader, paused, I run as primary but my system identifier is not known → wait',
      input({ config: withDefaults({ pause: true }), db: { state: 'running', role: 'primary', busy: false } }),
      [],
    ],
    [
      'no leader, paused, I run as primary, a manual failover names another member → wait',
      input(
        { config: withDefaults({ pause: true }), db: { state: 'running', role: 'primary', busy: false }, sysid: '7000000000000000001' },
        { failover: { value: { leader: 'n1', member: 'n2' }, revision: '3' } },
      ),
      [],
    ],
    [
      'no leader, paused, standby cluster leader running in recovery → wait',
      input({
        config: withDefaults({ pause: true, standby_cluster: { host: '10.0.0.9', port: 5432 } }),
        db: { state: 'running', role: 'replica', busy: false },
        sysid: '7000000000000000001',
      }),
      [],
    ],
    [
      'no leader, paused, I am the manual candidate → acquire',
      input({ config: withDefaults({ pause: true }) }, { failover: { value: { leader: 'n2', member: 'n1' }, revision: '3' } }),
      ['acquireLock'],
    ],
    ['no leader, unreachable peers are ignored', input({ peers: [{ name: 'n2', reachable: false }] }), ['acquireLock']],
    [
      'no leader, a peer that did not answer published more than maximum_lag_on_failover ahead in its member key → wait (finding 21)',
      input(
        { peers: [{ name: 'n2', reachable: false }] },
        { members: [member('n1'), member('n2', { xlog_location: 1000 + 1048577, timeline: 1 })] },
      ),
      [],
    ],
    [
      'no leader, a peer that did not answer published within maximum_lag_on_failover in its member key → acquire',
      input(
        { peers: [{ name: 'n2', reachable: false }] },
        { members: [member('n1'), member('n2', { xlog_location: 1000 + 1048576, timeline: 1 })] },
      ),
      ['acquireLock'],
    ],
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
      input(
        { nowMs, db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'ok', peers },
        { ...leaderIs('n1'), failover: { value: failover, revision: '5' } },
      );
    const healthy = [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 1000n }];
    it.each([
      ['immediate switchover to a healthy candidate → graceful demotion', leaderIn({ leader: 'n1', member: 'n2' }, healthy), ['demote']],
      [
        'candidate unreachable → clear the key',
        leaderIn({ leader: 'n1', member: 'n2' }, [{ name: 'n2', reachable: false }]),
        ['clearFailover', 'leaderDuties'],
      ],
      [
        'candidate lagging beyond maximum_lag_on_failover → clear the key',
        leaderIn(
          { leader: 'n1', member: 'n2' },
          [{ ...healthy[0]!, walBytes: 0n }].map((p) => ({ ...p, walBytes: -2_000_000n })),
        ),
        ['clearFailover', 'leaderDuties'],
      ],
      ['wrong leader name → clear the key', leaderIn({ leader: 'n9', member: 'n2' }, healthy), ['clearFailover', 'leaderDuties']],
      [
        'scheduled in the future → wait',
        leaderIn({ leader: 'n1', scheduled_at: new Date(1_000_000 + 60_000).toISOString() }, healthy),
        ['leaderDuties'],
      ],
      ['scheduled now → demote', leaderIn({ leader: 'n1', scheduled_at: new Date(1_000_000).toISOString() }, healthy), ['demote']],
      [
        'scheduled more than 1.5 × loop_wait ago → stale, cleared',
        leaderIn({ leader: 'n1', scheduled_at: new Date(1_000_000 - 15_001).toISOString() }, healthy),
        ['clearFailover', 'leaderDuties'],
      ],
    ])('%s', (_n, i, expected) => {
      expect(kinds(i)).toEqual(expected);
    });

    it.each([
      ['unreachable', [{ name: 'n2', reachable: false }], "switchover to n2 refused: n2 did not answer the leader's status request"],
      [
        'behind in WAL',
        [{ ...healthy[0]!, walBytes: -2_000_000n }],
        /^switchover to n2 refused: n2 is \d+ bytes behind the leader \(maximum_lag_on_failover 1048576\)$/,
      ],
      [
        'on an older timeline',
        [{ ...healthy[0]!, timeline: 0 }],
        /^switchover to n2 refused: n2 is on timeline 0, behind the cluster's 1 \(it has not followed the current leader yet\)$/,
      ],
      ['not a member', [], 'switchover to n2 refused: n2 is not a member of the cluster'],
      ['stopped', [{ ...healthy[0]!, state: 'stopped' }], 'switchover to n2 refused: n2 is not running (stopped)'],
    ] as const)('a refused switchover says why (%s) in the sentence and the action (issue 30, item 5)', (_n, peers, why) => {
      const dec = decideCycle(leaderIn({ leader: 'n1', member: 'n2' }, [...peers] as CycleInput['peers']));
      const clear = dec.actions.find((a) => a.kind === 'clearFailover');
      expect(clear && 'refused' in clear ? clear.refused : undefined).toMatch(why);
      expect(dec.message).toMatch(/: clearing the failover key$/);
    });
  });
});

describe('decideCycle: lock ownership, ghost leaders, start back-off and divergence', () => {
  const stopped = { state: 'stopped', role: 'replica', busy: false } as const;
  const runningPrimary = { state: 'running', role: 'primary', busy: false } as const;
  const cleanReplicaStop = { clusterState: 'shut down in recovery', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 10n };
  const decide = (i: CycleInput) => decideCycle(i);
  /** Actions that would make n1 lead on, or follow, a lock it does not hold. */
  const leadsOrFollowsItself = (i: CycleInput) =>
    decide(i).actions.some(
      (a) =>
        a.kind === 'acquireLock' ||
        a.kind === 'promote' ||
        (a.kind === 'start' && a.role === 'primary') ||
        (a.kind === 'follow' && a.leader === 'n1'),
    );

  describe('the view names me but this agent does not hold the lock', () => {
    it('a running primary demotes', () => {
      const i = input({ holdsLock: false, db: runningPrimary, lockRenewal: 'ok' }, leaderIs('n1'));
      expect(kinds(i)).toEqual(['demote']);
      expect(leadsOrFollowsItself(i)).toBe(false);
    });

    it.each([
      ['stopped replica', { db: stopped, local: cleanReplicaStop }],
      ['crashed former primary', { db: { state: 'crashed', role: 'primary', busy: false } }],
      [
        'stopped former primary',
        {
          db: { state: 'stopped', role: 'uninitialized', busy: false },
          local: { clusterState: 'shut down', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n },
        },
      ],
    ] as Array<[string, Partial<CycleInput>]>)('a %s takes no action and waits for the key to clear', (_n, over) => {
      const i = input({ holdsLock: false, ...over }, leaderIs('n1'));
      const r = decide(i);
      expect(r.actions).toEqual([]);
      expect(r.message.startsWith('the leader key still names me')).toBe(true);
      expect(leadsOrFollowsItself(i)).toBe(false);
    });

    it('a running replica neither promotes nor follows itself', () => {
      const i = input({ holdsLock: false, lockRenewal: 'ok', replication: { upstream: undefined, streaming: false } }, leaderIs('n1'));
      expect(leadsOrFollowsItself(i)).toBe(false);
      expect(kinds(i)).not.toContain('promote');
    });

    it('holding the lock on the same view still leads (the rule is about holdsLock, not the view)', () => {
      expect(kinds(input({ holdsLock: true, db: runningPrimary, lockRenewal: 'ok' }, leaderIs('n1')))).toEqual(['leaderDuties']);
      expect(kinds(input({ holdsLock: true, db: { state: 'crashed', role: 'primary', busy: false } }, leaderIs('n1')))).toEqual(['start']);
    });
  });

  it('holdsLock while the view shows another leader (renewed, view stale) still counts as the leader', () => {
    const r = decide(input({ holdsLock: true, db: runningPrimary, lockRenewal: 'ok' }, leaderIs('n2')));
    expect(r.actions.map((a) => a.kind)).toEqual(['leaderDuties']);
    expect(r.message).toBe('no action. I am (n1), the leader with the lock');
    expect(kinds(input({ holdsLock: true, lockRenewal: 'ok' }, leaderIs('n2')))).toEqual(['promote']);
  });

  describe('a leader key naming a member without a member key (ghost)', () => {
    const ghost = leaderIs('n9');
    const ttlMs = withDefaults({}).ttl * 1000;

    it('a running replica does not follow it and says it is not a member', () => {
      const r = decide(input({ ghostLeaderSinceMs: 1_000_000 - 1_000 }, ghost));
      expect(r.actions).toEqual([]);
      expect(r.message).toContain("'n9'");
      expect(r.message).toContain('not a member');
    });

    it('a stopped member does not start as its replica', () => {
      const r = decide(input({ db: stopped, local: cleanReplicaStop }, ghost));
      expect(r.actions.filter((a) => a.kind === 'start' || a.kind === 'follow')).toEqual([]);
      expect(r.message).toContain('not a member');
    });

    it('a running primary without the lock demotes', () => {
      expect(kinds(input({ db: runningPrimary }, ghost))).toEqual(['demote']);
    });

    it('after ttl it is cleared; before ttl it is not', () => {
      expect(kinds(input({ ghostLeaderSinceMs: 1_000_000 - ttlMs - 1 }, ghost))).toEqual(['clearGhostLeader']);
      expect(kinds(input({ ghostLeaderSinceMs: 1_000_000 - ttlMs + 1_000 }, ghost))).toEqual([]);
      expect(kinds(input({}, ghost))).toEqual([]);
      // The ttl is the configured one.
      const config = withDefaults({ ttl: 60 });
      expect(kinds(input({ config, ghostLeaderSinceMs: 1_000_000 - ttlMs - 1 }, ghost))).toEqual([]);
      expect(kinds(input({ config, ghostLeaderSinceMs: 1_000_000 - 60_001 }, ghost))).toEqual(['clearGhostLeader']);
    });

    it('paused: never cleared', () => {
      const r = decide(input({ config: withDefaults({ pause: true }), ghostLeaderSinceMs: 1_000_000 - 10 * ttlMs }, ghost));
      expect(r.actions.map((a) => a.kind)).not.toContain('clearGhostLeader');
      expect(r.message).toContain('not a member');
    });

    describe('ghostSighting: since when this incarnation of the key has been seen as a ghost (finding 22)', () => {
      const key = (name: string, revision: string) => ({ leader: { name, leaseId: '1', revision, createRevision: revision } });
      const view = (over: Partial<ClusterView>): ClusterView => ({
        members: [member('n1'), member('n2')],
        initialize: '7000000000000000001',
        history: [],
        ...over,
      });
      const seen = { name: 'n9', revision: '52', sinceMs: 990_000 };
      it.each([
        ['no leader key: none', undefined, view({}), undefined],
        ['the key names a member: none', seen, view(key('n2', '52')), undefined],
        ['first seen: dated when the view was read', undefined, view(key('n9', '52')), { name: 'n9', revision: '52', sinceMs: 1_000_000 }],
        ['the same key again: the first sighting stays', seen, view(key('n9', '52')), seen],
        [
          'the key deleted and created again under the same name: counted again from now',
          seen,
          view(key('n9', '61')),
          { name: 'n9', revision: '61', sinceMs: 1_000_000 },
        ],
        ['another name: counted again from now', seen, view(key('n8', '52')), { name: 'n8', revision: '52', sinceMs: 1_000_000 }],
      ] as const)('%s', (_n, previous, v, expected) => {
        expect(ghostSighting(previous, v, 1_000_000)).toEqual(expected);
      });
    });
  });

  describe('start back-off', () => {
    it.each([
      ['with a leader', leaderIs('n2')],
      ['without a leader', {}],
    ])('%s: no start before nextStartAtMs, a start after it', (_n, view) => {
      const waiting = decide(input({ db: stopped, local: cleanReplicaStop, nextStartAtMs: 1_000_000 + 4_500 }, view));
      expect(waiting.actions).toEqual([]);
      expect(waiting.message).toBe('start failed: next attempt in 5 s');
      expect(kinds(input({ db: stopped, local: cleanReplicaStop, nextStartAtMs: 1_000_000 - 1 }, view))).toEqual(['start']);
      expect(kinds(input({ db: stopped, local: cleanReplicaStop, nextStartAtMs: 1_000_000 }, view))).toEqual(['start']);
    });
  });

  describe('divergence of a stopped former primary', () => {
    const formerPrimary = { state: 'stopped', role: 'uninitialized', busy: false } as const;
    /** n2 leads on timeline 2 (published in its member key); history as given. */
    const newLeader = (history: ClusterView['history']): Partial<ClusterView> => ({
      ...leaderIs('n2'),
      members: [member('n1'), member('n2', { role: 'primary', timeline: 2 })],
      history,
    });
    const cleanStop = (checkpointLsn: bigint) => ({ clusterState: 'shut down', timeline: 1, checkpointLsn, minRecoveryLsn: 0n });

    it.each([
      ['clean shutdown', cleanStop(400n)],
      ['crash (in production)', { clusterState: 'in production', timeline: 1, checkpointLsn: 400n, minRecoveryLsn: 0n }],
    ])('%s: the leader published timeline 2 but history lacks timeline 1 → wait, no start', (_n, local) => {
      const r = decide(input({ db: formerPrimary, local }, newLeader([])));
      expect(r.actions).toEqual([]);
      expect(r.message).toContain('waiting for the timeline history');
      expect(r.diverged).toBeUndefined();
    });

    it('clean shutdown before the switch point → start as a replica of the leader', () => {
      const r = decide(input({ db: formerPrimary, local: cleanStop(400n) }, newLeader([[1, 500, 'x']])));
      expect(r.actions).toEqual([{ kind: 'start', role: 'replica', leader: 'n2' }]);
      expect(r.diverged).toBeUndefined();
    });

    it.each([500n, 600n])('checkpoint at %i (switch point 500), use_db_rewind off → no start, diverged', (lsn) => {
      const r = decide(input({ config: noRewind(), db: formerPrimary, local: cleanStop(lsn) }, newLeader([[1, 500, 'x']])));
      expect(r.actions).toEqual([]);
      expect(r.diverged).toContain('n2');
      expect(r.message).toContain('diverged');
    });

    it.each([500n, 600n])('checkpoint at %i with remove_data_directory_on_diverged_timelines (use_db_rewind off) → reinitialize', (lsn) => {
      const config = noRewind({ remove_data_directory_on_diverged_timelines: true });
      const r = decide(input({ config, db: formerPrimary, local: cleanStop(lsn) }, newLeader([[1, 500, 'x']])));
      expect(r.actions).toEqual([{ kind: 'reinitialize' }]);
      expect(r.diverged).toBeDefined();
    });

    it('the history key alone (no published timeline) also gives the switch point', () => {
      const view = { ...leaderIs('n2'), history: [[1, 500, 'x']] } as Partial<ClusterView>;
      expect(kinds(input({ db: formerPrimary, local: cleanStop(400n) }, view))).toEqual(['start']);
      expect(decide(input({ db: formerPrimary, local: cleanStop(700n) }, view)).diverged).toBeDefined();
    });
  });

  describe('a running replica and its leader', () => {
    /** n2 leads on timeline 2; it left timeline 1 at 500. n1 runs as a replica on timeline 1. */
    const view: Partial<ClusterView> = {
      ...leaderIs('n2'),
      members: [member('n1'), member('n2', { role: 'primary', timeline: 2 })],
      history: [[1, 500, 'x']],
    };
    const replica = (walBytes: bigint, replication: CycleInput['replication'], over: Partial<CycleInput> = {}) =>
      input({ walBytes, timeline: 1, replication, ...over }, view);

    it('about to follow a new leader with WAL past the switch point → stop, diverged', () => {
      const r = decide(replica(600n, { upstream: undefined, streaming: false }));
      expect(r.actions.map((a) => a.kind)).toEqual(['stop']);
      expect(r.diverged).toBeDefined();
      expect(r.actions).not.toContainEqual(expect.objectContaining({ kind: 'follow' }));
    });

    it('about to follow from another upstream, WAL past the switch point → stop', () => {
      expect(kinds(replica(600n, { upstream: 'n3', streaming: true }))).toEqual(['stop']);
    });

    it.each([500n, 400n])('about to follow a new leader with WAL at %i (switch point 500) → follow', (wal) => {
      const r = decide(replica(wal, { upstream: undefined, streaming: false }));
      expect(r.actions).toEqual([{ kind: 'follow', leader: 'n2' }]);
      expect(r.diverged).toBeUndefined();
    });

    it('diverged with remove_data_directory_on_diverged_timelines (use_db_rewind off) → stop first (the receipt and re-clone come when stopped)', () => {
      const config = noRewind({ remove_data_directory_on_diverged_timelines: true });
      expect(kinds(replica(600n, { upstream: undefined, streaming: false }, { config }))).toEqual(['stop']);
    });

    it('about to follow a leader whose history is not written yet → wait', () => {
      const r = decide(
        input({ walBytes: 400n, timeline: 1, replication: { upstream: undefined, streaming: false } }, { ...view, history: [] }),
      );
      expect(r.actions).toEqual([]);
      expect(r.message).toContain('waiting for the timeline history');
    });

    it('already following the leader and streaming → follow without a divergence check', () => {
      const r = decide(replica(600n, { upstream: 'n2', streaming: true }));
      expect(r.actions).toEqual([{ kind: 'follow', leader: 'n2' }]);
      expect(r.diverged).toBeUndefined();
    });

    it('following the leader, not streaming for less than max(2 × loop_wait, retry_timeout) → follow, no check', () => {
      // Defaults: loop_wait 10, retry_timeout 10 → 20 s.
      expect(kinds(replica(600n, { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 19_000 }))).toEqual(['follow']);
      // loop_wait 2, retry_timeout 10 → 10 s (more than 2 × loop_wait).
      const config = withDefaults({ loop_wait: 2, retry_timeout: 10 });
      expect(kinds(replica(600n, { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 9_000 }, { config }))).toEqual([
        'follow',
      ]);
    });

    it('following the leader, not streaming for longer than the grace, diverged → stop', () => {
      const r = decide(replica(600n, { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 21_000 }));
      expect(r.actions.map((a) => a.kind)).toEqual(['stop']);
      expect(r.diverged).toBeDefined();
      const config = withDefaults({ loop_wait: 2, retry_timeout: 10 });
      expect(kinds(replica(600n, { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 11_000 }, { config }))).toEqual([
        'stop',
      ]);
      const longLoop = withDefaults({ loop_wait: 20, retry_timeout: 10 });
      expect(
        kinds(replica(600n, { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 30_000 }, { config: longLoop })),
      ).toEqual(['follow']);
      expect(
        kinds(replica(600n, { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 41_000 }, { config: longLoop })),
      ).toEqual(['stop']);
    });

    it('following the leader, not streaming for longer than the grace, not diverged → follow, saying so', () => {
      const r = decide(replica(400n, { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 42_000 }));
      expect(r.actions).toEqual([{ kind: 'follow', leader: 'n2' }]);
      expect(r.message).toContain('not streaming');
      expect(r.message).toContain('42 s');
      expect(r.diverged).toBeUndefined();
    });
  });

  describe('an invalid failover key', () => {
    const leaderWith = (peers: CycleInput['peers']) =>
      input(
        { db: runningPrimary, lockRenewal: 'ok', peers },
        { ...leaderIs('n1'), failoverInvalid: { reason: 'scheduled_at is not a date', revision: '8' } },
      );

    it.each([
      ['no peers', []],
      ['a healthy peer', [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 1000n }]],
    ] as Array<[string, CycleInput['peers']]>)('the leader clears it and never demotes (%s)', (_n, peers) => {
      const r = decide(leaderWith(peers));
      const k = r.actions.map((a) => a.kind);
      expect(k).toContain('clearFailover');
      expect(k).toContain('leaderDuties');
      expect(k).not.toContain('demote');
      expect(r.message).toContain('invalid failover key');
      expect(r.message).toContain('scheduled_at is not a date');
    });

    it('a replica leaves it alone', () => {
      const k = kinds(input({}, { ...leaderIs('n2'), failoverInvalid: { reason: 'bad', revision: '8' } }));
      expect(k).toEqual(['follow']);
    });
  });
});

describe('decideCycle: a leader whose promotion has not finished', () => {
  const promoting = {
    leader: { name: 'n2', leaseId: '1', revision: '1', createRevision: '1' },
    members: [member('n1'), member('n2', { role: 'replica', timeline: 1 })],
  };
  it('a stopped member waits instead of starting as its replica (its member key still shows the old timeline)', () => {
    const i = input(
      {
        db: { state: 'stopped', role: 'replica', busy: false },
        local: { clusterState: 'shut down', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n },
      },
      promoting,
    );
    const dec = decideCycle(i);
    expect(dec.actions).toEqual([]);
    expect(dec.message).toMatch(/waiting for leader n2 to run as primary/);
  });
  it('a running replica does not re-point at it yet', () => {
    const dec = decideCycle(input({ replication: { upstream: undefined, streaming: false } }, promoting));
    expect(dec.actions).toEqual([]);
    expect(dec.message).toMatch(/waiting for leader n2 to run as primary/);
  });
});

describe('decideCycle: clone back-off', () => {
  const empty = { db: { state: 'stopped' as const, role: 'uninitialized' as const, busy: false }, hasData: false };
  const leader = { leader: { name: 'n2', leaseId: '1', revision: '1', createRevision: '1' } };
  it('a clone that failed is not tried again before nextStartAtMs', () => {
    expect(kinds(input({ ...empty, nextStartAtMs: 1_000_000 + 4000 }, leader))).toEqual([]);
    expect(decideCycle(input({ ...empty, nextStartAtMs: 1_000_000 + 4000 }, leader)).message).toBe('clone failed: next attempt in 4 s');
  });
  it('after nextStartAtMs the clone runs', () => {
    expect(kinds(input({ ...empty, nextStartAtMs: 1_000_000 - 1 }, leader))).toEqual(['clone']);
  });
});

describe('decideCycle: the lock holder whose promotion a crash cut short', () => {
  const mine = { leader: { name: 'n1', leaseId: '1', revision: '1', createRevision: '1' } };
  it('starts as a replica (the next cycle promotes it) when its data directory last ran as a replica', () => {
    const dec = decideCycle(
      input(
        {
          db: { state: 'crashed', role: 'replica', busy: false },
          local: { clusterState: 'in archive recovery', timeline: 2, checkpointLsn: 10n, minRecoveryLsn: 20n },
        },
        mine,
      ),
    );
    expect(dec.actions).toEqual([{ kind: 'start', role: 'replica' }]);
  });
  it('a crashed primary starts as primary in place', () => {
    const dec = decideCycle(
      input(
        {
          db: { state: 'crashed', role: 'primary', busy: false },
          local: { clusterState: 'in production', timeline: 2, checkpointLsn: 10n, minRecoveryLsn: 0n },
        },
        mine,
      ),
    );
    expect(dec.actions).toEqual([{ kind: 'start', role: 'primary' }]);
  });
  it('once running as a replica with the lock, it promotes', () => {
    expect(kinds(input({ lockRenewal: 'ok' }, mine))).toEqual(['promote']);
  });
});

describe("a fork on the leader's own timeline number (issue 24: a replica that never streamed again)", () => {
  // n2 leads on timeline 2 (history: timeline 1 ended at 500); n1 runs on "timeline 2" too.
  const view: Partial<ClusterView> = {
    ...leaderIs('n2'),
    members: [member('n1'), member('n2', { role: 'primary', timeline: 2 })],
    history: [[1, 500, 'x']],
  };
  const stalled = (walBytes: bigint, leaderWal?: CycleInput['leaderWal'], over: Partial<CycleInput> = {}) =>
    input(
      {
        walBytes,
        timeline: 2,
        replication: { upstream: 'n2', streaming: false, notStreamingSinceMs: 1_000_000 - 60_000 },
        ...(leaderWal ? { leaderWal } : {}),
        ...over,
      },
      view,
    );

  it("not streaming past the grace, its WAL past the leader's own on the same timeline → stop (then re-cloned: pg_rewind cannot see such a fork), the fork kept", () => {
    const r = decideCycle(stalled(900n, { timeline: 2, walBytes: 800n }));
    expect(r.actions.map((a) => a.kind)).toEqual(['stop']);
    expect(r.diverged).toContain("goes past the leader's own (800) on the same timeline 2");
    expect(r.sameNumberFork).toEqual({ leader: 'n2', timeline: 2, localEnd: 900n, leaderEnd: 800n });
  });

  it('at or behind the leader\'s position, or the leader on another timeline, or no position read → only "not streaming"', () => {
    for (const i of [
      stalled(800n, { timeline: 2, walBytes: 800n }),
      stalled(700n, { timeline: 2, walBytes: 800n }),
      stalled(900n, { timeline: 3, walBytes: 800n }),
      stalled(900n),
    ]) {
      const r = decideCycle(i);
      expect(r.actions).toEqual([{ kind: 'follow', leader: 'n2' }]);
      expect(r.sameNumberFork).toBeUndefined();
    }
  });

  it('stopped on that timeline with the fork kept → diverged although the history files agree: re-cloned by default, stays stopped with remove_data_directory_on_rewind_failure off', () => {
    const fork = { leader: 'n2', timeline: 2, localEnd: 900n, leaderEnd: 800n };
    const local = {
      clusterState: 'shut down in recovery',
      timeline: 2,
      checkpointLsn: 600n,
      minRecoveryLsn: 900n,
      walEndLsn: 900n,
      history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }],
    };
    const stopped = { db: { state: 'stopped', role: 'replica', busy: false } as const, local };
    expect(kinds(input({ ...stopped }, view))).toEqual(['start']);
    const r = decideCycle(input({ ...stopped, sameNumberFork: fork }, view));
    expect(r.actions).toEqual([{ kind: 'reinitialize' }]);
    expect(r.message).toMatch(/^reinitializing: pg_rewind cannot repair the data: .*the local timeline has the leader's number 2/);
    expect(
      kinds(
        input(
          { ...stopped, sameNumberFork: fork, config: withDefaults({ database: { remove_data_directory_on_rewind_failure: false } }) },
          view,
        ),
      ),
    ).toEqual([]);
  });
});
