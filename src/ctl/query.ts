/**
 * `hactl query`, `hactl dsn`, `hactl version` (patroni.md §5; docs/hactl.md): SQL straight to a
 * member's PostgreSQL (no REST), a member's connection string, and the versions of hactl, of each
 * agent and of each PostgreSQL.
 */
import postgres from 'postgres';
import YAML from 'yaml';
import type { ClusterView } from '../domain/cluster.ts';
import { memberHostPort, type Member } from '../domain/member.ts';
import { CtlError, errorText, usageError } from './errors.ts';
import { callMember, unreachableText } from './member-api.ts';
import { readView, requireMembers, type Session } from './session.ts';
import { renderPretty, renderTsv, type Cell } from './table.ts';

/** Roles `query` and `dsn` choose a member by (`standby-leader`: the leader of a standby cluster). */
export const MEMBER_ROLES = ['leader', 'primary', 'standby-leader', 'replica', 'any'] as const;
/** One of {@link MEMBER_ROLES}. */
export type MemberRole = (typeof MEMBER_ROLES)[number];

/** Output formats of `query` (default tsv, as the reference). */
export const QUERY_FORMATS = ['tsv', 'pretty', 'json', 'yaml'] as const;
/** One of {@link QUERY_FORMATS}. */
export type QueryFormat = (typeof QUERY_FORMATS)[number];

/** How a member is chosen: by name, else by role (default: the leader). */
export interface MemberChoice {
  member?: string;
  role?: MemberRole;
}

const byName = (a: Member, b: Member) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * The member a command talks to: the named one, else the first of the role (the leader for
 * `leader`/`primary`/`standby-leader`; a running replica, by name, for `replica`; the leader, else
 * the first member, for `any`). `--member` and `--role` together are a usage error, as in the reference.
 */
export function chooseMember(view: ClusterView, scope: string, c: MemberChoice): Member {
  checkMemberChoice(c);
  const all = requireMembers(view, scope);
  if (c.member !== undefined) {
    const m = all.find((x) => x.name === c.member);
    if (!m) throw new CtlError(`Member ${c.member} does not exist in cluster ${scope}`);
    return m;
  }
  const role = c.role ?? 'leader';
  const leader = all.find((m) => m.name === view.leader?.name);
  let chosen: Member | undefined;
  if (role === 'any') chosen = leader ?? [...all].sort(byName)[0];
  else if (role === 'replica') chosen = all.filter((m) => m !== leader && m.data.state === 'running').sort(byName)[0];
  else if (role === 'standby-leader') chosen = leader?.data.role === 'standby_leader' ? leader : undefined;
  else chosen = leader && leader.data.role !== 'standby_leader' ? leader : undefined;
  if (!chosen) throw new CtlError(`No ${role} member found in cluster ${scope}`);
  return chosen;
}

/** Usage error (exit 2) when both `--member` and `--role` are given (before anything is read). */
export function checkMemberChoice(c: MemberChoice): void {
  if (c.member !== undefined && c.role !== undefined) throw usageError('--role and --member are mutually exclusive options');
}

/** Usage error (exit 2) unless exactly one of `--command` and `--file` is given, or both `--member` and `--role` are. */
export function checkQueryOptions(o: Pick<QueryOptions, 'command' | 'file' | 'member' | 'role'>): void {
  if (o.command !== undefined && o.file !== undefined) throw usageError('--file and --command are mutually exclusive options');
  if (o.command === undefined && o.file === undefined) throw usageError('You need to specify either --command or --file');
  checkMemberChoice(o);
}

/** Host and port of a member's PostgreSQL (its `conn_url`); CtlError when the key has none. */
function hostPortOf(m: Member): { host: string; port: number } {
  const hp = memberHostPort(m.data.conn_url);
  if (!hp) throw new CtlError(`member ${m.name} publishes no usable conn_url (${JSON.stringify(m.data.conn_url)})`);
  return hp;
}

/** `hactl dsn`: `host=H port=P` of the chosen member, as the reference prints it. */
export async function runDsn(s: Session, c: MemberChoice): Promise<void> {
  const m = chooseMember(await readView(s), s.scope, c);
  const { host, port } = hostPortOf(m);
  s.io.out(`host=${host} port=${port}`);
}

/** Where and as whom `query` connects. */
export interface QueryTarget {
  host: string;
  port: number;
  dbname: string;
  username: string;
  password?: string;
}

/** What a query returned: column names and rows of text values (null for SQL NULL); no columns for a command. */
export interface QueryResult {
  columns: string[];
  rows: Array<Array<string | null>>;
}

/** Runs SQL on a member; the default connects with postgres.js. Rejects with the server's or the connection's error. */
export type QueryExecutor = (t: QueryTarget, sql: string) => Promise<QueryResult>;

/**
 * The default executor: one connection (5 s connect timeout), the simple query protocol (several
 * statements allowed; the last one's rows are printed), values as PostgreSQL's text output.
 */
export const postgresExecutor: QueryExecutor = async (t, text) => {
  const sql = postgres({
    host: t.host,
    port: t.port,
    database: t.dbname,
    user: t.username,
    ...(t.password !== undefined ? { password: t.password } : {}),
    max: 1,
    connect_timeout: 5,
    fetch_types: false,
    prepare: false,
    onnotice: () => undefined,
    connection: { application_name: 'hactl' },
  });
  try {
    const result = (await sql.unsafe(text).raw()) as unknown as RawResult | RawResult[];
    // Several statements: postgres.js answers a plain array of results, one per statement.
    const last: RawResult | undefined = isRawResult(result) ? result : result[result.length - 1];
    if (!last) return { columns: [], rows: [] };
    const columns = (last.columns ?? []).map((c) => c.name);
    const rows = [...last].map((r) => r.map((v) => (v === null || v === undefined ? null : Buffer.from(v).toString('utf8'))));
    return { columns, rows };
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
};

/** One statement's result (postgres.js: an array of rows with `command` and `columns`). */
type RawResult = Array<Array<Uint8Array | null>> & { command: string; columns?: Array<{ name: string }> };

function isRawResult(x: RawResult | RawResult[]): x is RawResult {
  return typeof (x as { command?: unknown }).command === 'string';
}

/** Options of `query`. */
export interface QueryOptions extends MemberChoice {
  /** `-c`: the SQL text. */
  command?: string;
  /** `--file`: read the SQL from this file (`-` = stdin). */
  file?: string;
  username?: string;
  dbname?: string;
  format: QueryFormat;
  /** The file's superuser (the login when -U is absent or names it). */
  superuser?: { username: string; password?: string };
  /** Reads `--file` (injected: tests, stdin). */
  readFile: (path: string) => Promise<string>;
  /** The environment (PGPASSWORD, PGUSER, PGDATABASE). */
  env?: NodeJS.ProcessEnv;
}

/**
 * `hactl query`: runs SQL on the chosen member and prints the rows. The login: `-U`, else the
 * configuration file's superuser, else `PGUSER`, else `postgres`; the password: `PGPASSWORD`, else
 * the file's superuser password when the login is that user. A role other than `any` is checked
 * on the connection (`pg_is_in_recovery()`), as the reference does: a member that changed role
 * since the DCS was read is refused.
 */
export async function runQuery(s: Session, o: QueryOptions, exec: QueryExecutor = postgresExecutor): Promise<void> {
  checkQueryOptions(o);
  const sql =
    o.command ??
    (await o.readFile(o.file!).catch((e: unknown) => {
      throw usageError(`cannot read ${o.file}: ${errorText(e)}`);
    }));
  const m = chooseMember(await readView(s), s.scope, o);
  const { host, port } = hostPortOf(m);
  const env = o.env ?? process.env;
  const username = o.username ?? o.superuser?.username ?? (env['PGUSER'] || 'postgres');
  const password = env['PGPASSWORD'] || (o.superuser && o.superuser.username === username ? o.superuser.password : undefined);
  const target: QueryTarget = {
    host,
    port,
    dbname: o.dbname ?? (env['PGDATABASE'] || 'postgres'),
    username,
    ...(password !== undefined ? { password } : {}),
  };
  const role = o.member === undefined ? (o.role ?? 'leader') : 'any';
  let result: QueryResult;
  try {
    if (role !== 'any') {
      const r = await exec(target, 'SELECT pg_catalog.pg_is_in_recovery()');
      const inRecovery = r.rows[0]?.[0] === 't';
      const wantRecovery = role === 'replica' || role === 'standby-leader';
      if (inRecovery !== wantRecovery)
        throw new CtlError(
          `No connection to role ${role} is available: member ${m.name} is ${inRecovery ? 'in recovery' : 'not in recovery'}`,
        );
    }
    result = await exec(target, sql);
  } catch (e) {
    if (e instanceof CtlError) throw e;
    const pgErr = e as { code?: unknown; severity?: unknown };
    const sqlState =
      typeof pgErr.code === 'string' && /^[0-9A-Z]{5}$/.test(pgErr.code) && typeof pgErr.severity === 'string' ? pgErr.code : undefined;
    if (sqlState) throw new CtlError(`member ${m.name}: ${String(pgErr.severity)}: ${errorText(e)} (SQLSTATE ${sqlState})`);
    throw new CtlError(`member ${m.name}: cannot query ${username}@${host}:${port}/${target.dbname}: ${errorText(e)}`);
  }
  for (const l of renderRows(result, o.format)) s.io.out(l);
}

/** The rows in a format: tsv (header, then rows), a bordered table, or a list of records (json/yaml). */
export function renderRows(r: QueryResult, format: QueryFormat): string[] {
  const cells: Cell[][] = r.rows.map((row) => row.map((v) => (v === null ? undefined : v)));
  switch (format) {
    case 'tsv':
      return r.columns.length ? renderTsv(r.columns, cells) : [];
    case 'pretty':
      return r.columns.length ? renderPretty(r.columns, cells) : [];
    case 'json':
    case 'yaml': {
      const records = r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i] ?? null])));
      if (format === 'json') return [JSON.stringify(records)];
      return records.length === 0 ? ['[]'] : YAML.stringify(records).trimEnd().split('\n');
    }
  }
}

/** `150006` → `15.6`, `90624` → `9.6.24` (PostgreSQL's server_version_num). */
export function pgVersionText(num: number): string {
  const major = Math.floor(num / 10000);
  if (major >= 10) return `${major}.${num % 10000}`;
  return `${major}.${Math.floor(num / 100) % 100}.${num % 100}`;
}

/**
 * `hactl version [CLUSTER [MEMBER…]]`: `hactl version X`; with a cluster, a blank line and one line
 * per member (the named ones, else all): `node1: ha 0.1.0 PostgreSQL 15.6` from its `GET /ha`, or
 * `node1: failed to get version: <reason>`.
 */
export async function runVersion(s: Session | undefined, hactlVersion: string, names: string[], out: (l: string) => void): Promise<void> {
  out(`hactl version ${hactlVersion}`);
  if (!s) return;
  out('');
  const view = await readView(s);
  const members = requireMembers(view, s.scope).filter((m) => names.length === 0 || names.includes(m.name));
  for (const n of names)
    if (!view.members.some((m) => m.name === n)) throw new CtlError(`Member ${n} does not exist in cluster ${s.scope}`);
  for (const m of members) {
    const r = await callMember(m, 'GET', '/ha', undefined, 5000);
    if (!r.reachable) {
      out(`${m.name}: failed to get version: ${unreachableText(m, r.error)}`);
      continue;
    }
    try {
      const doc = JSON.parse(r.text) as { ha?: { version?: unknown }; server_version?: unknown };
      const pg = typeof doc.server_version === 'number' ? ` PostgreSQL ${pgVersionText(doc.server_version)}` : '';
      out(`${m.name}: ha ${String(doc.ha?.version ?? 'unknown')}${pg}`);
    } catch {
      out(`${m.name}: failed to get version: status ${r.status}, not a status document`);
    }
  }
}

/** Global options that take a value (their value is not the command word). */
const GLOBAL_VALUE_OPTIONS = new Set(['-c', '--config', '--dcs-url', '--scope', '--namespace']);

/**
 * `-c` is `--config` before the command word and, after `query`, `--command` (as in patronictl,
 * whose click parser scopes options to their command). Commander lets program options appear after
 * the command, so `query`'s `-c` is rewritten to `--command` before parsing.
 */
export function scopeQueryCommandFlag(argv: string[]): string[] {
  let i = 2;
  while (i < argv.length && argv[i]!.startsWith('-')) i += GLOBAL_VALUE_OPTIONS.has(argv[i]!) ? 2 : 1;
  if (argv[i] !== 'query') return argv;
  return [
    ...argv.slice(0, i + 1),
    ...argv.slice(i + 1).map((a) => (a === '-c' ? '--command' : a.startsWith('-c') && !a.startsWith('--') ? `--command=${a.slice(2)}` : a)),
  ];
}
