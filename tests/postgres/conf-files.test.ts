import { describe, expect, it } from 'vitest';
import {
  effectiveParameters,
  hbaRole,
  MANAGED_MARKER,
  PgConfigError,
  primaryConninfo,
  quoteConfValue,
  quoteConninfoValue,
  pgpassField,
  renderPassfile,
  renderPgHba,
  renderPostgresqlConf,
  type NodeConf,
  RECOVERY_TARGETS,
} from '../../src/postgres/conf-files.ts';

const node: NodeConf = {
  name: 'node-2',
  scope: 'demo',
  dataDir: '/var/lib/ha/data',
  listen: { host: '127.0.0.1', port: 5433 },
  socketDir: '/run/ha',
  superuser: { username: 'postgres', password: 'su' },
  replication: { username: 'replicator', password: "it's a \\secret" },
  pgHba: ['host all all 10.0.0.0/8 scram-sha-256'],
  passfile: '/var/lib/ha/node-2.pgpass',
};

describe('quoting', () => {
  it('quotes postgresql.conf values: quotes and backslashes doubled', () => {
    expect(quoteConfValue('plain')).toBe("'plain'");
    expect(quoteConfValue("it's")).toBe("'it''s'");
    expect(quoteConfValue('a\\b')).toBe("'a\\\\b'");
    expect(() => quoteConfValue('a\nb')).toThrow(PgConfigError);
  });

  it('quotes libpq conninfo values only when needed, backslash-escaping', () => {
    expect(quoteConninfoValue('host1')).toBe('host1');
    expect(quoteConninfoValue('')).toBe("''");
    expect(quoteConninfoValue('a b')).toBe("'a b'");
    expect(quoteConninfoValue("it's")).toBe("'it\\'s'");
    expect(quoteConninfoValue('a\\b')).toBe("'a\\\\b'");
  });

  it('builds primary_conninfo with application_name = member name, the password in the passfile (never in the conninfo, which PostgreSQL logs)', () => {
    expect(primaryConninfo(node, { host: '10.0.0.1', port: 5432 })).toBe(
      'host=10.0.0.1 port=5432 user=replicator passfile=/var/lib/ha/node-2.pgpass application_name=node-2 sslmode=prefer',
    );
    expect(primaryConninfo(node, { host: '10.0.0.1', port: 5432 })).not.toContain('secret');
  });

  it('writes the password file with `\\` and `:` escaped, for any host, port and database', () => {
    expect(renderPassfile(node)).toBe("*:*:*:replicator:it's a \\\\secret\n");
    expect(renderPassfile({ ...node, replication: { username: 'repl:user', password: 'a:b\\c' } })).toBe('*:*:*:repl\\:user:a\\:b\\\\c\n');
    expect(pgpassField('x')).toBe('x');
    expect(() => renderPassfile({ ...node, replication: { username: 'r', password: 'a\nb' } })).toThrow(PgConfigError);
  });

  it('quotes unusual role names in pg_hba', () => {
    expect(hbaRole('replicator')).toBe('replicator');
    expect(hbaRole('Repl-User')).toBe('"Repl-User"');
    expect(hbaRole('a"b')).toBe('"a""b"');
  });
});

describe('postgresql.conf', () => {
  it('enforces the agent-owned parameters and floors, keeps others', () => {
    const p = effectiveParameters(node, {
      role: 'primary',
      parameters: {
        port: 1,
        listen_addresses: '*',
        max_wal_senders: 3,
        max_replication_slots: '20',
        wal_level: 'hot_standby',
        work_mem: '8MB',
        Max_Connections: 200,
        primary_conninfo: 'x',
      },
    });
    expect(Object.fromEntries(p)).toEqual({
      wal_level: 'replica',
      max_wal_senders: 10,
      max_replication_slots: '20',
      wal_keep_size: '128MB',
      wal_log_hints: 'on',
      work_mem: '8MB',
      max_connections: 200,
      listen_addresses: '127.0.0.1',
      port: 5433,
      unix_socket_directories: '/run/ha',
      cluster_name: 'demo',
      hot_standby: 'on',
      hba_file: '/var/lib/ha/data/pg_hba.conf',
      ident_file: '/var/lib/ha/data/pg_ident.conf',
    });
  });

  it('keeps wal_level=logical and rejects bad parameter names', () => {
    expect(effectiveParameters(node, { role: 'primary', parameters: { wal_level: 'logical' } }).get('wal_level')).toBe('logical');
    expect(() => effectiveParameters(node, { role: 'primary', parameters: { 'bad name': 1 } })).toThrow(PgConfigError);
  });

  it('renders a replica: include first, recovery settings last', () => {
    const text = renderPostgresqlConf(node, {
      role: 'replica',
      upstream: { host: '10.0.0.1', port: 5432, name: 'node-1' },
      slotName: 'node_2',
      parameters: { shared_buffers: '32MB' },
    });
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe(MANAGED_MARKER);
    expect(lines[2]).toBe("include 'postgresql.base.conf'");
    expect(lines).toContain("shared_buffers = '32MB'");
    expect(lines).toContain('port = 5433');
    expect(lines).toContain("unix_socket_directories = '/run/ha'");
    expect(lines.slice(-8)).toEqual([
      "primary_conninfo = 'host=10.0.0.1 port=5432 user=replicator passfile=/var/lib/ha/node-2.pgpass application_name=node-2 sslmode=prefer'",
      "primary_slot_name = 'node_2'",
      "recovery_target_timeline = 'latest'",
      "recovery_target = ''",
      "recovery_target_lsn = ''",
      "recovery_target_name = ''",
      "recovery_target_time = ''",
      "recovery_target_xid = ''",
    ]);
  });

  it('sets every recovery target of a replica to its default, as the reference does (a reload after it keeps no pending restart)', () => {
    const p = effectiveParameters(node, {
      role: 'replica',
      upstream: { host: 'h', port: 1, name: 'n' },
      parameters: { recovery_target: 'immediate' },
    });
    for (const name of RECOVERY_TARGETS) expect(p.get(name)).toBe('');
  });

  it('writes no recovery settings for a primary', () => {
    const text = renderPostgresqlConf(node, {
      role: 'primary',
      upstream: { host: 'x', port: 1, name: 'y' },
      slotName: 's',
      parameters: {},
    });
    expect(text).not.toMatch(/primary_conninfo|primary_slot_name|recovery_target/);
  });
});

describe('pg_hba.conf', () => {
  it('has socket trust for the superuser, scram on loopback, replication, then configured lines', () => {
    const lines = renderPgHba(node)
      .trimEnd()
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .map((l) => l.split(/\s+/).join(' '));
    expect(lines).toEqual([
      'local all postgres trust',
      'host all all 127.0.0.1/32 scram-sha-256',
      'host all all ::1/128 scram-sha-256',
      'host replication replicator 127.0.0.1/32 scram-sha-256',
      'host replication replicator ::1/128 scram-sha-256',
      'host all all 10.0.0.0/8 scram-sha-256',
    ]);
  });

  it('rejects a configured line with a newline', () => {
    expect(() => renderPgHba({ ...node, pgHba: ['host all all 0.0.0.0/0 trust\nlocal all all trust'] })).toThrow(PgConfigError);
  });
});
