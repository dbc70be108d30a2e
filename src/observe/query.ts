/** Query parameters of GET /events and GET /events/stream, parsed at the edge. */

/** A parsed parameter, or the message of a 400 answer naming it. */
export type ParamResult = { ok: true; value: number } | { ok: false; error: string };

/** Default and maximum of `limit`. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/**
 * A non-negative integer parameter. Absent or empty → `fallback`.
 * @param name parameter name, used in the error message.
 * @param max inclusive upper bound, if any.
 */
export function intParam(name: string, raw: string | undefined, fallback: number, min = 0, max?: number): ParamResult {
  if (raw === undefined || raw === '') return { ok: true, value: fallback };
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || (max !== undefined && value > max)) {
    return { ok: false, error: `${name} must be an integer${max !== undefined ? ` between ${min} and ${max}` : ` >= ${min}`}` };
  }
  return { ok: true, value };
}

/** `?limit=`: 1…1000, default 100. */
export function parseLimit(raw: string | undefined): ParamResult {
  return intParam('limit', raw, DEFAULT_LIMIT, 1, MAX_LIMIT);
}

/** `?since=` (or `Last-Event-ID`): a journal sequence number ≥ 0, default 0 (everything). */
export function parseSince(raw: string | undefined, name = 'since'): ParamResult {
  return intParam(name, raw, 0, 0);
}
