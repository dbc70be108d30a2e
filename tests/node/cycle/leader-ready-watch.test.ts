/** LeaderReadyWatch: true once when another member's leadership becomes followable (issue 30, item 5). */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { DYNAMIC_DEFAULTS } from '../../../src/domain/dynamic-config.ts';
import type { Role } from '../../../src/domain/states.ts';
import { LeaderReadyWatch } from '../../../src/node/cycle/leader-ready-watch.ts';

function view(leader: string | undefined, roles: Record<string, Role>): ClusterView {
  return {
    ...(leader ? { leader: { name: leader, leaseId: '1', revision: '1', createRevision: '1' } } : {}),
    members: Object.entries(roles).map(([name, role]) => ({
      name,
      data: { conn_url: `postgres://${name}/postgres`, api_url: `http://${name}:8008/ha`, state: 'running', role, version: '0' },
    })),
  };
}

describe('LeaderReadyWatch', () => {
  it('wakes once when the new leader first shows as primary, not on its later key refreshes', () => {
    const w = new LeaderReadyWatch('n3');
    expect(w.observe(view('n1', { n1: 'primary', n2: 'replica', n3: 'replica' }), DYNAMIC_DEFAULTS)).toBe(true);
    expect(w.observe(view('n1', { n1: 'primary', n2: 'replica', n3: 'replica' }), DYNAMIC_DEFAULTS)).toBe(false);
    // Switchover to n2: the leader key first, the member key later.
    expect(w.observe(view('n2', { n1: 'replica', n2: 'replica', n3: 'replica' }), DYNAMIC_DEFAULTS)).toBe(false);
    expect(w.observe(view('n2', { n1: 'replica', n2: 'primary', n3: 'replica' }), DYNAMIC_DEFAULTS)).toBe(true);
    expect(w.observe(view('n2', { n1: 'replica', n2: 'primary', n3: 'replica' }), DYNAMIC_DEFAULTS)).toBe(false);
  });

  it('never for its own leadership or without a leader', () => {
    const w = new LeaderReadyWatch('n1');
    expect(w.observe(view('n1', { n1: 'primary' }), DYNAMIC_DEFAULTS)).toBe(false);
    expect(w.observe(view(undefined, { n1: 'replica', n2: 'primary' }), DYNAMIC_DEFAULTS)).toBe(false);
  });

  it('a standby cluster: the standby leader is followable', () => {
    const w = new LeaderReadyWatch('n2');
    const sc = { ...DYNAMIC_DEFAULTS, standby_cluster: { host: 'remote', port: 5432 } };
    expect(w.observe(view('n1', { n1: 'standby_leader', n2: 'replica' }), sc)).toBe(true);
  });
});
