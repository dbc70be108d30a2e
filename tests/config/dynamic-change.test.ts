import { describe, expect, it } from 'vitest';
import {
  checkEdit,
  checkPatch,
  checkReplacement,
  convertStored,
  formatDefaulted,
  type ChangeResult,
} from '../../src/config/dynamic-change.ts';

const problems = (r: ChangeResult) => (r.ok ? [] : r.problems);
const doc = (r: ChangeResult) => {
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.document;
};

/** A cluster's document holding keys the agent does not read, written by someone else. */
const STORED = {
  ttl: 30,
  loop_wait: 10,
  retry_timeout: 10,
  legacy_key: { a: 1 },
  max_timelines_history: 5,
  database: { parameters: { work_mem: '8MB' }, pg_ident: ['x'] },
};

describe('checkPatch', () => {
  it('refuses keys the patch adds that the agent does not read, naming each; null deletes any key', () => {
    expect(problems(checkPatch(STORED, { loop_wiat: 5, pause: true, database: { use_slot: false } }))).toEqual([
      'loop_wiat: unknown key; did you mean loop_wait?',
      'database.use_slot: unknown key; did you mean use_slots?',
    ]);
    expect(problems(checkPatch(STORED, { legacy_key: { a: 2 } }))).toEqual(['legacy_key: unknown key']);
    expect(doc(checkPatch(STORED, { legacy_key: null, max_timelines_history: null }))).toEqual({
      ttl: 30,
      loop_wait: 10,
      retry_timeout: 10,
      database: { parameters: { work_mem: '8MB' }, pg_ident: ['x'] },
    });
  });

  it('keeps the unread keys already stored when it changes something else', () => {
    expect(doc(checkPatch(STORED, { pause: true }))).toEqual({ ...STORED, pause: true });
  });

  it("writes a patch of the other dialect in the stored document's dialect", () => {
    const patroni = { ttl: 30, postgresql: { use_pg_rewind: true, parameters: { a: '1' } } };
    const r = checkPatch(patroni, { database: { use_db_rewind: false, parameters: { b: '2' } } });
    expect(doc(r)).toEqual({ ttl: 30, postgresql: { use_pg_rewind: false, parameters: { a: '1', b: '2' } } });
    expect(r.ok && r.dialect).toBe('patroni');
    expect(doc(checkPatch({ ttl: 30 }, { postgresql: { use_pg_rewind: false } }))).toEqual({ ttl: 30, database: { use_db_rewind: false } });
    // Deleting the section keeps the dialect's mark.
    expect(doc(checkPatch(patroni, { postgresql: null }))).toEqual({ ttl: 30, postgresql: {} });
  });

  it('a section the stored document holds is that section: deleting an unread postgresql section keeps database', () => {
    const both = { ttl: 30, database: { use_slots: false }, postgresql: { use_pg_rewind: true } };
    expect(doc(checkPatch(both, { postgresql: null }))).toEqual({ ttl: 30, database: { use_slots: false } });
  });

  it('refuses a patch mixing the dialects, and bad values in its own names', () => {
    expect(problems(checkPatch(STORED, { database: {}, postgresql: {} }))).toEqual([
      "(root): mixes the two dialects: database (native) and postgresql (the reference's) are the same section; write one",
    ]);
    expect(problems(checkPatch({ postgresql: {} }, { postgresql: { use_pg_rewind: 'yes' } }))).toEqual([
      'postgresql.use_pg_rewind: must be true or false, got "yes"',
    ]);
  });

  it("accepts and keeps tools' keys", () => {
    expect(doc(checkPatch({ ttl: 30 }, { 'x-vip-manager': { vip: '10.0.0.9' } }))).toEqual({
      ttl: 30,
      'x-vip-manager': { vip: '10.0.0.9' },
    });
  });
});

describe('checkReplacement', () => {
  it('refuses unread keys unless stored with the same value at the same place', () => {
    expect(problems(checkReplacement(STORED, { ...STORED, candidate: ['a'] }))).toEqual(['candidate: unknown key']);
    expect(problems(checkReplacement(STORED, { ...STORED, legacy_key: { a: 2 } }))).toEqual(['legacy_key: unknown key']);
    expect(doc(checkReplacement(STORED, { ...STORED, ttl: 40 }))).toEqual({ ...STORED, ttl: 40 });
  });

  it('refuses a body holding nothing the agent reads', () => {
    for (const body of [{ 'x-tool': 1 }, { database: {} }, { postgresql: {} }]) {
      expect(problems(checkReplacement(STORED, body))).toEqual([
        '(root): holds no setting the agent reads (a replacement is the whole configuration): send the settings, or change single keys with PATCH',
      ]);
    }
  });

  it('lists the settings left out that fall back to their defaults', () => {
    const r = checkReplacement(
      { ttl: 40, loop_wait: 5, retry_timeout: 10, failsafe_mode: true, database: { use_slots: false } },
      { ttl: 40 },
    );
    expect(r.ok && r.defaulted.map(formatDefaulted)).toEqual([
      'loop_wait: 5 -> 10',
      'failsafe_mode: true -> false',
      'database.use_slots: false -> true',
    ]);
    // A setting left out whose value was the default changes nothing and is not listed.
    const same = checkReplacement({ ttl: 30, loop_wait: 10 }, { ttl: 30 });
    expect(same.ok && same.defaulted).toEqual([]);
  });

  it('refuses to leave out a setting whose default is less safe than the stored value', () => {
    const stored = {
      ttl: 30,
      synchronous_mode: true,
      synchronous_mode_strict: true,
      synchronous_node_count: 2,
      maximum_lag_on_failover: 0,
      pause: true,
      standby_cluster: { host: '10.0.0.9' },
      slots: { s: { type: 'physical' } },
      ignore_slots: [{ name: 'keep' }],
    };
    const out = problems(checkReplacement(stored, { ttl: 30 }));
    expect(out.map((p) => p.slice(0, p.indexOf(':')))).toEqual([
      'maximum_lag_on_failover',
      'pause',
      'synchronous_mode',
      'synchronous_mode_strict',
      'synchronous_node_count',
      'standby_cluster',
      'slots',
      'ignore_slots',
    ]);
    expect(out[2]).toBe(
      'synchronous_mode: left out, it would fall back to its default false: synchronous replication would be turned off: commits acknowledged from then on could be lost in a failover; send it with the value you want, or delete it with PATCH null',
    );
    // Given explicitly, even as the default, it is the operator's choice.
    expect(checkReplacement(stored, { ...stored, synchronous_mode: false, synchronous_mode_strict: false }).ok).toBe(true);
    // Safe defaults may be left out: a lower maximum_lag_on_failover is not weakened by the default.
    expect(checkReplacement({ ttl: 30, maximum_lag_on_failover: 9_000_000, failsafe_mode: true }, { ttl: 30 }).ok).toBe(true);
  });

  it('keeps the stored dialect; a body of the other dialect keeps its meaning', () => {
    const r = checkReplacement({ ttl: 30, postgresql: { use_pg_rewind: true } }, { ttl: 30, database: { parameters: { a: 1 } } });
    expect(doc(r)).toEqual({
      ttl: 30,
      postgresql: { parameters: { a: 1 }, use_pg_rewind: true, remove_data_directory_on_rewind_failure: true },
    });
    expect(doc(checkReplacement({ ttl: 30, postgresql: {} }, { ttl: 31 }))).toEqual({ ttl: 31, postgresql: {} });
    expect(doc(checkReplacement(undefined, { ttl: 30, postgresql: { use_pg_rewind: true } }))).toEqual({
      ttl: 30,
      postgresql: { use_pg_rewind: true },
    });
  });
});

describe('checkEdit', () => {
  it("merges a database section written by -p into the stored dialect's section", () => {
    const before = { ttl: 30, postgresql: { parameters: { a: '1' } } };
    expect(doc(checkEdit(before, { ...before, database: { parameters: { b: 2 }, use_db_rewind: true } }))).toEqual({
      ttl: 30,
      postgresql: { parameters: { a: '1', b: 2 }, use_pg_rewind: true },
    });
  });

  it('refuses unread keys the edit adds, keeps those stored', () => {
    expect(problems(checkEdit(STORED, { ...STORED, loop_wiat: 3 }))).toEqual(['loop_wiat: unknown key; did you mean loop_wait?']);
    expect(doc(checkEdit(STORED, { ...STORED, ttl: 31 }))).toEqual({ ...STORED, ttl: 31 });
  });
});

describe('convertStored', () => {
  it('rewrites the document in the other dialect, meaning the same; nothing to do in its own', () => {
    const patroni = { ttl: 30, max_timelines_history: 3, postgresql: { use_pg_rewind: true, parameters: { a: '1' }, pg_hba: ['x'] } };
    expect(convertStored(patroni, 'native')).toEqual({
      ttl: 30,
      max_timelines_history: 3,
      database: { use_db_rewind: true, parameters: { a: '1' }, pg_hba: ['x'], remove_data_directory_on_rewind_failure: false },
    });
    expect(convertStored(patroni, 'patroni')).toBeUndefined();
    expect(convertStored({ ttl: 30 }, 'patroni')).toEqual({
      ttl: 30,
      postgresql: { use_pg_rewind: true, remove_data_directory_on_rewind_failure: true },
    });
  });
});
