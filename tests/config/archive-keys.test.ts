/**
 * ha.yml: the keys of the WAL archive, backups and replica creation (src/config/archive-keys.ts;
 * docs/backups.md): `database.create_replica_methods` with one section per method,
 * `database.recovery_conf`, a custom bootstrap method's `no_params` / `keep_existing_recovery_conf`
 * / `recovery_conf`, and `backup`. What is not honoured is refused naming the key.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.ts';
import { GOOD_YAML } from './fixtures.ts';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    return (e as { problems?: string[] }).problems ?? [String(e)];
  }
  throw new Error('no problems');
}

const withDatabase = (lines: string) => GOOD_YAML.replace('database:\n', `database:\n${lines}`);

describe('database.create_replica_methods and the method sections', () => {
  it('takes the methods in order, their sections, options and arguments', () => {
    const c = parseConfig(
      withDatabase(
        '  create_replica_methods: [pgbackrest, basebackup]\n' +
          '  pgbackrest: {command: "pgbackrest --stanza=demo --delta restore", keep_data: true, no_params: true, no_leader: false, process-max: 2}\n',
      ),
      {},
    );
    expect(c.database.create_replica_methods).toEqual(['pgbackrest', 'basebackup']);
    expect(c.database.replica_methods).toEqual({
      pgbackrest: {
        command: 'pgbackrest --stanza=demo --delta restore',
        keep_data: true,
        no_params: true,
        no_leader: false,
        'process-max': 2,
      },
    });
  });

  it('takes no_leader: true (a method that restores from a repository with no leader running)', () => {
    const c = parseConfig(withDatabase('  create_replica_methods: [repo, basebackup]\n  repo: {command: restore, no_leader: true}\n'), {});
    expect(c.database.replica_methods).toEqual({ repo: { command: 'restore', no_leader: true } });
    expect(
      problemsOf(() => parseConfig(withDatabase('  create_replica_methods: [repo]\n  repo: {command: restore, no_leader: yes}\n'), {}))[0],
    ).toMatch(/^database\.repo\.no_leader: /);
  });

  it('defaults to [basebackup] with no sections', () => {
    const c = parseConfig(GOOD_YAML, {});
    expect(c.database.create_replica_methods).toEqual(['basebackup']);
    expect(c.database.replica_methods).toEqual({});
    expect(c.database.recovery_conf).toEqual({});
  });

  it("reads the reference's older name create_replica_method", () => {
    const c = parseConfig(withDatabase('  create_replica_method: [wal_g]\n  wal_g: {command: /usr/bin/wal-g-restore}\n'), {});
    expect(c.database.create_replica_methods).toEqual(['wal_g']);
  });

  it('refuses a method without its section, a section not listed, a bad section, basebackup options and duplicates, naming each key', () => {
    expect(
      problemsOf(() =>
        parseConfig(
          withDatabase(
            '  create_replica_methods: [pgbackrest, wal_e]\n  pgbackrest: {keep_data: "yes"}\n  walg: {command: "y"}\n  conect_address: 1\n',
          ),
          {},
        ),
      ),
    ).toEqual([
      'database.pgbackrest.command: is required',
      'database.pgbackrest.keep_data: must be true or false, got "yes"',
      'database.walg: unknown key (a replica creation method section: name it in create_replica_methods)',
      'database.conect_address: unknown key; did you mean connect_address?',
      'database.create_replica_methods: names wal_e, which has no section wal_e (with its command) in this section',
    ]);
    expect(
      problemsOf(() => parseConfig(withDatabase('  create_replica_methods: [basebackup, basebackup]\n  basebackup: {max-rate: 1M}\n'), {})),
    ).toEqual([
      "database.basebackup: not implemented: pg_basebackup runs with the agent's own options",
      'database.create_replica_methods: names a method twice',
    ]);
    expect(problemsOf(() => parseConfig(withDatabase('  create_replica_methods: []\n'), {}))).toEqual([
      'database.create_replica_methods: must name at least one method (basebackup is the built-in one)',
    ]);
    expect(problemsOf(() => parseConfig(withDatabase('  create_replica_methods: [x]\n  x: {command: "a\\nb", opt: [1]}\n'), {}))).toEqual([
      'database.x.command: must be one line (no line breaks)',
      'database.x.opt: must be a string, number or boolean (passed as --key=value), got Array',
    ]);
  });
});

describe('database.recovery_conf', () => {
  it('takes restore_command, archive_cleanup_command and recovery_min_apply_delay', () => {
    const c = parseConfig(
      withDatabase(
        '  recovery_conf: {restore_command: \'pgbackrest --stanza=demo archive-get %f "%p"\', archive_cleanup_command: "true", recovery_min_apply_delay: 5min}\n',
      ),
      {},
    );
    expect(c.database.recovery_conf).toEqual({
      restore_command: 'pgbackrest --stanza=demo archive-get %f "%p"',
      archive_cleanup_command: 'true',
      recovery_min_apply_delay: '5min',
    });
  });

  it('refuses recovery targets and the settings the agent writes itself, naming each', () => {
    expect(
      problemsOf(() =>
        parseConfig(withDatabase('  recovery_conf: {recovery_target_time: "2024-01-01", primary_conninfo: x, restore_commnd: y}\n'), {}),
      ),
    ).toEqual([
      'database.recovery_conf.recovery_target_time: not honoured for replicas: a replica that stops at a recovery target stops following its leader',
      "database.recovery_conf.primary_conninfo: not implemented: the agent writes primary_conninfo itself, from the leader's (or replicatefrom member's) address",
      'database.recovery_conf.restore_commnd: unknown key; did you mean restore_command?',
    ]);
  });
});

describe('a custom bootstrap method', () => {
  it('takes no_params and arguments', () => {
    const c = parseConfig(
      `${GOOD_YAML}bootstrap:\n  method: restore\n  restore:\n    command: pgbackrest --stanza=demo restore\n    no_params: true\n    set: 20240501-120000F\n`,
      {},
    );
    expect(c.bootstrap.method).toBe('restore');
    expect(c.bootstrap.methods['restore']).toEqual({
      command: 'pgbackrest --stanza=demo restore',
      no_params: true,
      set: '20240501-120000F',
    });
  });

  it('takes recovery_conf (a restore to a point in time) and keep_existing_recovery_conf', () => {
    const c = parseConfig(
      `${GOOD_YAML}bootstrap:\n  method: pitr\n  pitr: {command: x, no_params: true, recovery_conf: {recovery_target_time: '2026-11-27 12:00:00+00', recovery_target_inclusive: false}}\n`,
      {},
    );
    expect(c.bootstrap.methods['pitr']?.recovery_conf).toEqual({
      recovery_target_time: '2026-11-27 12:00:00+00',
      recovery_target_inclusive: false,
    });
    const keep = parseConfig(`${GOOD_YAML}bootstrap:\n  method: pitr\n  pitr: {command: x, keep_existing_recovery_conf: true}\n`, {});
    expect(keep.bootstrap.methods['pitr']?.keep_existing_recovery_conf).toBe(true);
  });

  it('refuses a recovery_target_action other than promote, two targets and unknown recovery keys, naming each', () => {
    const problems = problemsOf(() =>
      parseConfig(
        `${GOOD_YAML}bootstrap:\n  method: pitr\n  pitr: {command: x, recovery_conf: {recovery_target_time: t, recovery_target_name: n, recovery_target_action: pause, primary_conninfo: x}}\n`,
        {},
      ),
    );
    expect(problems.join('\n')).toMatch(/bootstrap\.pitr\.recovery_conf\.recovery_target_action: only promote is honoured/);
    expect(problems.join('\n')).toMatch(/bootstrap\.pitr\.recovery_conf\.primary_conninfo: unknown key/);
    expect(
      problemsOf(() =>
        parseConfig(
          `${GOOD_YAML}bootstrap:\n  method: pitr\n  pitr: {command: x, recovery_conf: {recovery_target_time: t, recovery_target_name: n}}\n`,
          {},
        ),
      ),
    ).toEqual([
      'bootstrap.pitr.recovery_conf: names more than one recovery target (recovery_target, _time, _lsn, _name, _xid): PostgreSQL takes one',
    ]);
  });
});

describe('backup', () => {
  it('takes command and create', () => {
    const c = parseConfig(
      `${GOOD_YAML}backup: {command: pgbackrest --stanza=demo backup, create: pgbackrest --stanza=demo stanza-create}\n`,
      {},
    );
    expect(c.backup).toEqual({ command: 'pgbackrest --stanza=demo backup', create: 'pgbackrest --stanza=demo stanza-create' });
    expect(parseConfig(GOOD_YAML, {}).backup).toBeUndefined();
  });

  it('refuses a section without command and unknown keys', () => {
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}backup: {create: x, schedule: daily}\n`, {}))).toEqual([
      'backup.command: is required',
      'backup.schedule: unknown key',
    ]);
  });
});
