/**
 * Rules spanning several keys, checked on the raw document (after environment overrides) so
 * they are reported together with the schema's problems. Each reads its inputs defensively:
 * a value of the wrong type is the schema's to report, not these rules'.
 */
import { dirname, join } from 'node:path';
import { DYNAMIC_DEFAULTS } from '../domain/dynamic-config.ts';
import { hostPortProblem, isWildcardHost, parseHostPort } from './host-port.ts';

/** Longest unix socket path: sockaddr_un.sun_path is 108 bytes with the trailing NUL (Linux). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Parameters the agent derives from other keys; setting them in `database.parameters` is an error. */
export const MANAGED_PARAMETERS: Readonly<Record<string, string>> = {
  listen_addresses: 'database.listen',
  port: 'database.listen',
  cluster_name: 'scope',
  data_directory: 'database.data_dir',
  unix_socket_directories: 'database.socket_dir',
};

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function str(x: unknown): string | undefined {
  return typeof x === 'string' ? x : undefined;
}

/** Default socket directory: `<dirname(data_dir)>/.<name>-sock` (outside PGDATA, short, per member). */
export function defaultSocketDir(dataDir: string, name: string): string {
  return join(dirname(dataDir), `.${name}-sock`);
}

/** Every cross-key problem of `doc` as `<dot.path>: <problem>`. */
export function crossCheck(doc: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const section of ['restapi', 'database'] as const) {
    const s = doc[section];
    if (isObject(s)) problems.push(...connectAddressProblems(section, s));
  }
  const restapi = doc['restapi'];
  if (isObject(restapi)) problems.push(...restApiTlsProblems(restapi));
  const etcd3 = doc['etcd3'];
  if (isObject(etcd3)) problems.push(...etcdSecurityProblems(etcd3));
  const tags = doc['tags'];
  if (isObject(tags) && typeof tags['replicatefrom'] === 'string' && tags['replicatefrom'] === doc['name']) {
    problems.push('tags.replicatefrom: names this member itself; name another member (or remove the tag to stream from the leader)');
  }
  const watchdog = doc['watchdog'];
  if (isObject(watchdog)) problems.push(...watchdogProblems(watchdog, doc['bootstrap']));
  const db = doc['database'];
  if (isObject(db)) {
    problems.push(...socketProblems(db, str(doc['name'])));
    const params = db['parameters'];
    if (isObject(params)) {
      for (const [p, owner] of Object.entries(MANAGED_PARAMETERS)) {
        if (p in params) problems.push(`database.parameters.${p}: set by ${owner}; remove it`);
      }
    }
  }
  return problems;
}

function connectAddressProblems(section: string, s: Record<string, unknown>): string[] {
  const listen = str(s['listen']);
  const connect = str(s['connect_address']);
  const effective = connect ?? listen;
  if (effective === undefined || hostPortProblem(effective) !== undefined) return [];
  const { host } = parseHostPort(effective);
  if (!isWildcardHost(host)) return [];
  return [
    connect !== undefined
      ? `${section}.connect_address: host "${host}" means every interface; give an address other members can reach`
      : `${section}.connect_address: required because ${section}.listen's host "${host}" means every interface`,
  ];
}

function socketProblems(db: Record<string, unknown>, name: string | undefined): string[] {
  const listen = str(db['listen']);
  const dataDir = str(db['data_dir']);
  const socketDir = str(db['socket_dir']) ?? (dataDir && name ? defaultSocketDir(dataDir, name) : undefined);
  if (socketDir === undefined || listen === undefined || hostPortProblem(listen) !== undefined) return [];
  const socketPath = join(socketDir, `.s.PGSQL.${parseHostPort(listen).port}`);
  const bytes = Buffer.byteLength(socketPath);
  if (bytes <= MAX_SOCKET_PATH_BYTES) return [];
  return [
    `database.socket_dir: socket path ${socketPath} is ${bytes} bytes, over the ${MAX_SOCKET_PATH_BYTES}-byte limit of unix sockets; set a shorter socket_dir`,
  ];
}

/** TLS keys of restapi that mean nothing without `certfile`, and client verification without a CA. */
function restApiTlsProblems(r: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (r['certfile'] === undefined) {
    for (const k of ['keyfile', 'keyfile_password', 'https_extra_headers'] as const) {
      if (r[k] !== undefined) problems.push(`restapi.${k}: needs restapi.certfile (TLS is off without it)`);
    }
    if (r['verify_client'] !== undefined && r['verify_client'] !== 'none') {
      problems.push('restapi.verify_client: needs restapi.certfile (client certificates need TLS)');
    }
  }
  const verify = r['verify_client'];
  if ((verify === 'optional' || verify === 'required') && r['cafile'] === undefined) {
    problems.push(`restapi.cafile: required with verify_client: ${verify} (the CA that signs client certificates)`);
  }
  return problems;
}

/** etcd3: a client certificate needs its key (and the reverse), a user needs a password, TLS files need https. */
function etcdSecurityProblems(e: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (e['cert'] !== undefined && e['key'] === undefined) problems.push('etcd3.key: required with etcd3.cert');
  if (e['key'] !== undefined && e['cert'] === undefined) problems.push('etcd3.cert: required with etcd3.key');
  if (e['username'] !== undefined && e['password'] === undefined) problems.push('etcd3.password: required with etcd3.username');
  if (e['password'] !== undefined && e['username'] === undefined) problems.push('etcd3.username: required with etcd3.password');
  if (e['protocol'] === 'http' && (e['cacert'] !== undefined || e['cert'] !== undefined)) {
    problems.push('etcd3.protocol: is http but etcd3.cacert/cert are set; use https');
  }
  return problems;
}

/**
 * watchdog.safety_margin must leave time within the lease: the fence fires at last renewal + ttl −
 * safety_margin, so a margin of ttl or more would fire at once (docs/ha.md "Fencing"). Checked
 * against bootstrap.dcs.ttl (default 30); a ttl changed later through the DCS is handled at run
 * time (the margin becomes ttl / 2, with a notice).
 */
function watchdogProblems(w: Record<string, unknown>, bootstrap: unknown): string[] {
  const margin = w['safety_margin'];
  if (typeof margin !== 'number' || margin < 1) return [];
  const dcs = isObject(bootstrap) ? bootstrap['dcs'] : undefined;
  const ttl = isObject(dcs) && typeof dcs['ttl'] === 'number' ? dcs['ttl'] : DYNAMIC_DEFAULTS.ttl;
  if (margin < ttl) return [];
  return [
    `watchdog.safety_margin: ${margin} s leaves no time within bootstrap.dcs.ttl ${ttl} s (the fence fires at last renewal + ttl − safety_margin); use less than ttl, e.g. 5, or -1 for ttl / 2`,
  ];
}
