/**
 * The cluster view: everything under the DCS prefix `/<namespace>/<scope>/`, parsed
 * (shared/docs/dcs-layout.md). Produced by a Dcs implementation from its cache; read by the HA
 * decision, the HTTP handlers and the metrics. Plain data: no methods, no I/O.
 */
import type { Member } from './member.ts';

/** The leader lock as read from the DCS. */
export interface LeaderLock {
  /** Member name (the plain-text value of the `leader` key). */
  name: string;
  /** Lease id holding the key (decimal string), '' when unknown. */
  leaseId: string;
  /** mod_revision of the key (decimal string). */
  revision: string;
  /**
   * create_revision of the key (decimal string): which incarnation of the key this is. A key
   * deleted and created again has a new one, so a holder renews only the key it created
   * (compare-and-set on it) and can never re-create a released or lost lock.
   */
  createRevision: string;
}

/** Value of the `status` key. LSNs in bytes. */
export interface LeaderStatus {
  optime: number;
  slots?: Record<string, number>;
  retain_slots?: string[];
}

/** Value of the `failover` key; `{}` means no request. */
export interface FailoverRequest {
  leader?: string;
  member?: string;
  /** ISO 8601 with offset. */
  scheduled_at?: string;
}

/** Value of the `sync` key. */
export interface SyncState {
  leader: string;
  sync_standby: string | null;
  quorum?: number;
  /**
   * Quorum failover's fence record (ours; the reference ignores it): `{leader, members: {name:
   * WAL end bytes}}`, read with src/domain/quorum-failover.ts fenceOf.
   */
  fence?: unknown;
}

/** One entry of the `history` key: [timeline, switch LSN bytes, reason, ISO timestamp, new leader]. */
export type HistoryEntry = [number, number, string, string?, string?];

/** A parsed key with the revision needed for compare-and-set writes. */
export interface Versioned<T> {
  value: T;
  /** mod_revision (decimal string). */
  revision: string;
}

/** Everything the DCS holds for one cluster. Absent keys are undefined. */
export interface ClusterView {
  /** `initialize`: the system identifier, '' while the winner runs initdb. */
  initialize?: string;
  /** `config`: the raw stored JSON object (defaults NOT filled; see withDefaults). */
  config?: Versioned<Record<string, unknown>>;
  leader?: LeaderLock;
  /** `members/*`, sorted by name. */
  members: Member[];
  status?: LeaderStatus;
  failover?: Versioned<FailoverRequest>;
  /**
   * A `failover` key whose value does not parse as a request (wrong types, a `scheduled_at` that
   * is not a date): left out of `failover`, so nothing acts on it; the leader clears it.
   */
  failoverInvalid?: { reason: string; revision: string };
  sync?: Versioned<SyncState>;
  history?: HistoryEntry[];
  failsafe?: Record<string, string>;
}

/** An empty view (no keys). */
export function emptyClusterView(): ClusterView {
  return { members: [] };
}

/**
 * The cluster timeline as the leader sees it (dcs-layout.md): last `history` entry's timeline + 1;
 * 1 when the history is []; 0 (unknown) when the key is absent.
 */
export function clusterTimeline(view: ClusterView): number {
  if (!view.history) return 0;
  const last = view.history[view.history.length - 1];
  return last ? last[0] + 1 : 1;
}
