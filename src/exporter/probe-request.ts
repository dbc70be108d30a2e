/**
 * What a `/probe` request asks for, decided before anything connects (docs/exporter.md
 * "Multi-target: /probe"). Pure: from the query parameters, the probe configuration and the
 * names of the loaded collectors, either a target specification (where to connect, with which
 * credentials, which collectors to run) or a refusal with its HTTP status and a message that says
 * what to change. A refusal never creates a pool.
 *
 * Rules, in order: `target` is required and at most 512 characters; a configured target name
 * wins; otherwise the value is a DSN, accepted only with `allow_dsn: true`, without credentials,
 * with no connection parameter but `sslmode`, and with a host (and port) on the allowlist (a
 * bare word that is neither a name nor an allowed host is an unknown target, 404); the
 * auth module is the named target's own, else `auth_module=`, else `default_auth_module`;
 * `collectors=` and `tags=` name loaded collectors and tags.
 */
import { allowed } from './allowlist.ts';
import { parseDsn, TARGET_NAME, type ProbeConfig } from './probe-config.ts';

/** The query parameters `/probe` reads. */
export interface ProbeParams {
  target?: string;
  auth_module?: string;
  /** Comma-separated collector names or branches. */
  collectors?: string;
  /** Comma-separated collector tags. */
  tags?: string;
}

/** Where and how to connect for one probe target. */
export interface TargetSpec {
  /** Identity in the target registry: `name:<name>` or `dsn:<url>|<auth module>`. */
  key: string;
  /** The `target` label of self-monitoring: the name, or `host:port/db` (with `;auth_module=x` when one was named). */
  label: string;
  /** postgres:// URL without credentials, the auth module's options in its query. */
  url: string;
  username?: string;
  password?: string;
  /** Planning tags (the named target's `tags`). */
  tags: string[];
  /** True for a target named in the configuration. */
  named: boolean;
}

/** Which collectors a probe runs: empty lists run all; fatal collectors always run. */
export interface Selection {
  collectors: string[];
  tags: string[];
}

/** Every reason a request can be refused for (the `reason` label of `<ns>_exporter_probe_rejected_count`). */
export const REJECT_REASONS = [
  'bad_request',
  'unknown_target',
  'dsn_not_allowed',
  'not_in_allowlist',
  'unknown_auth_module',
  'unknown_collector',
  'too_many_targets',
] as const;

/** Why a request was refused. */
export type RejectReason = (typeof REJECT_REASONS)[number];

/** Outcome of resolving a request. */
export type ProbeResolution =
  | { ok: true; spec: TargetSpec; select: Selection }
  | { ok: false; status: 400 | 403 | 404 | 429; reason: RejectReason; message: string };

/** Longest accepted `target` value, characters. */
export const MAX_TARGET_LENGTH = 512;
/** Most names accepted in `collectors=` or `tags=`. */
export const MAX_SELECTION_ITEMS = 64;

const refuse = (status: 400 | 403 | 404, reason: RejectReason, message: string): ProbeResolution => ({
  ok: false,
  status,
  reason,
  message,
});

/** Splits a comma list; trims; drops empties. */
const items = (s: string | undefined): string[] =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** Adds an auth module's connection options to a URL's query (existing parameters win). */
function withOptions(u: URL, options: Record<string, string>): URL {
  const out = new URL(u.toString());
  for (const [k, val] of Object.entries(options)) if (!out.searchParams.has(k)) out.searchParams.set(k, val);
  return out;
}

/**
 * Resolves a `/probe` request (rules in the module comment). `known` holds the loaded
 * collectors' names and branches and `knownTags` their tags, to check `collectors=` and `tags=`.
 */
export function resolveProbe(
  params: ProbeParams,
  cfg: ProbeConfig,
  known: ReadonlySet<string>,
  knownTags: ReadonlySet<string>,
): ProbeResolution {
  const target = params.target;
  if (target === undefined || target.trim() === '') return refuse(400, 'bad_request', 'target is required: /probe?target=<name or DSN>');
  if (target.length > MAX_TARGET_LENGTH) return refuse(400, 'bad_request', `target is longer than ${MAX_TARGET_LENGTH} characters`);
  const collectors = items(params.collectors);
  const tags = items(params.tags);
  if (collectors.length > MAX_SELECTION_ITEMS || tags.length > MAX_SELECTION_ITEMS)
    return refuse(400, 'bad_request', `at most ${MAX_SELECTION_ITEMS} names in collectors= or tags=`);
  const badCollector = collectors.find((c) => !known.has(c));
  if (badCollector !== undefined)
    return {
      ok: false,
      status: 400,
      reason: 'unknown_collector',
      message: `unknown collector ${JSON.stringify(badCollector.slice(0, 64))} in collectors= (see /explain)`,
    };
  const badTag = tags.find((t) => !knownTags.has(t));
  if (badTag !== undefined)
    return {
      ok: false,
      status: 400,
      reason: 'unknown_collector',
      message: `no loaded collector has the tag ${JSON.stringify(badTag.slice(0, 64))} (tags=)`,
    };
  const select: Selection = { collectors, tags };
  const moduleName = params.auth_module;
  if (moduleName !== undefined && !cfg.authModules.has(moduleName))
    return refuse(400, 'unknown_auth_module', `auth_module ${JSON.stringify(moduleName.slice(0, 64))} not found`);

  const named = cfg.targets.get(target);
  if (named) {
    if (moduleName !== undefined && moduleName !== named.authModule)
      return refuse(400, 'bad_request', `target ${named.name} uses the auth module of its configuration; leave auth_module out`);
    const mod = named.authModule !== undefined ? cfg.authModules.get(named.authModule) : undefined;
    const u = withOptions(new URL(named.url), mod?.options ?? {});
    const username = mod?.username ?? (u.username !== '' ? decodeURIComponent(u.username) : undefined);
    u.username = '';
    return {
      ok: true,
      spec: {
        key: `name:${named.name}`,
        label: named.name,
        url: u.toString(),
        ...(username !== undefined ? { username } : {}),
        ...(mod?.password !== undefined ? { password: mod.password } : {}),
        tags: named.tags,
        named: true,
      },
      select,
    };
  }

  const looksLikeName = TARGET_NAME.test(target) && !target.includes(':');
  if (!cfg.allowDsn) {
    return looksLikeName
      ? refuse(404, 'unknown_target', `unknown target ${JSON.stringify(target)}: not named in the probe configuration`)
      : refuse(403, 'dsn_not_allowed', 'a DSN target is not allowed here (allow_dsn is false): name a target of the probe configuration');
  }
  let u: URL;
  try {
    u = parseDsn(target);
  } catch (e) {
    return refuse(400, 'bad_request', `target: ${(e as Error).message}`);
  }
  if (u.username !== '') return refuse(400, 'bad_request', 'a DSN target must not name a user: credentials come from the auth module');
  for (const k of u.searchParams.keys())
    if (k !== 'sslmode') return refuse(400, 'bad_request', `a DSN target may only carry sslmode, not ${JSON.stringify(k.slice(0, 64))}`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = u.port === '' ? 5432 : Number(u.port);
  if (!allowed(cfg.allowlist, host, port)) {
    return looksLikeName
      ? refuse(
          404,
          'unknown_target',
          `unknown target ${JSON.stringify(target)}: not named in the probe configuration, and not a host of its allowlist`,
        )
      : refuse(403, 'not_in_allowlist', `target host ${host}:${port} is not in the allowlist of the probe configuration`);
  }
  const db = decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres';
  const modName = moduleName ?? cfg.defaultAuthModule;
  const mod = modName !== undefined ? cfg.authModules.get(modName) : undefined;
  const norm = new URL(`postgres://${u.host.toLowerCase()}`);
  norm.port = String(port);
  norm.pathname = `/${encodeURIComponent(db)}`;
  const sslmode = u.searchParams.get('sslmode');
  if (sslmode !== null) norm.searchParams.set('sslmode', sslmode);
  const label = `${norm.host}/${db}${sslmode !== null ? `?sslmode=${sslmode}` : ''}${moduleName !== undefined ? `;auth_module=${moduleName}` : ''}`;
  const url = withOptions(norm, mod?.options ?? {});
  return {
    ok: true,
    spec: {
      key: `dsn:${norm.toString()}|${modName ?? ''}`,
      label,
      url: url.toString(),
      ...(mod?.username !== undefined ? { username: mod.username } : {}),
      ...(mod?.password !== undefined ? { password: mod.password } : {}),
      tags: [],
      named: false,
    },
    select,
  };
}
