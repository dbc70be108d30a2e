/**
 * The node snapshot: everything the HTTP handlers and the metrics read. Built by the node agent
 * after every HA cycle, every probe (at least once a second) and every machine transition.
 * Handlers answer from it alone: no SQL, no DCS call inside a handler.
 */
import type { ClusterView } from './cluster.ts';
import type { DynamicConfig } from './dynamic-config.ts';
import type { ScheduledRestartData, Tags } from './member.ts';
import type { PgStatus } from './pg-status.ts';
import type { OperationProgress } from './progress.ts';
import type { DatabaseState, Role } from './states.ts';

export interface NodeSnapshot {
  /** Member name. */
  name: string;
  /** Cluster name. */
  scope: string;
  /** Agent version (semver). */
  version: string;
  /** `http://<restapi.connect_address>/ha` */
  apiUrl: string;
  /** `postgres://<host>:<port>/postgres` */
  connUrl: string;
  /** Effective tags (false-valued predefined boolean tags removed). */
  tags: Tags;
  /** Database lifecycle state (one of the 15). */
  state: DatabaseState;
  /** Role of the local database. */
  role: Role;
  /** Latest successful probe while PostgreSQL runs; undefined when it is not running or the probe failed. */
  pg?: PgStatus;
  /** Epoch ms the probe in `pg` started (present with `pg`): the status document's `probe_age_ms` is counted from it. */
  pgProbedAtMs?: number;
  /**
   * PostgreSQL not running (stopped, crashed, starting, start failed): where its data directory's
   * WAL ended when last read with PostgreSQL stopped, bytes, and its timeline (the status
   * document's `local_wal_end`).
   */
  stoppedWal?: { walBytes: bigint; timeline: number };
  /** Database system identifier when known. */
  sysid?: string;
  /**
   * Epoch ms until which this node holds the leader lock: last successful acquire/renewal + ttl
   * (an in-memory expiry, patroni.md §1.4); 0 when it does not hold it.
   */
  leaderUntilMs: number;
  /** Cached DCS view. */
  cluster: ClusterView;
  /** Epoch ms of the last successful DCS contact; 0 if never. */
  dcsLastSeenMs: number;
  /** Effective dynamic configuration (defaults filled). */
  config: DynamicConfig;
  /** Epoch ms of the last completed HA loop; 0 before the first. */
  lastLoopMs: number;
  /** Scheduled restart of this node, if any. */
  scheduledRestart?: ScheduledRestartData;
  /**
   * Why the local data diverged from the leader's timeline, while it does (the member then does
   * not run as a replica: docs/ha.md "Divergence"); absent otherwise.
   */
  diverged?: string;
  /**
   * The member the leader key names while that member has no member key (a ghost lock, docs/ha.md
   * "A leader key naming an unknown member"); absent otherwise.
   */
  ghostLeader?: string;
  /**
   * The fence of the local PostgreSQL (docs/ha.md "Fencing"): `watchdog.mode`, armed now, and
   * `failed` when required but it could not be armed (the reference's `watchdog_failed`).
   */
  watchdog?: { mode: 'off' | 'automatic' | 'required'; armed: boolean; failed: boolean };
  /** Epoch ms since when this running replica's WAL receiver has not streamed; absent while it streams. */
  notStreamingSinceMs?: number;
  /**
   * Synchronous mode on, this primary holding the lock: why commits are not acknowledged by a
   * synchronous standby (asynchronous fallback, or waiting in strict mode); absent otherwise.
   */
  syncDegraded?: string;
  /** True while DCS failsafe mode keeps this primary running. */
  failsafeActive?: boolean;
  /**
   * The receipts of transactions this member discarded (a rewind or re-clone of WAL the leader
   * never had: docs/ha.md "Receipts"), when it kept any: how many, the transactions and commits in
   * them, the last one's time (ISO 8601) and where they are kept.
   */
  discarded?: { receipts: number; transactions: number; committed: number; lastAt?: string; location: string };
  /** The long operation under way (a clone by a replica creation method, a rewind), when one is (docs/backups.md "Progress"). */
  progress?: OperationProgress;
}
