/**
 * What one status probe of the local PostgreSQL returns (plain data; produced by src/postgres,
 * read by the HA decision, the snapshot, the HTTP handlers and the metrics).
 */

/** One row of pg_stat_replication (seed 000, status document `replication`). */
export interface ReplicationRow {
  usename: string;
  application_name: string;
  client_addr: string | null;
  state: string;
  sync_state: string;
  sync_priority: number;
  /** Bytes; undefined when null. */
  flush_lsn?: bigint;
  replay_lsn?: bigint;
}

/** Result of one status probe over the unix socket. LSNs in bytes. */
export interface PgStatus {
  /** Epoch ms when the probe finished. */
  atMs: number;
  inRecovery: boolean;
  /** server_version_num, e.g. 150018. */
  serverVersion: number;
  /** pg_postmaster_start_time() as text with offset, e.g. `2026-11-21 13:02:31.123+00`. */
  postmasterStartTime: string;
  timeline: number;
  /** Primary: pg_current_wal_flush_lsn(). */
  flushLsn?: bigint;
  /**
   * Primary: `synchronous_standby_names` as this probe's backend sees it (after the last reload
   * it processed). The synchronous-replication manager compares it with what it wrote.
   */
  synchronousStandbyNames?: string;
  /** Replica: pg_last_wal_receive_lsn(). */
  receiveLsn?: bigint;
  /** Replica: pg_last_wal_replay_lsn(). */
  replayLsn?: bigint;
  /** Replica: pg_last_xact_replay_timestamp() as text, null when none. */
  replayTimestamp?: string | null;
  /** Replica: pg_is_wal_replay_paused(). */
  replayPaused?: boolean;
  /** Replica: the WAL receiver is streaming. */
  streaming: boolean;
  /** Replica: restore_command is set (so not streaming means archive recovery). */
  archiveRecovery?: boolean;
  /** Replica: pg_stat_wal_receiver.latest_end_lsn. */
  latestEndLsn?: bigint;
  /** Replica: application_name/host of the upstream (from pg_stat_wal_receiver.conninfo). */
  upstreamHost?: string;
  replication: ReplicationRow[];
  /** Parameters waiting for a restart: name -> {old_value (current), new_value (from the files)}. */
  pendingRestart: Record<string, { old_value: string; new_value: string }>;
  /** Physical replication slots present: name -> restart_lsn bytes (0 when null). */
  slots: Record<string, bigint>;
}
