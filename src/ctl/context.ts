/**
 * Where hactl finds the cluster: the same ha.yml the agents read (`-c FILE`, else `HACTL_CONFIG`),
 * or `--dcs-url` (etcd v3 at `http://host:port`, comma-separated for several endpoints) with
 * `--scope` / a positional CLUSTER. Opens a read-only Dcs (no lease, no watch).
 */
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import { ConfigError, loadConfig, type AgentConfig, type CtlConfig, type Etcd3Config } from '../config/index.ts';
import { securedHosts, type EtcdSecurity } from '../dcs/etcd-client.ts';
import { etcdSecurityOf } from '../dcs/etcd-settings.ts';
import { createDcs, type Dcs } from '../dcs/index.ts';
import type { ApiClientOptions } from '../net/api-client.ts';
import { TlsFileError } from '../net/tls-files.ts';
import { memberClientOf } from '../node/agent/api-security.ts';
import { CtlError, errorText, usageError } from './errors.ts';

/** Global options of hactl, as commander parses them. */
export interface GlobalOptions {
  config?: string;
  dcsUrl?: string;
  scope?: string;
  namespace?: string;
}

/** The resolved target: etcd endpoints, namespace, cluster name and how to call the members. */
export interface Target {
  /** etcd endpoints (`https://` when the file's etcd3 section says so). */
  hosts: string[];
  /** TLS credentials and etcd user of the file's etcd3 section, when a file was read. */
  etcd?: EtcdSecurity;
  namespace: string;
  scope: string;
  /** TLS and credentials for the members' APIs (`ctl`, else `restapi`, of the file). */
  client: ApiClientOptions;
  /** The agents' database superuser (`database.authentication.superuser` of a full ha.yml): `query`'s default login. */
  superuser?: { username: string; password?: string };
}

/** What a configuration file tells hactl (scope may be absent when only the DCS is named). */
interface FileTarget {
  hosts: string[];
  namespace: string;
  scope?: string;
  /** The file's etcd3 TLS and user settings (files read), applied to `--dcs-url` endpoints too. */
  etcd: EtcdSecurity;
  client: ApiClientOptions;
  superuser?: { username: string; password?: string };
}

/** The file's etcd and member-call settings; a certificate file that cannot be read is a usage error. */
async function securityOf(etcd3: Etcd3Config, config: AgentConfig): Promise<{ etcd: EtcdSecurity; client: ApiClientOptions }> {
  try {
    return { etcd: await etcdSecurityOf(etcd3), client: await memberClientOf(config) };
  } catch (e) {
    if (e instanceof TlsFileError) throw usageError(e.message);
    throw e;
  }
}

const str = (x: unknown): string | undefined => (typeof x === 'string' && x !== '' ? x : undefined);

/** The etcd3 and ctl settings of a client-only file (not validated as an agent file). */
function clientOnlySections(d: Record<string, unknown>, hosts: string[]): { etcd3: Etcd3Config; ctl: CtlConfig } {
  const e = (d['etcd3'] ?? {}) as Record<string, unknown>;
  const c = (d['ctl'] ?? {}) as Record<string, unknown>;
  const auth = (c['authentication'] ?? {}) as Record<string, unknown>;
  const pick = (o: Record<string, unknown>, keys: string[]) =>
    Object.fromEntries(keys.flatMap((k) => (str(o[k]) !== undefined ? [[k, str(o[k])]] : [])));
  const etcd3 = { hosts, ...pick(e, ['protocol', 'cacert', 'cert', 'key', 'username', 'password']) } as Etcd3Config;
  if (etcd3.protocol === undefined && (etcd3.cacert !== undefined || etcd3.cert !== undefined)) etcd3.protocol = 'https';
  const ctl: CtlConfig = {
    ...pick(c, ['cacert', 'certfile', 'keyfile', 'keyfile_password']),
    ...(c['insecure'] === true ? { insecure: true } : {}),
    ...(str(auth['username']) !== undefined && typeof auth['password'] === 'string'
      ? { authentication: { username: str(auth['username'])!, password: auth['password'] } }
      : {}),
  };
  return { etcd3, ctl };
}

/**
 * Turns `--dcs-url` into etcd endpoints: `http://h:p`, `https://h:p`, `etcd3://h:p`, `etcd://h:p`
 * or bare `h:p`, several separated by commas. Throws a usage error for an empty or malformed list.
 */
export function parseDcsUrl(text: string): string[] {
  const hosts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      const m = /^(?:(https?|etcd3?):\/\/)?([^/\s]+?)\/?$/.exec(s);
      if (!m || !/^(\[[^\]]+\]|[^:[\]]+):\d+$/.test(m[2]!)) {
        throw usageError(`invalid --dcs-url ${JSON.stringify(s)}: expected http://host:port`);
      }
      return m[1] === 'https' ? `https://${m[2]}` : m[2]!;
    });
  if (hosts.length === 0) throw usageError('--dcs-url is empty');
  return hosts;
}

/** The keys of a client-only file (anything else makes it an agent's file, validated as the agent does). */
const CLIENT_ONLY_KEYS: ReadonlySet<string> = new Set(['scope', 'namespace', 'name', 'etcd3', 'ctl']);

/**
 * Reads the configuration file for hactl. The full agent validation (loadConfig) is tried first;
 * a file that only names `scope`, `namespace`, `etcd3` and `ctl` (a client-only file) is accepted
 * too. Throws a usage error (exit 2) naming the file when neither works, and the agent's own
 * validation errors when the file has any agent section (restapi, database, bootstrap, …).
 */
async function readConfigTarget(path: string): Promise<FileTarget> {
  try {
    const c = await loadConfig(path);
    return {
      hosts: c.etcd3.hosts,
      namespace: c.namespace,
      scope: c.scope,
      superuser: c.database.authentication.superuser,
      ...(await securityOf(c.etcd3, c)),
    };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    let doc: unknown;
    try {
      doc = YAML.parse(await readFile(path, 'utf8'));
    } catch {
      throw usageError(e.message);
    }
    const d = (doc ?? {}) as Record<string, unknown>;
    // An agent's file with an error is reported, never read as a client-only file: that would
    // drop its restapi TLS and credentials without a word (issue 30).
    const agentSections = Object.keys(d).filter((k) => !CLIENT_ONLY_KEYS.has(k));
    if (agentSections.length > 0) {
      throw usageError(
        `${e.message}\n(hactl reads ${path} as an agent's file, since it has ${agentSections.join(', ')}; a client-only file has only ${[...CLIENT_ONLY_KEYS].join(', ')})`,
      );
    }
    const etcd = d['etcd3'] as Record<string, unknown> | undefined;
    const raw = etcd?.['hosts'];
    const hosts = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.split(',').map((s) => s.trim()) : [];
    if (hosts.length === 0) throw usageError(e.message);
    const { etcd3, ctl } = clientOnlySections(d, hosts);
    const asConfig = { restapi: { listen: '', connect_address: '' }, ctl } as unknown as AgentConfig;
    return {
      hosts,
      namespace: typeof d['namespace'] === 'string' ? d['namespace'] : '/service/',
      ...(typeof d['scope'] === 'string' ? { scope: d['scope'] } : {}),
      ...(await securityOf(etcd3, asConfig)),
    };
  }
}

/**
 * Resolves the target of a command. Precedence: `--dcs-url` over the file's etcd hosts; the
 * positional `cluster` over `--scope` over the file's scope. Throws a usage error when no DCS or
 * no cluster name can be found.
 */
export async function resolveTarget(
  opts: GlobalOptions,
  cluster: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Target> {
  const path = opts.config ?? (env['HACTL_CONFIG'] || undefined);
  const file = path !== undefined ? await readConfigTarget(path) : undefined;
  const plainHosts = opts.dcsUrl !== undefined ? parseDcsUrl(opts.dcsUrl) : file?.hosts;
  if (!plainHosts || plainHosts.length === 0) {
    throw usageError('no DCS to talk to: give -c <ha.yml>, HACTL_CONFIG or --dcs-url http://host:port');
  }
  const scope = cluster ?? opts.scope ?? file?.scope;
  if (scope === undefined || scope === '') {
    throw usageError('no cluster name: give CLUSTER, --scope or a configuration file with scope');
  }
  const namespace = `/${opts.namespace ?? file?.namespace ?? '/service/'}/`.replace(/\/+/g, '/');
  const hosts = file ? securedHosts(plainHosts, file.etcd) : plainHosts;
  return {
    hosts,
    namespace,
    scope,
    client: file?.client ?? {},
    ...(file && Object.keys(file.etcd).length > 0 ? { etcd: file.etcd } : {}),
    ...(file?.superuser ? { superuser: file.superuser } : {}),
  };
}

/**
 * Opens a read-only Dcs on the target (no lease, no watch) and reads the prefix once.
 * Throws CtlError (exit 1) naming the endpoints when etcd cannot be reached.
 */
export async function openDcs(t: Target, retryTimeoutMs = 5000): Promise<Dcs> {
  const dcs = createDcs({
    kind: 'etcd3',
    hosts: t.hosts,
    ...(t.etcd ? { security: t.etcd } : {}),
    namespace: t.namespace,
    scope: t.scope,
    name: 'hactl',
    ttlSeconds: 30,
    retryTimeoutMs,
  });
  try {
    await dcs.start({ lease: false, watch: false });
  } catch (e) {
    await dcs.close().catch(() => {});
    throw new CtlError(`DCS is not reachable at ${t.hosts.join(',')}: ${errorText(e)}`);
  }
  return dcs;
}
