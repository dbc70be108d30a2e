/**
 * Schema of the dynamic configuration document (the DCS key `config`, seeded from
 * `bootstrap.dcs`, later changed with PATCH/PUT /config), in the native dialect (a document of
 * the reference's dialect is renamed first: src/domain/config-dialect.ts). Types follow
 * src/domain/dynamic-config.ts. The schemas check the values of the keys the agent reads and let
 * other keys through: which keys may be written at all is src/config/dynamic-keys.ts's rule
 * (`unreadKeys`), applied by the writers (the API, hactl, the loader of `bootstrap.dcs`), which
 * must keep keys already stored.
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
import { renameDocument, storedDialect, translatePath, type ConfigDialect } from '../domain/config-dialect.ts';
import { TIMING_BOUNDS, timingError, withDefaults, type DynamicConfig } from '../domain/dynamic-config.ts';
import { quorumFailoverProblem } from '../domain/quorum-failover.ts';
import { Bool, isMapping, mapping, NonNegativeInteger, Parameters, PositiveInteger } from './fields.ts';
import { formatIssues } from './issues.ts';

/** PostgreSQL parameters of the dynamic config; booleans become `on`/`off` (the domain type holds string|number). */
const DynamicParameters = v.pipe(
  Parameters,
  v.transform(
    (p): Record<string, string | number> =>
      Object.fromEntries(Object.entries(p).map(([k, val]) => [k, typeof val === 'boolean' ? (val ? 'on' : 'off') : val])),
  ),
);

/** `database` section of the dynamic configuration; other keys kept. */
export const DynamicDatabaseSchema = mapping(
  v.looseObject(
    {
      use_slots: v.optional(Bool),
      use_db_rewind: v.optional(Bool),
      remove_data_directory_on_diverged_timelines: v.optional(Bool),
      remove_data_directory_on_rewind_failure: v.optional(Bool),
      parameters: v.optional(DynamicParameters),
    },
    (i) => `must be a mapping, got ${i.received}`,
  ),
);

/** The keys of `standby_cluster` (patroni.md §4.2); any other key is refused. */
export const STANDBY_CLUSTER_KEYS = [
  'host',
  'port',
  'primary_slot_name',
  'create_replica_methods',
  'restore_command',
  'archive_cleanup_command',
  'recovery_min_apply_delay',
] as const;

const APPLY_DELAY = (i: { input: unknown }) =>
  `must be milliseconds (an integer >= 0) or a duration such as "5min", got ${JSON.stringify(i.input)}`;

/** A string without line breaks (written into postgresql.conf). */
const OneLine = v.pipe(
  v.string((i) => `must be a string, got ${i.received}`),
  v.nonEmpty('must not be empty'),
  v.check((s) => !/[\n\r\0]/.test(s), 'must not contain line breaks'),
);

/**
 * `standby_cluster` (src/domain/standby-cluster.ts, docs/ha.md "Standby cluster", docs/backups.md
 * "A standby cluster fed by the archive"): what we do not honour is refused, never accepted
 * silently: a key outside STANDBY_CLUSTER_KEYS; a section with neither `host` (streaming from
 * host:port) nor `restore_command` (fetching from an archive), as the reference. The names of
 * `create_replica_methods` are the bootstrap's methods, read from each member's `database`
 * sections when it runs (a member without the section skips the method, saying why);
 * `basebackup` needs `host`. `restore_command`, `archive_cleanup_command` and
 * `recovery_min_apply_delay` are written for the standby leader.
 */
export const StandbyClusterSchema = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, (i) => `must be a mapping, got ${i.received}`),
  v.check(
    (o) => Object.keys(o).every((k) => (STANDBY_CLUSTER_KEYS as readonly string[]).includes(k)),
    (i) => {
      const bad = Object.keys(i.input as Record<string, unknown>).filter((k) => !(STANDBY_CLUSTER_KEYS as readonly string[]).includes(k));
      return `unknown key${bad.length > 1 ? 's' : ''} ${bad.join(', ')}: standby_cluster takes ${STANDBY_CLUSTER_KEYS.join(', ')}`;
    },
  ),
  v.check(
    (o) => o['host'] !== undefined || o['restore_command'] !== undefined,
    'needs host (the remote primary to stream from) or restore_command (the archive to fetch its WAL from), or both',
  ),
  v.check(
    (o) =>
      o['host'] !== undefined ||
      !Array.isArray(o['create_replica_methods']) ||
      !(o['create_replica_methods'] as unknown[]).includes('basebackup'),
    'create_replica_methods names basebackup, which copies host:port, but there is no host: name the restore method (with no_leader: true) instead',
  ),
  v.looseObject({
    host: v.optional(
      v.pipe(
        OneLine,
        v.check((s) => !/[\s,]/.test(s), 'must be one host name or address (no spaces, no list)'),
      ),
    ),
    port: v.optional(
      v.pipe(
        PositiveInteger,
        v.maxValue(65535, (i) => `must be a port 1..65535, got ${i.received}`),
      ),
    ),
    primary_slot_name: v.optional(
      v.pipe(
        v.string((i) => `must be a string, got ${i.received}`),
        v.regex(/^[a-z0-9_]{1,63}$/, 'must be a replication slot name: 1 to 63 lower-case letters, digits or _'),
      ),
    ),
    create_replica_methods: v.optional(
      v.pipe(
        v.array(
          v.string((i) => `must be a method name, got ${i.received}`),
          (i) => `must be a list of method names, got ${i.received}`,
        ),
        v.minLength(1, 'must name at least one method'),
        v.check(
          (a) => a.every((m) => /^[A-Za-z_][A-Za-z0-9_-]*$/.test(m)),
          "must be method names (letters, digits, _ or -), each a section of the members' database configuration or basebackup",
        ),
      ),
    ),
    restore_command: v.optional(OneLine),
    archive_cleanup_command: v.optional(OneLine),
    recovery_min_apply_delay: v.optional(
      v.union([NonNegativeInteger, v.pipe(v.string(), v.regex(/^\d+\s*(us|ms|s|min|h|d)?$/, APPLY_DELAY))], APPLY_DELAY),
    ),
  }),
);

/** A replication slot name: PostgreSQL's rule `[a-z0-9_]{1,63}`. */
const SlotName = v.pipe(
  v.string((i) => `must be a string, got ${i.received}`),
  v.regex(/^[a-z0-9_]{1,63}$/, 'must be a replication slot name: 1 to 63 lower-case letters, digits or _'),
);

/**
 * One permanent slot (`slots`, docs/ha.md "Replication slots"): `{type: physical}` (also `null`
 * or `0`, as the reference accepts), or `{type: logical, database, plugin}`.
 */
const PermanentSlotSchema = v.union(
  [
    v.null(),
    v.literal(0),
    v.pipe(
      v.custom<Record<string, unknown>>(isMapping, (i) => `must be a mapping, got ${i.received}`),
      v.check(
        (o) => o['type'] === undefined || o['type'] === 'physical' || o['type'] === 'logical',
        (i) => `type must be physical or logical, got ${JSON.stringify((i.input as Record<string, unknown>)['type'])}`,
      ),
      v.check(
        (o) => o['type'] !== 'logical' || (typeof o['database'] === 'string' && o['database'] !== ''),
        'a logical slot needs database (a non-empty string)',
      ),
      v.check(
        (o) => o['type'] !== 'logical' || (typeof o['plugin'] === 'string' && o['plugin'] !== ''),
        'a logical slot needs plugin (a non-empty string, e.g. pgoutput, test_decoding)',
      ),
    ),
  ],
  (i) => `must be {type: physical} or {type: logical, database, plugin}, got ${i.received}`,
);

/** `slots` and its aliases: slot name -> permanent slot. */
const PermanentSlotsSchema = v.nullable(
  v.pipe(
    v.custom<Record<string, unknown>>(isMapping, (i) => `must be a mapping of slot name: definition, got ${i.received}`),
    v.check(
      (o) => Object.keys(o).every((k) => /^[a-z0-9_]{1,63}$/.test(k)),
      (i) =>
        `slot names must be 1 to 63 lower-case letters, digits or _: ${Object.keys(i.input as Record<string, unknown>)
          .filter((k) => !/^[a-z0-9_]{1,63}$/.test(k))
          .map((k) => JSON.stringify(k))
          .join(', ')}`,
    ),
    v.record(v.string(), PermanentSlotSchema),
  ),
);

/** `ignore_slots`: matchers of slots never dropped, each with any of name, type, database, plugin. */
const IgnoreSlotsSchema = v.nullable(
  v.array(
    v.strictObject(
      {
        name: v.optional(SlotName),
        type: v.optional(v.picklist(['physical', 'logical'], (i) => `must be physical or logical, got ${JSON.stringify(i.input)}`)),
        database: v.optional(v.string((i) => `must be a string, got ${i.received}`)),
        plugin: v.optional(v.string((i) => `must be a string, got ${i.received}`)),
      },
      (i) => `must be a mapping with name, type, database or plugin, got ${i.received}`,
    ),
    (i) => `must be a list of {name, type, database, plugin} matchers, got ${i.received}`,
  ),
);

/** A timing setting: integer >= 1 (seconds), and at most `max` when given. */
function timingSeconds(max?: number) {
  return max === undefined
    ? PositiveInteger
    : v.pipe(
        PositiveInteger,
        v.maxValue(max, (i) => `must be at most ${max}, got ${i.received}`),
      );
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
    synchronous_mode: v.optional(v.union([v.boolean(), v.literal('quorum')], (i) => `must be true, false or "quorum", got ${i.received}`)),
    synchronous_mode_strict: v.optional(Bool),
    synchronous_node_count: v.optional(
      v.pipe(
        PositiveInteger,
        v.maxValue(SYNC_NODE_COUNT_MAX, (i) => `must be at most ${SYNC_NODE_COUNT_MAX}, got ${i.received}`),
      ),
    ),
    maximum_lag_on_syncnode: v.optional(
      v.pipe(
        v.number((i) => `must be an integer, got ${i.received}`),
        v.integer((i) => `must be an integer, got ${i.received}`),
        v.minValue(-1, (i) => `must be -1 (no limit) or more, got ${i.received}`),
      ),
    ),
    database: v.optional(DynamicDatabaseSchema),
    slots: v.optional(PermanentSlotsSchema),
    permanent_slots: v.optional(PermanentSlotsSchema),
    permanent_replication_slots: v.optional(PermanentSlotsSchema),
    ignore_slots: v.optional(IgnoreSlotsSchema),
    member_slots_ttl: v.optional(NonNegativeInteger),
    standby_cluster: v.optional(v.nullable(StandbyClusterSchema)),
    quorum_failover_window: v.optional(
      v.pipe(
        v.number((i) => `must be a number of seconds, got ${i.received}`),
        v.check((n) => Number.isFinite(n) && n >= 0, 'must be a number of seconds >= 0 (0: off)'),
      ),
    ),
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
  // Quorum failover needs strict synchronous mode (docs/ha.md "Quorum failover").
  v.forward(
    v.check(
      (doc) => quorumFailoverSyncProblem(doc) === undefined,
      (i) => quorumFailoverSyncProblem(i.input as Record<string, unknown>) ?? 'not allowed here',
    ),
    ['quorum_failover_window'],
  ),
);

/** Why `quorum_failover_window` (a valid number) cannot be on with this document's synchronous mode, without the key's name; undefined when it can. */
function quorumFailoverSyncProblem(doc: Record<string, unknown>): string | undefined {
  const w = doc['quorum_failover_window'];
  if (typeof w !== 'number' || !(w >= 0)) return undefined;
  return quorumFailoverProblem(withDefaults(doc))?.replace(/^quorum_failover_window: /, '');
}

/** A validated dynamic configuration document, as given (defaults not filled in). */
export type DynamicConfigDocument = v.InferOutput<typeof DynamicConfigSchema>;

/**
 * Validates a whole dynamic configuration document (for PUT, or for PATCH after merging the
 * patch into the current document and dropping `null` keys). Never throws.
 * Returns the document as given (booleans in `database.parameters` turned into `on`/`off`,
 * defaults not filled: use `withDefaults` for the effective values), or every problem as
 * `<dot.path>: <problem>`; a timing violation is reported at `(root)`.
 */
export function validateDynamicConfig(doc: unknown): { ok: true; value: DynamicConfigDocument } | { ok: false; problems: string[] } {
  const r = v.safeParse(DynamicConfigSchema, doc);
  return r.success ? { ok: true, value: r.output } : { ok: false, problems: formatIssues(r.issues) };
}

/** A problem line `<dot.path>: <problem>` of a native document, its path renamed into `dialect`. */
export function problemInDialect(problem: string, dialect: ConfigDialect): string {
  if (dialect === 'native') return problem;
  const at = problem.indexOf(': ');
  if (at < 0) return problem;
  return `${translatePath(problem.slice(0, at).split('.'), 'native', dialect).join('.')}${problem.slice(at)}`;
}

/**
 * {@link validateDynamicConfig} for a document of either dialect (src/domain/config-dialect.ts):
 * renamed to native, validated, renamed back. Returns the document in its own dialect (booleans
 * of `parameters` as `on`/`off`), or every problem with paths in the document's own names
 * (`postgresql.use_pg_rewind: must be true or false, got String`). Never throws.
 */
export function validateDynamicDocument(doc: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; problems: string[] } {
  if (!isMapping(doc)) return validateDynamicConfig(doc) as { ok: false; problems: string[] };
  const dialect = storedDialect(doc);
  const r = validateDynamicConfig(renameDocument(doc, dialect, 'native'));
  if (!r.ok) return { ok: false, problems: r.problems.map((p) => problemInDialect(p, dialect)) };
  return { ok: true, value: renameDocument(r.value as Record<string, unknown>, 'native', dialect) };
}

/**
 * Checks the types of a dynamic configuration document (no maxima, no timing rule). Never throws.
 * Returns the document as given (boolean parameters turned into `on`/`off`) or every problem as
 * `<dot.path>: <problem>`.
 */
export function checkDynamicConfigTypes(doc: unknown): { ok: true; value: DynamicConfigDocument } | { ok: false; problems: string[] } {
  const r = v.safeParse(DynamicConfigTypeSchema, doc);
  return r.success ? { ok: true, value: r.output } : { ok: false, problems: formatIssues(r.issues) };
}

/** The effective dynamic configuration of a validated document (DYNAMIC_DEFAULTS filled in). */
export function effectiveDynamicConfig(doc: DynamicConfigDocument): DynamicConfig {
  return withDefaults(doc);
}
