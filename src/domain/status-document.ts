/**
 * The node status document (seed 000 "Node status document"; patroni.md §1.3): the body of
 * GET /ha and of every GET health check. Built from the snapshot alone.
 *
 * Always present: `state`, `role`, `dcs_last_seen`, `ha` ({version, scope, name}).
 * While PostgreSQL runs and the last probe succeeded (snapshot.pg set): `postmaster_start_time`,
 * `server_version`, `timeline`, `xlog` (primary: {location}; replica: {received_location,
 * replayed_location, replayed_timestamp, paused}), `replication_state` (replicas that stream or
 * recover from an archive), `replication` (only when standbys are attached), `pending_restart` +
 * `pending_restart_reason` (only when a restart is pending).
 * Present only when true: `cluster_unlocked`, `failsafe_mode_is_active`, `pause`, `sync_standby`,
 * `quorum_standby`. Present when known/set: `tags`, `database_system_identifier`,
 * `scheduled_restart`, `watchdog_failed` (required and not armed). Ours (docs/ha.md): `diverged` (why), `not_streaming_since`, `ghost_leader`, `synchronous_degraded`,
 * `discarded` (receipts of discarded transactions kept: docs/ha.md "Receipts"), `config_ignored`
 * (keys of the stored dynamic configuration the agent does not read: docs/configuration.md
 * "Keys the agent does not read"), `probe_age_ms` (last, with the probe's fields: how old the
 * probe that read them is; see {@link StatusDocument.probe_age_ms}).
 */
import { unreadKeys } from '../config/dynamic-keys.ts';
import { lsnToNumber } from './lsn.ts';
import type { ScheduledRestartData, Tags } from './member.ts';
import type { NodeSnapshot } from './snapshot.ts';
import { progressText } from './progress.ts';
import type { ReplicationRow } from './pg-status.ts';
import type { DatabaseState, Role } from './states.ts';
import { nodeFacts, type NodeFacts } from './node-facts.ts';

/** One attached standby (pg_stat_replication row, seed field `replication`): the probe's row without LSNs. */
export type ReplicationEntry = Omit<ReplicationRow, 'flush_lsn' | 'replay_lsn'>;

/** `xlog` of a primary: its flush LSN in bytes. */
export interface PrimaryXlog {
  location: number;
}

/** `xlog` of a replica: LSNs in bytes, last replayed transaction time (text, null when none). */
export interface ReplicaXlog {
  received_location: number;
  replayed_location: number;
  replayed_timestamp: string | null;
  paused: boolean;
}

/** The status document. Optional fields are absent (not null) when they do not apply. */
export interface StatusDocument {
  state: DatabaseState;
  postmaster_start_time?: string;
  role: Role;
  server_version?: number;
  timeline?: number;
  xlog?: PrimaryXlog | ReplicaXlog;
  replication_state?: 'streaming' | 'in archive recovery';
  sync_standby?: true;
  quorum_standby?: true;
  replication?: ReplicationEntry[];
  cluster_unlocked?: true;
  failsafe_mode_is_active?: true;
  pause?: true;
  /** Epoch seconds of the last successful DCS contact; 0 if never. */
  dcs_last_seen: number;
  tags?: Tags;
  database_system_identifier?: string;
  pending_restart?: true;
  /** `watchdog.mode: required` and the fence could not be armed (patroni.md §1.3; such a member is no switchover candidate). */
  watchdog_failed?: true;
  pending_restart_reason?: Record<string, { old_value: string; new_value: string }>;
  scheduled_restart?: Omit<ScheduledRestartData, 'postmaster_start_time'>;
  /** Ours: why the local WAL diverged from the leader's timeline (docs/ha.md "Divergence"). */
  diverged?: string;
  /** Ours: ISO 8601 time since when this running replica has not streamed. */
  not_streaming_since?: string;
  /** Ours: the member the leader key names while it has no member key (docs/ha.md "A leader key naming an unknown member"). */
  ghost_leader?: string;
  /** Ours: synchronous mode on, this primary not acknowledging through a synchronous standby, and why (docs/ha.md "Synchronous replication"). */
  synchronous_degraded?: string;
  /**
   * Ours: this member kept receipts of transactions a rewind or re-clone discarded (docs/ha.md
   * "Receipts"): how many, the transactions and commits they list, the last one's time, where
   * they are kept (GET /discarded and `hactl discarded` print them).
   */
  discarded?: { receipts: number; transactions: number; committed: number; last_at?: string; location: string };
  /**
   * Ours: the long operation under way (docs/backups.md "Progress"): a clone (`basebackup` or a
   * replica creation method), a rewind; bytes and percent when the tool reports them (or the data
   * directory's size, sampled), `started_at` ISO 8601, `text` one line for people.
   */
  progress?: {
    operation: string;
    method: string;
    phase: string;
    bytes_done?: number;
    bytes_total?: number;
    percent?: number;
    started_at: string;
    text: string;
  };
  /**
   * Ours: the keys of the dynamic configuration in the DCS this agent does not read (unknown, or
   * the reference's and not implemented), dot path -> why; kept in the DCS, not obeyed. Absent
   * when every stored key is read.
   */
  config_ignored?: Record<string, string>;
  /**
   * Ours: PostgreSQL not running (stopped, crashed, starting, start failed) and the data not
   * diverged: where its data directory's WAL ended when the agent last read it with PostgreSQL
   * stopped (bytes, as `xlog`'s locations) and on which timeline. A member racing for the leader
   * lock counts it under maximum_lag_on_failover as it counts a running member's position: a
   * former leader restarting after a crash may hold WAL past its last published optime (finding
   * 28, docs/simulation.md).
   */
  local_wal_end?: { location: number; timeline: number };
  ha: { version: string; scope: string; name: string };
  /**
   * Ours, present with the probe's fields (`timeline`, `xlog`, `replication`): ms from the start of
   * the probe that read them to this answer. A member racing for the leader lock in synchronous
   * `quorum` mode counts a peer's vote only when the peer's WAL position was read after the
   * former primary can have sent its last WAL (request sent − this age; src/domain/sync-standby.ts
   * syncRaceRefusal, finding 30 in docs/simulation.md). Always the last field: the HTTP API renders
   * the rest once per snapshot and appends it to each answer.
   */
  probe_age_ms?: number;
}

/** {@link ignoredConfigKeys} of the stored documents already seen (a view keeps its document until the key changes). */
const ignoredCache = new WeakMap<object, Record<string, string> | undefined>();

/** The keys of the stored dynamic configuration `stored` the agent does not read, dot path -> why; undefined when none. */
export function ignoredConfigKeys(stored: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (!stored) return undefined;
  if (ignoredCache.has(stored)) return ignoredCache.get(stored);
  const unread = unreadKeys(stored);
  const out = unread.length ? Object.fromEntries(unread.map((u) => [u.path.join('.'), u.why])) : undefined;
  ignoredCache.set(stored, out);
  return out;
}

/** The probe's fields of the status document (start time, version, timeline, WAL positions), in the reference's order. */
function setPostgresFields(doc: StatusDocument, pg: NonNullable<NodeSnapshot['pg']>, f: NodeFacts): void {
  doc.postmaster_start_time = pg.postmasterStartTime;
  doc.server_version = pg.serverVersion;
  doc.timeline = pg.timeline;
  if (pg.inRecovery) {
    const replayed = pg.replayLsn ?? 0n;
    const received = pg.receiveLsn ?? replayed;
    doc.xlog = {
      received_location: lsnToNumber(received),
      replayed_location: lsnToNumber(replayed),
      replayed_timestamp: pg.replayTimestamp ?? null,
      paused: pg.replayPaused === true,
    };
    if (f.replicationState) doc.replication_state = f.replicationState;
  } else {
    doc.xlog = { location: lsnToNumber(pg.flushLsn ?? 0n) };
  }
}

/**
 * Builds the status document of `s` as seen at `nowMs` (epoch ms; used for the leader lease and
 * the DCS view validity). Pure; never throws.
 */
export function buildStatusDocument(s: NodeSnapshot, nowMs: number): StatusDocument {
  const f = nodeFacts(s, nowMs);
  // Keys are inserted in the reference's order; `dcs_last_seen` and `ha` are set below.
  const doc = { state: s.state, role: s.role } as StatusDocument;
  const pg = s.pg;
  if (pg) setPostgresFields(doc, pg, f);
  if (f.syncStandby && s.role === 'replica') doc.sync_standby = true;
  if (f.quorumStandby && s.role === 'replica') doc.quorum_standby = true;
  if (pg && pg.replication.length > 0) {
    doc.replication = pg.replication.map((r) => ({
      usename: r.usename,
      application_name: r.application_name,
      client_addr: r.client_addr,
      state: r.state,
      sync_state: r.sync_state,
      sync_priority: r.sync_priority,
    }));
  }
  if (f.clusterUnlocked) doc.cluster_unlocked = true;
  if (s.failsafeActive === true) doc.failsafe_mode_is_active = true;
  if (f.paused) doc.pause = true;
  doc.dcs_last_seen = Math.floor(s.dcsLastSeenMs / 1000);
  if (Object.keys(s.tags).length > 0) doc.tags = s.tags;
  if (s.sysid !== undefined && s.sysid !== '') doc.database_system_identifier = s.sysid;
  if (pg && Object.keys(pg.pendingRestart).length > 0) {
    doc.pending_restart = true;
    doc.pending_restart_reason = pg.pendingRestart;
  }
  if (s.scheduledRestart) {
    const { postmaster_start_time: _omit, ...shown } = s.scheduledRestart;
    doc.scheduled_restart = shown;
  }
  if (s.watchdog?.failed === true) doc.watchdog_failed = true;
  if (s.diverged !== undefined) doc.diverged = s.diverged;
  if (s.notStreamingSinceMs !== undefined && s.state === 'running') doc.not_streaming_since = new Date(s.notStreamingSinceMs).toISOString();
  if (s.ghostLeader !== undefined) doc.ghost_leader = s.ghostLeader;
  if (s.syncDegraded !== undefined && f.isLeader) doc.synchronous_degraded = s.syncDegraded;
  if (s.discarded) {
    const d = s.discarded;
    doc.discarded = {
      receipts: d.receipts,
      transactions: d.transactions,
      committed: d.committed,
      ...(d.lastAt ? { last_at: d.lastAt } : {}),
      location: d.location,
    };
  }
  if (s.progress) {
    const p = s.progress;
    doc.progress = {
      operation: p.operation,
      method: p.method,
      phase: p.phase,
      ...(p.bytesDone !== undefined ? { bytes_done: p.bytesDone } : {}),
      ...(p.bytesTotal !== undefined ? { bytes_total: p.bytesTotal } : {}),
      ...(p.percent !== undefined ? { percent: Math.floor(p.percent) } : {}),
      started_at: new Date(p.startedAtMs).toISOString(),
      text: progressText(p),
    };
  }
  const ignored = ignoredConfigKeys(s.cluster.config?.value);
  if (ignored) doc.config_ignored = ignored;
  if (s.stoppedWal && !pg && s.diverged === undefined)
    doc.local_wal_end = { location: lsnToNumber(s.stoppedWal.walBytes), timeline: s.stoppedWal.timeline };
  doc.ha = { version: s.version, scope: s.scope, name: s.name };
  const age = probeAgeMs(s, nowMs);
  if (age !== undefined) doc.probe_age_ms = age;
  return doc;
}

/**
 * The `probe_age_ms` a status document received from a peer carries (ms), or undefined when it has
 * none or it is not a finite non-negative number (the reference's agent sends none).
 */
export function documentProbeAgeMs(doc: Record<string, unknown>): number | undefined {
  const age = doc['probe_age_ms'];
  return typeof age === 'number' && Number.isFinite(age) && age >= 0 ? age : undefined;
}

/** `probe_age_ms` of the status document of `s` at `nowMs` (epoch ms): whole ms, never negative; undefined without the probe's fields. */
export function probeAgeMs(s: NodeSnapshot, nowMs: number): number | undefined {
  if (!s.pg || s.pgProbedAtMs === undefined) return undefined;
  return Math.max(0, Math.ceil(nowMs - s.pgProbedAtMs));
}
