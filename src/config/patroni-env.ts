/**
 * The reference's environment variables (`PATRONI_*`, patroni.md §4.4; the names Patroni 3.0.2
 * reads, `Config._build_environment_configuration`), read beside `HA_*` (src/config/env.ts):
 * - those of settings this agent implements set the same key as their `HA_*` twin
 *   ({@link PATRONI_ENV_OVERRIDES}); both set to different values is a problem;
 * - those of settings it does not implement are problems naming the variable and why
 *   ({@link refusedPatroniVariables});
 * - `PATRONI_*` names the reference does not read are not read here either.
 * Pure.
 */
import { unimplementedWhy } from './reference-keys.ts';

/** `PATRONI_*` variable -> native dot path of the key it sets (the reference's name of each in the comment of the table). */
export const PATRONI_ENV_OVERRIDES: Readonly<Record<string, string>> = {
  PATRONI_NAME: 'name',
  PATRONI_SCOPE: 'scope',
  PATRONI_NAMESPACE: 'namespace',
  PATRONI_LOG_LEVEL: 'log.level',
  PATRONI_LOGLEVEL: 'log.level',
  PATRONI_RESTAPI_LISTEN: 'restapi.listen',
  PATRONI_RESTAPI_CONNECT_ADDRESS: 'restapi.connect_address',
  PATRONI_RESTAPI_CERTFILE: 'restapi.certfile',
  PATRONI_RESTAPI_KEYFILE: 'restapi.keyfile',
  PATRONI_RESTAPI_KEYFILE_PASSWORD: 'restapi.keyfile_password',
  PATRONI_RESTAPI_CAFILE: 'restapi.cafile',
  PATRONI_RESTAPI_VERIFY_CLIENT: 'restapi.verify_client',
  PATRONI_RESTAPI_HTTP_EXTRA_HEADERS: 'restapi.http_extra_headers',
  PATRONI_RESTAPI_HTTPS_EXTRA_HEADERS: 'restapi.https_extra_headers',
  PATRONI_RESTAPI_ALLOWLIST: 'restapi.allowlist',
  PATRONI_RESTAPI_ALLOWLIST_INCLUDE_MEMBERS: 'restapi.allowlist_include_members',
  PATRONI_RESTAPI_USERNAME: 'restapi.authentication.username',
  PATRONI_RESTAPI_PASSWORD: 'restapi.authentication.password',
  PATRONI_CTL_INSECURE: 'ctl.insecure',
  PATRONI_CTL_CACERT: 'ctl.cacert',
  PATRONI_CTL_CERTFILE: 'ctl.certfile',
  PATRONI_CTL_KEYFILE: 'ctl.keyfile',
  PATRONI_CTL_KEYFILE_PASSWORD: 'ctl.keyfile_password',
  PATRONI_CTL_USERNAME: 'ctl.authentication.username',
  PATRONI_CTL_PASSWORD: 'ctl.authentication.password',
  PATRONI_POSTGRESQL_LISTEN: 'database.listen',
  PATRONI_POSTGRESQL_CONNECT_ADDRESS: 'database.connect_address',
  PATRONI_POSTGRESQL_DATA_DIR: 'database.data_dir',
  PATRONI_POSTGRESQL_BIN_DIR: 'database.bin_dir',
  PATRONI_POSTGRESQL_PGPASS: 'database.pgpass',
  PATRONI_SUPERUSER_USERNAME: 'database.authentication.superuser.username',
  PATRONI_SUPERUSER_PASSWORD: 'database.authentication.superuser.password',
  PATRONI_REPLICATION_USERNAME: 'database.authentication.replication.username',
  PATRONI_REPLICATION_PASSWORD: 'database.authentication.replication.password',
  PATRONI_ETCD3_HOSTS: 'etcd3.hosts',
  PATRONI_ETCD3_HOST: 'etcd3.hosts',
  PATRONI_ETCD3_PROTOCOL: 'etcd3.protocol',
  PATRONI_ETCD3_CACERT: 'etcd3.cacert',
  PATRONI_ETCD3_CERT: 'etcd3.cert',
  PATRONI_ETCD3_KEY: 'etcd3.key',
  PATRONI_ETCD3_USERNAME: 'etcd3.username',
  PATRONI_ETCD3_PASSWORD: 'etcd3.password',
};

/** Boolean variables of the reference: its `parse_bool` words (on/off, true/false, yes/no, 1/0, any case). */
export const PATRONI_BOOLEANS: ReadonlySet<string> = new Set(['PATRONI_RESTAPI_ALLOWLIST_INCLUDE_MEMBERS', 'PATRONI_CTL_INSECURE']);

/** The reference's `parse_bool`: true, false, or undefined for any other word. */
export function parsePatroniBool(raw: string): boolean | undefined {
  const t = raw.trim().toLowerCase();
  if (['on', 'true', 'yes', '1'].includes(t)) return true;
  if (['off', 'false', 'no', '0'].includes(t)) return false;
  return undefined;
}

/** Suffixes the reference reads as DCS settings (`PATRONI_<DCS>_<SUFFIX>`, Patroni 3.0.2). */
const DCS_SUFFIXES = new Set([
  'HOST',
  'HOSTS',
  'PORT',
  'USE_PROXIES',
  'PROTOCOL',
  'SRV',
  'SRV_SUFFIX',
  'URL',
  'PROXY',
  'CACERT',
  'CERT',
  'KEY',
  'VERIFY',
  'TOKEN',
  'CHECKS',
  'DC',
  'CONSISTENCY',
  'REGISTER_SERVICE',
  'SERVICE_CHECK_INTERVAL',
  'SERVICE_CHECK_TLS_SERVER_NAME',
  'SERVICE_TAGS',
  'NAMESPACE',
  'CONTEXT',
  'USE_ENDPOINTS',
  'SCOPE_LABEL',
  'ROLE_LABEL',
  'POD_IP',
  'PORTS',
  'LABELS',
  'BYPASS_API_SERVICE',
  'RETRIABLE_HTTP_CODES',
  'KEY_PASSWORD',
  'USE_SSL',
  'SET_ACLS',
  'GROUP',
  'DATABASE',
  'USERNAME',
  'PASSWORD',
]);

/** DCS sections of the reference other than etcd3 (each refused as a whole). */
const OTHER_DCS = new Set(['ETCD', 'CONSUL', 'ZOOKEEPER', 'EXHIBITOR', 'KUBERNETES', 'CITUS', 'RAFT']);

/** The reference's connection options of a role besides username and password. */
const ROLE_OPTIONS = new Set([
  'SSLMODE',
  'SSLCERT',
  'SSLKEY',
  'SSLPASSWORD',
  'SSLROOTCERT',
  'SSLCRL',
  'SSLCRLDIR',
  'GSSENCMODE',
  'CHANNEL_BINDING',
]);

/** Variables of the reference's settings of the sections below that are not implemented, as `<variable suffix>` -> reference path. */
const SECTION_REFUSALS: Readonly<Record<string, string>> = {
  RESTAPI_CIPHERS: 'restapi.ciphers',
  RESTAPI_REQUEST_QUEUE_SIZE: 'restapi.request_queue_size',
  RESTAPI_THREAD_POOL_SIZE: 'restapi.thread_pool_size',
  RESTAPI_SERVER_TOKENS: 'restapi.server_tokens',
  POSTGRESQL_PROXY_ADDRESS: 'postgresql.proxy_address',
  POSTGRESQL_CONFIG_DIR: 'postgresql.config_dir',
  LOGFORMAT: 'log.format',
  LOG_DATEFMT: 'log.dateformat',
  LOG_TRACEBACK_LEVEL: 'log.traceback_level',
  LOG_FORMAT: 'log.format',
  LOG_DATEFORMAT: 'log.dateformat',
  LOG_MAX_QUEUE_SIZE: 'log.max_queue_size',
  LOG_DIR: 'log.dir',
  LOG_FILE_SIZE: 'log.file_size',
  LOG_FILE_NUM: 'log.file_num',
  LOG_LOGGERS: 'log.loggers',
};

/** The native path of a reference path (`postgresql.x` -> `database.x`), for the why of reference-keys.ts. */
function nativeOf(referencePath: string): string[] {
  const parts = referencePath.split('.');
  if (parts[0] === 'postgresql') parts[0] = 'database';
  return parts;
}

/** `<reference path>: <why> (from <variable>)`. */
function refusal(variable: string, referencePath: string): string {
  const why = unimplementedWhy(nativeOf(referencePath)) ?? 'not implemented';
  return `${referencePath}: ${why} (from ${variable})`;
}

/**
 * Problems of the set (non-empty) `PATRONI_*` variables of settings the reference reads and this
 * agent does not implement, one per variable, named by the reference's path and the variable:
 * `postgresql.config_dir: not implemented: … (from PATRONI_POSTGRESQL_CONFIG_DIR)`. Bootstrap users
 * (`PATRONI_<user>_PASSWORD`, `_OPTIONS`) are the reference's `bootstrap.users`. Never throws.
 */
export function refusedPatroniVariables(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.startsWith('PATRONI_') || value === undefined || value === '') continue;
    if (Object.hasOwn(PATRONI_ENV_OVERRIDES, variable) || variable === 'PATRONI_CONFIGURATION') continue;
    const rest = variable.slice('PATRONI_'.length);
    const section = SECTION_REFUSALS[rest];
    if (section !== undefined) {
      out.push(refusal(variable, section));
      continue;
    }
    if (rest.startsWith('POSTGRESQL_BIN_')) {
      out.push(refusal(variable, 'postgresql.bin_name'));
      continue;
    }
    const [first, ...more] = rest.split('_');
    const suffix = more.join('_');
    if (first === 'RAFT' || (first !== undefined && OTHER_DCS.has(first) && DCS_SUFFIXES.has(suffix))) {
      out.push(refusal(variable, first!.toLowerCase()));
      continue;
    }
    if (first === 'ETCD3' && DCS_SUFFIXES.has(suffix)) {
      out.push(refusal(variable, `etcd3.${suffix.toLowerCase()}`));
      continue;
    }
    if (first === 'REWIND' && (suffix === 'USERNAME' || suffix === 'PASSWORD' || ROLE_OPTIONS.has(suffix))) {
      out.push(refusal(variable, 'postgresql.authentication.rewind'));
      continue;
    }
    if ((first === 'SUPERUSER' || first === 'REPLICATION') && ROLE_OPTIONS.has(suffix)) {
      out.push(refusal(variable, `postgresql.authentication.${first.toLowerCase()}.${suffix.toLowerCase()}`));
      continue;
    }
    if (rest.endsWith('_PASSWORD') || rest.endsWith('_OPTIONS')) out.push(refusal(variable, 'bootstrap.users'));
  }
  return out;
}
