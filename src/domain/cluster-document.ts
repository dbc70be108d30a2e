/**
 * The cluster document (seed 000 "Cluster document"; patroni.md §1.6 `/cluster` NEW): the members
 * of the cached DCS view, sorted by name, with roles, states, LSNs as `X/Y` text and lags in
 * bytes. Built from the snapshot alone (also reused by hactl).
 */
import type { ClusterView } from './cluster.ts';
import { formatLsn } from './lsn.ts';
import { memberHostPort, type Member, type ScheduledRestartData, type Tags } from './member.ts';
import type { NodeSnapshot } from './snapshot.ts';
import { syncMode, syncStandbyNames } from './node-facts.ts';

/** Role of a member in the cluster document. */
export type ClusterMemberRole = 'leader' | 'standby_leader' | 'sync_standby' | 'quorum_standby' | 'replica';

/** A lag in bytes, or `"unknown"` when the member or the leader published no position. */
export type LagValue = number | 'unknown';

/** One member of the cluster document. Optional fields are absent when the member key lacks them. */
export interface ClusterMemberDocument {
  name: string;
  role: ClusterMemberRole;
  /** Non-leaders: the member's replication_state when present, else its database state. */
  state: string;
  api_url: string;
  host?: string;
  port?: number;
  timeline?: number;
  tags?: Tags;
  pending_restart?: boolean;
  pending_restart_reason?: Record<string, { old_value: string; new_value: string }>;
  scheduled_restart?: ScheduledRestartData;
  /** Ours: ISO 8601 time since when this running replica has not streamed. */
  not_streaming_since?: string;
  /** Ours: why this member's WAL diverged from the leader's timeline (it does not run as a replica). */
  diverged?: string;
  /** Ours: the last failed database action and why (`<action> failed: <reason>`). */
  failure?: string;
  /** Ours: the long operation under way, as one line (the member key's `progress`). */
  progress?: string;
  /** Non-leaders only: `X/Y` text or "unknown"; lags in bytes = status.optime − LSN, floored at 0. */
  receive_lag?: LagValue;
  receive_lsn?: string;
  replay_lag?: LagValue;
  replay_lsn?: string;
  lag?: LagValue;
  lsn?: string;
}

/** The cluster document. */
export interface ClusterDocument {
  members: ClusterMemberDocument[];
  scope: string;
  pause?: true;
  scheduled_switchover?: { at: string; from?: string; to?: string };
}

/** Builds the cluster document from `s.cluster` (members sorted by name). Pure; never throws. */
export function buildClusterDocument(s: NodeSnapshot): ClusterDocument {
  const view = s.cluster;
  const members = [...view.members].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const doc: ClusterDocument = {
    members: members.map((m) => memberDocument(m, view, syncMode(s.config))),
    scope: s.scope,
  };
  if (s.config.pause === true) doc.pause = true;
  const failover = view.failover?.value;
  if (failover?.scheduled_at !== undefined) {
    const plan: { at: string; from?: string; to?: string } = { at: failover.scheduled_at };
    if (failover.leader !== undefined) plan.from = failover.leader;
    if (failover.member !== undefined) plan.to = failover.member;
    doc.scheduled_switchover = plan;
  }
  return doc;
}

function memberDocument(m: Member, view: ClusterView, mode: 'off' | 'on' | 'quorum'): ClusterMemberDocument {
  const d = m.data;
  const role = memberRole(m, view, mode);
  const out: ClusterMemberDocument = {
    name: m.name,
    role,
    state: role !== 'leader' && d.replication_state !== undefined ? d.replication_state : d.state,
    api_url: d.api_url,
  };
  const hp = memberHostPort(d.conn_url);
  if (hp) {
    out.host = hp.host;
    out.port = hp.port;
  }
  if (d.timeline !== undefined) out.timeline = d.timeline;
  if (d.tags !== undefined) out.tags = d.tags;
  if (d.pending_restart !== undefined) out.pending_restart = d.pending_restart;
  if (d.pending_restart_reason !== undefined) out.pending_restart_reason = d.pending_restart_reason;
  if (d.scheduled_restart !== undefined) out.scheduled_restart = d.scheduled_restart;
  if (d.not_streaming_since !== undefined) out.not_streaming_since = d.not_streaming_since;
  if (d.diverged !== undefined) out.diverged = d.diverged;
  if (d.failure !== undefined) out.failure = d.failure;
  if (d.progress !== undefined) out.progress = d.progress;
  if (role !== 'leader' && role !== 'standby_leader') {
    const optime = view.status?.optime;
    const [receiveLag, receiveLsn] = lagAndLsn(optime, d.receive_lsn);
    const [replayLag, replayLsn] = lagAndLsn(optime, d.replay_lsn);
    const [lag, lsn] = lagAndLsn(optime, d.xlog_location);
    Object.assign(out, {
      receive_lag: receiveLag,
      receive_lsn: receiveLsn,
      replay_lag: replayLag,
      replay_lsn: replayLsn,
      lag,
      lsn,
    });
  }
  return out;
}

/**
 * Role shown for a member: the lock holder is `leader` (`standby_leader` when its member key says
 * so); members listed in `/sync` are `sync_standby` / `quorum_standby` while the mode is on;
 * everyone else `replica`.
 */
function memberRole(m: Member, view: ClusterView, mode: 'off' | 'on' | 'quorum'): ClusterMemberRole {
  if (view.leader?.name === m.name) return m.data.role === 'standby_leader' ? 'standby_leader' : 'leader';
  if (mode !== 'off' && syncStandbyNames(view).includes(m.name)) return mode === 'quorum' ? 'quorum_standby' : 'sync_standby';
  return 'replica';
}

/** [lag bytes floored at 0 | "unknown", `X/Y` | "unknown"] for a member LSN against the leader optime. */
function lagAndLsn(optime: number | undefined, lsn: number | undefined): [LagValue, string] {
  if (lsn === undefined || !Number.isFinite(lsn) || lsn < 0) return ['unknown', 'unknown'];
  const text = formatLsn(BigInt(Math.trunc(lsn)));
  if (optime === undefined || !Number.isFinite(optime)) return ['unknown', text];
  return [Math.max(0, optime - lsn), text];
}
