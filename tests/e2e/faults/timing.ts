/**
 * Timing of the fault tests and the bounds they assert, as formulas of ttl, loop_wait and
 * retry_timeout (docs/ha.md "DCS outage").
 */
import type { WriteProbe } from '../support/writer.ts';

export const T = { ttl: 10, loop_wait: 2, retry_timeout: 3 };
// The timing rule every configuration must keep.
if (T.loop_wait + 2 * T.retry_timeout > T.ttl) throw new Error('fault test timing breaks loop_wait + 2*retry_timeout <= ttl');

/**
 * Local demotion latency allowed on top of the deadline, ms: one cycle without DCS calls (a status
 * probe) and the fast stop's first signal, plus the write probe's 100 ms resolution and a loaded
 * 2-core machine.
 */
export const DEMOTION_SLACK_MS = 1500;

/** DCS outage without failsafe: the leader stops acknowledging within ttl − retry_timeout (+ slack) of the outage start. */
export const STOP_ACK_BOUND_MS = (T.ttl - T.retry_timeout) * 1000 + DEMOTION_SLACK_MS;

/** After every fault healed: a writable primary again within ttl + 2·loop_wait + 2·retry_timeout (the simulator's bound) + PostgreSQL start/promotion. */
export const RECOVERY_BOUND_MS = (T.ttl + 2 * T.loop_wait + 2 * T.retry_timeout) * 1000 + 5000;

/** Back as a streaming replica after healing a partition: reliability.md §3.2 "rejoin ≤ 180 s with pg_rewind or re-clone". */
export const PARTITION_REJOIN_BOUND_MS = 180_000;

/**
 * The first probe round at or after `fromMs` in which `member` did not acknowledge (`fromMs` itself
 * when it was not acknowledging then already); undefined when it always did.
 */
export function firstMiss(probe: WriteProbe, member: string, fromMs: number): number | undefined {
  const t = probe.transitions();
  const before = t.filter((x) => x.at < fromMs).at(-1);
  if (before && !before.members.includes(member)) return fromMs;
  return t.find((x) => x.at >= fromMs && !x.members.includes(member))?.at;
}

/** The first probe round at or after `fromMs` in which exactly one member acknowledged: [at, member]. */
export function firstSinglePrimary(probe: WriteProbe, fromMs: number): { at: number; member: string } | undefined {
  const t = probe.transitions();
  // the state at fromMs may have begun before it
  const idx = t.findIndex((x) => x.at >= fromMs);
  const before = idx > 0 ? t[idx - 1] : idx < 0 ? t[t.length - 1] : undefined;
  if (before && before.members.length === 1) return { at: fromMs, member: before.members[0]! };
  const hit = t.find((x) => x.at >= fromMs && x.members.length === 1);
  return hit ? { at: hit.at, member: hit.members[0]! } : undefined;
}
