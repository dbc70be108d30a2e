/**
 * The commands the HTTP API sends to the node agent (write operations only). The node implements
 * this interface; handlers never talk to the DCS or PostgreSQL directly. Every read a handler
 * needs comes from the NodeSnapshot, except the linearizable `readCluster()` used before a
 * compare-and-set write (PATCH /config, switchover checks, DELETE /switchover).
 *
 * Expected outcomes are return values (`false` on a lost compare-and-set, `{ ok: false, reason }`
 * for a refused restart); real failures (DCS unreachable) are thrown and mapped to 503 by the
 * handler.
 */
import type { ClusterView, FailoverRequest } from '../domain/cluster.ts';
import type { Receipt } from '../domain/discarded.ts';
import type { ScheduledRestartData } from '../domain/member.ts';

/** Outcome of a long-running command: done, or refused/failed with a message for the 503 body. */
export type CommandOutcome = { ok: true } | { ok: false; reason: string };

/** Outcome of POST /backup: done after `ms` milliseconds, or the reason it was not. */
export type BackupOutcome = { ok: true; ms: number } | { ok: false; reason: string };

/** Options of POST /reinitialize (body keys `force`, `from-leader`/`from_leader`). */
export interface ReinitializeOptions {
  /** Cancel a running recovery task first (the reference's `force: true`). */
  force: boolean;
  /** Take the base backup directly from the leader. */
  fromLeader: boolean;
}

export interface NodeCommands {
  /**
   * Linearizable fresh read of the whole cluster prefix (not the cache). Used before
   * compare-and-set writes. Throws (DcsError 'dcs_unavailable') when the DCS is unreachable
   * within retry_timeout.
   */
  readCluster(): Promise<ClusterView>;
  /**
   * Writes the `config` key. With `expectedRevision`: compare-and-set on the key's mod_revision
   * (`'0'` = create only when absent); without it: unconditional (PUT /config).
   * Returns false when the compare-and-set lost; throws when the DCS is unreachable.
   */
  writeConfig(value: Record<string, unknown>, expectedRevision?: string): Promise<boolean>;
  /**
   * Writes the `failover` key (`{}` clears a request), compare-and-set like `writeConfig`.
   * Returns false when the compare-and-set lost; throws when the DCS is unreachable.
   */
  writeFailover(value: FailoverRequest, expectedRevision?: string): Promise<boolean>;
  /**
   * GET `<apiUrl>` (a member's `/ha` URL) with a 2 s timeout. Resolves to the parsed status
   * document, or undefined when the member is unreachable, slow, or answers something that is
   * not a JSON object. Never throws.
   */
  fetchMemberStatus(apiUrl: string): Promise<Record<string, unknown> | undefined>;
  /** Wakes the HA loop now instead of waiting for loop_wait (after a config or failover write). */
  wake(): void;
  /**
   * Restarts the local database now. The handler has already checked the request's conditions.
   * `timeoutMs`: how long to wait for the database to accept connections (default: the node's
   * primary_start_timeout). Resolves when the database runs again (`{ok: true}`), or with the
   * reason it did not (`restart already in progress`, `restart failed`, …).
   */
  restart(timeoutMs?: number): Promise<CommandOutcome>;
  /**
   * Schedules a restart of the local database (persisted by the node in its member key as
   * `scheduled_restart`). `plan.schedule` is ISO 8601 with offset. Resolves false when a restart
   * is already scheduled.
   */
  scheduleRestart(plan: ScheduledRestartData): Promise<boolean>;
  /** Cancels the scheduled restart; resolves false when none is scheduled. */
  cancelRestart(): Promise<boolean>;
  /**
   * Re-reads the configuration file and applies reloadable parameters (as SIGHUP). Rejects with
   * a readable message when the file cannot be read or is invalid (nothing is applied then).
   */
  reload(): Promise<void>;
  /**
   * Wipes the data directory and re-creates the replica (replica only; the handler has checked
   * that this node is not the leader and that a leader exists). Resolves once the task started
   * (`{ok: true}`) or with the reason it did not (`reinitialize already in progress`, …).
   */
  reinitialize(opts: ReinitializeOptions): Promise<CommandOutcome>;
  /**
   * Runs this member's backup commands (ha.yml `backup`; docs/backups.md "Backups"): `create`
   * first when `opts.create`, then `command`; awaited. Resolves `{ok: true}` when both exit 0,
   * else with the reason (no section, one already running, the command's failure). Optional: a
   * node without it answers POST /backup with 404.
   */
  backup?(opts: { create: boolean }): Promise<BackupOutcome>;
  /**
   * POST /failsafe from the leader (patroni.md §3.7): accept it as leader for ttl, or refuse
   * (`500 Running as a leader`, `502` with failsafe mode off, `400` for a bad body). Synchronous.
   * Absent: the node does not implement failsafe mode (502).
   */
  acceptFailsafe?(body: Record<string, unknown>): { status: number; text: string; lsn?: string };
  /**
   * The receipts of discarded transactions this member kept (docs/ha.md "Receipts"), oldest
   * first: GET /discarded. Absent: the node keeps none (an empty list is answered).
   */
  discarded?(): Promise<Receipt[]>;
}
