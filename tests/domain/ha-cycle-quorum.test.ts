/**
 * decideCycle with quorum failover (issue 28; docs/ha.md "Quorum failover"): a member listed in the
 * fence of the leader never follows it; the fence's taker takes the leader key once the fence
 * silences the leader; nothing changes with the mode off.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import { decideCycle, type CycleInput } from '../../src/domain/ha-cycle.ts';
import type { MemberData } from '../../src/domain/member.ts';
import { fencePlace } from '../../src/domain/quorum-failover.ts';

const ON = withDefaults({ synchronous_mode: 'quorum', synchronous_mode_strict: true, quorum_failover_window: 2 } as Record<
  string,
  unknown
>);
const OFF = withDefaults({ synchronous_mode: 'quorum', synchronous_mode_strict: true });

const member = (name: string, role = 'replica') => ({
  name,
  data: {
    conn_url: `postgres://127.0.0.1:${5430 + Number(name.slice(-1))}/postgres`,
    api_url: `http://127.0.0.1:800${name.slice(-1)}/ha`,
    state: 'running',
    role,
    version: '0.1.0',
  } as MemberData,
});

/** n1 leads with sync key {n2, n3} (quorum 1); `fence` is the record in the sync key. */
function view(fence?: { leader: string; members: Record<string, number> }): ClusterView {
  return {
    members: [member('n1', 'primary'), member('n2'), member('n3')],
    leader: { name: 'n1', leaseId: '1', revision: '40', createRevision: '10' },
    initialize: '7000000000000000001',
    history: [],
    sync: { value: { leader: 'n1', sync_standby: 'n2,n3', quorum: 1, ...(fence ? { fence } : {}) }, revision: '41' },
  };
}

function input(me: string, v: ClusterView, over: Partial<CycleInput> = {}): CycleInput {
  return {
    name: me,
    nowMs: 1_000_000,
    config: ON,
    view: v,
    dcsOk: true,
    holdsLock: false,
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

const both = { leader: 'n1', members: { n2: 120, n3: 100 } };

describe('fencePlace', () => {
  it('reads the fence of the leader that lists this member: complete or why not, the taker, the revisions', () => {
    expect(fencePlace(ON, view(both), 'n3')).toEqual({
      leader: 'n1',
      fence: both,
      incomplete: undefined,
      taker: 'n2',
      leaderRevision: '40',
      syncRevision: '41',
    });
    expect(fencePlace(ON, view({ leader: 'n1', members: { n3: 100 } }), 'n3')?.incomplete).toBe('1 of the 2 members needed have fenced n1');
  });

  it('nothing when the mode is off, the member is not listed, or the fence names another leader', () => {
    expect(fencePlace(OFF, view(both), 'n3')).toBeUndefined();
    expect(fencePlace(ON, view({ leader: 'n1', members: { n2: 5 } }), 'n3')).toBeUndefined();
    expect(fencePlace(ON, view({ leader: 'n9', members: { n3: 5 } }), 'n3')).toBeUndefined();
    expect(fencePlace(ON, view(), 'n3')).toBeUndefined();
  });
});

describe('decideCycle: a member in the fence of its leader', () => {
  it('the taker takes the leader key (compare-and-set on the revisions read) once the fence is complete', () => {
    const d = decideCycle(input('n2', view(both)));
    expect(d.actions).toEqual([{ kind: 'takeLeader', leader: 'n1', leaderRevision: '40', syncRevision: '41' }]);
    expect(d.message).toBe('the fence silences n1: taking the leader key from it (quorum failover)');
  });

  it("the taker respects maximum_lag_on_failover: behind the leader's last optime or a reachable peer, it does not take over", () => {
    const behindOptime = { ...view(both), status: { optime: 1000 + 2 * 1048576 } } as ClusterView;
    expect(decideCycle(input('n2', behindOptime))).toMatchObject({
      actions: [],
      message: "the fence silences n1, but I am more than maximum_lag_on_failover behind the leader's last optime: not taking over",
    });
    const peers = [{ name: 'n1', reachable: true, role: 'primary' as const, state: 'running' as const, walBytes: 1000n + 2n * 1048576n }];
    expect(decideCycle(input('n2', view(both), { peers })).message).toBe(
      'the fence silences n1, but I am more than maximum_lag_on_failover behind n1: not taking over',
    );
  });

  it('the other members wait for it; a nofailover taker never takes', () => {
    expect(decideCycle(input('n3', view(both)))).toMatchObject({
      actions: [],
      message: 'the fence silences n1: n2 has the furthest WAL and takes over',
    });
    expect(decideCycle(input('n2', view(both), { tags: { nofailover: true } })).actions).toEqual([]);
  });

  it('an incomplete fence: no follow of the leader, no take', () => {
    const d = decideCycle(input('n3', view({ leader: 'n1', members: { n3: 100 } })));
    expect(d.actions).toEqual([]);
    expect(d.message).toBe('fenced n1, not streaming from it: 1 of the 2 members needed have fenced n1');
  });

  it("a stopped member in the fence starts without an upstream (never as the leader's replica)", () => {
    const d = decideCycle(
      input('n3', view({ leader: 'n1', members: { n3: 100 } }), { db: { state: 'stopped', role: 'replica', busy: false } }),
    );
    expect(d.actions).toEqual([{ kind: 'start', role: 'replica' }]);
  });

  it('mode off, or not listed: the usual follow', () => {
    expect(decideCycle(input('n3', view(both), { config: OFF })).actions.map((a) => a.kind)).toEqual(['follow']);
    expect(decideCycle(input('n3', view({ leader: 'n1', members: { n2: 100 } }))).actions.map((a) => a.kind)).toEqual(['follow']);
  });
});
