/**
 * Environment overrides (patroni.md §4.4, with the prefix `HA_`, and the reference's own
 * `PATRONI_*` names beside them: src/config/patroni-env.ts). They are laid over the parsed file
 * (in the native form) before validation, so an environment value is checked like a file value
 * and wins over it. An empty variable counts as unset.
 */
import YAML from 'yaml';
import { PATRONI_BOOLEANS, PATRONI_ENV_OVERRIDES, parsePatroniBool, refusedPatroniVariables } from './patroni-env.ts';

/** Variable name -> dot path of the key it sets. `HA_CONFIGURATION` is handled by the loader. */
export const ENV_OVERRIDES: Readonly<Record<string, string>> = {
  HA_NAME: 'name',
  HA_SCOPE: 'scope',
  HA_NAMESPACE: 'namespace',
  HA_ETCD3_HOSTS: 'etcd3.hosts',
  HA_RESTAPI_LISTEN: 'restapi.listen',
  HA_RESTAPI_CONNECT_ADDRESS: 'restapi.connect_address',
  HA_DATABASE_LISTEN: 'database.listen',
  HA_DATABASE_CONNECT_ADDRESS: 'database.connect_address',
  HA_DATABASE_DATA_DIR: 'database.data_dir',
  HA_DATABASE_BIN_DIR: 'database.bin_dir',
  HA_DATABASE_SOCKET_DIR: 'database.socket_dir',
  HA_DATABASE_PGPASS: 'database.pgpass',
  HA_SUPERUSER_USERNAME: 'database.authentication.superuser.username',
  HA_SUPERUSER_PASSWORD: 'database.authentication.superuser.password',
  HA_REPLICATION_USERNAME: 'database.authentication.replication.username',
  HA_REPLICATION_PASSWORD: 'database.authentication.replication.password',
  HA_LOG_LEVEL: 'log.level',
  HA_RESTAPI_CERTFILE: 'restapi.certfile',
  HA_RESTAPI_KEYFILE: 'restapi.keyfile',
  HA_RESTAPI_KEYFILE_PASSWORD: 'restapi.keyfile_password',
  HA_RESTAPI_CAFILE: 'restapi.cafile',
  HA_RESTAPI_VERIFY_CLIENT: 'restapi.verify_client',
  HA_RESTAPI_USERNAME: 'restapi.authentication.username',
  HA_RESTAPI_PASSWORD: 'restapi.authentication.password',
  HA_RESTAPI_ALLOWLIST: 'restapi.allowlist',
  HA_RESTAPI_ALLOWLIST_INCLUDE_MEMBERS: 'restapi.allowlist_include_members',
  HA_RESTAPI_HTTP_EXTRA_HEADERS: 'restapi.http_extra_headers',
  HA_RESTAPI_HTTPS_EXTRA_HEADERS: 'restapi.https_extra_headers',
  HA_ETCD3_PROTOCOL: 'etcd3.protocol',
  HA_ETCD3_CACERT: 'etcd3.cacert',
  HA_ETCD3_CERT: 'etcd3.cert',
  HA_ETCD3_KEY: 'etcd3.key',
  HA_ETCD3_USERNAME: 'etcd3.username',
  HA_ETCD3_PASSWORD: 'etcd3.password',
  HA_CTL_INSECURE: 'ctl.insecure',
  HA_CTL_CACERT: 'ctl.cacert',
  HA_CTL_CERTFILE: 'ctl.certfile',
  HA_CTL_KEYFILE: 'ctl.keyfile',
  HA_CTL_KEYFILE_PASSWORD: 'ctl.keyfile_password',
  HA_CTL_USERNAME: 'ctl.authentication.username',
  HA_CTL_PASSWORD: 'ctl.authentication.password',
};

/**
 * Variables whose value is YAML (flow list, flow mapping or boolean) rather than plain text:
 * `HA_RESTAPI_ALLOWLIST` (also a comma list, split by the schema), the extra headers
 * (`{X-Frame-Options: DENY}`) and the booleans (`true` / `false`).
 */
const YAML_VALUED: ReadonlySet<string> = new Set([
  'HA_ETCD3_HOSTS',
  'HA_RESTAPI_ALLOWLIST',
  'HA_RESTAPI_ALLOWLIST_INCLUDE_MEMBERS',
  'HA_RESTAPI_HTTP_EXTRA_HEADERS',
  'HA_RESTAPI_HTTPS_EXTRA_HEADERS',
  'HA_CTL_INSECURE',
]);

/** True when `raw` of `variable` is to be read as YAML: a flow collection, or a boolean variable. */
function isYamlValue(variable: string, raw: string): boolean {
  if (!YAML_VALUED.has(variable)) return false;
  const t = raw.trim();
  return t.startsWith('[') || t.startsWith('{') || t === 'true' || t === 'false';
}

/** Result of {@link applyEnvOverrides}. */
export interface EnvOverlay {
  /** The document with overrides applied (a copy; the input is not changed). */
  doc: Record<string, unknown>;
  /** Dot path -> variable that set it, to name the variable in problems. */
  sources: Map<string, string>;
  /** Problems found while reading variables, as `<dot.path>: <problem>`. */
  problems: string[];
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * Lays every set variable of {@link ENV_OVERRIDES} and of the reference's
 * `PATRONI_ENV_OVERRIDES` over `doc`; an `HA_*` variable and its `PATRONI_*` twin set to
 * different values are a problem (`database.data_dir: set by both HA_DATABASE_DATA_DIR and
 * PATRONI_POSTGRESQL_DATA_DIR, to different values; unset one`), and so is every set `PATRONI_*`
 * variable of a setting this agent does not implement (src/config/patroni-env.ts). `HA_ETCD3_HOSTS` and
 * `HA_RESTAPI_ALLOWLIST` may be a comma list (`h1:2379,h2:2379`) or a YAML flow list
 * (`[h1:2379, h2:2379]`); extra headers a YAML flow mapping; booleans `true`/`false`. Every
 * password has a variable (`HA_RESTAPI_PASSWORD`, `HA_ETCD3_PASSWORD`, `HA_CTL_PASSWORD`,
 * `HA_SUPERUSER_PASSWORD`, `HA_REPLICATION_PASSWORD`, `*_KEYFILE_PASSWORD`). Missing sections
 * are created; a section that exists but is not a mapping is left for the schema to report.
 * Never throws.
 */
export function applyEnvOverrides(doc: Record<string, unknown>, env: NodeJS.ProcessEnv): EnvOverlay {
  const out = structuredClone(doc);
  const sources = new Map<string, string>();
  const problems: string[] = refusedPatroniVariables(env);
  // Path -> the variable that sets it; an HA_ variable and its PATRONI_ twin must agree.
  const chosen = new Map<string, { variable: string; raw: string }>();
  for (const [variable, path] of [...Object.entries(ENV_OVERRIDES), ...Object.entries(PATRONI_ENV_OVERRIDES)]) {
    const raw = env[variable];
    if (raw === undefined || raw === '') continue;
    const earlier = chosen.get(path);
    if (earlier === undefined) chosen.set(path, { variable, raw });
    else if (earlier.raw !== raw) problems.push(`${path}: set by both ${earlier.variable} and ${variable}, to different values; unset one`);
  }
  for (const [path, { variable, raw }] of chosen) {
    const value = variable.startsWith('PATRONI_') ? patroniValue(variable, raw) : haValue(variable, raw);
    if (!value.ok) {
      problems.push(`${path}: ${value.problem}`);
      continue;
    }
    if (setPath(out, path.split('.'), value.value)) sources.set(path, variable);
  }
  return { doc: out, sources, problems };
}

type Read = { ok: true; value: unknown } | { ok: false; problem: string };

/** The value of an `HA_*` variable: text, or YAML for a flow collection or boolean of YAML_VALUED. */
function haValue(variable: string, raw: string): Read {
  if (!isYamlValue(variable, raw)) return { ok: true, value: raw };
  try {
    return { ok: true, value: YAML.parse(raw) as unknown };
  } catch {
    // Echo only the hosts list; another variable's value is never echoed (a secret set by mistake).
    return {
      ok: false,
      problem:
        variable === 'HA_ETCD3_HOSTS'
          ? `${variable} is neither a comma list nor a YAML flow list: ${raw}`
          : `${variable} is not valid YAML`,
    };
  }
}

/**
 * The value of a `PATRONI_*` variable as the reference reads it: booleans with its `parse_bool`
 * words; lists (`ETCD3_HOSTS`, `RESTAPI_ALLOWLIST`) as YAML flow lists, brackets optional;
 * `ETCD3_HOST` as a one-element list of hosts; headers as YAML flow mappings, braces optional;
 * anything else as text.
 */
function patroniValue(variable: string, raw: string): Read {
  if (PATRONI_BOOLEANS.has(variable)) {
    const b = parsePatroniBool(raw);
    return b === undefined ? { ok: false, problem: `${variable} must be on/off, true/false, yes/no or 1/0` } : { ok: true, value: b };
  }
  if (variable === 'PATRONI_ETCD3_HOST') return { ok: true, value: [raw.trim()] };
  const list = variable === 'PATRONI_ETCD3_HOSTS' || variable === 'PATRONI_RESTAPI_ALLOWLIST';
  const map = variable.endsWith('_EXTRA_HEADERS');
  if (!list && !map) return { ok: true, value: raw };
  const t = raw.trim();
  const text = list ? (t.startsWith('-') || t.includes('[') ? t : `[${t}]`) : t.startsWith('{') ? t : `{${t}}`;
  try {
    return { ok: true, value: YAML.parse(text) as unknown };
  } catch {
    return {
      ok: false,
      problem: variable === 'PATRONI_ETCD3_HOSTS' ? `${variable} is not a list of hosts: ${raw}` : `${variable} is not valid YAML`,
    };
  }
}

function setPath(target: Record<string, unknown>, keys: string[], value: unknown): boolean {
  let node = target;
  for (const key of keys.slice(0, -1)) {
    if (node[key] === undefined || node[key] === null) node[key] = {};
    const next = node[key];
    if (!isObject(next)) return false;
    node = next;
  }
  node[keys[keys.length - 1] as string] = value;
  return true;
}

/** Appends ` (from HA_X)` (or `PATRONI_X`) to a problem whose path was set by a variable. */
export function nameSource(problem: string, sources: Map<string, string>): string {
  const path = problem.slice(0, problem.indexOf(':'));
  for (const [p, variable] of sources) {
    if (path === p || path.startsWith(`${p}.`)) return `${problem} (from ${variable})`;
  }
  return problem;
}
