import { describe, expect, it } from 'vitest';
import { formatUnread, readKeys, unreadKeys } from '../../src/config/dynamic-keys.ts';

const lines = (doc: unknown, skipNull = false) => unreadKeys(doc, { skipNull }).map(formatUnread);

describe('unreadKeys: the keys of a dynamic configuration the agent does not read', () => {
  it('names unknown keys, suggesting the closest known key', () => {
    expect(lines({ loop_wiat: 5, maximum_lag_on_failvoer: 0, candidate: ['a'], ttl: 30 })).toEqual([
      'loop_wiat: unknown key; did you mean loop_wait?',
      'maximum_lag_on_failvoer: unknown key; did you mean maximum_lag_on_failover?',
      'candidate: unknown key',
    ]);
    expect(lines({ database: { use_slot: true, parameters: { anything: 1 } } })).toEqual([
      'database.use_slot: unknown key; did you mean use_slots?',
    ]);
  });

  it("names the reference's keys that are not implemented, with why", () => {
    expect(lines({ max_timelines_history: 5, primary_start_timeout: 300, master_stop_timeout: 0, primary_race_backoff: 1 })).toEqual([
      'max_timelines_history: not supported: the history key keeps every entry',
      'primary_start_timeout: not supported: a primary that fails to start releases the leader key at once (as primary_start_timeout 0)',
      'master_stop_timeout: not supported: a demotion stops with a fast shutdown, escalated by PID when it outlives its window',
      'primary_race_backoff: not supported: the fence (docs/ha.md "Fencing") protects against a frozen agent on a live primary instead',
    ]);
    expect(lines({ database: { use_pg_rewind: true, pg_hba: ['x'], recovery_conf: {} } })).toEqual([
      expect.stringMatching(/^database\.use_pg_rewind: not supported under this name: use database\.use_db_rewind/),
      "database.pg_hba: not supported in the dynamic configuration: set database.pg_hba in each member's local configuration file",
      'database.recovery_conf: not supported: the agent writes the recovery settings itself',
    ]);
  });

  it("reads a document of the reference's dialect in its own names", () => {
    expect(lines({ postgresql: { use_pg_rewind: true, use_slots: true, parameters: {}, use_db_rewind: true, pg_hba: [] } })).toEqual([
      "postgresql.use_db_rewind: the native name: in this document's dialect (section postgresql) the key is use_pg_rewind",
      "postgresql.pg_hba: not supported in the dynamic configuration: set postgresql.pg_hba in each member's local configuration file",
    ]);
  });

  it('names local settings and the section of the other dialect in a mixed document', () => {
    expect(lines({ name: 'x', tags: {}, database: { data_dir: '/x', authentication: {} }, postgresql: {} })).toEqual([
      "name: a local setting, never read from the dynamic configuration: set it in each member's configuration file",
      "tags: a local setting, never read from the dynamic configuration: set it in each member's configuration file",
      "database.data_dir: a local setting, never read from the dynamic configuration: set database.data_dir in each member's configuration file",
      "database.authentication: a local setting, never read from the dynamic configuration: set database.authentication in each member's configuration file",
      expect.stringMatching(/^postgresql: not read: this document names its database section database \(the native dialect\)/),
    ]);
  });

  it("never names tools' keys (x-…), nor deleted keys of a patch when asked", () => {
    expect(lines({ 'x-vip-manager': { anything: [1] }, 'x-': 1, ttl: 30 })).toEqual(['x-: unknown key']);
    expect(lines({ candidate: null, loop_wiat: null }, true)).toEqual([]);
    expect(lines({ candidate: null }, false)).toEqual(['candidate: unknown key']);
  });

  it('anything but a mapping has none', () => {
    expect(lines(null)).toEqual([]);
    expect(lines([{ a: 1 }])).toEqual([]);
  });
});

describe('readKeys', () => {
  it('lists the top-level keys the agent reads; an empty or unread section counts as nothing', () => {
    expect(readKeys({ ttl: 30, 'x-tool': 1, candidate: 1, database: { parameters: {} } })).toEqual(['ttl', 'database']);
    expect(readKeys({ 'x-tool': 1, database: {} })).toEqual([]);
    expect(readKeys({ postgresql: { pg_hba: [] } })).toEqual([]);
    expect(readKeys({ postgresql: { use_pg_rewind: false } })).toEqual(['postgresql']);
  });
});
