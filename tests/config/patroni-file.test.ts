/**
 * The reference's member configuration file (`patroni.yml`) loaded as it is (issue 26): its
 * dialect (`postgresql`, `use_pg_rewind` in `bootstrap.dcs`), YAML 1.1 as the reference reads
 * it, `PATRONI_*` variables beside `HA_*`, the keys not implemented refused naming each, and
 * `ha config convert`. The examples Debian's `patroni` package (3.0.2) ships are read from
 * /usr/share/doc/patroni/examples (`.ci/run` installs the package).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import { convertConfigText } from '../../src/config/convert.ts';
import { checkConfigText } from '../../src/config/load.ts';
import { GOOD_YAML } from './fixtures.ts';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

/** GOOD_YAML in the reference's dialect. */
const PATRONI_YAML = GOOD_YAML.replace('database:', 'postgresql:');

const EXAMPLES = '/usr/share/doc/patroni/examples';
const HAVE_EXAMPLES = existsSync(EXAMPLES);
const EXAMPLES_SKIP = "[needs Debian's patroni package (apt-get install patroni; .ci/run installs it)]";

/** An example of the package, as shipped (some are gzipped), with `data_dir` made absolute: the only adaptation (a path). */
function example(name: string): string {
  const plain = join(EXAMPLES, name);
  const text = existsSync(plain) ? readFileSync(plain, 'utf8') : gunzipSync(readFileSync(`${plain}.gz`)).toString('utf8');
  return text.replace(/data_dir: data\//, 'data_dir: /var/lib/patroni/');
}

/** `text` with the DCS section renamed to etcd3 and the given paths deleted (the edits an operator makes for the keys refused). */
function edited(text: string, remove: string[][]): string {
  const doc = YAML.parseDocument(text, { version: '1.1' });
  for (const p of remove) doc.deleteIn(p);
  return doc.toString().replace(/^etcd:$/m, 'etcd3:');
}

/** What each example refuses, and nothing else (the file's own names). */
const REFUSED: Record<string, string[]> = {
  'postgres0.yml': ['etcd', 'bootstrap.users', 'postgresql.authentication.rewind', 'etcd3'],
  'postgres1.yml': ['etcd', 'bootstrap.users', 'postgresql.basebackup', 'postgresql.authentication.rewind', 'etcd3'],
  'postgres2.yml': ['etcd', 'bootstrap.users', 'postgresql.authentication.rewind', 'etcd3'],
};

describe.skipIf(!HAVE_EXAMPLES)(`the reference's example configurations ${HAVE_EXAMPLES ? '' : EXAMPLES_SKIP}`, () => {
  it.each(Object.keys(REFUSED))('%s fails naming each key that is not implemented, with why', (name) => {
    const problems = problemsOf(() => parseConfig(example(name), {}, name));
    expect(problems.map((p) => p.slice(0, p.indexOf(':')))).toEqual(REFUSED[name]);
    expect(problems).toContain(
      "etcd: not implemented: this agent speaks the etcd v3 API only (section etcd3, the same keys); the reference's etcd section uses the v2 API, whose keys etcd v3 does not see",
    );
    expect(problems).toContain('etcd3: is required');
  });

  it.each(Object.keys(REFUSED))('%s loads once those keys are removed and etcd is etcd3', (name) => {
    const remove = REFUSED[name]!.filter((p) => p !== 'etcd' && p !== 'etcd3').map((p) => p.split('.'));
    const c = parseConfig(edited(example(name), remove), {}, name);
    const n = name.slice('postgres'.length, -'.yml'.length);
    expect(c.scope).toBe('batman');
    expect(c.name).toBe(`postgresql${n}`);
    expect(c.etcd3.hosts).toEqual(['127.0.0.1:2379']);
    expect(c.restapi.listen).toBe(`127.0.0.1:${8008 + Number(n)}`);
    expect(c.database.listen).toBe(`127.0.0.1:${5432 + Number(n)}`);
    expect(c.database.data_dir).toBe(`/var/lib/patroni/postgresql${n}`);
    // pgpass is the password file our agent writes; unix_socket_directories '..' (of data_dir) its socket_dir.
    expect(c.database.pgpass).toBe(`/tmp/pgpass${n}`);
    expect(c.database.socket_dir).toBe('/var/lib/patroni');
    expect(c.database.parameters['unix_socket_directories']).toBeUndefined();
    expect(c.database.authentication).toEqual({
      replication: { username: 'replicator', password: 'rep-pass' },
      superuser: { username: 'postgres', password: 'zalando' },
    });
    expect(c.bootstrap.initdb).toEqual(['--encoding=UTF8', '--data-checksums']);
    expect(c.bootstrap.pg_hba).toEqual(['host replication replicator 127.0.0.1/32 md5', 'host all all 0.0.0.0/0 md5']);
    // bootstrap.dcs.postgresql.use_pg_rewind: true, the rest of the reference's defaults.
    expect(c.bootstrap.dcs).toMatchObject({ ttl: 30, loop_wait: 10, retry_timeout: 10, maximum_lag_on_failover: 1048576 });
    expect(c.bootstrap.dcs.database).toEqual({
      use_db_rewind: true,
      remove_data_directory_on_rewind_failure: false,
      use_slots: true,
      remove_data_directory_on_diverged_timelines: false,
      parameters: {},
    });
    expect(c.tags).toMatchObject({ nofailover: false, noloadbalance: false, clonefrom: false });
    if (n === '2') {
      expect(c.tags.replicatefrom).toBe('postgres1');
      expect(c.restapi.authentication).toEqual({ username: 'username', password: 'password' });
    }
  });

  it.each(Object.keys(REFUSED))('%s converts to the native form, which loads the same, comments kept', (name) => {
    const remove = REFUSED[name]!.filter((p) => p !== 'etcd' && p !== 'etcd3').map((p) => p.split('.'));
    const text = edited(example(name), remove);
    const native = convertConfigText(text, name);
    expect(native).toMatch(/^database:$/m);
    expect(native).not.toMatch(/^postgresql:$/m);
    expect(native).toMatch(/use_db_rewind: true/);
    expect(native).toContain("# some desired options for 'initdb'");
    const a = checkConfigText(text, {}, name);
    const b = checkConfigText(native, {}, `${name} converted`);
    expect(a.dialect).toBe('patroni');
    expect(b.dialect).toBe('native');
    expect(b.config).toEqual(a.config);
  });

  it('convert refuses the keys that are not implemented, naming each', () => {
    expect(() => convertConfigText(example('postgres0.yml'), 'postgres0.yml')).toThrow(/bootstrap\.users: not implemented/);
  });
});

describe("a file of the reference's dialect", () => {
  const withSocket = (value: string, extra = '') =>
    `${PATRONI_YAML}${extra}  parameters: {unix_socket_directories: '${value}', work_mem: 8MB}\n`;

  it('takes one directory of parameters.unix_socket_directories as socket_dir, relative ones resolved against data_dir (issue 26)', () => {
    const c = parseConfig(withSocket('/var/run/postgresql'), {});
    expect(c.database.socket_dir).toBe('/var/run/postgresql');
    expect(c.database.parameters).toEqual({ work_mem: '8MB' });
    expect(parseConfig(withSocket('..'), {}).database.socket_dir).toBe('/var/lib/ha');
    expect(parseConfig(withSocket(' /tmp , '), {}).database.socket_dir).toBe('/tmp');
  });

  it('refuses several socket directories, and leaves the parameter to the cross-checks when socket_dir is given', () => {
    expect(problemsOf(() => parseConfig(withSocket('/tmp,/var/run/postgresql'), {}))).toEqual([
      'postgresql.parameters.unix_socket_directories: only one directory is implemented (it becomes socket_dir), got "/tmp,/var/run/postgresql"',
    ]);
    expect(problemsOf(() => parseConfig(withSocket('/tmp', '  socket_dir: /run/ha\n'), {}))).toEqual([
      expect.stringMatching(/^postgresql\.parameters\.unix_socket_directories: set by postgresql\.socket_dir/),
    ]);
  });

  it('reads postgresql.pgpass as the password file the agent writes', () => {
    expect(parseConfig(`${PATRONI_YAML}  pgpass: /var/lib/postgresql/.pgpass\n`, {}).database.pgpass).toBe('/var/lib/postgresql/.pgpass');
    expect(parseConfig(PATRONI_YAML, {}).database.pgpass).toBeUndefined();
  });

  it('is read as the reference reads it: YAML 1.1 (on, off, yes, no are booleans)', () => {
    const c = parseConfig(
      `${PATRONI_YAML}  parameters: {hot_standby: on, archive_mode: off}\ntags: {nofailover: no, nosync: yes}\nbootstrap:\n  dcs:\n    postgresql: {use_pg_rewind: yes, parameters: {wal_log_hints: on}}\n`,
      {},
    );
    expect(c.database.parameters).toEqual({ hot_standby: true, archive_mode: false });
    expect(c.tags).toEqual({ nofailover: false, nosync: true });
    expect(c.bootstrap.dcs.database.use_db_rewind).toBe(true);
    expect(c.bootstrap.dcs.database.parameters).toEqual({ wal_log_hints: 'on' });
    // PyYAML's booleans, not the y/n of other YAML 1.1 parsers: a member may be named n.
    expect(parseConfig(PATRONI_YAML.replace('name: node1', 'name: n'), {}).name).toBe('n');
    expect(problemsOf(() => parseConfig(`${PATRONI_YAML}tags: {nofailover: y}\n`, {}))).toEqual([
      'tags.nofailover: must be true or false, got "y"',
    ]);
    // Ours stays YAML 1.2: `on` is a string.
    expect(parseConfig(`${GOOD_YAML}tags: {custom: no}\n`, {}).tags).toEqual({ custom: 'no' });
  });

  it('names its problems in its own names', () => {
    expect(problemsOf(() => parseConfig(PATRONI_YAML.replace('data_dir: /var/lib/ha/node1', 'data_dir: relative'), {}))).toEqual([
      'postgresql.data_dir: must be an absolute path',
    ]);
    expect(problemsOf(() => parseConfig(`${PATRONI_YAML}  conect_address: 127.0.0.1:5432\n`, {}))).toEqual([
      'postgresql.conect_address: unknown key; did you mean connect_address?',
    ]);
    expect(
      problemsOf(() => parseConfig(`${PATRONI_YAML}bootstrap:\n  dcs:\n    postgresql: {use_pg_rewind: maybe, pg_hba: [x]}\n`, {})),
    ).toEqual([
      "bootstrap.dcs.postgresql.pg_hba: not supported in the dynamic configuration: set postgresql.pg_hba in each member's local configuration file",
      'bootstrap.dcs.postgresql.use_pg_rewind: must be true or false, got "maybe"',
    ]);
  });

  it("takes the reference's keys implemented under another shape", () => {
    const c = parseConfig(
      PATRONI_YAML.replace('hosts: [127.0.0.1:2379]', 'host: 10.0.0.1:2379') +
        '  create_replica_methods: [basebackup]\n  use_unix_socket: true\n  use_unix_socket_repl: false\n',
      {},
    );
    expect(c.etcd3.hosts).toEqual(['10.0.0.1:2379']);
    expect(
      problemsOf(() => parseConfig(`${PATRONI_YAML}  create_replica_methods: [wal_e, basebackup]\n  use_unix_socket: false\n`, {})),
    ).toEqual([
      'postgresql.use_unix_socket: only true is implemented: the agent always connects to its PostgreSQL through the unix socket in socket_dir, got false',
      'postgresql.create_replica_methods: names wal_e, which has no section wal_e (with its command) in this section',
    ]);
  });

  it("refuses the cluster-wide settings in a member's section, and the rest of what is not implemented", () => {
    const yaml = `${PATRONI_YAML}  use_pg_rewind: true\n  pre_promote: /bin/true\n  callbacks: {on_start: /bin/true}\nlog: {level: debug, format: '%(message)s'}\nrestapi2: {}\n`;
    expect(problemsOf(() => parseConfig(yaml, {}))).toEqual([
      "postgresql.use_pg_rewind: a cluster-wide setting here: set it in bootstrap.dcs's database (postgresql) section for a new cluster, or change the cluster's with PATCH /config or hactl edit-config; a member's file does not override the dynamic configuration",
      'postgresql.pre_promote: not implemented: no program runs before a promotion (the fence guards it: docs/ha.md "Fencing")',
      'log.format: not implemented: the agent writes JSON lines to standard error; only log.level is read',
      'restapi2: unknown key; did you mean restapi?',
    ]);
  });

  it('refuses a file naming both sections', () => {
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}postgresql: {}\n`, {}))).toEqual([
      "(root): postgresql (the reference's name) and database name the same section: write one",
    ]);
  });

  it('reads an empty mapping left by commented-out lines as empty', () => {
    const c = parseConfig(`${PATRONI_YAML}  parameters:\ntags:\nbootstrap:\n  dcs:\n    postgresql:\n      parameters:\n`, {});
    expect(c.database.parameters).toEqual({});
    expect(c.tags).toEqual({});
  });
});

describe('PATRONI_* variables beside HA_*', () => {
  const ENV_ONLY = {
    PATRONI_NAME: 'n1',
    PATRONI_SCOPE: 'c1',
    PATRONI_RESTAPI_LISTEN: '127.0.0.1:8008',
    PATRONI_ETCD3_HOSTS: "'10.0.0.1:2379','10.0.0.2:2379'",
    PATRONI_POSTGRESQL_LISTEN: '127.0.0.1:5432',
    PATRONI_POSTGRESQL_DATA_DIR: '/var/lib/ha/n1',
    PATRONI_SUPERUSER_USERNAME: 'postgres',
    PATRONI_REPLICATION_USERNAME: 'replicator',
    PATRONI_REPLICATION_PASSWORD: 'rep',
    PATRONI_RESTAPI_ALLOWLIST_INCLUDE_MEMBERS: 'on',
    PATRONI_LOGLEVEL: 'debug',
  };

  it('set the keys their HA_* twins set, read as the reference reads them', () => {
    const c = parseConfig('', ENV_ONLY, 'environment');
    expect(c.name).toBe('n1');
    expect(c.scope).toBe('c1');
    expect(c.etcd3.hosts).toEqual(['10.0.0.1:2379', '10.0.0.2:2379']);
    expect(c.database.data_dir).toBe('/var/lib/ha/n1');
    expect(c.database.authentication.replication).toEqual({ username: 'replicator', password: 'rep' });
    expect(c.restapi.allowlist_include_members).toBe(true);
    expect(c.log.level).toBe('debug');
    expect(parseConfig(PATRONI_YAML, { PATRONI_ETCD3_HOST: '10.0.0.3:2379' }).etcd3.hosts).toEqual(['10.0.0.3:2379']);
  });

  it('agree with their HA_* twins or are refused; problems name the variable', () => {
    expect(parseConfig(GOOD_YAML, { HA_NAME: 'a', PATRONI_NAME: 'a' }).name).toBe('a');
    expect(problemsOf(() => parseConfig(GOOD_YAML, { HA_NAME: 'a', PATRONI_NAME: 'b' }))).toEqual([
      'name: set by both HA_NAME and PATRONI_NAME, to different values; unset one (from HA_NAME)',
    ]);
    expect(problemsOf(() => parseConfig(GOOD_YAML, { PATRONI_POSTGRESQL_DATA_DIR: 'relative' }))).toEqual([
      'database.data_dir: must be an absolute path (from PATRONI_POSTGRESQL_DATA_DIR)',
    ]);
  });

  it('PATRONI_POSTGRESQL_PGPASS names the password file the agent writes', () => {
    expect(parseConfig(GOOD_YAML, { PATRONI_POSTGRESQL_PGPASS: '/tmp/pgpass' }).database.pgpass).toBe('/tmp/pgpass');
    expect(parseConfig(GOOD_YAML, { HA_DATABASE_PGPASS: '/tmp/pgpass' }).database.pgpass).toBe('/tmp/pgpass');
    expect(problemsOf(() => parseConfig(GOOD_YAML, { PATRONI_POSTGRESQL_PGPASS: 'pgpass' }))).toEqual([
      'database.pgpass: must be an absolute path (from PATRONI_POSTGRESQL_PGPASS)',
    ]);
  });

  it('of settings that are not implemented are refused, each named', () => {
    const env = {
      PATRONI_REWIND_USERNAME: 'rewind',
      PATRONI_ADMIN_PASSWORD: 'x',
      PATRONI_ETCD_HOST: '127.0.0.1:2379',
      PATRONI_RESTAPI_CIPHERS: 'HIGH',
      PATRONI_SUPERUSER_SSLMODE: 'require',
      PATRONI_LOG_FORMAT: '%(message)s',
      PATRONI_SOMETHING_THE_REFERENCE_DOES_NOT_READ: '1',
    };
    expect(problemsOf(() => parseConfig(GOOD_YAML, env))).toEqual([
      'postgresql.authentication.rewind: not implemented: pg_rewind connects as the superuser (from PATRONI_REWIND_USERNAME)',
      'bootstrap.users: not implemented: create the roles once the cluster runs (the reference deprecated bootstrap.users too) (from PATRONI_ADMIN_PASSWORD)',
      expect.stringMatching(/^etcd: not implemented: this agent speaks the etcd v3 API only .* \(from PATRONI_ETCD_HOST\)$/),
      "restapi.ciphers: not implemented: the node API uses Node.js's default TLS ciphers (from PATRONI_RESTAPI_CIPHERS)",
      "postgresql.authentication.superuser.sslmode: not implemented: the agent's database connections take a username and a password only (from PATRONI_SUPERUSER_SSLMODE)",
      'log.format: not implemented: the agent writes JSON lines to standard error; only log.level is read (from PATRONI_LOG_FORMAT)',
    ]);
  });
});

describe('did you mean, in a member file of either dialect', () => {
  it('suggests the closest key of the section; tells where a dynamic setting belongs', () => {
    expect(
      problemsOf(() =>
        parseConfig(GOOD_YAML.replace('  listen: 127.0.0.1:8008', '  listen: 127.0.0.1:8008\n  conect_address: 127.0.0.1:8008'), {}),
      ),
    ).toEqual(['restapi.conect_address: unknown key; did you mean connect_address?']);
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}ttl: 20\n`, {}))).toEqual([
      "ttl: a setting of the dynamic configuration: set it in bootstrap.dcs for a new cluster, or change the cluster's with PATCH /config or hactl edit-config",
    ]);
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}bootstrap:\n  dcs: {loop_wiat: 5}\n`, {}))).toEqual([
      'bootstrap.dcs.loop_wiat: unknown key; did you mean loop_wait?',
    ]);
  });
});
