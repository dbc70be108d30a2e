/**
 * Sanitizing the dynamic configuration read from the DCS (the key `config`).
 *
 * The API validates what it writes (src/config/dynamic-schema.ts `validateDynamicConfig`), but
 * anyone with etcdctl can write the key, so the agent checks the copy it reads the same way
 * before using it. Pure: no I/O, no clock, no logging (the caller logs `problems` and
 * `adjustments`).
 *
 * The document may be in either dialect (src/domain/config-dialect.ts): it is read as native
 * first (`readAsNative`), with the defaults of its dialect.
 *
 * Two stages, as the reference does (patroni.md §3.1, §4.2):
 * 1. Types (`DynamicConfigTypeSchema`, the API's field rules without maxima and timing rule):
 *    if the document is not a mapping or any known field has the wrong type (ttl a string,
 *    zero or negative or fractional seconds, `synchronous_mode` not true/false/"quorum",
 *    `database` not a mapping, …), the whole document is refused and `lastGood` is kept.
 * 2. Timing adjustments, each described in `adjustments`, in this order:
 *    a. every timing setting is clamped into TIMING_BOUNDS (seconds): ttl 7..86400,
 *       loop_wait 1..3600, retry_timeout 3..3600 (why these numbers: TIMING_BOUNDS' docstring in
 *       src/domain/dynamic-config.ts);
 *    b. if `loop_wait + 2*retry_timeout > ttl`, loop_wait is lowered to
 *       `max(1, ttl - 2*retry_timeout)`;
 *    c. if still violated, retry_timeout is lowered to `floor((ttl - 1) / 2)` (>= 3 since
 *       ttl >= 7, so the rule then holds with loop_wait 1).
 * Keys the agent does not read (src/config/dynamic-keys.ts `unreadKeys`: unknown keys, keys of
 * the reference it does not implement) are listed in `adjustments` as `ignored <path>: <why>`,
 * in the stored document's own names; they stay in the DCS untouched.
 */
import { readAsNative, storedDialect } from '../domain/config-dialect.ts';
import { TIMING_BOUNDS, withDefaults, type DynamicConfig } from '../domain/dynamic-config.ts';
import { formatUnread, unreadKeys } from './dynamic-keys.ts';
import { checkDynamicConfigTypes, problemInDialect } from './dynamic-schema.ts';

/** Outcome of `sanitizeDynamicConfig`. */
export interface SanitizedDynamicConfig {
  /** The effective configuration to use: `lastGood` itself when `problems` is not empty. */
  config: DynamicConfig;
  /** Every type problem of `raw`, as `<dot.path>: <problem>`; empty when the types are right. */
  problems: string[];
  /** One sentence per adjusted timing setting (field, old value, new value, why), in order applied. */
  adjustments: string[];
}

type TimingKey = keyof typeof TIMING_BOUNDS;

/**
 * Checks and adjusts the dynamic configuration read from the DCS.
 *
 * @param raw the stored JSON value of the `config` key (anything: it was written by whoever could)
 * @param lastGood the configuration in use, kept (same object) when `raw` has type problems
 * @returns `config`: `withDefaults(raw)` with the timing settings adjusted, or `lastGood`;
 *   `problems`: `<dot.path>: <problem>` lines (e.g. `ttl: must be at least 1, got -5`,
 *   `(root): must be a mapping, got null`); `adjustments`: sentences such as
 *   `loop_wait lowered from 2147484 to 3600 s (maximum 3600 s)`. A configuration that is already
 *   right comes back equal to `withDefaults(raw)` with both lists empty. Never throws.
 */
export function sanitizeDynamicConfig(raw: unknown, lastGood: DynamicConfig): SanitizedDynamicConfig {
  const checked = checkDynamicConfigTypes(readAsNative(raw));
  if (!checked.ok)
    return { config: lastGood, problems: checked.problems.map((p) => problemInDialect(p, storedDialect(raw))), adjustments: [] };

  const config = withDefaults(checked.value);
  const adjustments: string[] = [];
  const set = (key: TimingKey, value: number, why: string) => {
    const old = config[key];
    adjustments.push(`${key} ${value < old ? 'lowered' : 'raised'} from ${old} to ${value} s (${why})`);
    config[key] = value;
  };

  // a. bounds, in the reference's order of its minima: loop_wait, retry_timeout, ttl.
  for (const key of ['loop_wait', 'retry_timeout', 'ttl'] as const) {
    const { min, max } = TIMING_BOUNDS[key];
    if (config[key] < min) set(key, min, `minimum ${min} s`);
    else if (config[key] > max) set(key, max, `maximum ${max} s`);
  }

  // b, c. the timing rule loop_wait + 2*retry_timeout <= ttl (patroni.md §3.1).
  const rule = () =>
    `loop_wait + 2*retry_timeout must not exceed ttl ${config.ttl}, was ${config.loop_wait} + 2*${config.retry_timeout}` +
    ` = ${config.loop_wait + 2 * config.retry_timeout}`;
  const violated = () => config.loop_wait + 2 * config.retry_timeout > config.ttl;
  if (violated()) {
    const loopWait = Math.max(TIMING_BOUNDS.loop_wait.min, config.ttl - 2 * config.retry_timeout);
    if (loopWait !== config.loop_wait) set('loop_wait', loopWait, rule());
  }
  if (violated()) set('retry_timeout', Math.floor((config.ttl - 1) / 2), rule());

  // Keys this agent does not read: ignored, and said (never silently); never dropped from the DCS.
  for (const u of unreadKeys(raw)) adjustments.push(`ignored ${formatUnread(u)}`);

  return { config, problems: [], adjustments };
}
