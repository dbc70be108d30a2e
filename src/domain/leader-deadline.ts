/**
 * The leader's deadline (docs/ha.md "DCS outage"): the instant after which a primary holding the
 * leader lock may no longer count on it, and by which every DCS call of its cycle must have
 * ended. Pure.
 *
 * The lease that carries the leader key was extended by the store at or after the instant the
 * last successful keepalive was SENT (`lastRenewalMs`), so neither the lease nor the key can
 * expire before `lastRenewalMs + ttl`; nobody else can create the key before then. The leader
 * keeps `retry_timeout` of that in hand to stop acknowledging writes (one cycle without DCS
 * calls, then a fast stop), so its deadline is
 *
 *     deadline = lastRenewalMs + ttl − retry_timeout
 *
 * With the timing rule `loop_wait + 2 × retry_timeout ≤ ttl` the deadline lies at least
 * `loop_wait + retry_timeout` after the renewal: the next cycle starts within loop_wait and its
 * keepalive keeps its full retry_timeout (a DCS that answers slowly but within retry_timeout never
 * demotes a healthy leader).
 *
 * In failsafe mode (patroni.md §3.7) a round of POST /failsafe that every listed member accepted,
 * sent at `failsafeSentMs` and completed before the deadline then in force, keeps the members from
 * racing for ttl after they received it: it moves the deadline to `failsafeSentMs + ttl −
 * retry_timeout` in the same way.
 */

/**
 * In failsafe mode the cycle's DCS calls end this long before the deadline, ms: a DCS that does
 * not answer leaves the POST /failsafe round (2 s per request) time to complete before the
 * deadline (docs/ha.md "DCS outage").
 */
export const FAILSAFE_ROUND_RESERVE_MS = 2000;

/** Inputs of the deadline: epoch ms and durations in ms (timingOf). */
export interface LeaderDeadlineInput {
  /** Send time of the last successful lease keepalive (or grant); 0 when never. */
  lastRenewalMs: number;
  /** Send time of the last failsafe round every member accepted in time; 0 when none. */
  failsafeSentMs?: number;
  ttlMs: number;
  retryTimeoutMs: number;
}

/** The deadline, epoch ms (see the module comment). */
export function leaderDeadlineMs(i: LeaderDeadlineInput): number {
  const anchor = Math.max(i.lastRenewalMs, i.failsafeSentMs ?? 0);
  return anchor + (i.ttlMs - i.retryTimeoutMs);
}

/**
 * The bound of the docs, seconds: after the DCS stops answering (at the latest after the last
 * successful renewal), a primary without failsafe stops acknowledging writes within
 * `ttl − retry_timeout` plus its local demotion latency; the lease cannot expire before `ttl`.
 */
export function stopAcknowledgingBoundS(t: { ttl: number; retry_timeout: number }): number {
  return t.ttl - t.retry_timeout;
}
