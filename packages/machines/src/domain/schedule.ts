/**
 * The timing rule of scheduled actions (switchover, restart), shared by the scheduled switchover
 * and scheduled restart machines and by the agent's HA cycle and HTTP handlers:
 * - `decideScheduled` tells whether a plan waits, runs now or is stale (patroni.md §3.5: a plan
 *   more than 1.5 × loop_wait in the past is stale and cleared);
 * - `formatScheduledAt` renders a plan's instant as the API shows it.
 * No I/O, no clock: the caller passes `nowMs`. Parsing the request's text (`parseScheduledAt`) is
 * the agent's (src/domain/schedule.ts).
 */

/** Outcome of `decideScheduled`. */
export type ScheduledDecision = { kind: 'wait' } | { kind: 'runNow' } | { kind: 'stale' };

/**
 * Decide what to do with a plan due at `atMs`, seen at `nowMs`.
 *
 * - `wait`: `nowMs < atMs` (the instant has not come; never early, not even by 1 ms);
 * - `runNow`: `atMs <= nowMs <= atMs + 1.5 × loopWaitMs` (the edge itself still runs);
 * - `stale`: later than that; the plan is dropped (patroni.md §3.5).
 *
 * All arguments in milliseconds (epoch ms for the instants). Never throws.
 */
export function decideScheduled(atMs: number, nowMs: number, loopWaitMs: number): ScheduledDecision {
  if (nowMs < atMs) return { kind: 'wait' };
  if (nowMs - atMs <= 1.5 * loopWaitMs) return { kind: 'runNow' };
  return { kind: 'stale' };
}

/**
 * Render epoch ms as the ISO 8601 text shown by the API (`scheduled_switchover.at`,
 * `scheduled_restart.schedule`): UTC with an explicit `+00:00` offset, milliseconds only when not
 * zero, e.g. `2026-05-01T10:00:00+00:00`. Throws RangeError for a non-finite or out-of-range value.
 */
export function formatScheduledAt(atMs: number): string {
  const iso = new Date(atMs).toISOString(); // throws RangeError when invalid
  return iso.replace(/\.000Z$/, 'Z').replace(/Z$/, '+00:00');
}
