/** Cascading replication: upstreamMember, isCascading, slotMembers, and decideCycle's follow with `replicatefrom`. */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import { decideCycle, type CycleInput } from '../../src/domain/ha-cycle.ts';
import type { MemberData, Tags } from '../../src/domain/member.ts';
import { isCascading, replicateFromTag, slotMembers, upstreamMember } from '../../src/domain/upstream.ts';

const member = (name: string, extra: Partial<MemberData> = {}) => ({
  name,
  data: {
    conn_url: `postgres://127.0.0.1:${5430 + Number(name.slice(-1))}/postgres`,
    api_url: `http://127.0.0.1:800${name.slice(-1)}/ha`,
    state: 'running',
    role: 'replica',
    version: '0.1.0',
    timeline: 1,
    replication_state: 'streaming',
    ...extra,
  } as MemberData,
});

/** n1 leads; n2 streams; n3 and others as given. */
function view(members: Array<ReturnType<typeof member>>): ClusterView {
  return {
    initialize: '7000000000000000001',
    leader: { name: 'n1', leaseId: '1', revision: '1', createRevision: '1' },
    history: [],
    members: [member('n1', { role: 'primary', replication_state: undefined }), ...members],
  };
}

describe('upstreamMember', () => {
  it('the leader has none; a replica without the tag streams from the leader', () => {
    const v = view([member('n2')]);
    expect(upstreamMember(v, 'n1')).toBeUndefined();
    expect(upstreamMember(v, 'n2')).toBe('n1');
    expect(replicateFromTag({ replicatefrom: '' })).toBeUndefined();
  });

  it('replicatefrom a running, streaming replica → that replica', () => {
    const v = view([member('n2'), member('n3', { tags: { replicatefrom: 'n2' } })]);
    expect(upstreamMember(v, 'n3')).toBe('n2');
    expect(isCascading(v, 'n3')).toBe(true);
    expect(isCascading(v, 'n2')).toBe(false);
  });

  it.each([
    ['not running', { state: 'stopped' }],
    ['not streaming', { replication_state: undefined }],
    ['in archive recovery', { replication_state: 'in archive recovery' }],
    ['a primary that is not the leader', { role: 'primary' }],
  ] as const)('falls back to the leader when the named member is %s', (_why, extra) => {
    const v = view([member('n2', extra as Partial<MemberData>), member('n3', { tags: { replicatefrom: 'n2' } })]);
    expect(upstreamMember(v, 'n3')).toBe('n1');
    expect(isCascading(v, 'n3')).toBe(false);
  });

  it('falls back to the leader when the named member has no key, is itself, or is the leader', () => {
    expect(upstreamMember(view([member('n3', { tags: { replicatefrom: 'n9' } })]), 'n3')).toBe('n1');
    expect(upstreamMember(view([member('n3', { tags: { replicatefrom: 'n3' } })]), 'n3')).toBe('n1');
    expect(upstreamMember(view([member('n3', { tags: { replicatefrom: 'n1' } })]), 'n3')).toBe('n1');
  });

  it('a loop of replicatefrom tags falls back to the leader; a chain is followed', () => {
    const loop = view([member('n2', { tags: { replicatefrom: 'n3' } }), member('n3', { tags: { replicatefrom: 'n2' } })]);
    expect(upstreamMember(loop, 'n3')).toBe('n1');
    expect(upstreamMember(loop, 'n2')).toBe('n1');
    const chain = view([member('n2'), member('n3', { tags: { replicatefrom: 'n2' } }), member('n4', { tags: { replicatefrom: 'n3' } })]);
    expect(upstreamMember(chain, 'n4')).toBe('n3');
  });

  it("the node's own current tags win over its member key's", () => {
    const v = view([member('n2'), member('n3')]);
    const tags: Tags = { replicatefrom: 'n2' };
    expect(upstreamMember(v, 'n3', { tags })).toBe('n2');
  });
});

describe('slotMembers', () => {
  it('the leader keeps slots for members streaming from it, a replica for those cascading from it', () => {
    const v = view([member('n2'), member('n3', { tags: { replicatefrom: 'n2' } }), member('n4')]);
    expect(slotMembers(v, 'n1', { leader: 'n1' })).toEqual(['n2', 'n4']);
    expect(slotMembers(v, 'n2')).toEqual(['n3']);
    expect(slotMembers(v, 'n4')).toEqual([]);
  });
  it('when the named member stops streaming, the leader keeps the slot again', () => {
    const v = view([member('n2', { replication_state: undefined }), member('n3', { tags: { replicatefrom: 'n2' } })]);
    expect(slotMembers(v, 'n1', { leader: 'n1' })).toEqual(['n2', 'n3']);
    expect(slotMembers(v, 'n2')).toEqual([]);
  });
});

describe('decideCycle: a cascading replica', () => {
  function input(tags: Tags, upstream: string | undefined, members = [member('n2'), member('n3', { tags })]): CycleInput {
    return {
      holdsLock: false,
      name: 'n3',
      nowMs: 1_000_000,
      config: withDefaults({}),
      view: view(members),
      dcsOk: true,
      db: { state: 'running', role: 'replica', busy: false },
      hasData: true,
      walBytes: 1000n,
      timeline: 1,
      demoted: false,
      initializedByMe: false,
      tags,
      peers: [],
      replication: { upstream, streaming: upstream !== undefined },
    };
  }

  it('follows the replicatefrom member, the leader named too', () => {
    const r = decideCycle(input({ replicatefrom: 'n2' }, 'n2'));
    expect(r.actions).toEqual([{ kind: 'follow', leader: 'n1', upstream: 'n2' }]);
    expect(r.message).toBe('no action. I am (n3), a secondary, and following a leader (n1) from n2');
  });

  it('pointed at the leader so far → follow the replicatefrom member (after the divergence check on the leader timeline)', () => {
    const r = decideCycle(input({ replicatefrom: 'n2' }, 'n1'));
    expect(r.actions).toEqual([{ kind: 'follow', leader: 'n1', upstream: 'n2' }]);
    expect(r.diverged).toBeUndefined();
  });

  it('the replicatefrom member stopped streaming → back to the leader', () => {
    const r = decideCycle(input({ replicatefrom: 'n2' }, 'n2', [member('n2', { replication_state: undefined }), member('n3')]));
    expect(r.actions).toEqual([{ kind: 'follow', leader: 'n1' }]);
  });

  it('without the tag, the action is the plain follow of the leader', () => {
    expect(decideCycle(input({}, 'n1')).actions).toEqual([{ kind: 'follow', leader: 'n1' }]);
  });

  it('WAL past the leader timeline switch point is still a divergence while cascading', () => {
    const i = input({ replicatefrom: 'n2' }, 'n1');
    i.view = {
      ...i.view,
      history: [[1, 500, 'x']],
      members: i.view.members.map((m) => (m.name === 'n1' ? { ...m, data: { ...m.data, timeline: 2 } } : m)),
    };
    i.walBytes = 600n;
    const r = decideCycle(i);
    expect(r.actions.map((a) => a.kind)).toEqual(['stop']);
    expect(r.diverged).toBeDefined();
  });
});
