/**
 * The `--scheduled` value of `switchover` and `restart`: `now` (or nothing) for an immediate
 * action, an ISO 8601 timestamp with offset, or a local date-time without offset (read in the
 * local time zone, as the reference CLI does). Sent to the API as UTC ISO 8601.
 */
import { formatScheduledAt, parseScheduledAt, type ScheduledAction } from '../domain/schedule.ts';
import { CtlError, usageError } from './errors.ts';

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;

/**
 * Parses `text` into the ISO timestamp to send, or undefined for `now`/empty.
 * Throws a usage error (exit 2) for text that is not a timestamp, CtlError (exit 1) for a time in
 * the past (the API would refuse it too).
 */
export function parseWhen(text: string | undefined, nowMs: number, action: ScheduledAction): string | undefined {
  const t = text?.trim() ?? '';
  if (t === '' || t.toLowerCase() === 'now') return undefined;
  let iso = t;
  const m = LOCAL.exec(t);
  if (m) {
    const [, y, mo, d, h, mi, s, ms] = m;
    const local = new Date(
      Number(y),
      Number(mo) - 1,
      Number(d),
      Number(h ?? 0),
      Number(mi ?? 0),
      Number(s ?? 0),
      Number((ms ?? '').padEnd(3, '0')),
    );
    if (Number.isNaN(local.getTime()) || local.getDate() !== Number(d))
      throw usageError(`invalid --scheduled ${JSON.stringify(t)}: not a date`);
    iso = local.toISOString();
  }
  const r = parseScheduledAt(iso, nowMs, action);
  if (!r.ok) {
    if (r.status === 422 && /past/.test(r.message)) throw new CtlError(`${r.message}: ${t}`);
    throw usageError(`invalid --scheduled ${JSON.stringify(t)}: ${r.message}`);
  }
  return formatScheduledAt(r.atMs);
}
