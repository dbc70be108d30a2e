import { describe, expect, it } from 'vitest';
import { ViewCache } from '../../src/dcs/cache.ts';
import type { StoredKv } from '../../src/dcs/view.ts';

const kv = (value: string, modRevision: string, lease = '0'): StoredKv => ({ value, modRevision, createRevision: modRevision, lease });

describe('ViewCache', () => {
  it('emits events for the differences of a full read', () => {
    const c = new ViewCache();
    expect(
      c.replace(
        new Map([
          ['leader', kv('a', '2')],
          ['config', kv('{}', '3')],
        ]),
        3n,
      ),
    ).toEqual([{ type: 'dcs.leaderChanged', leader: 'a' }, { type: 'dcs.configChanged' }]);
    expect(c.replace(new Map([['config', kv('{}', '3')]]), 4n)).toEqual([{ type: 'dcs.leaderChanged', leader: undefined }]);
    expect(c.view().leader).toBeUndefined();
  });

  it('ignores a full read older than the cache', () => {
    const c = new ViewCache();
    c.apply([{ type: 'put', key: 'leader', kv: kv('a', '10') }]);
    expect(c.replace(new Map(), 9n)).toEqual([]);
    expect(c.view().leader?.name).toBe('a');
  });

  it('applies every event of one revision (a prefix delete) and skips older ones', () => {
    const c = new ViewCache();
    c.replace(
      new Map([
        ['leader', kv('a', '4')],
        ['members/a', kv('{}', '5')],
      ]),
      5n,
    );
    const events = c.apply([
      { type: 'delete', key: 'leader', revision: '6' },
      { type: 'delete', key: 'members/a', revision: '6' },
    ]);
    expect(events).toEqual([
      { type: 'dcs.leaderChanged', leader: undefined },
      { type: 'dcs.memberChanged', name: 'a' },
    ]);
    expect(c.apply([{ type: 'put', key: 'leader', kv: kv('b', '5') }])).toEqual([]);
    expect(c.view().leader).toBeUndefined();
    expect(c.revision()).toBe(6n);
  });

  it('does not report a leader change when only the lease of the leader key changes', () => {
    const c = new ViewCache();
    c.apply([{ type: 'put', key: 'leader', kv: kv('a', '2', '1') }]);
    expect(c.apply([{ type: 'put', key: 'leader', kv: kv('a', '3', '2') }])).toEqual([]);
    expect(c.view().leader?.leaseId).toBe('2');
  });
});
