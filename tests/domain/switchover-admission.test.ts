import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import type { Member } from '../../src/domain/member.ts';
import { admitHandover, switchoverCandidates } from '../../src/domain/switchover-admission.ts';

function member(name: string, tags: Record<string, unknown> = {}): Member {
  return {
    name,
    data: { conn_url: `postgres://h/${name}`, api_url: `http://h/${name}/ha`, state: 'running', role: 'replica', version: '0.1.0', tags },
  };
}
const view = (sync?: string | null): ClusterView =>
  ({
    members: [member('n1'), member('n2'), member('n3'), member('n4', { nofailover: true })],
    leader: { name: 'n1', revision: '5', createRevision: '5' },
    ...(sync !== undefined ? { sync: { value: { leader: 'n1', sync_standby: sync, quorum: 0 }, revision: '7' } } : {}),
  }) as unknown as ClusterView;

describe('admitHandover (one rule for the API, hactl and the leader)', () => {
  it('asynchronous: any other member', () => {
    const a = admitHandover(view(), {}, { action: 'switchover', leader: 'n1' });
    expect(a.ok && a.considered.map((m) => m.name)).toEqual(['n2', 'n3', 'n4']);
    expect(admitHandover(view(), {}, { action: 'switchover', leader: 'n2' })).toEqual({ ok: false, refusal: 'leader name does not match' });
    expect(admitHandover(view(), {}, { action: 'switchover', candidate: 'nx' })).toEqual({
      ok: false,
      refusal: 'candidate does not exists',
    });
  });

  it('synchronous (true or quorum): a switchover only to a member of the sync key; a failover to anyone', () => {
    for (const mode of [true, 'quorum'] as const) {
      expect(admitHandover(view('n2'), { synchronous_mode: mode }, { action: 'switchover', candidate: 'n3' })).toEqual({
        ok: false,
        refusal: 'candidate name does not match with sync_standby',
      });
      const a = admitHandover(view('n2'), { synchronous_mode: mode }, { action: 'switchover' });
      expect(a.ok && a.considered.map((m) => m.name)).toEqual(['n2']);
      expect(admitHandover(view(null), { synchronous_mode: mode }, { action: 'switchover' })).toEqual({
        ok: false,
        refusal: 'switchover is not possible: can not find sync_standby',
      });
      expect(admitHandover(view('n2'), { synchronous_mode: mode }, { action: 'failover', candidate: 'n3' }).ok).toBe(true);
    }
  });

  it("hactl's switchover candidates: promotable, and listed in synchronous mode", () => {
    expect(switchoverCandidates(view(), {})).toEqual(['n2', 'n3']);
    expect(switchoverCandidates(view('n3'), { synchronous_mode: true })).toEqual(['n3']);
  });
});
