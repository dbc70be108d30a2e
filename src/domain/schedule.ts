/**
 * Scheduled actions (switchover, restart): when to run them and how to read their timestamp.
 *
 * - `decideScheduled` (whether a plan waits, runs now or is stale, patroni.md §3.5) and
 *   `formatScheduledAt` (the API's rendering of an instant) are the machines library's
 *   (packages/machines/src/domain/schedule.ts, entry `@ha/machines/domain`), re-exported here;
 * - `parseScheduledAt` turns the request's ISO 8601 text (`scheduled_at` / `schedule`) into epoch
 *   ms, or into the exact status and message of patroni.md §1.8 / §1.9.
 * No I/O, no clock: the caller passes `nowMs`.
 */
export { decideScheduled, formatScheduledAt, type ScheduledDecision } from '@ha/machines/domain';

/** The action named in the schedule error messages. */
export type ScheduledAction = 'switchover' | 'restart';

/** Outcome of `parseScheduledAt`: epoch ms, or the HTTP status and exact message to answer. */
export type ParsedSchedule = { ok: true; atMs: number } | { ok: false; status: 400 | 422; message: string };

/** The message for a timestamp that does not parse (patroni.md §1.8, same for both actions). */
export const UNPARSEABLE_SCHEDULE_MESSAGE = 'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601';

/**
 * `YYYY-MM-DD[(T| )hh:mm[:ss[.fraction]]][offset]`, offset `Z`, `±hh:mm` or `±hhmm`.
 * Groups: 1 year, 2 month, 3 day, 4 hour, 5 minute, 6 second, 7 fraction, 8 offset.
 */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?([Zz]|[+-]\d{2}:?\d{2})?$/;

/**
 * Parse the timestamp of a scheduled switchover (`scheduled_at`) or restart (`schedule`).
 *
 * Accepts ISO 8601 date-times with an offset: `2026-05-01T10:00:00Z`, `2026-05-01T12:00+02:00`,
 * `2026-05-01 10:00:00.250-0130`. Fractions below a millisecond are truncated.
 * Checks in the reference's order (patroni.md §1.8, §1.9; `action` is the word in the message):
 * - not a string, not ISO 8601, or an impossible date/time → 422
 *   `Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601`;
 * - no offset (including a bare date) → 400 `Timezone information is mandatory for the scheduled <action>`;
 * - strictly before `nowMs` → 422 `Cannot schedule <action> in the past` (`nowMs` itself is accepted).
 *
 * @param text the request value (usually a string; anything else is unparseable)
 * @param nowMs the current time, epoch ms
 * @param action `switchover` (default) or `restart`
 * @returns `{ ok: true, atMs }` (epoch ms) or `{ ok: false, status, message }`; never throws
 */
export function parseScheduledAt(text: unknown, nowMs: number, action: ScheduledAction = 'switchover'): ParsedSchedule {
  const unparseable = { ok: false, status: 422, message: UNPARSEABLE_SCHEDULE_MESSAGE } as const;
  if (typeof text !== 'string') return unparseable;
  const m = ISO_8601.exec(text.trim());
  if (!m) return unparseable;
  const [, y, mo, d, h, mi, s, frac, offset] = m;
  if (offset !== undefined && h === undefined) return unparseable;
  const localMs = utcFromParts(
    Number(y),
    Number(mo),
    Number(d),
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(s ?? 0),
    Number((frac ?? '').padEnd(3, '0').slice(0, 3)),
  );
  if (localMs === undefined) return unparseable;
  if (offset === undefined) {
    return { ok: false, status: 400, message: `Timezone information is mandatory for the scheduled ${action}` };
  }
  const offsetMs = offsetMillis(offset);
  if (offsetMs === undefined) return unparseable;
  const atMs = localMs - offsetMs;
  if (atMs < nowMs) return { ok: false, status: 422, message: `Cannot schedule ${action} in the past` };
  return { ok: true, atMs };
}

/** Epoch ms of the given UTC fields, or undefined when a field is out of range (e.g. Feb 30). */
function utcFromParts(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  ms: number,
): number | undefined {
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  // Date rolls Feb 30 over into March: reject anything that did not stay on the given day.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    return undefined;
  }
  return date.getTime();
}

/** Milliseconds east of UTC for `Z`, `±hh:mm` or `±hhmm`; undefined when out of range. */
function offsetMillis(offset: string): number | undefined {
  if (offset === 'Z' || offset === 'z') return 0;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2, 4));
  if (hours > 23 || minutes > 59) return undefined;
  return sign * (hours * 60 + minutes) * 60_000;
}
