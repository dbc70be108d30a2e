/** hactl query, dsn, version (src/ctl/query.ts) on the in-process DCS, with an injected SQL executor and a tiny member API. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  chooseMember,
  pgVersionText,
  renderRows,
  runDsn,
  runQuery,
  runVersion,
  scopeQueryCommandFlag,
  type QueryExecutor,
  type QueryTarget,
} from '../../src/ctl/query.ts';
import type { InMemoryStore } from '../../src/dcs/memory.ts';
import type { MemberData } from '../../src/domain/member.ts';
import { listRows } from '../../src/ctl/list.ts';
import { memoryCluster, threeNodeView } from './fixtures.ts';

const stores: InMemoryStore[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) s.close();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** memoryCluster, its store closed after each test. */
async function cluster(data: Record<string, Partial<MemberData>> = {}) {
  const m = await memoryCluster(data);
  stores.push(m.store);
  return m;
}

describe('chooseMember and dsn', () => {
  it('the leader by default, a replica by role, a member by name', async () => {
    const { session, io } = await cluster();
    await runDsn(session, {});
    await runDsn(session, { role: 'replica' });
    await runDsn(session, { member: 'node3' });
    await runDsn(session, { role: 'any' });
    expect(io.lines).toEqual([
      'host=127.0.0.1 port=5432',
      'host=127.0.0.1 port=5433',
      'host=127.0.0.1 port=5434',
      'host=127.0.0.1 port=5432',
    ]);
  });

  it('refuses --role with --member (usage), unknown members, and a role nobody has', async () => {
    const { session } = await cluster({ node2: { state: 'stopped' }, node3: { state: 'stopped' } });
    await expect(runDsn(session, { role: 'leader', member: 'node1' })).rejects.toMatchObject({
      exitCode: 2,
      message: '--role and --member are mutually exclusive options',
    });
    await expect(runDsn(session, { member: 'node9' })).rejects.toThrow('Member node9 does not exist in cluster demo');
    await expect(runDsn(session, { role: 'replica' })).rejects.toThrow('No replica member found in cluster demo');
    await expect(runDsn(session, { role: 'standby-leader' })).rejects.toThrow('No standby-leader member found in cluster demo');
  });

  it('standby-leader picks the leader of a standby cluster', () => {
    const v = threeNodeView();
    v.members[0]!.data.role = 'standby_leader';
    expect(chooseMember(v, 'demo', { role: 'standby-leader' }).name).toBe('node1');
    expect(() => chooseMember(v, 'demo', { role: 'primary' })).toThrow('No primary member found');
  });
});

describe('query', () => {
  /** An executor that records its calls and answers pg_is_in_recovery as `recovery`, every other SQL with two rows. */
  function fakeExec(recovery: 't' | 'f', fail?: Error): { exec: QueryExecutor; calls: Array<{ t: QueryTarget; sql: string }> } {
    const calls: Array<{ t: QueryTarget; sql: string }> = [];
    const exec: QueryExecutor = async (t, sql) => {
      calls.push({ t, sql });
      if (sql.includes('pg_is_in_recovery')) return { columns: ['pg_is_in_recovery'], rows: [[recovery]] };
      if (fail) throw fail;
      return {
        columns: ['id', 'name'],
        rows: [
          ['1', 'a\tb'],
          ['2', null],
        ],
      };
    };
    return { exec, calls };
  }
  const base = { format: 'tsv' as const, readFile: async (p: string) => `-- from ${p}\nselect 1` };

  it('runs on the leader (checked not in recovery) as the file superuser, prints tsv', async () => {
    const { session, io } = await cluster();
    const { exec, calls } = fakeExec('f');
    await runQuery(session, { ...base, command: 'select * from t', superuser: { username: 'postgres', password: 'pw' }, env: {} }, exec);
    expect(calls.map((c) => c.sql)).toEqual(['SELECT pg_catalog.pg_is_in_recovery()', 'select * from t']);
    expect(calls[1]!.t).toEqual({ host: '127.0.0.1', port: 5432, dbname: 'postgres', username: 'postgres', password: 'pw' });
    expect(io.lines).toEqual(['id\tname', '1\ta b', '2\t']);
  });

  it('-U another user: no file password; PGPASSWORD and -d are used; --file is read', async () => {
    const { session, io } = await cluster();
    const { exec, calls } = fakeExec('t');
    await runQuery(
      session,
      {
        ...base,
        role: 'replica',
        file: 'q.sql',
        username: 'app',
        dbname: 'appdb',
        format: 'json',
        superuser: { username: 'postgres', password: 'pw' },
        env: { PGPASSWORD: 'secret' },
      },
      exec,
    );
    expect(calls[1]).toEqual({
      t: { host: '127.0.0.1', port: 5433, dbname: 'appdb', username: 'app', password: 'secret' },
      sql: '-- from q.sql\nselect 1',
    });
    expect(JSON.parse(io.lines[0]!)).toEqual([
      { id: '1', name: 'a\tb' },
      { id: '2', name: null },
    ]);
    const { exec: e2, calls: c2 } = fakeExec('t');
    await runQuery(session, { ...base, member: 'node1', command: 'select 1', env: {} }, e2);
    expect(c2.map((c) => c.sql)).toEqual(['select 1']); // a named member: no role check
    expect(c2[0]!.t.username).toBe('postgres');
    expect(c2[0]!.t.password).toBeUndefined();
  });

  it('a member whose role changed is refused; SQL errors and connection failures name the member', async () => {
    const { session } = await cluster();
    await expect(runQuery(session, { ...base, command: 'select 1', env: {} }, fakeExec('t').exec)).rejects.toThrow(
      'No connection to role leader is available: member node1 is in recovery',
    );
    const sqlErr = Object.assign(new Error('relation "t" does not exist'), { code: '42P01', severity: 'ERROR' });
    await expect(runQuery(session, { ...base, command: 'select * from t', env: {} }, fakeExec('f', sqlErr).exec)).rejects.toThrow(
      'member node1: ERROR: relation "t" does not exist (SQLSTATE 42P01)',
    );
    const connErr = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const failing: QueryExecutor = async () => {
      throw connErr;
    };
    await expect(runQuery(session, { ...base, command: 'select 1', env: {} }, failing)).rejects.toThrow(
      'member node1: cannot query postgres@127.0.0.1:5432/postgres: connect ECONNREFUSED 127.0.0.1:5432',
    );
  });

  it('usage errors: neither or both of --command and --file', async () => {
    const { session } = await cluster();
    await expect(runQuery(session, { ...base }, fakeExec('f').exec)).rejects.toMatchObject({
      exitCode: 2,
      message: 'You need to specify either --command or --file',
    });
    await expect(runQuery(session, { ...base, command: 'x', file: 'y' }, fakeExec('f').exec)).rejects.toMatchObject({ exitCode: 2 });
  });

  it('renders pretty and yaml; a command without rows prints nothing', () => {
    const r = {
      columns: ['id', 'name'],
      rows: [
        ['1', 'x'],
        ['22', null],
      ],
    };
    expect(renderRows(r, 'pretty')).toEqual([
      '+----+------+',
      '| id | name |',
      '+----+------+',
      '| 1  | x    |',
      '| 22 |      |',
      '+----+------+',
    ]);
    expect(renderRows(r, 'yaml')).toEqual(['- id: "1"', '  name: x', '- id: "22"', '  name: null']);
    expect(renderRows({ columns: [], rows: [] }, 'tsv')).toEqual([]);
  });

  it('-c after query means --command; before the command word it stays --config', () => {
    expect(scopeQueryCommandFlag(['node', 'hactl', '-c', 'ha.yml', 'query', '-c', 'select 1', '-cselect 2'])).toEqual([
      'node',
      'hactl',
      '-c',
      'ha.yml',
      'query',
      '--command',
      'select 1',
      '--command=select 2',
    ]);
    expect(scopeQueryCommandFlag(['node', 'hactl', '--scope', 'x', 'list', '-c', 'ha.yml'])).toEqual([
      'node',
      'hactl',
      '--scope',
      'x',
      'list',
      '-c',
      'ha.yml',
    ]);
  });
});

describe('version', () => {
  it('hactl alone, then every member: agent and PostgreSQL versions, or why not', async () => {
    const srv = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        req.url === '/ha' ? JSON.stringify({ ha: { version: '0.1.0', scope: 'demo', name: 'node1' }, server_version: 150006 }) : '{}',
      );
    });
    servers.push(srv);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as AddressInfo).port;
    const { session } = await cluster({ node1: { api_url: `http://127.0.0.1:${port}/ha` }, node2: { api_url: 'http://127.0.0.1:1/ha' } });
    const out: string[] = [];
    await runVersion(undefined, '9.9.9', [], (l) => out.push(l));
    expect(out).toEqual(['hactl version 9.9.9']);
    out.length = 0;
    await runVersion(session, '9.9.9', ['node1', 'node2'], (l) => out.push(l));
    expect(out[0]).toBe('hactl version 9.9.9');
    expect(out[1]).toBe('');
    expect(out[2]).toBe('node1: ha 0.1.0 PostgreSQL 15.6');
    expect(out[3]).toMatch(/^node2: failed to get version: member node2 is not reachable at http:\/\/127\.0\.0\.1:1 \(/);
    expect(out).toHaveLength(4);
    await expect(runVersion(session, '9.9.9', ['node7'], () => {})).rejects.toThrow('Member node7 does not exist in cluster demo');
    expect([pgVersionText(150006), pgVersionText(90624), pgVersionText(170000)]).toEqual(['15.6', '9.6.24', '17.0']);
  });
});

describe('topology with cascading', () => {
  it('a replicatefrom member that does not stream: shown under the leader (where it streams from)', () => {
    const v = threeNodeView();
    v.members[2]!.data.tags = { replicatefrom: 'node2' };
    expect(listRows(v, 'demo', { extended: false, topology: true }).rows.map((r) => r['Member'])).toEqual([
      'node1',
      '+ node2',
      '  + node3',
    ]);
    delete v.members[1]!.data.replication_state;
    expect(listRows(v, 'demo', { extended: false, topology: true }).rows.map((r) => r['Member'])).toEqual(['node1', '+ node2', '+ node3']);
  });
});
