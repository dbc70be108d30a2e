/**
 * Which keys of the dynamic configuration document (the DCS key `config`, `bootstrap.dcs`, the
 * bodies of PATCH/PUT /config, `hactl edit-config`) the agent reads, and why it reads no other.
 *
 * The rule (docs/configuration.md "Dynamic configuration", issue 32): a key the agent does not
 * read is refused wherever a document is written (PATCH/PUT /config, `hactl edit-config`,
 * `bootstrap.dcs`), never accepted silently; one already stored in the DCS (written by an older
 * version, another tool, or the reference's agents) stays where it is, is reported in the log and
 * in `/ha` (`config_ignored`) and is not obeyed.
 *
 * - Known keys: {@link DYNAMIC_TOP_KEYS} at the top level and {@link DATABASE_SECTION_KEYS} in the
 *   database section (`database`, or `postgresql` in the reference's dialect:
 *   src/domain/config-dialect.ts). Inside `parameters`, `slots` (and aliases), `ignore_slots` and
 *   `standby_cluster` the schema (src/config/dynamic-schema.ts) decides.
 * - Tools' own data: top-level keys starting with {@link TOOL_KEY_PREFIX} (`x-`), any value; the
 *   agent stores and shows them and never reads them.
 * - Keys of the reference that the agent does not implement, each with why
 *   ({@link UNSUPPORTED_DYNAMIC_KEYS}, {@link unsupportedSectionKeys}); any other key is unknown,
 *   with the closest known key suggested ("loop_wiat: unknown key; did you mean loop_wait?").
 * Pure.
 */
import { DIALECT_NAMES, storedDialect, writtenDialect, type ConfigDialect } from '../domain/config-dialect.ts';
import { isMapping } from './fields.ts';
import { unknownKeyProblem } from './suggest.ts';

/** Prefix of the top-level keys reserved for tools' own data: stored and shown, never read. */
export const TOOL_KEY_PREFIX = 'x-';

/** True for a key reserved for tools ({@link TOOL_KEY_PREFIX}). */
export function isToolKey(key: string): boolean {
  return key.startsWith(TOOL_KEY_PREFIX) && key.length > TOOL_KEY_PREFIX.length;
}

/** The top-level keys the agent reads, besides the database section (same in both dialects). */
export const DYNAMIC_TOP_KEYS: readonly string[] = [
  'ttl',
  'loop_wait',
  'retry_timeout',
  'maximum_lag_on_failover',
  'maximum_lag_on_syncnode',
  'check_timeline',
  'pause',
  'failsafe_mode',
  'synchronous_mode',
  'synchronous_mode_strict',
  'synchronous_node_count',
  'standby_cluster',
  'slots',
  'permanent_slots',
  'permanent_replication_slots',
  'ignore_slots',
  'member_slots_ttl',
  'quorum_failover_window',
];

/** The keys of the database section the agent reads, by native name (the rewind switch is named per dialect). */
export const DATABASE_SECTION_KEYS: readonly string[] = [
  'use_slots',
  'use_db_rewind',
  'remove_data_directory_on_rewind_failure',
  'remove_data_directory_on_diverged_timelines',
  'parameters',
];

/**
 * Top-level keys of the reference's dynamic configuration (patroni.md §4.2) this agent does not
 * implement, with why.
 */
export const UNSUPPORTED_DYNAMIC_KEYS: Readonly<Record<string, string>> = {
  max_timelines_history: 'not supported: the history key keeps every entry',
  primary_start_timeout: 'not supported: a primary that fails to start releases the leader key at once (as primary_start_timeout 0)',
  master_start_timeout: 'not supported: a primary that fails to start releases the leader key at once (as primary_start_timeout 0)',
  primary_stop_timeout: 'not supported: a demotion stops with a fast shutdown, escalated by PID when it outlives its window',
  master_stop_timeout: 'not supported: a demotion stops with a fast shutdown, escalated by PID when it outlives its window',
  primary_race_backoff: 'not supported: the fence (docs/ha.md "Fencing") protects against a frozen agent on a live primary instead',
};

/** Top-level keys of a member's own configuration file: never read from the dynamic configuration. */
const LOCAL_TOP_KEYS: readonly string[] = [
  'scope',
  'namespace',
  'name',
  'restapi',
  'etcd3',
  'etcd',
  'ctl',
  'bootstrap',
  'tags',
  'watchdog',
  'log',
];

/** Keys of the database section that are each member's own (its file's `database`/`postgresql` section). */
const LOCAL_SECTION_KEYS: readonly string[] = [
  'listen',
  'connect_address',
  'proxy_address',
  'data_dir',
  'config_dir',
  'bin_dir',
  'socket_dir',
  'pgpass',
  'authentication',
  'callbacks',
];

/**
 * Keys of the database section of `dialect` this agent does not implement, with why (the other
 * dialect's name of the rewind switch among them).
 */
export function unsupportedSectionKeys(dialect: ConfigDialect): Readonly<Record<string, string>> {
  const section = DIALECT_NAMES[dialect].section;
  const other: ConfigDialect = dialect === 'native' ? 'patroni' : 'native';
  return {
    [DIALECT_NAMES[other].rewind]:
      dialect === 'native'
        ? `not supported under this name: use ${section}.${DIALECT_NAMES.native.rewind} (the reference's ${DIALECT_NAMES.patroni.section}.${DIALECT_NAMES.patroni.rewind} is read only in a document of its dialect, whose section is named ${DIALECT_NAMES.patroni.section})`
        : `the native name: in this document's dialect (section ${section}) the key is ${DIALECT_NAMES.patroni.rewind}`,
    pg_hba: `not supported in the dynamic configuration: set ${section}.pg_hba in each member's local configuration file`,
    pg_ident: 'not supported: the agent writes no pg_ident.conf',
    recovery_conf: 'not supported: the agent writes the recovery settings itself',
  };
}

/** One key the agent does not read: its path and why. */
export interface UnreadKey {
  /** Path from the document's root, e.g. `['database', 'pg_hba']`. */
  path: string[];
  /** Why it is not read (`unknown key; did you mean loop_wait?`, `not supported: …`). */
  why: string;
}

/** `<dot.path>: <why>`. */
export function formatUnread(u: UnreadKey): string {
  return `${u.path.join('.')}: ${u.why}`;
}

/** Options of {@link unreadKeys}. */
export interface UnreadOptions {
  /**
   * Skip keys whose value is `null` (a PATCH body: `null` deletes the key, so it adds nothing).
   * Default false.
   */
  skipNull?: boolean;
}

/**
 * Every key of `doc` the agent does not read, in document order: unknown keys (with the closest
 * known key suggested), keys of the reference it does not implement (with why), local settings
 * (with where they belong), and in a document with both database sections the one not read.
 * Tools' keys ({@link TOOL_KEY_PREFIX}) are never listed. Values are not checked (the schema's
 * job). Anything but a mapping: none. Never throws.
 */
export function unreadKeys(doc: unknown, opts: UnreadOptions = {}): UnreadKey[] {
  if (!isMapping(doc)) return [];
  const written = writtenDialect(doc);
  const dialect = storedDialect(doc);
  const section = DIALECT_NAMES[dialect].section;
  const out: UnreadKey[] = [];
  const skip = (v: unknown) => opts.skipNull === true && v === null;
  // Suggest the section's name of the document's dialect, or either name when it has no section.
  const knownTop = [
    ...DYNAMIC_TOP_KEYS,
    ...(written === undefined ? [DIALECT_NAMES.native.section, DIALECT_NAMES.patroni.section] : [section]),
  ];
  for (const [key, value] of Object.entries(doc)) {
    if (skip(value) || isToolKey(key) || DYNAMIC_TOP_KEYS.includes(key)) continue;
    if (key === section) {
      if (isMapping(value)) out.push(...unreadSectionKeys(value, dialect, skip));
      continue;
    }
    if (written === 'both' && key === DIALECT_NAMES.patroni.section) {
      out.push({
        path: [key],
        why: `not read: this document names its database section ${section} (the native dialect); ${key} is the reference's name of the same section: move its keys into ${section}`,
      });
    } else if (Object.hasOwn(UNSUPPORTED_DYNAMIC_KEYS, key)) {
      out.push({ path: [key], why: UNSUPPORTED_DYNAMIC_KEYS[key]! });
    } else if (LOCAL_TOP_KEYS.includes(key)) {
      out.push({
        path: [key],
        why: "a local setting, never read from the dynamic configuration: set it in each member's configuration file",
      });
    } else {
      out.push({ path: [key], why: unknownKeyProblem(key, knownTop) });
    }
  }
  return out;
}

function unreadSectionKeys(s: Record<string, unknown>, dialect: ConfigDialect, skip: (v: unknown) => boolean): UnreadKey[] {
  const section = DIALECT_NAMES[dialect].section;
  const known = DATABASE_SECTION_KEYS.map((k) => (k === DIALECT_NAMES.native.rewind ? DIALECT_NAMES[dialect].rewind : k));
  const unsupported = unsupportedSectionKeys(dialect);
  const out: UnreadKey[] = [];
  for (const [key, value] of Object.entries(s)) {
    if (skip(value) || known.includes(key)) continue;
    const why = Object.hasOwn(unsupported, key)
      ? unsupported[key]!
      : LOCAL_SECTION_KEYS.includes(key)
        ? `a local setting, never read from the dynamic configuration: set ${section}.${key} in each member's configuration file`
        : unknownKeyProblem(key, known);
    out.push({ path: [section, key], why });
  }
  return out;
}

/**
 * The top-level keys of `doc` the agent reads (known keys and the database section; not tools'
 * keys, not unread keys). An empty database section counts as nothing read.
 */
export function readKeys(doc: Record<string, unknown>): string[] {
  const section = DIALECT_NAMES[storedDialect(doc)].section;
  return Object.keys(doc).filter((k) => {
    if (DYNAMIC_TOP_KEYS.includes(k)) return true;
    if (k !== section) return false;
    const v = doc[k];
    if (!isMapping(v)) return true;
    const unread = new Set(unreadSectionKeys(v, storedDialect(doc), () => false).map((u) => u.path[1]));
    return Object.keys(v).some((key) => !unread.has(key));
  });
}
