/**
 * Standby cluster (patroni.md §3.10, §4.2; docs/ha.md "Standby cluster", docs/backups.md "A
 * standby cluster fed by the archive"): the dynamic `standby_cluster` section makes this cluster a
 * replica of a remote one. Its leader (the lock holder) is a standby leader: a replica fed by the
 * remote primary's WAL, streamed from `host:port`, fetched from an archive by `restore_command`, or
 * both; never promoted while the section is present; the other members follow the standby leader.
 * Removing the section (PATCH /config {"standby_cluster": null}, `hactl promote-cluster`) promotes
 * the standby leader.
 *
 * Only what we honour is accepted (src/config/dynamic-schema.ts refuses the rest): `host` and/or
 * `restore_command` (one of them is required), `port` (default 5432), `primary_slot_name`,
 * `create_replica_methods` (the methods the bootstrap tries, each a section of the members'
 * `database`, or `basebackup` from host:port), `archive_cleanup_command`,
 * `recovery_min_apply_delay`. Pure; no I/O.
 */

/** The `standby_cluster` section, as validated (defaults filled by standbyClusterOf). */
export interface StandbyClusterConfig {
  /** The remote primary the standby leader streams from; absent: fed by `restore_command` alone. */
  host?: string;
  /** The remote's port (default 5432); meaningful with `host` only. */
  port: number;
  primary_slot_name?: string;
  create_replica_methods?: string[];
  restore_command?: string;
  archive_cleanup_command?: string;
  recovery_min_apply_delay?: string | number;
}

import { BASEBACKUP } from './replica-methods.ts';

/** Default port of the remote when `standby_cluster.port` is absent. */
export const STANDBY_CLUSTER_DEFAULT_PORT = 5432;

/** Name the remote primary is given as an upstream (logs, `configuredUpstream`). */
export const REMOTE_UPSTREAM_NAME = 'standby_cluster';

/**
 * The standby cluster section of a dynamic configuration, or undefined when this is not a standby
 * cluster (absent, null, or with neither a host nor a restore_command: the schema refuses such a
 * section, and a garbled DCS copy is never taken for a standby cluster).
 */
export function standbyClusterOf(config: { standby_cluster?: unknown } | Record<string, unknown>): StandbyClusterConfig | undefined {
  const s = (config as Record<string, unknown>)['standby_cluster'];
  if (typeof s !== 'object' || s === null || Array.isArray(s)) return undefined;
  const o = s as Record<string, unknown>;
  const host = typeof o['host'] === 'string' && o['host'] !== '' ? o['host'] : undefined;
  const restore = typeof o['restore_command'] === 'string' && o['restore_command'] !== '' ? o['restore_command'] : undefined;
  if (host === undefined && restore === undefined) return undefined;
  const port = typeof o['port'] === 'number' && Number.isInteger(o['port']) ? o['port'] : STANDBY_CLUSTER_DEFAULT_PORT;
  const out: StandbyClusterConfig = { ...(host !== undefined ? { host } : {}), port };
  if (typeof o['primary_slot_name'] === 'string' && o['primary_slot_name'] !== '') out.primary_slot_name = o['primary_slot_name'];
  if (Array.isArray(o['create_replica_methods']))
    out.create_replica_methods = o['create_replica_methods'].filter((x): x is string => typeof x === 'string');
  for (const k of ['restore_command', 'archive_cleanup_command'] as const) {
    if (typeof o[k] === 'string' && o[k] !== '') out[k] = o[k];
  }
  const delay = o['recovery_min_apply_delay'];
  if (typeof delay === 'string' || typeof delay === 'number') out.recovery_min_apply_delay = delay;
  return out;
}

/** True when the configuration makes this a standby cluster. */
export function isStandbyCluster(config: { standby_cluster?: unknown } | Record<string, unknown>): boolean {
  return standbyClusterOf(config) !== undefined;
}

/**
 * The remote primary as an upstream (what the standby leader streams from and what the bootstrap's
 * basebackup copies), or undefined for a standby cluster fed by its archive alone.
 */
export function remoteUpstream(sc: StandbyClusterConfig): { host: string; port: number; name: string } | undefined {
  return sc.host === undefined ? undefined : { host: sc.host, port: sc.port, name: REMOTE_UPSTREAM_NAME };
}

/** What the standby leader replicates from, for logs and the cycle's sentences: `host:port`, or `the archive (restore_command)` without a host. */
export function remoteText(sc: StandbyClusterConfig): string {
  return sc.host === undefined ? 'the archive (restore_command)' : `${sc.host}:${sc.port}`;
}

/** The methods a standby cluster's bootstrap tries, in order: `create_replica_methods`, default `[basebackup]`. */
export function standbyBootstrapMethods(sc: StandbyClusterConfig): string[] {
  return sc.create_replica_methods ?? [BASEBACKUP];
}

/**
 * The PostgreSQL parameters the standby leader runs with besides primary_conninfo and
 * primary_slot_name: `restore_command`, `archive_cleanup_command`, `recovery_min_apply_delay`
 * as given (PostgreSQL ≥ 12 takes them as ordinary parameters).
 */
export function standbyLeaderParameters(sc: StandbyClusterConfig): Record<string, string | number> {
  const p: Record<string, string | number> = {};
  if (sc.restore_command !== undefined) p['restore_command'] = sc.restore_command;
  if (sc.archive_cleanup_command !== undefined) p['archive_cleanup_command'] = sc.archive_cleanup_command;
  if (sc.recovery_min_apply_delay !== undefined) p['recovery_min_apply_delay'] = sc.recovery_min_apply_delay;
  return p;
}

/**
 * What identifies the standby leader's upstream configuration: a change of any of these re-points
 * the running standby leader (rewrite and reload).
 */
export function remoteKey(sc: StandbyClusterConfig): string {
  return `${REMOTE_UPSTREAM_NAME}:${JSON.stringify(sc)}`;
}

/**
 * The role published for a member (member key, /ha, /cluster): the lock holder of a standby
 * cluster whose database runs as a replica is `standby_leader`; otherwise the database's role.
 */
export function publishedRole<R extends string>(dbRole: R, holdsLock: boolean, standbyCluster: boolean): R | 'standby_leader' {
  return holdsLock && standbyCluster && dbRole === 'replica' ? 'standby_leader' : dbRole;
}
