/**
 * What this member publishes: the member key (`members/<name>`, dcs-layout.md "Member data")
 * built from the database machine's state and the latest probe.
 */
import type { MemberData, ScheduledRestartData, Tags } from '../../domain/member.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { DatabaseState, Role } from '../../domain/states.ts';

/** WAL position of a probe: primary flush LSN, replica max(received, replayed); 0 when unknown. Bytes. */
export function walOf(p: PgStatus | undefined): bigint {
  if (!p) return 0n;
  if (!p.inRecovery) return p.flushLsn ?? 0n;
  const r = p.receiveLsn ?? 0n;
  const y = p.replayLsn ?? 0n;
  return r > y ? r : y;
}

/** Tags as published: predefined boolean tags set to false are dropped (patroni.md §1.4). */
export function effectiveTags(tags: Tags): Tags {
  const out: Tags = {};
  for (const [k, v] of Object.entries(tags)) {
    if (['nofailover', 'noloadbalance', 'clonefrom', 'nosync', 'nostream'].includes(k) && v === false) continue;
    out[k] = v;
  }
  return out;
}

/** Inputs of the member key. `probe` only while the database runs. */
export interface MemberFacts {
  connUrl: string;
  apiUrl: string;
  version: string;
  state: DatabaseState;
  role: Role;
  probe?: PgStatus;
  tags: Tags;
  scheduledRestart?: ScheduledRestartData;
  paused: boolean;
  /** Epoch ms since when the running replica has not streamed. */
  notStreamingSinceMs?: number;
  /** Why the local WAL diverged from the leader's timeline. */
  diverged?: string;
  /** The last failed database action and why (`<action> failed: <reason>`, src/domain/database-failure.ts). */
  failure?: string;
  /** The last handover this leader refused (HandoverRefusals). */
  switchoverRefused?: { reason: string; atMs: number };
  /** The long operation under way, as one line (progressText). */
  progress?: string;
}

/** The member key's value. LSNs as integer bytes. */
export function buildMemberData(f: MemberFacts): MemberData {
  const p = f.probe;
  const tags = effectiveTags(f.tags);
  return {
    conn_url: f.connUrl,
    api_url: f.apiUrl,
    state: f.state,
    role: f.role,
    version: f.version,
    ...(p ? { xlog_location: Number(walOf(p)), timeline: p.timeline } : {}),
    ...(p?.inRecovery
      ? {
          ...(p.receiveLsn !== undefined ? { receive_lsn: Number(p.receiveLsn) } : {}),
          ...(p.replayLsn !== undefined ? { replay_lsn: Number(p.replayLsn) } : {}),
          ...(p.streaming
            ? { replication_state: 'streaming' as const }
            : p.archiveRecovery
              ? { replication_state: 'in archive recovery' as const }
              : {}),
        }
      : {}),
    ...(Object.keys(tags).length ? { tags } : {}),
    ...(p && Object.keys(p.pendingRestart).length ? { pending_restart: true, pending_restart_reason: p.pendingRestart } : {}),
    ...(f.scheduledRestart ? { scheduled_restart: f.scheduledRestart } : {}),
    ...(f.paused ? { pause: true } : {}),
    ...(p?.inRecovery && f.notStreamingSinceMs !== undefined ? { not_streaming_since: new Date(f.notStreamingSinceMs).toISOString() } : {}),
    ...(f.diverged ? { diverged: f.diverged } : {}),
    ...(f.failure !== undefined ? { failure: f.failure } : {}),
    ...(f.progress !== undefined ? { progress: f.progress } : {}),
    ...(f.switchoverRefused
      ? { switchover_refused: { at: new Date(f.switchoverRefused.atMs).toISOString(), reason: f.switchoverRefused.reason } }
      : {}),
  };
}
