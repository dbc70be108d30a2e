/**
 * The shape of a restart request (POST /restart body, patroni.md §1.9) as the scheduled restart
 * machine keeps it, and the `scheduled_restart` object it is shown as (member key and status
 * document). Parsing a request and checking its conditions are the agent's
 * (src/domain/restart-conditions.ts).
 *
 * The reference's key `postgres_version` is `database_version` here (seed 000: the database
 * product name is replaced by `database`). Pure: no I/O, no clock.
 */

/** Roles a restart may be restricted to. */
export type RestartRole = 'primary' | 'standby_leader' | 'replica';

/** A parsed POST /restart body. Every field is an optional condition or option. */
export interface RestartRequest {
  /** `restart_pending`: when true, restart only if the node has a pending restart. */
  restartPending?: boolean;
  /** `role`: restart only if the node's role equals this. */
  role?: RestartRole;
  /** `database_version` as given (`X.Y` or `X.Y.Z`), kept for display. */
  databaseVersionText?: string;
  /** `database_version` in server_version_num form (`15.18` → 150018): restart only if the current version is lower. */
  databaseVersion?: number;
  /** `timeout` in seconds (may be fractional, e.g. `500ms` → 0.5): wait this long for the database to accept connections. */
  timeoutSeconds?: number;
  /** `schedule` as epoch ms; absent for an immediate restart. */
  atMs?: number;
}

/** Conditions of a scheduled restart, as kept in the member key (`scheduled_restart`). */
export interface ScheduledRestartData {
  /** ISO 8601 with offset. */
  schedule: string;
  /** Restart only if the node has a pending restart. */
  restart_pending?: boolean;
  /** Restart only if the node has this role. */
  role?: string;
  /** Restart only if the node's version is lower, as given (`X.Y` or `X.Y.Z`). */
  database_version?: string;
  /** Seconds. */
  timeout?: number;
  /** ISO 8601; added by the node, never by the machine. */
  postmaster_start_time?: string;
}

/**
 * The request's conditions in the member-key / API shape (`scheduled_restart`, seed 000), with
 * `schedule` rendered by the caller. Absent conditions are left out. Never throws.
 */
export function restartConditionsData(req: RestartRequest): Omit<ScheduledRestartData, 'schedule'> {
  const out: Omit<ScheduledRestartData, 'schedule'> = {};
  if (req.restartPending !== undefined) out.restart_pending = req.restartPending;
  if (req.role !== undefined) out.role = req.role;
  if (req.databaseVersionText !== undefined) out.database_version = req.databaseVersionText;
  if (req.timeoutSeconds !== undefined) out.timeout = req.timeoutSeconds;
  return out;
}
