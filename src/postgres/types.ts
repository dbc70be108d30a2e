/**
 * Contract of the local PostgreSQL instance (one per agent). Implemented by `LocalPostgres`
 * (src/postgres/local.ts) on Debian's postgresql-15 binaries; the database lifecycle machine's
 * actors call it, the HA loop reads `probe()` results. Nothing here decides anything.
 *
 * When the agent runs as root every PostgreSQL process (initdb, pg_ctl, postgres,
 * pg_basebackup, pg_controldata…) runs as the `postgres` OS user and the data directory is owned
 * by that user.
 */

import type { PgStatus } from '../domain/pg-status.ts';
export type { ReplicationRow, PgStatus } from '../domain/pg-status.ts';
import type { SlotInfo } from '../domain/slots.ts';
export type { SlotInfo } from '../domain/slots.ts';
import type { WalRecord } from '../domain/discarded.ts';
import type { WalEnd } from './waldump.ts';
export type { WalEnd } from './waldump.ts';

/** A logical slot read from the primary for copying (PgControl.readPrimarySlots). */
export interface CopiedSlot {
  name: string;
  database: string;
  plugin: string;
  restartLsn: bigint;
  confirmedFlush: bigint;
  /** The content of `pg_replslot/<name>/state` on the primary. */
  state: Buffer;
}

/** Fields of pg_controldata the agent uses. */
export interface ControlData {
  systemIdentifier: string;
  /** "Database cluster state", e.g. `in production`, `shut down`, `shut down in recovery`, `in archive recovery`, `in crash recovery`. */
  clusterState: string;
  /** "Latest checkpoint location", bytes. */
  checkpointLsn: bigint;
  /** "Latest checkpoint's TimeLineID". */
  checkpointTimeline: number;
  /** "Minimum recovery ending location", bytes. */
  minRecoveryLsn: bigint;
  /** "Latest checkpoint's REDO location", bytes: where crash recovery starts reading WAL. */
  redoLsn?: bigint;
  /** "Min recovery ending loc's timeline" (0 on a primary). */
  minRecoveryTimeline?: number;
  /** "WAL block size" and "Bytes per WAL segment". */
  walGeometry?: { blockBytes: bigint; segmentBytes: bigint };
  /** "wal_log_hints setting" (`on`): what the server last ran with. Undefined when not reported. */
  walLogHints?: boolean;
  /** "Data page checksum version" (0: no data checksums). Undefined when not reported. */
  dataChecksumVersion?: number;
}

/** Credentials of one role. */
export interface RoleAuth {
  username: string;
  password: string;
}

/** Where to replicate from. */
export interface Upstream {
  host: string;
  port: number;
  /** Member name of the upstream (for logs). */
  name: string;
}

/** What `configure()` writes. */
export interface ConfigureOptions {
  role: 'primary' | 'replica';
  /** Replica: the upstream to stream from (primary_conninfo). Absent: no primary_conninfo. */
  upstream?: Upstream;
  /** Replica: primary_slot_name when use_slots. */
  slotName?: string;
  /** Parameters from the local config and the dynamic config (dynamic wins). */
  parameters: Record<string, string | number>;
  /**
   * Role primary, the first start after a custom bootstrap only: a targeted recovery (a restore
   * to a point in time; patroni.md §3.10; docs/backups.md "Restoring to a point in time").
   * `parameters` (restore_command, the target, recovery_target_action) are written with the
   * others and recovery.signal is created; `keepExisting`: the restore tool's own recovery
   * settings (postgresql.auto.conf's, its recovery.signal) are kept instead of removed.
   */
  targetedRecovery?: TargetedRecovery;
}

/** A custom bootstrap's targeted recovery (ConfigureOptions.targetedRecovery). */
export interface TargetedRecovery {
  /** Recovery parameters written for the first start (empty: only the tool's, kept). */
  parameters: Record<string, string | number>;
  /** Keep the restore tool's recovery settings (`keep_existing_recovery_conf`). */
  keepExisting: boolean;
}

/** Options of an operator's command run as the PostgreSQL OS user (PgControl.runCommand). */
export interface CommandOptions {
  /** Extra environment (e.g. HA_DATADIR for a command line that names it). */
  env?: Record<string, string>;
  /** Give the replication user's password as PGPASSWORD (a method that connects to the source). */
  replicationPassword?: boolean;
  /** Told every chunk of output as it comes (progress). */
  onOutput?: (text: string) => void;
}

/**
 * Who made a timeline: written by the agent into the data directory right after its promotion.
 * Two members promoted from the same parent at the same point make two timelines with the same
 * number and identical history files; the marker tells them apart (docs/ha.md "Divergence").
 */
export interface PromotionMarker {
  timeline: number;
  /** The member whose promotion made `timeline`. */
  member: string;
  /** Epoch ms of the promotion. */
  atMs: number;
}

export interface PgControl {
  /** Absolute data directory. */
  readonly dataDir: string;

  /** True when the data directory holds a cluster (PG_VERSION exists). */
  hasData(): Promise<boolean>;

  /** Parsed pg_controldata; rejects when the directory holds no cluster. */
  controlData(): Promise<ControlData>;

  /** initdb with the superuser and the given options (`--key=value` strings); rejects with the tool's stderr. */
  initdb(options: string[]): Promise<void>;

  /**
   * After the first start of a new cluster: sets the superuser password, creates the replication
   * role (REPLICATION LOGIN) with its password.
   */
  postBootstrap(): Promise<void>;

  /**
   * Runs a custom bootstrap command (`<command> --scope=<scope> --datadir=<dir>`); rejects when it
   * exits non-zero.
   */
  customBootstrap(
    command: string,
    opts?: { noParams?: boolean; args?: Record<string, string | number | boolean>; onOutput?: (text: string) => void },
  ): Promise<void>;

  /**
   * Runs an operator's command line through /bin/sh as the PostgreSQL OS user, in `/` (a replica
   * creation method, a backup). Rejects (PgToolError with the output's tail) on a non-zero exit.
   * Optional: without it only the built-in basebackup makes replicas and no backup runs.
   */
  runCommand?(commandLine: string, opts?: CommandOptions): Promise<void>;

  /**
   * The libpq connection string of `from` as the replication user, without the password
   * (`host=… port=… user=… dbname=postgres`): a replica creation method's `--connstring`.
   */
  sourceConninfo?(from: Upstream): string;

  /**
   * Writes the agent-owned configuration: postgresql.conf (including the original as
   * postgresql.base.conf), pg_hba.conf (replication entries + configured lines), standby.signal
   * with primary_conninfo (application_name = member name), primary_slot_name and
   * recovery_target_timeline = 'latest' for a replica; removes standby.signal for a primary.
   */
  configure(opts: ConfigureOptions): Promise<void>;

  /**
   * pg_ctl start -w; resolves when it accepts connections; rejects after timeoutMs or on failure.
   * `beforeLaunch` runs synchronously right before a postmaster is launched (not when one runs
   * already), after every other step of the start; when it throws, nothing is launched and the
   * start rejects with its error (the agent's last check that it may start a primary: finding 16).
   */
  start(timeoutMs: number, opts?: { beforeLaunch?: () => void }): Promise<void>;

  /**
   * pg_ctl stop -m <mode> -w; resolves when the postmaster is gone (or was not running).
   * LocalPostgres escalates by PID (SIGQUIT, SIGKILL) when pg_ctl fails or the postmaster outlives
   * its window, and stops a remembered postmaster whose postmaster.pid is gone.
   */
  stop(mode: 'fast' | 'immediate', timeoutMs: number): Promise<void>;

  /** Promotes a standby; resolves when it accepts writes. */
  promote(timeoutMs: number): Promise<void>;

  /** pg_ctl reload (SIGHUP). */
  reload(): Promise<void>;

  /**
   * pg_basebackup -X stream from the upstream into the (empty) data directory, as the replication
   * user. `onOutput` is told its `--progress` output as it comes.
   */
  basebackup(from: Upstream, opts?: { onOutput?: (text: string) => void }): Promise<void>;

  /**
   * Rewinds the stopped data directory onto the timeline of `from` (docs/ha.md "Rewind"):
   * `pg_rewind --target-pgdata=<data> --source-server='<conninfo of from, as the superuser>'`.
   * pg_rewind needs a target shut down cleanly: a data directory that crashed (pg_controldata
   * `in production`, `in archive recovery`, …) is first brought to a clean state by crash recovery
   * in single-user mode (`postgres --single … < /dev/null`, with standby.signal/recovery.signal
   * removed and archive_mode=on, archive_command=false so the local WAL pg_rewind reads is kept).
   * The data directory then holds `from`'s files as of the copy (its postgresql.conf, pg_hba.conf
   * and promotion marker included, as after a base backup): `configure()` for a replica, then
   * start. Resolves too when pg_rewind finds nothing to do ("no rewind required").
   * Rejects (the data directory may be left unusable) when a postmaster runs, the source cannot
   * be reached, the data has neither wal_log_hints nor checksums, or pg_rewind fails.
   */
  rewind(from: Upstream, opts?: { onOutput?: (text: string) => void }): Promise<void>;

  /** Removes the data directory's content (reinitialize, diverged timeline). */
  removeData(): Promise<void>;

  /**
   * Where the valid WAL of the stopped data directory ends, read from its own WAL without
   * changing anything (src/postgres/waldump.ts readWalEnd: pg_waldump from the latest
   * checkpoint's REDO location, on the newest timeline pg_wal holds WAL of). Called by the
   * divergence check of a data directory that was not shut down as a primary (docs/ha.md
   * "Divergence"). Rejects when it cannot be read: the caller then counts the data as diverged.
   */
  walEnd(): Promise<WalEnd>;

  /**
   * Calls `onRecord` for every WAL record of `timeline` in [fromLsn, toLsn) of the stopped data
   * directory, in order (pg_waldump): the receipt of WAL a rewind or re-clone discards. Without
   * `toLsn`, to the end of the valid WAL. Rejects when the WAL cannot be read.
   */
  readWalRange(timeline: number, fromLsn: bigint, toLsn: bigint | undefined, onRecord: (r: WalRecord) => void): Promise<void>;

  /**
   * Names of relations (`tablespace/database/relfilenode`, as pg_waldump prints them) on the
   * running server `from`, as `database.schema.relation`, for the ones it still has. Best effort:
   * optional, and it resolves with what it found (possibly nothing) rather than rejecting.
   */
  relationNames?(from: Upstream, paths: string[]): Promise<Record<string, string>>;

  /**
   * PID of a live postmaster of this data directory, or undefined. Cheap (postmaster.pid + kill 0).
   * LocalPostgres also answers with the postmaster it remembers while that process lives, when
   * postmaster.pid was removed under it (data directory wiped).
   */
  postmasterPid(): Promise<number | undefined>;

  /**
   * Why the data directory no longer holds the cluster (the directory, PG_VERSION or
   * global/pg_control missing), or undefined when it does. Synchronous and cheap (a few stat
   * calls) for the crash watcher. Optional: without it the watcher cannot see a wiped directory.
   */
  dataDirProblem?(): string | undefined;

  /**
   * Called before the data directory is written (clone): stops every postmaster of this node it
   * knows of (postmaster.pid, the remembered PID, …) with `immediate`, escalating by PID, and
   * rejects (code `pg_postmaster_running`) when something it does not know still listens on the
   * node's port or socket. Optional: `basebackup()` of LocalPostgres refuses on its own as well.
   */
  ensureNoPostmaster?(timeoutMs: number): Promise<void>;

  /**
   * Opens one idle connection (its own, not the probe's) whose end means the postmaster may be
   * gone: a backend exits as soon as its postmaster dies, so the socket closes within
   * milliseconds. Resolves once the connection answered a query, with a function that closes it
   * (without calling `onClosed`); rejects when it cannot connect. `onClosed` is called at most once,
   * when the connection ends otherwise (postmaster death, crash restart, terminated backend, …).
   * Optional: without it LocalWatch polls the postmaster every 100 ms (the simulator).
   */
  openWatchConnection?(onClosed: () => void, timeoutMs: number): Promise<() => void>;

  /**
   * Watches the data directory's own entries (inotify through fs.watch; not its subdirectories)
   * and calls `onChange` on any change there: a wipe removes PG_VERSION, postmaster.pid and the
   * subdirectories, so the crash watcher checks at once instead of at its next poll. Returns a
   * function that stops watching. `onChange` is also called (once) when the watch itself ends
   * (the directory removed or renamed, an inotify error); the caller then opens it again.
   * Throws when the directory cannot be watched (missing, inotify limits). Optional: without it
   * LocalWatch checks the directory at its poll only.
   */
  watchDataDir?(onChange: (ended: boolean) => void): () => void;

  /** One status probe, every query bounded by timeoutMs. Rejects when PostgreSQL does not answer. */
  probe(timeoutMs: number): Promise<PgStatus>;

  /** Creates missing physical slots and drops physical slots not in `names` (primary only). */
  syncSlots(names: string[]): Promise<void>;

  /**
   * Every replication slot (pg_replication_slots): name, type, database and plugin of logical
   * slots, active, restart_lsn, confirmed_flush_lsn. Optional (the simulator lacks it): without
   * it the agent manages member slots with `syncSlots` only.
   */
  listSlots?(): Promise<SlotInfo[]>;

  /** Creates a physical slot reserving WAL now (works on a standby too). No-op when it exists. */
  createPhysicalSlot?(name: string): Promise<void>;

  /** Creates a logical slot in `database` with `plugin` (primary only in PostgreSQL 15). No-op when it exists. */
  createLogicalSlot?(name: string, database: string, plugin: string): Promise<void>;

  /** Drops an inactive slot (no-op when missing or active). */
  dropSlot?(name: string): Promise<void>;

  /**
   * `pg_replication_slot_advance(name, lsn)`, connected to `database` for a logical slot (works on
   * a PostgreSQL 15 standby, capped by PostgreSQL at the replay position). Resolves to the slot's
   * new position.
   */
  advanceSlot?(name: string, lsn: bigint, database?: string): Promise<bigint | undefined>;

  /**
   * Reads logical slots from the primary `from` (superuser over TCP): definition, positions and
   * the slot's on-disk state file (`pg_read_binary_file('pg_replslot/<name>/state')`), for a
   * replica to copy them (docs/ha.md "Replication slots").
   */
  readPrimarySlots?(from: Upstream, names: string[]): Promise<CopiedSlot[]>;

  /**
   * Writes a copied slot's state file into `pg_replslot/<name>/state` (via a `.tmp` directory,
   * fsynced, owned by the PostgreSQL user). PostgreSQL loads slot files only at startup: the
   * caller restarts the server afterwards.
   */
  writeSlotState?(name: string, state: Buffer): Promise<void>;

  /** The lowest LSN the local pg_wal still holds (start of its oldest segment), undefined when unknown. */
  oldestWalLsn?(): Promise<bigint | undefined>;

  /** Runs one SQL statement as the superuser (tests, checkpoint before switchover). */
  query<T = Record<string, unknown>>(sql: string, timeoutMs?: number): Promise<T[]>;

  /** Closes connections. */
  close(): Promise<void>;

  /**
   * The promotion marker of the data directory (`ha.promotion.json`): which member's promotion made
   * the timeline it records. Copied by a base backup with the rest of the directory. Undefined
   * when absent or unreadable.
   */
  readPromotion(): Promise<PromotionMarker | undefined>;

  /** Writes the promotion marker (after a promotion succeeded). */
  writePromotion(marker: PromotionMarker): Promise<void>;

  /** Removes the promotion marker (a stale one: its promotion never happened). Resolves when absent. */
  removePromotion(): Promise<void>;

  /** The data directory holds `standby.signal` (a postmaster found running is then a replica). */
  hasStandbySignal(): Promise<boolean>;

  /**
   * The text of `pg_wal/<TLI>.history` for `timeline` (PostgreSQL docs "Timelines").
   * Rejects when the file does not exist.
   */
  readTimelineHistory(timeline: number): Promise<string>;
}
