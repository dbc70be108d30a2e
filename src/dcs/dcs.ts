/**
 * The DCS contract (shared/docs/dcs-layout.md). One interface, two implementations:
 * `EtcdDcs` (etcd v3 through the `etcd3` package) and `InMemoryDcs` (in-process, for embedding,
 * the demo and fast tests). One contract test suite runs against both.
 *
 * Rules every implementation keeps:
 * - every call is bounded by `retryTimeoutMs`; a call that cannot reach the store rejects with
 *   `DcsError('dcs_unavailable', …)`; expected outcomes ("another member holds the lock", a
 *   compare-and-set that lost) are return values, never exceptions;
 * - one lease per agent with TTL = ttl seconds; the member key and (while leading) the leader key
 *   are attached to it; the lease is kept alive only by `keepalive()` (called each HA loop), never
 *   by a background timer, so a frozen agent loses its keys after ttl;
 * - `close()` revokes the lease before closing the client (etcd3's close() alone does not stop
 *   keepalive streams: stack.md §2.3), unless asked to keep it (`keepLease`: it then expires);
 * - the view is a cache of the whole prefix: one range read, then one watch from the returned
 *   revision; watch events update the cache and are emitted as DcsEvents.
 */
import type { ClusterView, FailoverRequest, HistoryEntry, LeaderStatus, SyncState } from '../domain/cluster.ts';
import type { MemberData } from '../domain/member.ts';

/** Events a Dcs emits into the node (names by source and tense). */
export type DcsEvent =
  | { type: 'dcs.leaderChanged'; leader: string | undefined }
  | { type: 'dcs.memberChanged'; name: string }
  | { type: 'dcs.configChanged' }
  | { type: 'dcs.failoverChanged' }
  | { type: 'dcs.statusChanged' }
  | { type: 'dcs.syncChanged' }
  | { type: 'dcs.historyChanged' }
  | { type: 'dcs.initializeChanged' }
  | { type: 'dcs.unreachable'; error: string }
  | { type: 'dcs.reachable' };

/** Options shared by both implementations. */
export interface DcsOptions {
  /** DCS namespace, default `/service/`; repeated slashes collapse. */
  namespace: string;
  /** Cluster name. */
  scope: string;
  /** This member's name (the leader key value when it leads). */
  name: string;
  /** Lease TTL, seconds. */
  ttlSeconds: number;
  /** Bound of every call, ms. */
  retryTimeoutMs: number;
  /** Clock, epoch ms. Default Date.now. */
  now?: () => number;
}

/**
 * Result of a leader race. A win carries the create_revision of the key this member created:
 * the identity of this incarnation of the lock, which every renewal and release compares.
 */
export type AcquireResult = { acquired: true; createRevision: string } | { acquired: false; holder: string | undefined };

/** Error codes of real DCS failures. */
export type DcsErrorCode = 'dcs_unavailable' | 'dcs_invalid_value';

/** A real DCS failure (not an expected outcome). */
export class DcsError extends Error {
  constructor(
    readonly code: DcsErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DcsError';
  }
}

/** Key prefix `/<namespace>/<scope>/` with repeated slashes collapsed, always ending in `/`. */
export function clusterPrefix(namespace: string, scope: string): string {
  return `/${namespace}/${scope}/`.replace(/\/+/g, '/');
}

export interface Dcs {
  readonly scope: string;
  readonly name: string;

  /**
   * Connects, grants the lease (unless `lease: false`, used by read-only clients such as hactl),
   * reads the prefix into the cache and starts the watch (unless `watch: false`).
   * Rejects with DcsError when the store cannot be reached within retryTimeoutMs.
   */
  start(opts?: { lease?: boolean; watch?: boolean }): Promise<void>;

  /**
   * Revokes the lease (deleting this member's keys, and the leader key if held), then closes.
   * `keepLease`: closes without revoking, so the member key and the leader key stay until the
   * lease expires (ttl), as the reference leaves them when it stops in pause; the agent that runs
   * on this member next adopts the leader key (LeaderLock.adopt).
   */
  close(opts?: { keepLease?: boolean }): Promise<void>;

  /** The cached view. Synchronous and cheap: safe in HTTP handlers and metrics. */
  view(): ClusterView;

  /** Epoch ms of the last successful contact with the store (read, write, keepalive, watch event); 0 if never. */
  lastSeenMs(): number;

  /**
   * Epoch ms, on the agent's own clock, at which the last successful lease keepalive or grant was
   * SENT (not answered): the store extended the lease at or after this instant, so the lease (and
   * every key on it) cannot expire before `lastKeepaliveMs() + ttl`. 0 if never.
   */
  lastKeepaliveMs(): number;

  /**
   * Changes the bound of every later call (retry_timeout changed in the dynamic configuration).
   */
  setRetryTimeout(ms: number): void;

  /**
   * The leader cycle's deadline (docs/ha.md "DCS outage"): while set, every call is bounded by
   * min(retryTimeoutMs, deadline() − now) and a call made at or after `deadline()` rejects at once
   * with DcsError('dcs_unavailable') without reaching the store. `deadline` is read at each call
   * (epoch ms on the agent's clock); undefined clears it.
   */
  setDeadline(deadline: (() => number) | undefined): void;

  /** Subscribes to events; returns the unsubscribe function. */
  subscribe(listener: (event: DcsEvent) => void): () => void;

  /** Linearizable range read of the whole prefix now; replaces the cache and returns it. */
  refresh(): Promise<ClusterView>;

  /** Keeps the lease alive; grants a new one if the store no longer knows it. */
  keepalive(): Promise<void>;

  /** Drops the lease and grants one with the new TTL (seconds); member/leader keys are re-put by the caller. */
  setTtl(ttlSeconds: number): Promise<void>;

  /**
   * Leader race: create-only transaction on `leader` with this member's name and lease
   * (compare `create_revision(leader) == 0`). The only way any member creates the key.
   */
  attemptToAcquireLeader(): Promise<AcquireResult>;

  /**
   * Quorum failover's take (docs/ha.md "Quorum failover", src/domain/quorum-failover.ts): one
   * transaction comparing the leader key (value `expected.leader.name`, mod_revision
   * `expected.leader.revision`: the lock of the fenced leader, not yet expired) and the `sync` key
   * (mod_revision `expected.syncRevision`: the synchronous set and the fence the decision was made
   * on) → put `leader` = this member's name on its lease. The key keeps its create_revision (the
   * incarnation this member renews from then on); its value and lease change, so the old holder's
   * renewals fail. `acquired: false` when either key changed since.
   */
  takeLeader(expected: { leader: { name: string; revision: string }; syncRevision: string }): Promise<AcquireResult>;

  /**
   * Quorum failover: writes `sync` (a member leaving a fence) only while the leader key is still
   * the one the member fenced: one transaction comparing the `sync` key's mod_revision
   * (`syncRevision`) and the leader key (value `leader.name`, mod_revision `leader.revision`). A
   * take (Dcs.takeLeader) compares the same `sync` revision, so of a take and a leave at most one
   * succeeds. False when either key changed.
   */
  setSyncUnderLeader(value: SyncState, syncRevision: string, leader: { name: string; revision: string }): Promise<boolean>;

  /**
   * Renews the lock this member holds: keepalive the lease (skipped with `{ keepalive: false }`
   * when the caller has just kept it alive itself: the HA cycle's keepalive, issue 13), then one
   * transaction comparing the key's value (this name), create_revision (`createRevision`: the
   * incarnation this member created, or adopted at start) and lease; when only the lease differs
   * (after a TTL change or an agent restart) a second compare-and-set on value and
   * create_revision moves the key to the current lease. Never creates the key: a released,
   * expired or re-created key answers false, and the member gets the lock again only through the
   * leader race. An implementation may answer without the transaction when its cache is known
   * to be at least as new as the store revision its last keepalive was answered at and shows
   * this incarnation on the current lease (EtcdDcs.heldPerCache; docs/ha.md "The leader lock").
   */
  updateLeader(createRevision: string, opts?: { keepalive?: boolean }): Promise<boolean>;

  /**
   * Deletes a leader key that names `expected.name` at mod_revision `expected.revision`
   * (compare-and-set on both): used only for a key naming a member that has had no member key
   * for longer than ttl (docs/ha.md "A leader key naming an unknown member"). False when the key
   * changed meanwhile.
   */
  clearLeader(expected: { name: string; revision: string }): Promise<boolean>;

  /** This agent's current lease id (decimal string), undefined before the grant. */
  currentLeaseId(): string | undefined;

  /**
   * Releases the lock: transaction `value(leader) == name` (and `create_revision(leader) ==
   * createRevision` when given) → delete. False when not held.
   */
  deleteLeader(createRevision?: string): Promise<boolean>;

  /** Writes `members/<name>` with the lease. */
  touchMember(data: MemberData): Promise<void>;

  /** Removes `members/<name>` (used on shutdown before the lease is revoked, and by tests). */
  deleteMember(): Promise<void>;

  /**
   * Writes `initialize`. `create: true`: create-only (bootstrap race), false when it already exists.
   * `create: false`: overwrite (the winner writing the system identifier).
   */
  initialize(sysid: string, opts: { create: boolean }): Promise<boolean>;

  /**
   * Deletes `initialize` while it is still empty (a bootstrap that failed before its winner wrote
   * the system identifier): compare-and-delete on the value ''. False when the key holds a system
   * identifier or is gone.
   */
  cancelInitialize(): Promise<boolean>;

  /**
   * Writes `config` (compact JSON). With `expectedRevision`: compare-and-set on mod_revision
   * ('0' means create-only); false on conflict. Without: unconditional.
   */
  setConfig(value: Record<string, unknown>, expectedRevision?: string): Promise<boolean>;

  /** Writes `status`. */
  setStatus(status: LeaderStatus): Promise<void>;

  /** Writes `failover`; `{}` clears it. CAS like setConfig. */
  setFailover(value: FailoverRequest, expectedRevision?: string): Promise<boolean>;

  /** Writes `sync` (CAS like setConfig); null deletes it. */
  setSync(value: SyncState | null, expectedRevision?: string): Promise<boolean>;

  /** Writes `history`. */
  setHistory(history: HistoryEntry[]): Promise<void>;

  /** Writes `failsafe`; null deletes it. */
  setFailsafe(value: Record<string, string> | null): Promise<void>;

  /** Deletes the whole prefix (`hactl remove`). */
  deleteCluster(): Promise<void>;
}
