/**
 * Conditions of a restart request (POST /restart body, patroni.md §1.9): parsing at the edge and
 * the check made when the restart is about to run.
 *
 * The reference's key `postgres_version` is `database_version` here, and "PostgreSQL" in messages
 * is "database" (seed 000: the database product name is replaced by `database`).
 * Pure: the caller passes `nowMs` and the node's facts.
 */
import { restartConditionsData, type RestartRequest, type RestartRole } from '@ha/machines/domain';
import { parseScheduledAt } from './schedule.ts';
import type { Role } from './states.ts';

// The request's shape and its `scheduled_restart` form belong to the machines library (the
// scheduled restart machine keeps them): packages/machines/src/domain/restart-request.ts.
export { restartConditionsData, type RestartRequest, type RestartRole };

/** Outcome of `parseRestartRequest`: the request, or the HTTP status and exact message. */
export type ParsedRestartRequest = { ok: true; value: RestartRequest } | { ok: false; status: 400 | 422; message: string };

/** Facts about the local node that `restartConditionsHold` compares against. */
export interface RestartNodeFacts {
  role: Role;
  /** server_version_num of the running database, e.g. 150018; 0 when unknown. */
  serverVersion: number;
  /** True when a parameter change waits for a restart. */
  pendingRestart: boolean;
}

/** The reason a restart is refused when its conditions do not hold (patroni.md §1.9, 503 body). */
export const RESTART_CONDITIONS_NOT_SATISFIED = 'restart conditions are not satisfied';

const ROLES: readonly string[] = ['primary', 'standby_leader', 'replica'];

/** Seconds per unit of a `timeout` string (PostgreSQL time units, as the reference's `parse_int`). */
const SECONDS_PER_UNIT: Readonly<Record<string, number>> = { ms: 0.001, s: 1, min: 60, h: 3600, d: 86_400 };

/** The restart's timeout in ms (the request carries the reference's `timeout`, seconds); undefined: the caller's default. */
export function restartTimeoutMs(req: Pick<RestartRequest, 'timeoutSeconds'>): number | undefined {
  return req.timeoutSeconds !== undefined ? req.timeoutSeconds * 1000 : undefined;
}

/**
 * Validate a POST /restart body (patroni.md §1.9). Keys are checked in the body's order and the
 * first failure wins, as in the reference:
 * - `schedule`: parseScheduledAt(…, 'restart') → 400/422 with the `restart` wording;
 * - `role` not `primary`/`standby_leader`/`replica` → 400
 *   `database role should be either primary, standby_leader, or replica`;
 * - `database_version` not `X.Y` (X ≥ 10) or `X.Y.Z` → 400
 *   `Invalid database version format: X.Y or X.Y.Z is accepted: <value>`;
 * - `timeout` not a positive number of seconds (number, or string with unit `ms`, `s`, `min`,
 *   `h`, `d`) → 400 `Timeout should be a positive number of seconds`;
 * - `restart_pending` not a boolean → 400 `restart_pending should be true or false` (our
 *   decision; the reference does not validate it);
 * - any other key → 400 `Unknown filter for the scheduled restart: <key>`.
 * An absent or `null` body is an empty request; a body that is not a JSON object → 400
 * `Request body should be a JSON object` (our decision). The paused-state check (500) needs the
 * cluster view and belongs to the HTTP handler.
 *
 * @param body the decoded JSON body (or undefined when there is none)
 * @param nowMs current time, epoch ms (for the "in the past" check of `schedule`)
 * @returns `{ ok: true, value }` or `{ ok: false, status, message }`; never throws
 */
export function parseRestartRequest(body: unknown, nowMs: number): ParsedRestartRequest {
  if (body === undefined || body === null) return { ok: true, value: {} };
  if (typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, status: 400, message: 'Request body should be a JSON object' };
  }
  const value: RestartRequest = {};
  for (const [key, raw] of Object.entries(body)) {
    switch (key) {
      case 'schedule': {
        const parsed = parseScheduledAt(raw, nowMs, 'restart');
        if (!parsed.ok) return parsed;
        value.atMs = parsed.atMs;
        break;
      }
      case 'role':
        if (typeof raw !== 'string' || !ROLES.includes(raw)) {
          return bad('database role should be either primary, standby_leader, or replica');
        }
        value.role = raw as RestartRole;
        break;
      case 'database_version': {
        const num = typeof raw === 'string' ? serverVersionNum(raw) : undefined;
        if (num === undefined) {
          return bad(`Invalid database version format: X.Y or X.Y.Z is accepted: ${String(raw)}`);
        }
        value.databaseVersion = num;
        value.databaseVersionText = raw as string;
        break;
      }
      case 'timeout': {
        const seconds = parseTimeoutSeconds(raw);
        if (seconds === undefined) return bad('Timeout should be a positive number of seconds');
        value.timeoutSeconds = seconds;
        break;
      }
      case 'restart_pending':
        if (typeof raw !== 'boolean') return bad('restart_pending should be true or false');
        value.restartPending = raw;
        break;
      default:
        return bad(`Unknown filter for the scheduled restart: ${key}`);
    }
  }
  return { ok: true, value };
}

/**
 * Whether the node may restart now under `req`'s conditions (patroni.md §1.9, "restart conditions
 * are not satisfied"): `role`, when given, must equal the node's role; `databaseVersion`, when
 * given, must be GREATER than the node's `serverVersion` (restart to pick up a newer binary);
 * `restartPending: true` requires `node.pendingRestart`. Schedule and timeout are not conditions.
 *
 * @returns `{ ok: true }` or `{ ok: false, reason: 'restart conditions are not satisfied' }`
 */
export function restartConditionsHold(req: RestartRequest, node: RestartNodeFacts): { ok: true } | { ok: false; reason: string } {
  const roleOk = req.role === undefined || req.role === node.role;
  const versionOk = req.databaseVersion === undefined || node.serverVersion < req.databaseVersion;
  const pendingOk = req.restartPending !== true || node.pendingRestart;
  return roleOk && versionOk && pendingOk ? { ok: true } : { ok: false, reason: RESTART_CONDITIONS_NOT_SATISFIED };
}

/**
 * `X.Y` (X ≥ 10, new style) → X·10000 + Y; `X.Y.Z` → X·10000 + Y·100 + Z (as the reference's
 * `postgres_version_to_int`); Y and Z below 100. Undefined for anything else (`10`, `9.6`, `a.b`).
 */
export function serverVersionNum(text: string): number | undefined {
  if (!/^\d{1,3}(\.\d{1,2}){1,2}$/.test(text)) return undefined;
  const parts = text.split('.').map(Number);
  const [major = 0, second = 0, third] = parts;
  // 10 and later: X.Y is major.minor; before 10, X.Y is the major version itself (9.6 → 90600).
  if (third === undefined) return major >= 10 ? major * 10_000 + second : major * 10_000 + second * 100;
  return major * 10_000 + second * 100 + third;
}

/** Positive seconds from a number or `<number>[ ]<unit>` string; undefined otherwise. */
function parseTimeoutSeconds(raw: unknown): number | undefined {
  let seconds: number | undefined;
  if (typeof raw === 'number') {
    seconds = raw;
  } else if (typeof raw === 'string') {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h|d)?\s*$/.exec(raw);
    const factor = SECONDS_PER_UNIT[m?.[2] ?? 's'];
    if (m && factor !== undefined) seconds = Number(m[1]) * factor;
  }
  return seconds !== undefined && Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

function bad(message: string): { ok: false; status: 400; message: string } {
  return { ok: false, status: 400, message };
}
