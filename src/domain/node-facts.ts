/**
 * Facts derived from one NodeSnapshot at one instant, shared by the status document, the health
 * checks and the metrics so that all three agree (patroni.md §1.3, §1.4).
 */
import type { ClusterView } from './cluster.ts';
import { timingOf, type DynamicConfig } from './dynamic-config.ts';
import type { NodeSnapshot } from './snapshot.ts';

/** Derived facts of a snapshot; LSNs in bytes. */
export interface NodeFacts {
  /** Holds the leader lock: `leaderUntilMs > now` (in-memory lease, patroni.md §1.4). */
  isLeader: boolean;
  /** The cached DCS view is valid: last successful contact within `ttl` seconds (dcs-layout.md). */
  dcsValid: boolean;
  /** Cluster paused (dynamic config `pause: true`). */
  paused: boolean;
  /** No leader key in the view, or the view is older than ttl. */
  clusterUnlocked: boolean;
  /** Listed in `/sync` while `synchronous_mode: true`. */
  syncStandby: boolean;
  /** Listed in `/sync` while `synchronous_mode: quorum`. */
  quorumStandby: boolean;
  /** `streaming` / `in archive recovery` for a replica whose probe says so; undefined otherwise. */
  replicationState: 'streaming' | 'in archive recovery' | undefined;
  /** Leader position for lag checks: max(cached DCS `status.optime`, pg latest_end_lsn) (patroni.md §1.4); 0n when unknown. */
  leaderOptime: bigint;
}

/** Names listed in the `sync_standby` value of the `/sync` key (comma-separated, or null). */
export function syncStandbyNames(cluster: ClusterView): string[] {
  const list = cluster.sync?.value.sync_standby;
  return typeof list === 'string' && list !== '' ? list.split(',').map((s) => s.trim()) : [];
}

/** Synchronous mode of a dynamic configuration: 'off', 'on' (true) or 'quorum'. */
export function syncMode(config: Pick<DynamicConfig, 'synchronous_mode'>): 'off' | 'on' | 'quorum' {
  const m = config.synchronous_mode;
  return m === 'quorum' ? 'quorum' : m === true ? 'on' : 'off';
}

/** The cached DCS view of `s` is valid at `nowMs`: last successful contact within `ttl` seconds. */
export function dcsViewValid(s: NodeSnapshot, nowMs: number): boolean {
  return s.dcsLastSeenMs > 0 && nowMs - s.dcsLastSeenMs <= timingOf(s.config).ttlMs;
}

/** Computes the NodeFacts of `s` at `nowMs` (epoch ms). Pure; never throws. */
export function nodeFacts(s: NodeSnapshot, nowMs: number): NodeFacts {
  const dcsValid = dcsViewValid(s, nowMs);
  const listed = syncStandbyNames(s.cluster).includes(s.name);
  const mode = syncMode(s.config);
  const pg = s.pg;
  let replicationState: NodeFacts['replicationState'];
  if (pg?.inRecovery) {
    if (pg.streaming) replicationState = 'streaming';
    else if (pg.archiveRecovery) replicationState = 'in archive recovery';
  }
  const dcsOptime = s.cluster.status ? BigInt(Math.max(0, Math.trunc(s.cluster.status.optime))) : 0n;
  const latestEnd = pg?.latestEndLsn ?? 0n;
  return {
    isLeader: s.leaderUntilMs > nowMs,
    dcsValid,
    paused: s.config.pause === true,
    clusterUnlocked: s.cluster.leader === undefined || !dcsValid,
    syncStandby: listed && mode === 'on',
    quorumStandby: listed && mode === 'quorum',
    replicationState,
    leaderOptime: dcsOptime > latestEnd ? dcsOptime : latestEnd,
  };
}
