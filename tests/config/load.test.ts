import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/index.ts';
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

const dir = mkdtempSync(join(tmpdir(), 'ha-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseConfig', () => {
  it('parses a minimal file and fills every default', () => {
    const c = parseConfig(GOOD_YAML, {});
    expect(c.scope).toBe('demo');
    expect(c.namespace).toBe('/service/');
    expect(c.restapi).toEqual({ listen: '127.0.0.1:8008', connect_address: '127.0.0.1:8008' });
    expect(c.database.connect_address).toBe('127.0.0.1:5432');
    expect(c.database.socket_dir).toBe('/var/lib/ha/.node1-sock');
    expect(c.database.bin_dir).toBeUndefined();
    expect(c.database.parameters).toEqual({});
    expect(c.etcd3.hosts).toEqual(['127.0.0.1:2379']);
    expect(c.bootstrap).toEqual({
      dcs: {
        ttl: 30,
        loop_wait: 10,
        retry_timeout: 10,
        maximum_lag_on_failover: 1048576,
        check_timeline: false,
        database: {
          use_slots: true,
          use_db_rewind: true,
          remove_data_directory_on_diverged_timelines: false,
          remove_data_directory_on_rewind_failure: true,
          parameters: {},
        },
      },
      method: 'initdb',
      initdb: [],
      pg_hba: [],
      methods: {},
    });
    expect(c.tags).toEqual({});
    expect(c.log.level).toBe('info');
  });

  it("keeps tools' keys of bootstrap.dcs (x-…) and YAML 1.2 strings such as on", () => {
    const c = parseConfig(
      `${GOOD_YAML}bootstrap:\n  dcs:\n    ttl: 40\n    synchronous_mode: quorum\n    x-my-tool: {a: 1}\n    database: {parameters: {hot_standby: on, wal_log_hints: true}}\n`,
      {},
    );
    expect(c.bootstrap.dcs.ttl).toBe(40);
    expect(c.bootstrap.dcs.loop_wait).toBe(10);
    expect(c.bootstrap.dcs['x-my-tool']).toEqual({ a: 1 });
    expect(c.bootstrap.dcs.synchronous_mode).toBe('quorum');
    expect(c.bootstrap.dcs.database.parameters).toEqual({ hot_standby: 'on', wal_log_hints: 'on' });
  });

  it('accepts etcd3.hosts as a comma string and returns a list', () => {
    const c = parseConfig(GOOD_YAML.replace('[127.0.0.1:2379]', '"10.0.0.1:2379, 10.0.0.2:2379,[::1]:2379"'), {});
    expect(c.etcd3.hosts).toEqual(['10.0.0.1:2379', '10.0.0.2:2379', '[::1]:2379']);
  });

  it('normalizes bootstrap.initdb to --key=value and --flag arguments', () => {
    const c = parseConfig(
      `${GOOD_YAML}bootstrap:\n  initdb: [ {encoding: UTF8}, data-checksums, {wal-segsize: 32}, {auth-local: trust} ]\n`,
      {},
    );
    expect(c.bootstrap.initdb).toEqual(['--encoding=UTF8', '--data-checksums', '--wal-segsize=32', '--auth-local=trust']);
  });

  it('accepts a custom bootstrap method that has its own section', () => {
    const c = parseConfig(`${GOOD_YAML}bootstrap:\n  method: from_backup\n  from_backup: {command: /opt/restore.sh, keep: 1}\n`, {});
    expect(c.bootstrap.method).toBe('from_backup');
    expect(c.bootstrap.methods).toEqual({ from_backup: { command: '/opt/restore.sh', keep: 1 } });
  });

  it.each(['nope', 'dcs', 'toString'])('rejects bootstrap method %s, which has no custom section', (method) => {
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}bootstrap:\n  method: ${method}\n`, {}))).toEqual([
      `bootstrap.method: "${method}" is neither initdb nor a section of bootstrap`,
    ]);
  });

  it('names HA_ETCD3_HOSTS when its flow list is not YAML', () => {
    expect(problemsOf(() => parseConfig(GOOD_YAML, { HA_ETCD3_HOSTS: '[a:2379, b:2379' }))).toEqual([
      'etcd3.hosts: HA_ETCD3_HOSTS is neither a comma list nor a YAML flow list: [a:2379, b:2379',
    ]);
  });

  it('keeps both nofailover and failover_priority and custom tags of any JSON type', () => {
    const c = parseConfig(`${GOOD_YAML}tags: {nofailover: true, failover_priority: 3, zone: [a, b], rack: {n: 1}}\n`, {});
    expect(c.tags).toEqual({ nofailover: true, failover_priority: 3, zone: ['a', 'b'], rack: { n: 1 } });
  });

  it('lets the environment win over the file', () => {
    const c = parseConfig(GOOD_YAML, {
      HA_NAME: 'node7',
      HA_SCOPE: 'other',
      HA_NAMESPACE: 'ns',
      HA_ETCD3_HOSTS: '[10.0.0.1:2379, 10.0.0.2:2379]',
      HA_RESTAPI_LISTEN: '0.0.0.0:9008',
      HA_RESTAPI_CONNECT_ADDRESS: '10.0.0.7:9008',
      HA_DATABASE_LISTEN: '127.0.0.1:6432',
      HA_DATABASE_CONNECT_ADDRESS: '10.0.0.7:6432',
      HA_DATABASE_DATA_DIR: '/data/pg',
      HA_DATABASE_BIN_DIR: '/usr/lib/postgresql/15/bin',
      HA_DATABASE_SOCKET_DIR: '/run/ha',
      HA_SUPERUSER_USERNAME: 'root',
      HA_SUPERUSER_PASSWORD: 'p1',
      HA_REPLICATION_USERNAME: 'repl',
      HA_REPLICATION_PASSWORD: 'p2',
      HA_LOG_LEVEL: 'debug',
      HA_TOTALLY_UNRELATED: 'x',
    });
    expect(c.name).toBe('node7');
    expect(c.scope).toBe('other');
    expect(c.namespace).toBe('/ns/');
    expect(c.etcd3.hosts).toEqual(['10.0.0.1:2379', '10.0.0.2:2379']);
    expect(c.restapi).toEqual({ listen: '0.0.0.0:9008', connect_address: '10.0.0.7:9008' });
    expect(c.database).toMatchObject({
      listen: '127.0.0.1:6432',
      connect_address: '10.0.0.7:6432',
      data_dir: '/data/pg',
      bin_dir: '/usr/lib/postgresql/15/bin',
      socket_dir: '/run/ha',
      authentication: { superuser: { username: 'root', password: 'p1' }, replication: { username: 'repl', password: 'p2' } },
    });
    expect(c.log.level).toBe('debug');
  });

  it('accepts HA_ETCD3_HOSTS as a comma list and ignores empty variables', () => {
    const c = parseConfig(GOOD_YAML, { HA_ETCD3_HOSTS: 'a:2379,b:2379', HA_NAME: '' });
    expect(c.etcd3.hosts).toEqual(['a:2379', 'b:2379']);
    expect(c.name).toBe('node1');
  });

  it('names the variable when an environment value is bad', () => {
    expect(problemsOf(() => parseConfig(GOOD_YAML, { HA_DATABASE_LISTEN: 'localhost' }))).toEqual([
      'database.listen: must be host:port (port missing) (from HA_DATABASE_LISTEN)',
    ]);
  });

  it('reports every problem of a bad file in one ConfigError with paths', () => {
    const bad = `
scope: demo
restapi: {listen: 127.0.0.1:8008}
etcd3: {hosts: [127.0.0.1:2379, etcd2]}
bootstrap:
  dcs: {ttl: 30, loop_wait: 20, retry_timeout: 10}
database:
  listen: 127.0.0.1:70000
  data_dir: /var/lib/ha/node1
  authentication:
    superuser: {username: postgres}
    replication: {username: replicator}
`;
    let error: unknown;
    try {
      parseConfig(bad, {}, 'bad.yml');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const ce = error as ConfigError;
    expect(ce.exitCode).toBe(2);
    expect(ce.problems).toEqual([
      'name: is required',
      'etcd3.hosts.1: must be host:port (port missing)',
      'bootstrap.dcs: loop_wait + 2*retry_timeout must not exceed ttl: loop_wait 20 + 2*retry_timeout 10 = 40 > ttl 30',
      'database.listen: port 70000 is outside 1..65535',
    ]);
    expect(ce.message).toBe('invalid configuration (bad.yml): 4 problems\n' + ce.problems.map((p) => `  - ${p}`).join('\n'));
  });

  it('reports wrong types, unknown keys and cross-key rules together', () => {
    const problems = problemsOf(() =>
      parseConfig(`${GOOD_YAML.replace('127.0.0.1:8008', '0.0.0.0:8008')}log: {level: loud}\npostgresql: {}\ntags: {nofailover: "yes"}\n`, {
        HA_DATABASE_DATA_DIR: 'relative/dir',
      }),
    );
    expect(problems).toEqual([
      "(root): postgresql (the reference's name) and database name the same section: write one",
      'database.data_dir: must be an absolute path (from HA_DATABASE_DATA_DIR)',
      'tags.nofailover: must be true or false, got "yes"',
      'log.level: must be one of trace, debug, info, warn, error, got "loud"',
      'restapi.connect_address: required because restapi.listen\'s host "0.0.0.0" means every interface',
    ]);
  });

  it('refuses parameters the agent derives and socket paths too long for unix sockets', () => {
    const yaml = `${GOOD_YAML}  parameters: {port: 5433, max_connections: 100}\n  socket_dir: /${'s'.repeat(100)}\n`;
    expect(problemsOf(() => parseConfig(yaml, {}))).toEqual([
      `database.socket_dir: socket path /${'s'.repeat(100)}/.s.PGSQL.5432 is 115 bytes, over the 107-byte limit of unix sockets; set a shorter socket_dir`,
      'database.parameters.port: set by database.listen; remove it',
    ]);
  });

  it('reports YAML syntax errors with line and column', () => {
    const problems = problemsOf(() =>
      parseConfig('scope: demo\nname: node1\nrestapi:\n  listen: [127.0.0.1:8008\nname: x\n', {}, 'ha.yml'),
    );
    expect(problems[0]).toBe(
      'ha.yml:5:1: YAML BAD_INDENT: Flow sequence in block collection must be sufficiently indented and end with a ]',
    );
    expect(problemsOf(() => parseConfig('scope: a\nscope: b\n', {}, 'ha.yml'))).toEqual([
      'ha.yml:2:1: YAML DUPLICATE_KEY: Map keys must be unique',
    ]);
  });

  it('refuses lists where a mapping is expected', () => {
    const yaml = `${GOOD_YAML}  parameters: [max_connections]\ntags: [nofailover]\nbootstrap: {dcs: [ttl]}\n`;
    expect(problemsOf(() => parseConfig(yaml, {}))).toEqual([
      'bootstrap.dcs: must be a mapping, got Array',
      'database.parameters: must be a mapping, got Array',
      'tags: must be a mapping, got Array',
    ]);
  });

  it('refuses a document that is not a mapping', () => {
    expect(problemsOf(() => parseConfig('- a\n- b\n', {}))).toEqual([
      '(root): the configuration must be a mapping of sections, got a list',
    ]);
  });
});

describe('loadConfig', () => {
  it('reads a file', async () => {
    const path = join(dir, 'ha.yml');
    writeFileSync(path, GOOD_YAML);
    const c = await loadConfig(path, { HA_CONFIGURATION: 'ignored: true' });
    expect(c.name).toBe('node1');
  });

  it('uses HA_CONFIGURATION when no file is given, with other variables over it', async () => {
    const c = await loadConfig(undefined, { HA_CONFIGURATION: GOOD_YAML, HA_NAME: 'node2' });
    expect(c.name).toBe('node2');
    expect(c.scope).toBe('demo');
  });

  it('builds the whole configuration from variables alone', async () => {
    const c = await loadConfig(undefined, {
      HA_NAME: 'n1',
      HA_SCOPE: 's',
      HA_ETCD3_HOSTS: '127.0.0.1:2379',
      HA_RESTAPI_LISTEN: '127.0.0.1:8008',
      HA_DATABASE_LISTEN: '127.0.0.1:5432',
      HA_DATABASE_DATA_DIR: '/tmp/n1',
      HA_SUPERUSER_USERNAME: 'postgres',
      HA_REPLICATION_USERNAME: 'replicator',
    });
    expect(c.database.authentication.replication).toEqual({ username: 'replicator' });
  });

  it('lists every missing required key when there is no configuration at all', async () => {
    await expect(loadConfig(undefined, {})).rejects.toMatchObject({
      source: 'environment',
      problems: ['scope: is required', 'name: is required', 'restapi: is required', 'etcd3: is required', 'database: is required'],
    });
  });

  it('turns an unreadable file into a ConfigError naming the path', async () => {
    const path = join(dir, 'missing.yml');
    await expect(loadConfig(path, {})).rejects.toSatisfy(
      (e) => e instanceof ConfigError && /^.*missing\.yml: cannot read the file \(ENOENT/.test(e.problems[0] ?? ''),
    );
  });
});
