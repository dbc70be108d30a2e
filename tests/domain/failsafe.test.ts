import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import {
  answerFailsafe,
  failsafeKeyAction,
  failsafeMembers,
  failsafeRaceVeto,
  failsafeTargets,
  failsafeUrl,
  parseFailsafeRequest,
} from '../../src/domain/failsafe.ts';
import { decideCycle, type CycleInput } from '../../src/domain/ha-cycle.ts';
import type { MemberData } from '../../src/domain/member.ts';

const member = (name: string, role = 'replica') => ({
  name,
  data: {
    conn_url: `postgres://${name}:5432/postgres`,
    api_url: `http://${name}:8008/ha`,
    state: 'running',
    role,
    version: '0.1.0',
  } as MemberData,
});
const view = (over: Partial<ClusterView> = {}): ClusterView => ({
  members: [member('n1', 'primary'), member('n2'), member('n3')],
  initialize: '7000000000000000001',
  history: [],
  ...over,
});
const on = withDefaults({ failsafe_mode: true });
const off = withDefaults({});

function input(over: Partial<CycleInput> = {}, v: Partial<ClusterView> = {}): CycleInput {
  return {
    holdsLock: false,
    name: 'n1',
    nowMs: 1_000_000,
    config: on,
    view: view(v),
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
const kinds = (i: CycleInput) => decideCycle(i).actions.map((a) => a.kind);

describe('the failsafe key', () => {
  it('lists every member with an api_url, the leader included, sorted', () => {
    const v = view({ members: [member('n3'), member('n2')] });
    expect(failsafeMembers(v, { name: 'n1', apiUrl: 'http://n1:8008/ha' })).toEqual({
      n1: 'http://n1:8008/ha',
      n2: 'http://n2:8008/ha',
      n3: 'http://n3:8008/ha',
    });
    expect(Object.keys(failsafeMembers(v, { name: 'n1', apiUrl: 'x' }))).toEqual(['n1', 'n2', 'n3']);
  });

  it('is written when failsafe mode is on and it differs, deleted when off, left alone otherwise', () => {
    const self = { name: 'n1', apiUrl: 'http://n1:8008/ha' };
    const current = failsafeMembers(view(), self);
    expect(failsafeKeyAction(on, view(), self)).toEqual({ kind: 'write', value: current });
    expect(failsafeKeyAction(on, view({ failsafe: current }), self)).toEqual({ kind: 'none' });
    expect(failsafeKeyAction(on, view({ failsafe: { ...current, n4: 'http://n4:8008/ha' } }), self).kind).toBe('write');
    expect(failsafeKeyAction(off, view({ failsafe: current }), self)).toEqual({ kind: 'delete' });
    expect(failsafeKeyAction(off, view(), self)).toEqual({ kind: 'none' });
  });

  it('names the members a round calls; none when the key does not list the leader', () => {
    expect(failsafeTargets({ n1: 'a', n2: 'b' }, 'n1')).toEqual([{ name: 'n2', apiUrl: 'b' }]);
    expect(failsafeTargets({ n1: 'a' }, 'n1')).toEqual([]);
    expect(failsafeTargets({ n2: 'b' }, 'n1')).toBeUndefined();
    expect(failsafeTargets(undefined, 'n1')).toBeUndefined();
    expect(failsafeUrl('http://10.0.0.2:8008/ha')).toBe('http://10.0.0.2:8008/failsafe');
    expect(failsafeUrl('https://h:1/x/y')).toBe('https://h:1/failsafe');
  });
});

describe('POST /failsafe on a member', () => {
  const body = { name: 'n1', conn_url: 'postgres://n1:5432/postgres', api_url: 'http://n1:8008/ha', slots: { n2: 100 } };
  const replica = { name: 'n2', runningPrimary: false, holdsLock: false, promoting: false };

  it('accepts the leader while failsafe mode is on', () => {
    expect(answerFailsafe(on, replica, body)).toEqual({ answer: { status: 200, text: 'Accepted' }, request: body });
  });
  it('answers 502 with failsafe mode off, 400 for a bad body', () => {
    expect(answerFailsafe(off, replica, body).answer.status).toBe(502);
    expect(answerFailsafe(on, replica, { name: 'n1' }).answer).toEqual({ status: 400, text: 'conn_url must be a non-empty string' });
    expect(parseFailsafeRequest({ ...body, slots: { a: 'x' } })).toBe('slots.a must be a number');
    expect(parseFailsafeRequest({ ...body, slots: null })).toEqual({ name: 'n1', conn_url: body.conn_url, api_url: body.api_url });
  });
  it('refuses with 500 `Running as a leader` when it runs as primary, holds the lock or is being promoted', () => {
    for (const self of [
      { ...replica, runningPrimary: true },
      { ...replica, holdsLock: true },
      { ...replica, promoting: true },
    ]) {
      expect(answerFailsafe(on, self, body).answer).toEqual({ status: 500, text: 'Running as a leader' });
    }
  });
});

describe('failsafe in the leader race', () => {
  it('a member that accepted a POST /failsafe within ttl does not race', () => {
    expect(failsafeRaceVeto({ name: 'n2', config: on, view: view(), acceptedLeader: 'n1' })).toMatch(
      /n1 runs as the leader in failsafe mode/,
    );
    expect(kinds(input({ name: 'n2', failsafeLeader: 'n1' }))).toEqual([]);
    expect(decideCycle(input({ name: 'n2', failsafeLeader: 'n1' })).message).toMatch(/^following no leader: n1 runs as the leader/);
  });
  it('a member not listed in a non-empty failsafe key never wins the race', () => {
    expect(kinds(input({ name: 'n4' }, { failsafe: { n1: 'a', n2: 'b' } }))).toEqual([]);
    expect(kinds(input({ name: 'n2' }, { failsafe: { n1: 'a', n2: 'b' } }))).toEqual(['acquireLock']);
    expect(kinds(input({ name: 'n4' }, { failsafe: {} }))).toEqual(['acquireLock']);
    // a running primary that is vetoed demotes, as one that is not the healthiest
    expect(kinds(input({ name: 'n4', db: { state: 'running', role: 'primary', busy: false } }, { failsafe: { n1: 'a' } }))).toEqual([
      'demote',
    ]);
  });
  it('has no effect with failsafe mode off', () => {
    expect(failsafeRaceVeto({ name: 'n4', config: off, view: view({ failsafe: { n1: 'a' } }), acceptedLeader: 'n1' })).toBeUndefined();
    expect(kinds(input({ name: 'n4', config: off, failsafeLeader: 'n1' }, { failsafe: { n1: 'a' } }))).toEqual(['acquireLock']);
  });
  it('the old leader, listed in the key, takes the lock back after the outage', () => {
    expect(kinds(input({ db: { state: 'running', role: 'primary', busy: false } }, { failsafe: { n1: 'a', n2: 'b' } }))).toEqual([
      'acquireLock',
    ]);
  });
});

describe('failsafe and the switchover (finding 10, seed 779320)', () => {
  const healthy = [{ name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 1000n }];
  const leaderIn = (failsafe: Record<string, string> | undefined, config = on) =>
    input(
      { config, holdsLock: true, db: { state: 'running', role: 'primary', busy: false }, lockRenewal: 'ok', peers: healthy },
      {
        leader: { name: 'n1', leaseId: '1', revision: '1', createRevision: '1' },
        failover: { value: { leader: 'n1', member: 'n2' }, revision: '5' },
        ...(failsafe ? { failsafe } : {}),
      },
    );
  it('the leader waits for the failsafe key to list the candidate before demoting (an unlisted member never wins the race)', () => {
    const d = decideCycle(leaderIn({ n1: 'a', n3: 'c' }));
    expect(d.actions.map((a) => a.kind)).toEqual(['leaderDuties']);
    expect(d.message).toBe('waiting for the failsafe key to list n2 before the switchover');
  });
  it('hands over once the key lists it, with an empty or absent key, or with failsafe mode off', () => {
    expect(kinds(leaderIn({ n1: 'a', n2: 'b', n3: 'c' }))).toEqual(['demote']);
    expect(kinds(leaderIn({}))).toEqual(['demote']);
    expect(kinds(leaderIn(undefined))).toEqual(['demote']);
    expect(kinds(leaderIn({ n1: 'a', n3: 'c' }, off))).toEqual(['demote']);
  });
});

describe('a switchover to a member the failsafe key does not list, written while the leader was cut from the DCS (finding 12, seed 5004313)', () => {
  // n2 led on failsafe, cut from the DCS; the operator asked for a switchover to n3, which the key
  // (rewritten while n3's member key had expired) does not list. The leader key expired: n3 may
  // not race (unlisted), and n1 and n2 stepped aside for it: no primary, for ever.
  const noLeader = { failover: { value: { leader: 'n2', member: 'n3' }, revision: '5' }, failsafe: { n1: 'a', n2: 'b' } };
  const peers = [
    { name: 'n2', reachable: true, role: 'replica', state: 'running', walBytes: 1000n },
    { name: 'n3', reachable: true, role: 'replica', state: 'running', walBytes: 1000n },
  ];
  it('the others do not wait for a candidate that can never win the race', () => {
    const d = decideCycle(input({ name: 'n1', peers }, noLeader));
    expect(d.actions.map((a) => a.kind)).toEqual(['acquireLock']);
  });
  it('the candidate itself still does not race', () => {
    expect(decideCycle(input({ name: 'n3', peers: [{ ...peers[0]!, name: 'n1' }, peers[0]!] }, noLeader)).message).toBe(
      'following no leader: I am not listed in the failsafe key',
    );
  });
  it('the former leader does not step aside for it either, when it is the only other member', () => {
    const d = decideCycle(input({ name: 'n2', peers: [{ ...peers[1]! }] }, noLeader));
    expect(d.actions.map((a) => a.kind)).toEqual(['acquireLock']);
  });
  it('a listed candidate, or failsafe mode off, still holds the race up', () => {
    expect(decideCycle(input({ name: 'n1', peers }, { ...noLeader, failsafe: { n1: 'a', n2: 'b', n3: 'c' } })).message).toBe(
      'following no leader: manual failover to n3 in progress',
    );
    expect(decideCycle(input({ name: 'n1', peers, config: off }, noLeader)).message).toBe(
      'following no leader: manual failover to n3 in progress',
    );
  });
});

describe('a restarted agent in failsafe mode (finding 10b, seed 783671)', () => {
  const replica = { db: { state: 'running' as const, role: 'replica' as const, busy: false }, peers: [] };
  it('does not race during its first ttl while the failsafe key lists members', () => {
    const d = decideCycle(input({ ...replica, failsafeRestartGraceMs: 4000 }, { failsafe: { n1: 'a', n2: 'b', n3: 'c' } }));
    expect(d.actions).toEqual([]);
    expect(d.message).toBe(
      'following no leader: this agent started less than ttl ago and may have accepted POST /failsafe before: not racing for 4000 ms',
    );
  });
  it('races as before once the grace is over, with an empty key, or with failsafe mode off', () => {
    const view = { failsafe: { n1: 'a', n2: 'b', n3: 'c' } };
    expect(decideCycle(input({ ...replica, failsafeRestartGraceMs: 0 }, view)).message).not.toMatch(/started less than ttl ago/);
    expect(decideCycle(input({ ...replica, failsafeRestartGraceMs: 4000 }, { failsafe: {} })).message).not.toMatch(
      /started less than ttl ago/,
    );
    expect(decideCycle(input({ ...replica, config: off, failsafeRestartGraceMs: 4000 }, view)).message).not.toMatch(
      /started less than ttl ago/,
    );
  });
});

describe('failsafe and the quorum votes (finding 20, seed 1530007157)', () => {
  // n2 ran on failsafe after its leader key had gone (the key went 3 s before this cycle) and
  // acknowledged commits through n1; n3 accepted its POST /failsafe, binding it until 1.725 s from
  // now. n1's published position (a probe from before those commits) equals n3's.
  const quorumOn = withDefaults({ failsafe_mode: true, synchronous_mode: 'quorum' });
  const racer = (over: Partial<CycleInput> = {}) =>
    input(
      {
        name: 'n3',
        config: quorumOn,
        noLeaderSinceMs: 1_000_000 - 3000,
        peers: [
          { name: 'n1', reachable: true, role: 'replica', state: 'running', walBytes: 1000n, timeline: 1 },
          { name: 'n2', reachable: false },
        ],
        ...over,
      },
      {
        members: [member('n1'), member('n2'), member('n3')],
        sync: { value: { leader: 'n2', sync_standby: 'n1,n3', quorum: 2 }, revision: '7' },
        failsafe: { n1: 'a', n2: 'b', n3: 'c' },
      },
    );
  const settling = (ms: number) =>
    `following no leader: waiting ${ms} ms for the sync key members' WAL positions to settle before counting their votes`;
  const table: { name: string; over: Partial<CycleInput>; message: string }[] = [
    {
      name: 'bound by failsafe calls until 1.725 s from now: peer votes wait for them plus the settle delay',
      over: { failsafeBoundUntilMs: 1_000_000 + 1725 },
      message: settling(3225),
    },
    { name: 'the calls ended 1 s ago: still settling', over: { failsafeBoundUntilMs: 1_000_000 - 1000 }, message: settling(500) },
    {
      name: 'the calls ended more than the settle delay ago: the votes count',
      over: { failsafeBoundUntilMs: 1_000_000 - 1500 },
      message: 'acquiring the leader lock: I am the healthiest member',
    },
    {
      name: 'no failsafe call known: the votes count from the key going, as before',
      over: {},
      message: 'acquiring the leader lock: I am the healthiest member',
    },
    {
      name: 'failsafe mode off: the bound is not read',
      over: { config: withDefaults({ synchronous_mode: 'quorum' }), failsafeBoundUntilMs: 1_000_000 + 1725 },
      message: 'acquiring the leader lock: I am the healthiest member',
    },
    {
      name: "the sync key's former leader needs no vote",
      over: {
        name: 'n2',
        failsafeBoundUntilMs: 1_000_000 + 1725,
        peers: [
          { name: 'n1', reachable: true, role: 'replica', state: 'running', walBytes: 1000n, timeline: 1 },
          { name: 'n3', reachable: false },
        ],
      },
      message: 'acquiring the leader lock: I am the healthiest member',
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      expect(decideCycle(racer(c.over)).message).toBe(c.message);
    });
  }
});

describe('DCS unreachable', () => {
  const primary = { db: { state: 'running' as const, role: 'primary' as const, busy: false }, dcsOk: false, holdsLock: false };
  it('a primary whose failsafe round every member accepted goes on', () => {
    const d = decideCycle(input({ ...primary, failsafeAccepted: true }));
    expect(d.actions).toEqual([]);
    expect(d.message).toBe('continue to run as a leader because failsafe mode is enabled and all members are accessible');
  });
  it('otherwise it demotes (offline), as without failsafe', () => {
    expect(decideCycle(input({ ...primary, failsafeAccepted: false })).actions).toEqual([
      { kind: 'demote', mode: 'offline', releaseLock: false },
    ]);
    expect(decideCycle(input({ ...primary })).message).toBe('demoted self because DCS is not accessible and I was a leader');
  });
});
