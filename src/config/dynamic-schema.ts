/**
 * Schema of the dynamic configuration document (the DCS key `config`, seeded from
 * `bootstrap.dcs`, later changed with PATCH/PUT /config). Types follow
 * src/domain/dynamic-config.ts; unknown keys are kept (patroni.md §4.2: every other key is read
 * from the DCS copy when needed). The timing rule `loop_wait + 2*retry_timeout <= ttl` is
 * checked on the document with defaults filled in, with domain `timingError`'s message.
 */
import * as v from 'valibot';
import { timingError, withDefaults, type DynamicConfig } from '../domain/dynamic-config.ts';
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
    parameters: v.optional(DynamicParameters),
  },
  (i) => `must be a mapping, got ${i.received}`,
));

/**
 * The dynamic configuration document, every key optional (defaults: DYNAMIC_DEFAULTS).
 * ttl, loop_wait, retry_timeout: integers >= 1 (seconds); maximum_lag_on_failover: integer >= 0
 * (bytes); check_timeline, pause, failsafe_mode: booleans; synchronous_mode: boolean or
 * `quorum`; database.use_slots/use_db_rewind: booleans; database.parameters: record of
 * string|number|boolean. Errors at the document itself carry the timing rule's message.
 */
export const DynamicConfigSchema = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, (i) => `must be a mapping, got ${i.received}`),
  v.looseObject(
    {
      ttl: v.optional(PositiveInteger),
      loop_wait: v.optional(PositiveInteger),
      retry_timeout: v.optional(PositiveInteger),
      maximum_lag_on_failover: v.optional(NonNegativeInteger),
      check_timeline: v.optional(Bool),
      pause: v.optional(Bool),
      failsafe_mode: v.optional(Bool),
      synchronous_mode: v.optional(
        v.union([v.boolean(), v.literal('quorum')], (i) => `must be true, false or "quorum", got ${i.received}`),
      ),
      database: v.optional(DynamicDatabaseSchema),
    },
    (i) => `must be a mapping, got ${i.received}`,
  ),
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

/** The effective dynamic configuration of a validated document (DYNAMIC_DEFAULTS filled in). */
export function effectiveDynamicConfig(doc: DynamicConfigDocument): DynamicConfig {
  return withDefaults(doc);
}
