/**
 * The probe configuration of the multi-target exporter (`--probe.config`, docs/exporter.md
 * "Multi-target: /probe"): named targets, auth modules (credentials that never travel in a URL),
 * whether a DSN may be given in `?target=` and the allowlist it must match, and the limits on
 * target pools. Auth modules follow postgres_exporter's `auth_modules` (type `userpass`, with
 * `options` that become connection parameters; pg_exporter.md §6.1), plus `password_file` and
 * `password_env` so that the file need not hold the password.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import * as v from 'valibot';
import { parse as parseYaml } from 'yaml';
import { parseAllowEntry, type AllowEntry } from './allowlist.ts';
import { ConfigError } from './config-load.ts';

/** Credentials and connection parameters for targets (resolved at load). */
export interface AuthModule {
  name: string;
  username?: string;
  /** Resolved from `password`, `password_file` (first line) or `password_env`. */
  password?: string;
  /** Connection parameters added to the target's URL query (e.g. `sslmode`). */
  options: Record<string, string>;
}

/** A target named in the configuration: `?target=<name>` selects it. */
export interface NamedTarget {
  name: string;
  /** postgres:// URL without a password. */
  url: string;
  /** Auth module name, or undefined for none (the URL's user, no password). */
  authModule?: string;
  /** Planning tags of this target (like the CLI's `--tag`). */
  tags: string[];
}

/** Bounds on what `/probe` may hold open (defaults in brackets). */
export interface ProbeLimits {
  /** Targets (each with its own pool) alive at once; a new one beyond it answers 429 [64]. */
  maxTargets: number;
  /** Connections per target pool [2]. */
  poolSize: number;
  /** Seconds an unused connection stays open (postgres.js `idle_timeout`) [60]. */
  idleConnectionSeconds: number;
  /** Seconds without a probe after which a target, its pool and its statistics are dropped [300]. */
  targetIdleSeconds: number;
}

/** A loaded probe configuration. */
export interface ProbeConfig {
  /** File it was read from. */
  path: string;
  authModules: Map<string, AuthModule>;
  targets: Map<string, NamedTarget>;
  /** Whether `?target=` may be a DSN (host:port/db or postgres:// URL without password) [false]. */
  allowDsn: boolean;
  /** Hosts (and ports) a DSN target must match; required when allowDsn. */
  allowlist: AllowEntry[];
  /** Auth module of DSN targets when the request names none. */
  defaultAuthModule?: string;
  limits: ProbeLimits;
}

/** Default limits (see ProbeLimits). */
export const DEFAULT_PROBE_LIMITS: ProbeLimits = { maxTargets: 64, poolSize: 2, idleConnectionSeconds: 60, targetIdleSeconds: 300 };

/** Target and auth module names: a letter or digit, then letters, digits, `_`, `.` or `-` (at most 128). */
export const TARGET_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

const name = v.pipe(v.string(), v.regex(TARGET_NAME, 'names are letters, digits, _ . - (starting with a letter or digit)'));
const posInt = (max: number) =>
  v.pipe(v.number(), v.integer('must be an integer'), v.minValue(1, 'must be >= 1'), v.maxValue(max, `must be <= ${max}`));

const AuthModuleSchema = v.object({
  type: v.optional(v.picklist(['userpass'], 'type must be userpass'), 'userpass'),
  userpass: v.optional(
    v.object({
      username: v.optional(v.pipe(v.string(), v.nonEmpty('username is empty'))),
      password: v.optional(v.string()),
      password_file: v.optional(v.pipe(v.string(), v.nonEmpty('password_file is empty'))),
      password_env: v.optional(v.pipe(v.string(), v.nonEmpty('password_env is empty'))),
    }),
  ),
  options: v.optional(
    v.record(
      v.pipe(v.string(), v.regex(/^[a-z_][a-z0-9_]*$/, 'option names are lower-case words')),
      v.union([v.string(), v.number(), v.boolean()]),
    ),
  ),
});

const TargetSchema = v.object({
  dsn: v.pipe(v.string('dsn is required'), v.nonEmpty('dsn is empty')),
  auth_module: v.optional(name),
  tags: v.optional(v.array(v.string())),
});

const ProbeConfigSchema = v.object({
  auth_modules: v.optional(v.nullable(v.record(name, AuthModuleSchema))),
  targets: v.optional(v.nullable(v.record(name, TargetSchema))),
  allow_dsn: v.optional(v.boolean()),
  allowlist: v.optional(v.nullable(v.array(v.string('allowlist entries are strings')))),
  default_auth_module: v.optional(name),
  limits: v.optional(
    v.nullable(
      v.object({
        max_targets: v.optional(posInt(10_000)),
        pool_size: v.optional(posInt(16)),
        idle_connection_seconds: v.optional(posInt(86_400)),
        target_idle_seconds: v.optional(posInt(86_400 * 7)),
      }),
    ),
  ),
});

/**
 * Turns a DSN written as `host[:port][/db][?query]` or `postgres[ql]://[user@]host[:port][/db][?query]`
 * into a URL object with the `postgres:` scheme and a lower-case host. Throws Error for anything else, for a password
 * (credentials come from auth modules) and for an empty host.
 */
export function parseDsn(dsn: string): URL {
  const text = /^postgres(ql)?:\/\//i.test(dsn) ? dsn.replace(/^postgres(ql)?:/i, 'postgres:') : `postgres://${dsn}`;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new Error(`not a DSN: expected host:port/dbname or postgres://host:port/dbname`);
  }
  if (u.password !== '') throw new Error('a DSN must not hold a password (use an auth module)');
  if (u.hostname === '') throw new Error('the DSN has no host');
  if (u.hash !== '') throw new Error('a DSN has no #fragment');
  const db = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (db.includes('/')) throw new Error('the database name holds a /');
  u.hostname = u.hostname.toLowerCase();
  return u;
}

/** Reads the password of an auth module's userpass block; undefined when none is given. */
function resolvePassword(
  modName: string,
  up: { password?: string; password_file?: string; password_env?: string },
  base: string,
  env: NodeJS.ProcessEnv,
): string | undefined {
  const given = [up.password !== undefined, up.password_file !== undefined, up.password_env !== undefined].filter(Boolean).length;
  if (given > 1) throw new Error(`auth module ${modName}: give one of password, password_file, password_env`);
  if (up.password !== undefined) return up.password;
  if (up.password_file !== undefined) {
    const p = isAbsolute(up.password_file) ? up.password_file : join(base, up.password_file);
    try {
      return readFileSync(p, 'utf8').split(/\r?\n/)[0] ?? '';
    } catch (e) {
      throw new Error(`auth module ${modName}: password_file: ${(e as Error).message}`);
    }
  }
  if (up.password_env !== undefined) {
    const val = env[up.password_env];
    if (val === undefined) throw new Error(`auth module ${modName}: environment variable ${up.password_env} is not set`);
    return val;
  }
  return undefined;
}

/**
 * Validates parsed YAML (`data`) as a probe configuration. `path` names it in messages and
 * anchors relative `password_file`s. Throws ConfigError (`probe config <path>: <problem>`).
 */
export function buildProbeConfig(data: unknown, path: string, env: NodeJS.ProcessEnv = process.env): ProbeConfig {
  const fail: (msg: string) => never = (msg) => {
    throw new ConfigError(`probe config ${path}: ${msg}`);
  };
  const r = v.safeParse(ProbeConfigSchema, data ?? {});
  if (!r.success) return fail(r.issues.map((i) => `${v.getDotPath(i) ?? ''}${v.getDotPath(i) ? ': ' : ''}${i.message}`).join('; '));
  const o = r.output;
  const base = dirname(path);
  const authModules = new Map<string, AuthModule>();
  for (const [n, m] of Object.entries(o.auth_modules ?? {})) {
    try {
      const password = resolvePassword(n, m.userpass ?? {}, base, env);
      const options = Object.fromEntries(Object.entries(m.options ?? {}).map(([k, val]) => [k, String(val)]));
      authModules.set(n, {
        name: n,
        ...(m.userpass?.username !== undefined ? { username: m.userpass.username } : {}),
        ...(password !== undefined ? { password } : {}),
        options,
      });
    } catch (e) {
      fail((e as Error).message);
    }
  }
  const targets = new Map<string, NamedTarget>();
  for (const [n, t] of Object.entries(o.targets ?? {})) {
    let u: URL;
    try {
      u = parseDsn(t.dsn);
    } catch (e) {
      return fail(`target ${n}: ${(e as Error).message}`);
    }
    if (t.auth_module !== undefined && !authModules.has(t.auth_module)) fail(`target ${n}: auth module ${t.auth_module} is not defined`);
    targets.set(n, {
      name: n,
      url: u.toString(),
      ...(t.auth_module !== undefined ? { authModule: t.auth_module } : {}),
      tags: t.tags ?? [],
    });
  }
  const allowlist: AllowEntry[] = [];
  for (const e of o.allowlist ?? []) {
    try {
      allowlist.push(parseAllowEntry(e));
    } catch (err) {
      fail((err as Error).message);
    }
  }
  const allowDsn = o.allow_dsn ?? false;
  if (allowDsn && allowlist.length === 0) fail('allow_dsn needs an allowlist (the hosts a DSN target may name)');
  if (o.default_auth_module !== undefined && !authModules.has(o.default_auth_module))
    fail(`default_auth_module ${o.default_auth_module} is not defined`);
  const l = o.limits ?? {};
  const limits: ProbeLimits = {
    maxTargets: l.max_targets ?? DEFAULT_PROBE_LIMITS.maxTargets,
    poolSize: l.pool_size ?? DEFAULT_PROBE_LIMITS.poolSize,
    idleConnectionSeconds: l.idle_connection_seconds ?? DEFAULT_PROBE_LIMITS.idleConnectionSeconds,
    targetIdleSeconds: l.target_idle_seconds ?? DEFAULT_PROBE_LIMITS.targetIdleSeconds,
  };
  if (targets.size > limits.maxTargets) fail(`${targets.size} targets are named but limits.max_targets is ${limits.maxTargets}`);
  return {
    path,
    authModules,
    targets,
    allowDsn,
    allowlist,
    ...(o.default_auth_module !== undefined ? { defaultAuthModule: o.default_auth_module } : {}),
    limits,
  };
}

/** Reads and validates a probe configuration file. Throws ConfigError naming the file and the problem. */
export function loadProbeConfig(path: string, env: NodeJS.ProcessEnv = process.env): ProbeConfig {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(`probe config ${path}: ${(e as Error).message}`);
  }
  return buildProbeConfig(data, path, env);
}
