/**
 * Where hactl finds the cluster: the same ha.yml the agents read (`-c FILE`, else `HACTL_CONFIG`),
 * or `--dcs-url` (etcd v3 at `http://host:port`, comma-separated for several endpoints) with
 * `--scope` / a positional CLUSTER. Opens a read-only Dcs (no lease, no watch).
 */
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import { ConfigError, loadConfig } from '../config/index.ts';
import { createDcs, type Dcs } from '../dcs/index.ts';
import { CtlError, errorText, usageError } from './errors.ts';

/** Global options of hactl, as commander parses them. */
export interface GlobalOptions {
  config?: string;
  dcsUrl?: string;
  scope?: string;
  namespace?: string;
}

/** The resolved target: etcd endpoints, namespace and cluster name. */
export interface Target {
  hosts: string[];
  namespace: string;
  scope: string;
}

/** What a configuration file tells hactl (scope may be absent when only the DCS is named). */
interface FileTarget {
  hosts: string[];
  namespace: string;
  scope?: string;
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

/**
 * Reads the configuration file for hactl. The full agent validation (loadConfig) is tried first;
 * a file that only names `scope`, `namespace` and `etcd3.hosts` (a client-only file) is accepted
 * too. Throws a usage error (exit 2) naming the file when neither works.
 */
async function readConfigTarget(path: string): Promise<FileTarget> {
  try {
    const c = await loadConfig(path);
    return { hosts: c.etcd3.hosts, namespace: c.namespace, scope: c.scope };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    let doc: unknown;
    try {
      doc = YAML.parse(await readFile(path, 'utf8'));
    } catch {
      throw usageError(e.message);
    }
    const d = (doc ?? {}) as Record<string, unknown>;
    const etcd = d['etcd3'] as Record<string, unknown> | undefined;
    const raw = etcd?.['hosts'];
    const hosts = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.split(',').map((s) => s.trim()) : [];
    if (hosts.length === 0) throw usageError(e.message);
    return {
      hosts,
      namespace: typeof d['namespace'] === 'string' ? d['namespace'] : '/service/',
      ...(typeof d['scope'] === 'string' ? { scope: d['scope'] } : {}),
    };
  }
}

/**
 * Resolves the target of a command. Precedence: `--dcs-url` over the file's etcd hosts; the
 * positional `cluster` over `--scope` over the file's scope. Throws a usage error when no DCS or
 * no cluster name can be found.
 */
export async function resolveTarget(opts: GlobalOptions, cluster: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<Target> {
  const path = opts.config ?? (env['HACTL_CONFIG'] || undefined);
  const file = path !== undefined ? await readConfigTarget(path) : undefined;
  const hosts = opts.dcsUrl !== undefined ? parseDcsUrl(opts.dcsUrl) : file?.hosts;
  if (!hosts || hosts.length === 0) {
    throw usageError('no DCS to talk to: give -c <ha.yml>, HACTL_CONFIG or --dcs-url http://host:port');
  }
  const scope = cluster ?? opts.scope ?? file?.scope;
  if (scope === undefined || scope === '') {
    throw usageError('no cluster name: give CLUSTER, --scope or a configuration file with scope');
  }
  const namespace = `/${opts.namespace ?? file?.namespace ?? '/service/'}/`.replace(/\/+/g, '/');
  return { hosts, namespace, scope };
}

/**
 * Opens a read-only Dcs on the target (no lease, no watch) and reads the prefix once.
 * Throws CtlError (exit 1) naming the endpoints when etcd cannot be reached.
 */
export async function openDcs(t: Target, retryTimeoutMs = 5000): Promise<Dcs> {
  const dcs = createDcs({
    kind: 'etcd3',
    hosts: t.hosts,
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
