/**
 * Member data: the JSON value of the DCS key `members/<name>` (shared/docs/dcs-layout.md,
 * "Member data").
 */
import type { ScheduledRestartData } from '@ha/machines/domain';
import type { DatabaseState, Role } from './states.ts';

/** Tags of a member (`tags` section of ha.yml): predefined ones plus any custom key. */
export interface Tags {
  nofailover?: boolean;
  noloadbalance?: boolean;
  clonefrom?: boolean;
  nosync?: boolean;
  /** Higher wins at equal WAL position; `<= 0` means never promote. Default 1. */
  failover_priority?: number;
  /** Stream from this member instead of the leader (cascading replication, src/domain/upstream.ts). */
  replicatefrom?: string;
  /** Refused by the configuration (no archive recovery); only `false` is accepted. */
  nostream?: boolean;
  [custom: string]: unknown;
}

/** Conditions of a scheduled restart, as kept in the member key (`scheduled_restart`): the machines library's shape. */
export type { ScheduledRestartData } from '@ha/machines/domain';

/** JSON value of `members/<name>`. LSNs are integers of bytes. */
export interface MemberData {
  /** `postgres://<host>:<port>/postgres` */
  conn_url: string;
  /** `http://<restapi.connect_address>/ha` */
  api_url: string;
  state: DatabaseState;
  role: Role;
  /** The agent's semantic version. */
  version: string;
  /** Primary: current flush LSN; replica: max(received, replayed). Bytes. */
  xlog_location?: number;
  receive_lsn?: number;
  replay_lsn?: number;
  replication_state?: 'streaming' | 'in archive recovery';
  timeline?: number;
  tags?: Tags;
  pending_restart?: boolean;
  pending_restart_reason?: Record<string, { old_value: string; new_value: string }>;
  scheduled_restart?: ScheduledRestartData;
  pause?: boolean;
  /** Ours: ISO 8601 time since when this running replica has not streamed (docs/ha.md "Divergence"). */
  not_streaming_since?: string;
  /** Ours: why this member's WAL diverged from the leader's timeline; it does not run as a replica. */
  diverged?: string;
  /** Ours: the last failed database action and why (`initdb failed: …`), until an attempt starts again or the database runs. */
  failure?: string;
  /**
   * Ours: the long operation under way (a clone, a restore, a rewind, a bootstrap's recovery) as
   * one line (src/domain/progress.ts progressText), e.g. `clone basebackup: copying from node1
   * 1.2 GB / 5.0 GB (24%)`; refreshed at each cycle (docs/backups.md "Progress").
   */
  progress?: string;
  /**
   * Ours: the last switchover or failover this leader refused and why (`at`: ISO 8601, the
   * leader's clock), so the API that took the request answers with the reason.
   */
  switchover_refused?: { at: string; reason: string };
}

/** A member as seen in the cluster view: its name plus its data. */
export interface Member {
  name: string;
  data: MemberData;
}

/** Host and port of a member's `conn_url`; undefined when it does not parse. */
export function memberHostPort(conn_url: string): { host: string; port: number } | undefined {
  try {
    const u = new URL(conn_url);
    return { host: u.hostname, port: u.port ? Number(u.port) : 5432 };
  } catch {
    return undefined;
  }
}

/** Failover priority of a member: 0 when `nofailover`, else the tag (default 1). */
export function failoverPriority(tags: Tags | undefined): number {
  if (tags?.nofailover === true) return 0;
  const p = tags?.failover_priority;
  return typeof p === 'number' ? p : 1;
}

/** True when a member may be promoted: not `nofailover` and priority above 0. */
export function mayPromote(tags: Tags | undefined): boolean {
  return failoverPriority(tags) > 0;
}
