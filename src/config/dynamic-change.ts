/**
 * The rules of a change of the stored dynamic configuration (the DCS key `config`), shared by
 * PATCH/PUT /config (src/http/config-routes.ts) and `hactl edit-config` (src/ctl). Pure: the
 * callers read the stored document and write the result.
 *
 * 1. A body mixing the dialects (both `database` and `postgresql`) is refused; a body in the other
 *    dialect than the stored document's is written in the stored document's dialect (a cluster
 *    keeps its dialect until `hactl convert-config`: src/domain/config-dialect.ts).
 * 2. A key the agent does not read (src/config/dynamic-keys.ts `unreadKeys`) is refused when the
 *    change adds it or changes its value; one already stored is kept as it is (issue 32).
 * 3. The result must pass the schema (`validateDynamicDocument`: types, maxima, timing rule).
 * 4. A replacement (PUT, `edit-config --replace`) must hold a setting the agent reads, and may
 *    not leave out a setting whose default is less safe than the stored value
 *    ({@link DROP_GUARDS}: the operator sets it explicitly, or deletes it with PATCH `null`);
 *    the settings it leaves out fall back to their defaults and are listed (`defaulted`).
 */
import {
  convertDocument,
  DIALECT_NAMES,
  renameDocument,
  storedDialect,
  translatePath,
  writtenDialect,
  type ConfigDialect,
} from '../domain/config-dialect.ts';
import { DYNAMIC_DEFAULTS, withDefaults } from '../domain/dynamic-config.ts';
import { DATABASE_SECTION_KEYS, DYNAMIC_TOP_KEYS, formatUnread, readKeys, unreadKeys, type UnreadKey } from './dynamic-keys.ts';
import { validateDynamicDocument } from './dynamic-schema.ts';
import { isMapping } from './fields.ts';
import { checkParameters, type ParameterValue, type SettingsCatalogue } from '../domain/pg-parameters.ts';

type Doc = Record<string, unknown>;

/** Recursive merge of `patch` into `base` (new object; `null` deletes, mappings merge, other values replace). */
export function mergeDocuments(base: Doc, patch: Doc): Doc {
  const out: Doc = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (isMapping(value) && isMapping(out[key])) out[key] = mergeDocuments(out[key] as Doc, value);
    else if (isMapping(value)) out[key] = mergeDocuments({}, value);
    else out[key] = value;
  }
  return out;
}

/** Deep equality of JSON values (key order ignored). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (!isMapping(a) || !isMapping(b)) return false;
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
}

function valueAt(doc: unknown, path: readonly string[]): { found: boolean; value?: unknown } {
  let cur: unknown = doc;
  for (const key of path) {
    if (!isMapping(cur) || !Object.hasOwn(cur, key)) return { found: false };
    cur = cur[key];
  }
  return { found: true, value: cur };
}

/**
 * Unread keys of `doc` (written in `dialect`) that `stored` does not already hold with the same
 * value at the same place (the path renamed into the stored document's dialect).
 */
function addedUnread(unread: UnreadKey[], doc: Doc, dialect: ConfigDialect, stored: Doc | undefined): UnreadKey[] {
  if (!stored) return unread;
  const storedIn = storedDialect(stored);
  return unread.filter((u) => {
    const have = valueAt(stored, translatePath(u.path, dialect, storedIn));
    return !(have.found && sameJson(have.value, valueAt(doc, u.path).value));
  });
}

const MIXED = `(root): mixes the two dialects: ${DIALECT_NAMES.native.section} (native) and ${DIALECT_NAMES.patroni.section} (the reference's) are the same section; write one`;

/** A document in the patroni dialect keeps its `postgresql` section (empty if need be): it marks the dialect. */
function keepDialect(doc: Doc, dialect: ConfigDialect): Doc {
  return dialect === 'patroni' && !Object.hasOwn(doc, DIALECT_NAMES.patroni.section)
    ? { ...doc, [DIALECT_NAMES.patroni.section]: {} }
    : doc;
}

/** One setting a replacement leaves out: its path (stored dialect), the stored value and the default it falls back to. */
export interface DefaultedSetting {
  path: string[];
  stored: unknown;
  default: unknown;
}

/**
 * `ttl: 40 -> 30`, `synchronous_mode: true -> false` (values as JSON, `absent` when the default is
 * no value), ASCII only (it goes into a response header: other characters as `\uXXXX`).
 */
export function formatDefaulted(d: DefaultedSetting): string {
  const show = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v));
  return `${d.path.join('.')}: ${show(d.stored)} -> ${show(d.default)}`.replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * Settings whose default is less safe than a stored value: left out of a replacement they are
 * refused (the operator sets them explicitly, or deletes them with a PATCH `null`). Each gives why
 * when the stored effective value `v` is one its default would weaken, else undefined.
 */
export const DROP_GUARDS: Readonly<Record<string, (v: unknown) => string | undefined>> = {
  standby_cluster: (v) =>
    isMapping(v) ? 'the cluster would stop replicating from its remote: its standby leader would be promoted' : undefined,
  synchronous_mode: (v) =>
    v === true || v === 'quorum'
      ? 'synchronous replication would be turned off: commits acknowledged from then on could be lost in a failover'
      : undefined,
  synchronous_mode_strict: (v) => (v === true ? 'the primary would acknowledge commits without a synchronous standby' : undefined),
  synchronous_node_count: (v) => (typeof v === 'number' && v > 1 ? 'commits would wait for fewer synchronous standbys' : undefined),
  maximum_lag_on_failover: (v) =>
    typeof v === 'number' && v < DYNAMIC_DEFAULTS.maximum_lag_on_failover
      ? 'a replica further behind could be promoted (more acknowledged commits lost in a failover)'
      : undefined,
  pause: (v) => (v === true ? 'the cluster would leave maintenance mode: automatic failover resumes' : undefined),
  slots: (v) => (isMapping(v) && Object.keys(v).length > 0 ? 'the leader would drop these permanent replication slots' : undefined),
  permanent_slots: (v) =>
    isMapping(v) && Object.keys(v).length > 0 ? 'the leader would drop these permanent replication slots' : undefined,
  permanent_replication_slots: (v) =>
    isMapping(v) && Object.keys(v).length > 0 ? 'the leader would drop these permanent replication slots' : undefined,
  ignore_slots: (v) => (Array.isArray(v) && v.length > 0 ? 'the agent could drop the slots it is told to leave alone' : undefined),
};

/**
 * The defaults of the settings `withDefaults` leaves absent (docs/configuration.md "Dynamic
 * configuration"); the others (`standby_cluster`, the slots) have none: absent means none.
 */
const ABSENT_DEFAULTS: Readonly<Record<string, unknown>> = {
  pause: false,
  failsafe_mode: false,
  synchronous_mode: false,
  synchronous_mode_strict: false,
  synchronous_node_count: 1,
  maximum_lag_on_syncnode: -1,
  member_slots_ttl: 1800,
};

/**
 * The settings the agent reads that `stored` holds and `next` leaves out (so they fall back to
 * their defaults), with the stored and the default effective value; paths in `stored`'s dialect.
 */
export function defaultedSettings(stored: Doc | undefined, next: Doc): DefaultedSetting[] {
  if (!stored) return [];
  const dialect = storedDialect(stored);
  const s = renameDocument(stored, dialect, 'native');
  const n = renameDocument(next, storedDialect(next), 'native');
  const before = withDefaults(stored) as unknown as Doc;
  const after = withDefaults(next) as unknown as Doc;
  const out: DefaultedSetting[] = [];
  const add = (path: string[]) => {
    if (!valueAt(s, path).found || valueAt(n, path).found) return;
    const was = valueAt(before, path).value;
    const now = valueAt(after, path).value ?? (path.length === 1 ? ABSENT_DEFAULTS[path[0]!] : undefined);
    if (!sameJson(was, now)) out.push({ path: translatePath(path, 'native', dialect), stored: was, default: now });
  };
  for (const k of DYNAMIC_TOP_KEYS) add([k]);
  const section = s['database'];
  if (isMapping(section)) for (const k of DATABASE_SECTION_KEYS) add(['database', k]);
  return out;
}

/** Problems of the settings `defaulted` whose defaults are less safe ({@link DROP_GUARDS}). */
function unsafeDrops(defaulted: DefaultedSetting[]): string[] {
  return defaulted.flatMap((d) => {
    const guard = d.path.length === 1 ? DROP_GUARDS[d.path[0]!] : undefined;
    const why = guard?.(d.stored);
    return why === undefined
      ? []
      : [
          `${d.path.join('.')}: left out, it would fall back to ${d.default === undefined ? 'none' : `its default ${JSON.stringify(d.default)}`}: ${why}; send it with the value you want, or delete it with PATCH null`,
        ];
  });
}

/** Result of a change check: the document to write (in the stored dialect), or every problem. */
export type ChangeResult =
  | { ok: true; document: Doc; dialect: ConfigDialect; defaulted: DefaultedSetting[] }
  | { ok: false; problems: string[] };

/**
 * PATCH /config: merges `patch` into `stored` (`null` deletes). Problems: a mixed body, unread
 * keys the patch adds or changes (`null` deletes any key), schema problems of the merged
 * document. The document comes back in `stored`'s dialect; `defaulted` lists the settings a
 * `null` deleted.
 */
export function checkPatch(stored: Doc, patch: Doc): ChangeResult {
  const written = writtenDialect(patch);
  if (written === 'both') return { ok: false, problems: [MIXED] };
  const dialect = storedDialect(stored);
  // A section the stored document already holds is that section (a native document may keep an
  // unread `postgresql` section: `{"postgresql": null}` deletes it, never `database`).
  const from = written !== undefined && !Object.hasOwn(stored, DIALECT_NAMES[written].section) ? written : dialect;
  const unread = addedUnread(unreadKeys(patch, { skipNull: true }), patch, from, stored);
  if (unread.length) return { ok: false, problems: unread.map(formatUnread) };
  const merged = keepDialect(mergeDocuments(stored, renameDocument(patch, from, dialect)), dialect);
  const checked = validateDynamicDocument(merged);
  if (!checked.ok) return checked;
  return { ok: true, document: checked.value, dialect, defaulted: defaultedSettings(stored, checked.value) };
}

/**
 * PUT /config and `edit-config --replace`: `body` replaces `stored` (undefined: no stored
 * document). Problems: a mixed body, unread keys not already stored with the same value, schema
 * problems, a body holding no setting the agent reads, settings left out whose defaults are less
 * safe ({@link DROP_GUARDS}). A body in the other dialect is converted to the stored one
 * (`convertDocument`: it keeps its meaning); `defaulted` lists the settings left out.
 */
export function checkReplacement(stored: Doc | undefined, body: Doc): ChangeResult {
  const written = writtenDialect(body);
  if (written === 'both') return { ok: false, problems: [MIXED] };
  const dialect: ConfigDialect = stored ? storedDialect(stored) : written === 'patroni' ? 'patroni' : 'native';
  const from = written ?? dialect;
  const unread = addedUnread(unreadKeys(body), body, from, stored);
  if (unread.length) return { ok: false, problems: unread.map(formatUnread) };
  const next = keepDialect(convertDocument(body, from, dialect), dialect);
  const checked = validateDynamicDocument(next);
  if (!checked.ok) return checked;
  if (readKeys(body).length === 0) {
    return {
      ok: false,
      problems: [
        '(root): holds no setting the agent reads (a replacement is the whole configuration): send the settings, or change single keys with PATCH',
      ],
    };
  }
  const defaulted = defaultedSettings(stored, checked.value);
  const unsafe = unsafeDrops(defaulted);
  if (unsafe.length) return { ok: false, problems: unsafe };
  return { ok: true, document: checked.value, dialect, defaulted };
}

/**
 * `hactl edit-config` (the editor, `-s`, `-p`, `--apply`): `after` is `before` as the operator
 * changed it. A database section of the other dialect that `before` did not hold (`-p` writes
 * `database.parameters` into a patroni-dialect document) is merged into the stored dialect's
 * section; the rest as {@link checkPatch}: unread keys added or changed are refused, keys already
 * stored are kept. `defaulted` lists the settings the edit removed.
 */
export function checkEdit(before: Doc, after: Doc): ChangeResult {
  const dialect = storedDialect(before);
  const own = DIALECT_NAMES[dialect].section;
  const other = DIALECT_NAMES[dialect === 'native' ? 'patroni' : 'native'].section;
  let next = after;
  if (Object.hasOwn(after, other) && !Object.hasOwn(before, other)) {
    const { [other]: foreign, ...rest } = after;
    const renamed = renameDocument({ [other]: foreign }, dialect === 'native' ? 'patroni' : 'native', dialect);
    next =
      isMapping(rest[own]) && isMapping(renamed[own])
        ? { ...rest, [own]: mergeDocuments(rest[own] as Doc, renamed[own] as Doc) }
        : { ...rest, ...renamed };
  }
  next = keepDialect(next, dialect);
  const unread = addedUnread(unreadKeys(next), next, dialect, before);
  if (unread.length) return { ok: false, problems: unread.map(formatUnread) };
  const checked = validateDynamicDocument(next);
  if (!checked.ok) return checked;
  return { ok: true, document: checked.value, dialect, defaulted: defaultedSettings(before, checked.value) };
}

/**
 * `hactl convert-config`: `stored` converted to `to` so that it means the same
 * (`convertDocument`: renamed, the defaults that differ written out). Keys the agent does not
 * read stay where they are (the database section's go with it). Undefined when `stored` already
 * is in `to`.
 */
export function convertStored(stored: Doc, to: ConfigDialect): Doc | undefined {
  const from = storedDialect(stored);
  if (from === to) return undefined;
  return keepDialect(convertDocument(stored, from, to), to);
}

/**
 * The problems of a checked document's `database.parameters` (or the patroni dialect's
 * `postgresql.parameters`) against a server's settings catalogue: unknown names and values the
 * server would refuse (src/domain/pg-parameters.ts `checkParameters`), as
 * `<section>.parameters.<name>: <problem>` lines. The one check of PATCH/PUT /config and
 * `hactl edit-config` (issue 30). None without a catalogue.
 */
export function parameterProblems(checked: { document: Doc; dialect: ConfigDialect }, catalogue: SettingsCatalogue | undefined): string[] {
  if (!catalogue) return [];
  const section = DIALECT_NAMES[checked.dialect].section;
  const database = checked.document[section];
  const params = isMapping(database) ? database['parameters'] : undefined;
  if (!isMapping(params)) return [];
  return checkParameters(params as Record<string, ParameterValue>, catalogue).map((p) =>
    p.startsWith('database.') ? `${section}.${p.slice('database.'.length)}` : p,
  );
}
