import { describe, expect, it } from 'vitest';
import { validateDynamicConfig } from '../../src/config/dynamic-schema.ts';

const problems = (doc: unknown) => {
  const r = validateDynamicConfig(doc);
  return r.ok ? [] : r.problems;
};

describe('standby_cluster in the dynamic configuration', () => {
  it('accepts every key we honour, and null', () => {
    const sc = {
      host: '10.0.0.9',
      port: 5433,
      primary_slot_name: 'standby_dr',
      create_replica_methods: ['basebackup'],
      restore_command: "cp '/archive/%f' '%p'",
      archive_cleanup_command: 'pg_archivecleanup /archive %r',
      recovery_min_apply_delay: '5min',
    };
    expect(validateDynamicConfig({ standby_cluster: sc })).toEqual({ ok: true, value: { standby_cluster: sc } });
    expect(validateDynamicConfig({ standby_cluster: { host: 'db.example', recovery_min_apply_delay: 1000 } }).ok).toBe(true);
    expect(validateDynamicConfig({ standby_cluster: null }).ok).toBe(true);
  });

  it('accepts a standby cluster fed by its archive alone: restore_command without host, bootstrapped by a named method', () => {
    const sc = { restore_command: 'pgbackrest --stanza=main archive-get %f "%p"', create_replica_methods: ['pgbackrest'] };
    expect(validateDynamicConfig({ standby_cluster: sc })).toEqual({ ok: true, value: { standby_cluster: sc } });
    // Both sources: streaming from host:port, the archive when the stream cannot serve.
    expect(
      validateDynamicConfig({
        standby_cluster: { host: 'h', restore_command: 'cp /a/%f %p', create_replica_methods: ['pgbackrest', 'basebackup'] },
      }).ok,
    ).toBe(true);
  });

  it.each([
    [{ standby_cluster: 'h:5432' }, /^standby_cluster: must be a mapping/],
    [{ standby_cluster: [] }, /^standby_cluster: must be a mapping/],
    [{ standby_cluster: { port: 5432 } }, /^standby_cluster: needs host \(the remote primary to stream from\) or restore_command/],
    [
      { standby_cluster: { restore_command: 'cp /a/%f %p', create_replica_methods: ['basebackup'] } },
      /^standby_cluster: create_replica_methods names basebackup, which copies host:port, but there is no host/,
    ],
    [{ standby_cluster: { host: '' } }, /^standby_cluster\.host: must not be empty/],
    [{ standby_cluster: { host: 5 } }, /^standby_cluster\.host: must be a string/],
    [{ standby_cluster: { host: 'a,b' } }, /^standby_cluster\.host: must be one host/],
    [{ standby_cluster: { host: 'h', port: 70000 } }, /^standby_cluster\.port: must be a port 1\.\.65535/],
    [{ standby_cluster: { host: 'h', port: '5432' } }, /^standby_cluster\.port: must be an integer/],
    [
      { standby_cluster: { host: 'h', primary_slot_name: 'Bad-Name' } },
      /^standby_cluster\.primary_slot_name: must be a replication slot name/,
    ],
    [
      { standby_cluster: { host: 'h', create_replica_methods: ['wal e', 'basebackup'] } },
      /^standby_cluster\.create_replica_methods: must be method names/,
    ],
    [
      { standby_cluster: { host: 'h', create_replica_methods: [] } },
      /^standby_cluster\.create_replica_methods: must name at least one method/,
    ],
    [{ standby_cluster: { host: 'h', restore_command: 'a\nb' } }, /^standby_cluster\.restore_command: must not contain line breaks/],
    [
      { standby_cluster: { host: 'h', recovery_min_apply_delay: 'soon' } },
      /^standby_cluster\.recovery_min_apply_delay: must be milliseconds/,
    ],
    [{ standby_cluster: { host: 'h', leader_tags: {} } }, /^standby_cluster: unknown key leader_tags: standby_cluster takes host, port/],
  ])('refuses %j naming the field', (doc, expected) => {
    const p = problems(doc);
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(expected);
  });
});
