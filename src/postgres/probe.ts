/**
 * The status probe: ONE SELECT (subqueries for the lists) over the agent's socket connection,
 * mapped to PgStatus (src/domain/pg-status.ts). Every LSN arrives as pg_lsn text and becomes a
 * bigint here (postgres.js returns pg_lsn as a string; JSON numbers would lose precision).
 */
import { parseLsn } from '../domain/lsn.ts';
import type { PgStatus, ReplicationRow } from '../domain/pg-status.ts';
import { bounded, type Sql } from './connection.ts';

/**
 * The probe query. Functions that fail in the other role (pg_current_wal_*, pg_walfile_name on a
 * replica; pg_is_wal_replay_paused on a primary) sit behind CASE on pg_is_in_recovery(); they are
 * volatile, so CASE evaluates them lazily. Lists come back as json text. A primary's pending
 * restart leaves out the `recovery_target*` parameters: a promoted replica's configuration drops
 * `recovery_target_timeline`, which PostgreSQL then marks pending although it means nothing on a
 * primary (the reference skips recovery parameters there too; issue 30).
 */
export const PROBE_SQL = `
SELECT
  pg_is_in_recovery() AS in_recovery,
  current_setting('server_version_num')::int AS server_version,
  pg_postmaster_start_time()::text AS postmaster_start_time,
  CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_flush_lsn()::text END AS flush_lsn,
  CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_walfile_name(pg_current_wal_lsn()) END AS wal_file,
  (SELECT timeline_id FROM pg_control_checkpoint()) AS checkpoint_timeline,
  CASE WHEN pg_is_in_recovery() THEN pg_last_wal_receive_lsn()::text END AS receive_lsn,
  CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()::text END AS replay_lsn,
  CASE WHEN pg_is_in_recovery() THEN pg_last_xact_replay_timestamp()::text END AS replay_timestamp,
  CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() END AS replay_paused,
  current_setting('restore_command') <> '' AS archive_recovery,
  current_setting('synchronous_standby_names') AS synchronous_standby_names,
  w.status AS wal_receiver_status,
  w.received_tli AS received_timeline,
  w.latest_end_lsn::text AS latest_end_lsn,
  w.sender_host AS sender_host,
  (SELECT coalesce(json_agg(json_build_object(
      'usename', r.usename, 'application_name', r.application_name, 'client_addr', host(r.client_addr),
      'state', r.state, 'sync_state', r.sync_state, 'sync_priority', r.sync_priority,
      'flush_lsn', r.flush_lsn::text, 'replay_lsn', r.replay_lsn::text) ORDER BY r.application_name), '[]')
     FROM pg_stat_replication r)::text AS replication,
  (SELECT coalesce(json_object_agg(s.name, json_build_object('old_value', current_setting(s.name), 'new_value', f.setting)), '{}')
     FROM pg_settings s
     LEFT JOIN LATERAL (SELECT fs.setting FROM pg_file_settings fs WHERE lower(fs.name) = s.name ORDER BY fs.seqno DESC LIMIT 1) f ON true
     WHERE s.pending_restart AND NOT (s.name LIKE 'recovery\\_target%' AND NOT pg_is_in_recovery()))::text AS pending_restart,
  (SELECT coalesce(json_object_agg(sl.slot_name, sl.restart_lsn::text), '{}')
     FROM pg_replication_slots sl WHERE sl.slot_type = 'physical')::text AS slots
FROM (SELECT 1) AS one
LEFT JOIN pg_stat_wal_receiver w ON true
`;

/** The raw row of PROBE_SQL as postgres.js returns it. */
export interface ProbeRow {
  in_recovery: boolean;
  server_version: number;
  postmaster_start_time: string;
  flush_lsn: string | null;
  wal_file: string | null;
  checkpoint_timeline: number | null;
  receive_lsn: string | null;
  replay_lsn: string | null;
  replay_timestamp: string | null;
  replay_paused: boolean | null;
  archive_recovery: boolean;
  synchronous_standby_names: string | null;
  wal_receiver_status: string | null;
  received_timeline: number | null;
  latest_end_lsn: string | null;
  sender_host: string | null;
  replication: string;
  pending_restart: string;
  slots: string;
}

const lsnOrUndefined = (t: string | null | undefined): bigint | undefined => (t ? parseLsn(t) : undefined);

/** Timeline from a WAL file name: its first 8 hex digits (e.g. `000000020000000000000003` -> 2). */
export function timelineOfWalFile(walFile: string): number {
  const n = Number.parseInt(walFile.slice(0, 8), 16);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`invalid WAL file name ${JSON.stringify(walFile)}`);
  return n;
}

interface RawReplication {
  usename: string | null;
  application_name: string | null;
  client_addr: string | null;
  state: string | null;
  sync_state: string | null;
  sync_priority: number | null;
  flush_lsn: string | null;
  replay_lsn: string | null;
}

/**
 * Maps a ProbeRow to PgStatus. Timeline: primary from the current WAL file name (the checkpoint
 * timeline lags right after a promotion), replica from pg_stat_wal_receiver.received_tli, else the
 * checkpoint timeline. Primary fields (flushLsn) only on a primary; replica fields only on a replica.
 * @throws Error on malformed LSN text.
 */
export function mapProbeRow(row: ProbeRow, atMs: number): PgStatus {
  const replication: ReplicationRow[] = (JSON.parse(row.replication) as RawReplication[]).map((r) => {
    const out: ReplicationRow = {
      usename: r.usename ?? '',
      application_name: r.application_name ?? '',
      client_addr: r.client_addr,
      state: r.state ?? '',
      sync_state: r.sync_state ?? '',
      sync_priority: r.sync_priority ?? 0,
    };
    const flush = lsnOrUndefined(r.flush_lsn);
    const replay = lsnOrUndefined(r.replay_lsn);
    if (flush !== undefined) out.flush_lsn = flush;
    if (replay !== undefined) out.replay_lsn = replay;
    return out;
  });
  const pendingRestart: PgStatus['pendingRestart'] = {};
  for (const [name, v] of Object.entries(
    JSON.parse(row.pending_restart) as Record<string, { old_value: string | null; new_value: string | null }>,
  )) {
    pendingRestart[name] = { old_value: v.old_value ?? '', new_value: v.new_value ?? '' };
  }
  const slots: Record<string, bigint> = {};
  for (const [name, lsn] of Object.entries(JSON.parse(row.slots) as Record<string, string | null>)) slots[name] = lsn ? parseLsn(lsn) : 0n;

  const checkpointTimeline = row.checkpoint_timeline ?? 0;
  const status: PgStatus = {
    atMs,
    inRecovery: row.in_recovery,
    serverVersion: Number(row.server_version),
    postmasterStartTime: row.postmaster_start_time,
    timeline: 0,
    streaming: row.wal_receiver_status === 'streaming',
    replication,
    pendingRestart,
    slots,
  };
  if (!row.in_recovery) {
    status.timeline = row.wal_file ? timelineOfWalFile(row.wal_file) : checkpointTimeline;
    const flush = lsnOrUndefined(row.flush_lsn);
    if (flush !== undefined) status.flushLsn = flush;
    status.synchronousStandbyNames = row.synchronous_standby_names ?? '';
  } else {
    status.timeline = row.received_timeline ?? checkpointTimeline;
    const receive = lsnOrUndefined(row.receive_lsn);
    const replay = lsnOrUndefined(row.replay_lsn);
    const latestEnd = lsnOrUndefined(row.latest_end_lsn);
    if (receive !== undefined) status.receiveLsn = receive;
    if (replay !== undefined) status.replayLsn = replay;
    if (latestEnd !== undefined) status.latestEndLsn = latestEnd;
    status.replayTimestamp = row.replay_timestamp;
    status.replayPaused = row.replay_paused ?? false;
    status.archiveRecovery = row.archive_recovery;
    if (row.sender_host) status.upstreamHost = row.sender_host;
  }
  return status;
}

/**
 * Runs PROBE_SQL once, bounded by `timeoutMs` (see bounded()).
 * @throws PgUnreachableError (code 'pg_unreachable') when PostgreSQL does not answer;
 *         PgQueryError (code 'pg_query_failed') when it answers with an error.
 */
export async function runProbe(sql: Sql, timeoutMs: number, onTimeout?: () => void): Promise<PgStatus> {
  const rows = await bounded<ProbeRow[]>(sql.unsafe<ProbeRow[]>(PROBE_SQL), timeoutMs, onTimeout);
  const row = rows[0];
  if (!row) throw new Error('status probe returned no row');
  return mapProbeRow(row, Date.now());
}
