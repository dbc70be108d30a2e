/**
 * Schema of the dynamic configuration document (the DCS key `config`, seeded from
 * `bootstrap.dcs`, later changed with PATCH/PUT /config). Types follow
 * src/domain/dynamic-config.ts; unknown keys are kept (patroni.md §4.2: every other key is read
 * from the DCS copy when needed).
 *
 * Two schemas share the same field rules (`dynamicConfigEntries`):
 * - `DynamicConfigTypeSchema`: types only (what `sanitizeDynamicConfig` checks on the DCS copy
 *   before adjusting the timing settings, src/config/dynamic-sanitize.ts);
 * - `DynamicConfigSchema` (the API, hactl and `bootstrap.dcs`): the same types, plus the maxima
 *   of TIMING_BOUNDS (ttl <= 86400, loop_wait <= 3600, retry_timeout <= 3600 seconds) and the
 *   timing rule `loop_wait + 2*retry_timeout <= ttl`, checked on the document with defaults
 *   filled in, with domain `timingError`'s message. The API refuses; it never adjusts.
 */
import * as v from 'valibot';
import { TIMING_BOUNDS, timingError, withDefaults, type DynamicConfig } from '../domain/dynamic-config.ts';
import { Bool, isMapping, mapping, NonNegativeInteger, Parameters, PositiveInteger } from './fields.ts';
import { formatIssues } from './issues.ts';

/** PostgreSQL parameters of the dynamic config; booleans become `on`/`off` (the domain type holds string|number). */
const DynamicParameters = v.pipe(
  Parameters,
  v.transform((p): Record<string, string | number> =>
    Object.fromEntries(Object.entries(p).map(([k, val]) => [k, typeof val === 'boolean' ? (val ? 'on' : 'off') : val])),
  ),
);

/** `database` section of the dynamic configuration; other keys kept. */
export const DynamicDatabaseSchema = mapping(v.looseObject(
  {
    use_slots: v.optional(Bool),
    use_db_rewind: v.optional(Bool),
    remove_data_directory_on_diverged_timelines: v.optional(Bool),
    remove_data_directory_on_rewind_failure: v.optional(Bool),
    parameters: v.optional(DynamicParameters),
  },
  (i) => `must be a mapping, got ${i.received}`,
));

/** A timing setting: integer >= 1 (seconds), and at most `max` when given. */
function timingSeconds(max?: number) {
  return max === undefined
    ? PositiveInteger
    : v.pipe(PositiveInteger, v.maxValue(max, (i) => `must be at most ${max}, got ${i.received}`));
}

/**
 * The field rules of the dynamic configuration, every key optional (defaults: DYNAMIC_DEFAULTS).
 * ttl, loop_wait, retry_timeout: integers >= 1 (seconds), at most TIMING_BOUNDS' maxima when
 * `withMaxima`; maximum_lag_on_failover: integer >= 0 (bytes); check_timeline, pause,
 * failsafe_mode, synchronous_mode_strict: booleans; synchronous_mode: boolean or `quorum`;
 * synchronous_node_count: integer 1..100; maximum_lag_on_syncnode: integer >= -1 (bytes); database.use_slots,
 * use_db_rewind, remove_data_directory_on_diverged_timelines, remove_data_directory_on_rewind_failure:
 * booleans; database.parameters:
 * record of string|number|boolean.
 */
function dynamicConfigEntries(withMaxima: boolean) {
  return {
    ttl: v.optional(timingSeconds(withMaxima ? TIMING_BOUNDS.ttl.max : undefined)),
    loop_wait: v.optional(timingSeconds(withMaxima ? TIMING_BOUNDS.loop_wait.max : undefined)),
    retry_timeout: v.optional(timingSeconds(withMaxima ? TIMING_BOUNDS.retry_timeout.max : undefined)),
    maximum_lag_on_failover: v.optional(NonNegativeInteger),
    check_timeline: v.optional(Bool),
    pause: v.optional(Bool),
    failsafe_mode: v.optional(Bool),
    synchronous_mode: v.optional(
      v.union([v.boolean(), v.literal('quorum')], (i) => `must be true, false or "quorum", got ${i.received}`),
    ),
    synchronous_mode_strict: v.optional(Bool),
    synchronous_node_count: v.optional(
      v.pipe(PositiveInteger, v.maxValue(SYNC_NODE_COUNT_MAX, (i) => `must be at most ${SYNC_NODE_COUNT_MAX}, got ${i.received}`)),
    ),
    maximum_lag_on_syncnode: v.optional(
      v.pipe(
        v.number((i) => `must be an integer, got ${i.received}`),
        v.integer((i) => `must be an integer, got ${i.received}`),
        v.minValue(-1, (i) => `must be -1 (no limit) or more, got ${i.received}`),
      ),
    ),
    database: v.optional(DynamicDatabaseSchema),
  };
}

/**
 * Largest `synchronous_node_count`: PostgreSQL's synchronous_standby_names can name at most as
 * many standbys as max_wal_senders allows (at most 262143); 100 is far above any real cluster.
 */
export const SYNC_NODE_COUNT_MAX = 100;

const notMapping = (i: { received: string }) => `must be a mapping, got ${i.received}`;

/**
 * Types only: the field rules of `dynamicConfigEntries` without maxima and without the timing
 * rule. Used on the DCS copy by `sanitizeDynamicConfig`, which adjusts out-of-range timings.
 */
export const DynamicConfigTypeSchema = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, notMapping),
  v.looseObject(dynamicConfigEntries(false), notMapping),
);

/**
 * The dynamic configuration document as the API accepts it: the field rules, the maxima of
 * TIMING_BOUNDS, and the timing rule. Errors at the document itself carry the timing rule's
 * message.
 */
export const DynamicConfigSchema = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, notMapping),
  v.looseObject(dynamicConfigEntries(true), notMapping),
  v.check(
    (doc) => timingError(withDefaults(doc)) === undefined,
    (i) => timingError(withDefaults(i.input)) ?? 'timing rule violated',
  ),
);

/** A validated dynamic configuration document, as given (defaults not filled in). */
export type DynamicConfigDocument = v.InferOutput<typeof DynamicConfigSchema>;

/**
 * Validates a whole dynamic configuration document (for PUT, or for PATCH after merging the
 * patch into the current document and dropping `null` keys). Never throws.
 * Returns the document as given (booleans in `database.parameters` turned into `on`/`off`,
 * defaults not filled: use `withDefaults` for the effective values), or every problem as
 * `<dot.path>: <problem>`; a timing violation is reported at `(root)`.
 */
export function validateDynamicConfig(
  doc: unknown,
): { ok: true; value: DynamicConfigDocument } | { ok: false; problems: string[] } {
  const r = v.safeParse(DynamicConfigSchema, doc);
  return r.success ? { ok: true, value: r.output } : { ok: false, problems: formatIssues(r.issues) };
}

/**
 * Checks the types of a dynamic configuration document (no maxima, no timing rule). Never throws.
 * Returns the document as given (boolean parameters turned into `on`/`off`) or every problem as
 * `<dot.path>: <problem>`.
 */
export function checkDynamicConfigTypes(
  doc: unknown,
): { ok: true; value: DynamicConfigDocument } | { ok: false; problems: string[] } {
  const r = v.safeParse(DynamicConfigTypeSchema, doc);
  return r.success ? { ok: true, value: r.output } : { ok: false, problems: formatIssues(r.issues) };
}

/** The effective dynamic configuration of a validated document (DYNAMIC_DEFAULTS filled in). */
export function effectiveDynamicConfig(doc: DynamicConfigDocument): DynamicConfig {
  return withDefaults(doc);
}
