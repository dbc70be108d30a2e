/**
 * The configuration files the agent owns in the data directory (patroni.md §4.3, §3.9):
 * - postgresql.conf: rewritten on every configure(); `include 'postgresql.base.conf'` (the file
 *   initdb wrote, moved aside on the first configure) followed by the enforced and configured
 *   parameters, and the recovery parameters for a replica;
 * - pg_hba.conf: the agent's entries followed by the configured lines;
 * - standby.signal: present exactly when the node is configured as a replica; recovery.signal
 *   never (a restore tool's is removed);
 * - postgresql.auto.conf: kept, without the recovery parameters (RECOVERY_PARAMETERS).
 * Copies of these files that pg_basebackup brought from the leader are overwritten, never trusted.
 *
 * The render functions are pure; writeAgentConfig() does the I/O.
 */
import { existsSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConfigureOptions, RoleAuth } from './types.ts';
import { chownToPg } from './os-user.ts';

/** First line of every file the agent writes; tells the agent's file from the one initdb wrote. */
export const MANAGED_MARKER = '# Managed by the ha agent: rewritten on every configure, do not edit.';
export const BASE_CONF = 'postgresql.base.conf';

/** What the renderers need to know about the local node. */
export interface NodeConf {
  name: string;
  scope: string;
  dataDir: string;
  listen: { host: string; port: number };
  socketDir: string;
  superuser: RoleAuth;
  replication: RoleAuth;
  pgHba: string[];
  /**
   * The password file primary_conninfo names (`passfile=`), holding the replication user's
   * password: the conninfo, which PostgreSQL logs on every reload that changes it, carries no
   * password (as the reference does with its pgpass). Outside the data directory (base backups do
   * not copy it), 0600, owned by the PostgreSQL user.
   */
  passfile: string;
}

/** Error with code 'pg_config_invalid' (bad parameter name, value or role name). */
export class PgConfigError extends Error {
  readonly code = 'pg_config_invalid';
  constructor(message: string) {
    super(message);
    this.name = 'PgConfigError';
  }
}

/**
 * Quotes a value for postgresql.conf: single quotes, `'` doubled and `\` doubled (the GUC file
 * parser unescapes backslashes inside quoted strings). Newlines are rejected.
 * @throws PgConfigError on a newline or NUL.
 */
export function quoteConfValue(value: string): string {
  if (/[\n\r\0]/.test(value)) throw new PgConfigError(`configuration value contains a newline or NUL: ${JSON.stringify(value)}`);
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/**
 * One libpq conninfo value (`key=value` syntax): bare when it is non-empty and has no space, `'` or
 * `\`; else in single quotes with `\` and `'` backslash-escaped (libpq's rule).
 */
export function quoteConninfoValue(value: string): string {
  if (value !== '' && !/[\s'\\]/.test(value)) return value;
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Renders `key=value` pairs as a libpq conninfo string, in the given order. */
export function renderConninfo(pairs: Array<[string, string]>): string {
  return pairs.map(([k, v]) => `${k}=${quoteConninfoValue(v)}`).join(' ');
}

/**
 * primary_conninfo for streaming from `upstream` as the replication user; application_name = member
 * name; the password through `passfile` (never in the conninfo: PostgreSQL logs the parameter's new
 * value on every reload that changes it).
 */
export function primaryConninfo(node: NodeConf, upstream: { host: string; port: number }): string {
  return renderConninfo([
    ['host', upstream.host],
    ['port', String(upstream.port)],
    ['user', node.replication.username],
    ['passfile', node.passfile],
    ['application_name', node.name],
    ['sslmode', 'prefer'],
  ]);
}

/** One field of a password file line: `\` and `:` escaped with `\` (libpq docs, "The Password File"). */
export function pgpassField(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/:/g, '\\:');
}

/**
 * The password file of the replication user: one line `*:*:*:<user>:<password>` (any host, port and
 * database: the upstream changes with every failover, and replication connections match the
 * database field `replication`, which `*` covers).
 * @throws PgConfigError when the user or password holds a newline.
 */
export function renderPassfile(node: NodeConf): string {
  const { username, password } = node.replication;
  if (/[\n\r\0]/.test(username + password)) throw new PgConfigError('the replication user or password contains a newline');
  return `*:*:*:${pgpassField(username)}:${pgpassField(password)}\n`;
}

/** Parameters the agent always sets itself; values given for them in `parameters` are ignored. */
export const AGENT_OWNED = new Set([
  'listen_addresses',
  'port',
  'unix_socket_directories',
  'cluster_name',
  'hot_standby',
  'hba_file',
  'ident_file',
  'config_file',
  'data_directory',
  'primary_conninfo',
  'primary_slot_name',
  'recovery_target_timeline',
  'recovery_target',
  'recovery_target_lsn',
  'recovery_target_name',
  'recovery_target_time',
  'recovery_target_xid',
  'recovery_target_action',
  'recovery_target_inclusive',
  'standby_mode',
]);

/** The recovery target parameters a replica sets to '' (effectiveParameters). */
export const RECOVERY_TARGETS = [
  'recovery_target',
  'recovery_target_lsn',
  'recovery_target_name',
  'recovery_target_time',
  'recovery_target_xid',
];

/** Parameters with a floor (patroni.md §4.3, raised to 10 for the senders and slots). */
const MINIMUMS: Record<string, number> = { max_wal_senders: 10, max_replication_slots: 10 };

function renderValue(v: string | number): string {
  return typeof v === 'number' ? String(v) : quoteConfValue(v);
}

/**
 * The effective parameters of postgresql.conf, in write order: defaults (wal_level=replica,
 * max_wal_senders=10, max_replication_slots=10, wal_keep_size=128MB, wal_log_hints=on), then
 * `opts.parameters` (minus AGENT_OWNED; wal_level only `replica`/`logical`, `hot_standby` means
 * replica; numeric floors applied), then the agent-owned ones, then the replica's recovery settings.
 * @throws PgConfigError on an invalid parameter name.
 */
export function effectiveParameters(node: NodeConf, opts: ConfigureOptions): Map<string, string | number> {
  const p = new Map<string, string | number>([
    ['wal_level', 'replica'],
    ['max_wal_senders', 10],
    ['max_replication_slots', 10],
    ['wal_keep_size', '128MB'],
    ['wal_log_hints', 'on'],
  ]);
  for (const [key, value] of Object.entries(opts.parameters)) {
    const name = key.toLowerCase();
    if (!/^[a-z_][a-z0-9_.]*$/.test(name)) throw new PgConfigError(`invalid parameter name ${JSON.stringify(key)}`);
    if (AGENT_OWNED.has(name)) continue;
    p.set(name, value);
  }
  const wal = String(p.get('wal_level')).toLowerCase();
  p.set('wal_level', wal === 'logical' ? 'logical' : 'replica');
  for (const [name, floor] of Object.entries(MINIMUMS)) {
    const n = Number(p.get(name));
    if (!Number.isFinite(n) || n < floor) p.set(name, floor);
  }
  p.set('listen_addresses', node.listen.host);
  p.set('port', node.listen.port);
  p.set('unix_socket_directories', node.socketDir);
  p.set('cluster_name', node.scope);
  p.set('hot_standby', 'on');
  p.set('hba_file', join(node.dataDir, 'pg_hba.conf'));
  p.set('ident_file', join(node.dataDir, 'pg_ident.conf'));
  if (opts.role === 'replica') {
    if (opts.upstream) p.set('primary_conninfo', primaryConninfo(node, opts.upstream));
    if (opts.slotName) p.set('primary_slot_name', opts.slotName);
    p.set('recovery_target_timeline', 'latest');
    // Set to their defaults explicitly, as the reference does on PostgreSQL 12+ (patroni 3.0.2
    // postgresql/config.py build_recovery_params): a target set in an included file cannot pause,
    // promote or shut the replica down, and a replica the reference configured (which has these
    // lines) is reloaded by our agent without the removal marking them pending restart (issue 26).
    for (const name of RECOVERY_TARGETS) p.set(name, '');
  }
  // A custom bootstrap's targeted recovery (its first start only; names checked by the config schema).
  if (opts.role === 'primary' && opts.targetedRecovery) for (const [k, v] of Object.entries(opts.targetedRecovery.parameters)) p.set(k, v);
  return p;
}

/**
 * The recovery parameters (PostgreSQL ≥ 12) the agent owns: stripped from postgresql.auto.conf,
 * where a restore tool (pgBackRest, pg_basebackup -R) or ALTER SYSTEM may write them, so that
 * only the agent's postgresql.conf says how a member recovers (as the reference does). A
 * recovery target left there would stop a replica at the target.
 */
export const RECOVERY_PARAMETERS: ReadonlySet<string> = new Set([
  'archive_cleanup_command',
  'restore_command',
  'recovery_end_command',
  'recovery_target',
  'recovery_target_name',
  'recovery_target_time',
  'recovery_target_xid',
  'recovery_target_lsn',
  'recovery_target_inclusive',
  'recovery_target_timeline',
  'recovery_target_action',
  'recovery_min_apply_delay',
  'primary_conninfo',
  'primary_slot_name',
  'promote_trigger_file',
  'standby_mode',
]);

/** A postgresql.conf value as written: `'…'` unquoted (`''` and backslash escapes), else as is. */
export function unquoteConfValue(raw: string): string {
  const t = raw.trim();
  if (!t.startsWith("'")) return t.replace(/\s+#.*$/, '');
  let out = '';
  for (let i = 1; i < t.length; i++) {
    const c = t[i]!;
    if (c === '\\' && i + 1 < t.length) {
      out += t[++i];
    } else if (c === "'") {
      if (t[i + 1] === "'") {
        out += "'";
        i++;
      } else break;
    } else out += c;
  }
  return out;
}

/**
 * postgresql.auto.conf split: its text without the recovery parameters (RECOVERY_PARAMETERS), and
 * those parameters (name lower-cased, value unquoted; the last one wins). Pure.
 */
export function splitAutoConf(text: string): { text: string; recovery: Record<string, string> } {
  const kept: string[] = [];
  const recovery: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=?\s*(.*)$/.exec(line);
    const name = m?.[1]?.toLowerCase();
    if (m && name && RECOVERY_PARAMETERS.has(name)) {
      recovery[name] = unquoteConfValue(m[2] ?? '');
      continue;
    }
    kept.push(line);
  }
  return { text: kept.join('\n'), recovery };
}

/** Full text of the agent's postgresql.conf (see effectiveParameters). */
export function renderPostgresqlConf(node: NodeConf, opts: ConfigureOptions): string {
  const lines = [MANAGED_MARKER, `# role: ${opts.role}`, `include ${quoteConfValue(BASE_CONF)}`, ''];
  for (const [k, v] of effectiveParameters(node, opts)) lines.push(`${k} = ${renderValue(v)}`);
  return lines.join('\n') + '\n';
}

/**
 * A role name as a pg_hba.conf token: bare when `[A-Za-z0-9_]+`, else double-quoted with `"` doubled.
 * @throws PgConfigError on whitespace control characters.
 */
export function hbaRole(name: string): string {
  if (/[\n\r\0]/.test(name) || name === '') throw new PgConfigError(`invalid role name ${JSON.stringify(name)}`);
  return /^[A-Za-z0-9_]+$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/**
 * pg_hba.conf: the superuser over the unix socket with trust (the agent connects as root, so peer
 * would fail; the socket dir is 0700 and owned by postgres), everyone over loopback TCP with
 * scram-sha-256, replication by the replication user over loopback, then `node.pgHba` as given.
 * @throws PgConfigError on a configured line containing a newline.
 */
export function renderPgHba(node: NodeConf): string {
  const su = hbaRole(node.superuser.username);
  const repl = hbaRole(node.replication.username);
  const lines = [
    MANAGED_MARKER,
    '# TYPE  DATABASE     USER  ADDRESS  METHOD',
    `local   all          ${su}  trust`,
    'host    all          all   127.0.0.1/32  scram-sha-256',
    'host    all          all   ::1/128       scram-sha-256',
    `host    replication  ${repl}  127.0.0.1/32  scram-sha-256`,
    `host    replication  ${repl}  ::1/128       scram-sha-256`,
  ];
  if (node.pgHba.length) lines.push('# configured (postgresql.pg_hba)');
  for (const l of node.pgHba) {
    if (/[\n\r\0]/.test(l)) throw new PgConfigError(`pg_hba line contains a newline: ${JSON.stringify(l)}`);
    lines.push(l);
  }
  return lines.join('\n') + '\n';
}

/** Writes `text` to `path` atomically (temp file + rename), mode 0600, owned by the PostgreSQL user. */
export async function writeOwnedFile(path: string, text: string): Promise<void> {
  const tmp = `${path}.ha-tmp`;
  await writeFile(tmp, text, { mode: 0o600 });
  await chownToPg(tmp);
  await rename(tmp, path);
}

/**
 * Writes postgresql.conf, pg_hba.conf and standby.signal (replica) / removes it (primary).
 * The first time (no postgresql.base.conf), the existing postgresql.conf becomes
 * postgresql.base.conf; an agent-written postgresql.conf is never moved (an empty base is created).
 */
export async function writeAgentConfig(node: NodeConf, opts: ConfigureOptions): Promise<void> {
  const dir = node.dataDir;
  const conf = join(dir, 'postgresql.conf');
  const base = join(dir, BASE_CONF);
  const postgresqlConf = renderPostgresqlConf(node, opts);
  const hba = renderPgHba(node);
  if (!existsSync(base)) {
    const current = existsSync(conf) ? await readFile(conf, 'utf8') : '';
    if (current && !current.startsWith(MANAGED_MARKER)) await rename(conf, base);
    else await writeOwnedFile(base, '# original postgresql.conf was not found\n');
  }
  // The password file first: the conninfo written next names it.
  if (opts.role === 'replica' && opts.upstream) await writeOwnedFile(node.passfile, renderPassfile(node));
  await writeOwnedFile(conf, postgresqlConf);
  await writeOwnedFile(join(dir, 'pg_hba.conf'), hba);
  const targeted = opts.role === 'primary' ? opts.targetedRecovery : undefined;
  if (!targeted?.keepExisting) await sanitizeAutoConf(dir);
  const signal = join(dir, 'standby.signal');
  if (opts.role === 'replica') await writeOwnedFile(signal, '');
  else await rm(signal, { force: true });
  // No recovery.signal but for a custom bootstrap's targeted recovery: a restore tool's (pgBackRest
  // writes one) never turns a replica's or a primary's start into a targeted recovery.
  const recovery = join(dir, 'recovery.signal');
  if (targeted && Object.keys(targeted.parameters).length > 0) await writeOwnedFile(recovery, '');
  else if (!targeted?.keepExisting) await rm(recovery, { force: true });
}

/** Removes the recovery parameters from `<dir>/postgresql.auto.conf` (splitAutoConf), when it holds any. */
async function sanitizeAutoConf(dir: string): Promise<void> {
  const auto = join(dir, 'postgresql.auto.conf');
  let text: string;
  try {
    text = await readFile(auto, 'utf8');
  } catch {
    return;
  }
  const split = splitAutoConf(text);
  if (Object.keys(split.recovery).length > 0) await writeOwnedFile(auto, split.text);
}
