/**
 * The catalogue of settings of the local PostgreSQL server binary, read once at agent start
 * (no running server needed) for checking `database.parameters` (src/domain/pg-parameters.ts).
 *
 * Source: `postgres --describe-config` (PostgreSQL 15, src/backend/utils/misc/help_config.c).
 * It prints one tab-separated line per parameter that may appear in postgresql.conf:
 *
 *   name  context  group  vartype  reset  min  max  short_desc  extra_desc
 *
 * - context: internal, postmaster, sighup, superuser-backend, backend, superuser, user;
 * - vartype: BOOLEAN, INTEGER, REAL, STRING, ENUM;
 * - min/max: integer and real parameters only, in the parameter's base unit (reals printed with
 *   C `%g`, 6 significant digits);
 * - reset: the compiled-in default for STRING and ENUM; meaningless for the others (it prints
 *   FALSE / 0, the variables not being initialised in that mode).
 * It does not print units nor enum values, and leaves out the parameters flagged not-in-sample
 * (application_name, transaction_isolation, jit_expressions, …) and the internal ones. Those come
 * from the PostgreSQL 15 tables below, taken from `pg_settings` of postgresql-15 (15.18) and
 * checked against the binary. For another major version, units are taken from the table by name
 * when listed (parameters not listed get an unknown unit: values with a unit are accepted
 * unconverted), enum values are not checked, and the PG 15 hidden and internal parameters are
 * added as they are.
 *
 * PostgreSQL refuses to run as root, except for `--describe-config` and `--version`
 * (src/backend/main/main.c), so both run as the current user by default.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { catalogueOf, type PgSetting, type PgVarType, type SettingsCatalogue } from '../domain/pg-parameters.ts';
import { runAsPg } from './run-as-pg.ts';

export type { PgSetting, SettingsCatalogue } from '../domain/pg-parameters.ts';

/** Who runs `postgres --describe-config`: the agent's own user, or the PostgreSQL OS user (os-user.ts). */
export type CatalogueRunAs = 'current' | 'postgres';

const VARTYPES: Readonly<Record<string, PgVarType>> = {
  BOOLEAN: 'bool',
  INTEGER: 'integer',
  REAL: 'real',
  STRING: 'string',
  ENUM: 'enum',
};

/**
 * Parses `postgres --describe-config` output (see the module comment) into settings without
 * units or enum values (undefined: unknown). Lines with fewer than 7 fields or an unknown vartype
 * are skipped.
 */
export function parseDescribeConfig(text: string): PgSetting[] {
  const out: PgSetting[] = [];
  for (const line of text.split('\n')) {
    const f = line.split('\t');
    if (f.length < 7 || !f[0]) continue;
    const vartype = VARTYPES[f[3]!];
    if (!vartype) continue;
    const setting: PgSetting = { name: f[0], vartype, context: f[1]! };
    if (vartype === 'integer' || vartype === 'real') {
      const min = Number(f[5]);
      const max = Number(f[6]);
      if (f[5] !== '' && Number.isFinite(min)) setting.min = min;
      if (f[6] !== '' && Number.isFinite(max)) setting.max = max;
    }
    out.push(setting);
  }
  return out;
}

/** The major version in `postgres --version` output (`postgres (PostgreSQL) 15.18 (Debian …)` → 15). */
export function parseMajorVersion(text: string): { version: string; major: number } | undefined {
  const m = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(text);
  return m ? { version: m[2] === undefined ? m[1]! : `${m[1]}.${m[2]}`, major: Number(m[1]) } : undefined;
}

/**
 * The catalogue from parsed --describe-config settings and the server's major version: units,
 * enum values, hidden and internal parameters added from the PostgreSQL 15 tables (fully for
 * major 15, partly otherwise: see the module comment).
 */
export function buildSettingsCatalogue(described: readonly PgSetting[], major: number | undefined, version?: string): SettingsCatalogue {
  const pg15 = major === 15;
  const unitOf = new Map<string, string>();
  for (const [unit, names] of Object.entries(PG15_UNITS)) for (const n of names) unitOf.set(n, unit);
  const byName = new Map<string, PgSetting>();
  for (const s of described) byName.set(s.name.toLowerCase(), { ...s });
  for (const s of PG15_HIDDEN) if (!byName.has(s.name)) byName.set(s.name, { ...s });
  for (const n of PG15_INTERNAL) if (!byName.has(n)) byName.set(n, { name: n, vartype: 'string', context: 'internal' });
  for (const [key, s] of byName) {
    if (s.vartype === 'integer' || s.vartype === 'real') {
      const unit = unitOf.get(key) ?? (pg15 ? '' : undefined);
      if (unit === undefined) delete s.unit;
      else s.unit = unit;
    }
    const e = PG15_ENUMS[key];
    if (s.vartype === 'enum' && pg15 && e) {
      s.enumValues = e[0];
      if (e[1]) s.enumAliases = e[1];
    }
  }
  return catalogueOf(byName.values(), version);
}

function runCurrent(cmd: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      {
        cwd: '/',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', LANG: 'C' },
        timeout: timeoutMs,
        maxBuffer: 8 * 1024 * 1024,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${(stderr || err.message).trim()}`));
        else resolve(stdout);
      },
    );
  });
}

/**
 * Reads the catalogue of the server binary `<binDir>/postgres`: runs `postgres --describe-config`
 * and `postgres --version` (LC_ALL=C, as `runAs`, default the current user) and builds the
 * catalogue (buildSettingsCatalogue). Takes some 20 ms.
 * @throws Error when the binary is missing, fails, or prints no parameters.
 */
export async function loadSettingsCatalogue(
  binDir: string,
  runAs: CatalogueRunAs = 'current',
  timeoutMs = 15_000,
): Promise<SettingsCatalogue> {
  const postgres = join(binDir, 'postgres');
  const run = (args: string[]): Promise<string> =>
    runAs === 'postgres'
      ? runAsPg(postgres, args, { env: { LC_ALL: 'C', LANG: 'C' }, timeoutMs }).then((r) => r.stdout)
      : runCurrent(postgres, args, timeoutMs);
  const [described, versionText] = await Promise.all([run(['--describe-config']), run(['--version'])]);
  const settings = parseDescribeConfig(described);
  if (settings.length < 50) throw new Error(`${postgres} --describe-config printed ${settings.length} parameters; expected a few hundred`);
  const v = parseMajorVersion(versionText);
  return buildSettingsCatalogue(settings, v?.major, v?.version);
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL 15 tables (what --describe-config does not print)

/** PostgreSQL 15 base units (pg_settings.unit) of the integer and real parameters that have one. */
const PG15_UNITS: Readonly<Record<string, readonly string[]>> = {
  B: ['log_parameter_max_length', 'log_parameter_max_length_on_error', 'track_activity_query_size', 'wal_decode_buffer_size'],
  kB: [
    'autovacuum_work_mem',
    'gin_pending_list_limit',
    'huge_page_size',
    'log_rotation_size',
    'log_temp_files',
    'logical_decoding_work_mem',
    'maintenance_work_mem',
    'max_stack_depth',
    'temp_file_limit',
    'wal_skip_threshold',
    'work_mem',
  ],
  MB: ['max_slot_wal_keep_size', 'max_wal_size', 'min_dynamic_shared_memory', 'min_wal_size', 'wal_keep_size'],
  '8kB': [
    'backend_flush_after',
    'bgwriter_flush_after',
    'checkpoint_flush_after',
    'effective_cache_size',
    'min_parallel_index_scan_size',
    'min_parallel_table_scan_size',
    'shared_buffers',
    'temp_buffers',
    'wal_buffers',
    'wal_writer_flush_after',
  ],
  ms: [
    'autovacuum_vacuum_cost_delay',
    'bgwriter_delay',
    'client_connection_check_interval',
    'deadlock_timeout',
    'idle_in_transaction_session_timeout',
    'idle_session_timeout',
    'lock_timeout',
    'log_autovacuum_min_duration',
    'log_min_duration_sample',
    'log_min_duration_statement',
    'log_startup_progress_interval',
    'max_standby_archive_delay',
    'max_standby_streaming_delay',
    'recovery_min_apply_delay',
    'statement_timeout',
    'tcp_user_timeout',
    'vacuum_cost_delay',
    'wal_receiver_timeout',
    'wal_retrieve_retry_interval',
    'wal_sender_timeout',
    'wal_writer_delay',
  ],
  s: [
    'archive_timeout',
    'authentication_timeout',
    'autovacuum_naptime',
    'checkpoint_timeout',
    'checkpoint_warning',
    'post_auth_delay',
    'pre_auth_delay',
    'tcp_keepalives_idle',
    'tcp_keepalives_interval',
    'wal_receiver_status_interval',
  ],
  min: ['log_rotation_age', 'old_snapshot_threshold'],
};

/**
 * PostgreSQL 15 enum parameters: the values pg_settings.enumvals lists, then the hidden aliases the
 * server also accepts (checked one by one against the binary with `postgres -C name -c name=value`).
 * Build-dependent lists (wal_sync_method, shared_memory_type, wal_compression,
 * default_toast_compression) are those of Debian's postgresql-15.
 */
const PG15_ENUMS: Readonly<Record<string, readonly [values: readonly string[], aliases?: readonly string[]]>> = {
  intervalstyle: [['postgres', 'postgres_verbose', 'sql_standard', 'iso_8601']],
  archive_mode: [
    ['always', 'on', 'off'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  backslash_quote: [
    ['safe_encoding', 'on', 'off'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  bytea_output: [['escape', 'hex']],
  client_min_messages: [
    ['debug5', 'debug4', 'debug3', 'debug2', 'debug1', 'log', 'notice', 'warning', 'error'],
    ['debug', 'info'],
  ],
  compute_query_id: [
    ['auto', 'regress', 'on', 'off'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  constraint_exclusion: [
    ['partition', 'on', 'off'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  default_toast_compression: [['pglz', 'lz4']],
  default_transaction_isolation: [['serializable', 'repeatable read', 'read committed', 'read uncommitted']],
  dynamic_shared_memory_type: [['posix', 'sysv', 'mmap']],
  force_parallel_mode: [
    ['off', 'on', 'regress'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  huge_pages: [
    ['off', 'on', 'try'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  log_error_verbosity: [['terse', 'default', 'verbose']],
  log_min_error_statement: [
    ['debug5', 'debug4', 'debug3', 'debug2', 'debug1', 'info', 'notice', 'warning', 'error', 'log', 'fatal', 'panic'],
    ['debug'],
  ],
  log_min_messages: [
    ['debug5', 'debug4', 'debug3', 'debug2', 'debug1', 'info', 'notice', 'warning', 'error', 'log', 'fatal', 'panic'],
    ['debug'],
  ],
  log_statement: [['none', 'ddl', 'mod', 'all']],
  password_encryption: [['md5', 'scram-sha-256']],
  plan_cache_mode: [['auto', 'force_generic_plan', 'force_custom_plan']],
  recovery_init_sync_method: [['fsync', 'syncfs']],
  recovery_prefetch: [
    ['off', 'on', 'try'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  recovery_target_action: [['pause', 'promote', 'shutdown']],
  session_replication_role: [['origin', 'replica', 'local']],
  shared_memory_type: [['sysv', 'mmap']],
  ssl_max_protocol_version: [['', 'TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3']],
  ssl_min_protocol_version: [['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3']],
  stats_fetch_consistency: [['none', 'cache', 'snapshot']],
  synchronous_commit: [
    ['local', 'remote_write', 'remote_apply', 'on', 'off'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  syslog_facility: [['local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7']],
  trace_recovery_messages: [
    ['debug5', 'debug4', 'debug3', 'debug2', 'debug1', 'log', 'notice', 'warning', 'error'],
    ['debug', 'info'],
  ],
  track_functions: [['none', 'pl', 'all']],
  transaction_isolation: [['serializable', 'repeatable read', 'read committed', 'read uncommitted']],
  wal_compression: [
    ['pglz', 'lz4', 'zstd', 'on', 'off'],
    ['true', 'false', 'yes', 'no', '1', '0'],
  ],
  wal_level: [
    ['minimal', 'replica', 'logical'],
    ['archive', 'hot_standby'],
  ],
  wal_sync_method: [['fsync', 'fdatasync', 'open_sync', 'open_datasync']],
  xmlbinary: [['base64', 'hex']],
  xmloption: [['content', 'document']],
};

/**
 * Settable PostgreSQL 15 parameters that --describe-config leaves out (flagged not-in-sample):
 * every pg_settings row of context other than internal that it does not print. Enum values come
 * from PG15_ENUMS.
 */
const PG15_HIDDEN: readonly PgSetting[] = [
  { name: 'allow_in_place_tablespaces', vartype: 'bool', context: 'superuser' },
  { name: 'allow_system_table_mods', vartype: 'bool', context: 'superuser' },
  { name: 'application_name', vartype: 'string', context: 'user' },
  { name: 'backtrace_functions', vartype: 'string', context: 'superuser' },
  { name: 'config_file', vartype: 'string', context: 'postmaster' },
  { name: 'debug_discard_caches', vartype: 'integer', context: 'superuser', unit: '', min: 0, max: 0 },
  { name: 'force_parallel_mode', vartype: 'enum', context: 'user' },
  { name: 'ignore_checksum_failure', vartype: 'bool', context: 'superuser' },
  { name: 'ignore_invalid_pages', vartype: 'bool', context: 'postmaster' },
  { name: 'ignore_system_indexes', vartype: 'bool', context: 'backend' },
  { name: 'jit_debugging_support', vartype: 'bool', context: 'superuser-backend' },
  { name: 'jit_dump_bitcode', vartype: 'bool', context: 'superuser' },
  { name: 'jit_expressions', vartype: 'bool', context: 'user' },
  { name: 'jit_profiling_support', vartype: 'bool', context: 'superuser-backend' },
  { name: 'jit_tuple_deforming', vartype: 'bool', context: 'user' },
  { name: 'post_auth_delay', vartype: 'integer', context: 'backend', unit: 's', min: 0, max: 2147 },
  { name: 'pre_auth_delay', vartype: 'integer', context: 'sighup', unit: 's', min: 0, max: 60 },
  { name: 'remove_temp_files_after_crash', vartype: 'bool', context: 'sighup' },
  { name: 'restrict_nonsystem_relation_kind', vartype: 'string', context: 'user' },
  { name: 'trace_notify', vartype: 'bool', context: 'user' },
  { name: 'trace_recovery_messages', vartype: 'enum', context: 'sighup' },
  { name: 'trace_sort', vartype: 'bool', context: 'user' },
  { name: 'transaction_deferrable', vartype: 'bool', context: 'user' },
  { name: 'transaction_isolation', vartype: 'enum', context: 'user' },
  { name: 'transaction_read_only', vartype: 'bool', context: 'user' },
  { name: 'wal_consistency_checking', vartype: 'string', context: 'superuser' },
  { name: 'zero_damaged_pages', vartype: 'bool', context: 'superuser' },
];

/** PostgreSQL 15 parameters of context internal (pg_settings, plus is_superuser): setting one in postgresql.conf stops the server from starting. */
const PG15_INTERNAL: readonly string[] = [
  'is_superuser',
  'block_size',
  'data_checksums',
  'data_directory_mode',
  'debug_assertions',
  'in_hot_standby',
  'integer_datetimes',
  'lc_collate',
  'lc_ctype',
  'max_function_args',
  'max_identifier_length',
  'max_index_keys',
  'segment_size',
  'server_encoding',
  'server_version',
  'server_version_num',
  'shared_memory_size',
  'shared_memory_size_in_huge_pages',
  'ssl_library',
  'wal_block_size',
  'wal_segment_size',
];
