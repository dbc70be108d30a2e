/**
 * The two dialects of the dynamic configuration document (the DCS key `config`, `bootstrap.dcs`,
 * the bodies of PATCH/PUT /config): ours (`native`) and the reference's (`patroni`, patroni.md
 * §4.2). They differ in two names and two defaults:
 *
 * | | native | patroni |
 * | --- | --- | --- |
 * | the section of the database settings | `database` | `postgresql` |
 * | rewind a diverged member with pg_rewind | `database.use_db_rewind` (default **true**) | `postgresql.use_pg_rewind` (default false) |
 * | wipe and re-clone after a failed rewind | `remove_data_directory_on_rewind_failure` (default **true**) | the same key (default false) |
 *
 * Every other key is the same in both. A stored document is in the patroni dialect when it has a
 * `postgresql` section and no `database` section, else native; it is read with the defaults of
 * its dialect (a document the reference's agents wrote meant the reference's defaults), and a
 * cluster keeps its dialect until an operator converts it (`hactl convert-config`). Pure.
 */

/** One of the two dialects. */
export type ConfigDialect = 'native' | 'patroni';

/** The dialects' names of the database section and of the rewind switch. */
export const DIALECT_NAMES: Readonly<Record<ConfigDialect, { section: string; rewind: string }>> = {
  native: { section: 'database', rewind: 'use_db_rewind' },
  patroni: { section: 'postgresql', rewind: 'use_pg_rewind' },
};

/**
 * The defaults of the database section (by native name) that differ between the dialects:
 * ours (src/domain/dynamic-config.ts DYNAMIC_DEFAULTS, docs/ha.md "Divergence": "Defaults") and
 * the reference's (patroni.md §4.2: `use_pg_rewind` false; `remove_data_directory_on_rewind_failure`
 * false).
 */
export const DIALECT_DEFAULTS: Readonly<
  Record<ConfigDialect, Readonly<Record<'use_db_rewind' | 'remove_data_directory_on_rewind_failure', boolean>>>
> = {
  native: { use_db_rewind: true, remove_data_directory_on_rewind_failure: true },
  patroni: { use_db_rewind: false, remove_data_directory_on_rewind_failure: false },
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The dialect a document is written in, from its database section: `native` (`database`),
 * `patroni` (`postgresql`), `both` (the two sections: a mixed document), or undefined (neither:
 * the document's keys are the same in both dialects). Anything that is not a mapping: undefined.
 */
export function writtenDialect(doc: unknown): ConfigDialect | 'both' | undefined {
  if (!isObject(doc)) return undefined;
  const native = Object.hasOwn(doc, 'database');
  const patroni = Object.hasOwn(doc, 'postgresql');
  return native && patroni ? 'both' : native ? 'native' : patroni ? 'patroni' : undefined;
}

/**
 * The dialect of a stored document: `patroni` when it has a `postgresql` section and no
 * `database` section, else `native` (a document with both sections is native, its `postgresql`
 * section not read).
 */
export function storedDialect(doc: unknown): ConfigDialect {
  return writtenDialect(doc) === 'patroni' ? 'patroni' : 'native';
}

/**
 * The name of the key `nativeKey` of the database section in `dialect` (only the rewind switch
 * differs).
 */
export function sectionKeyName(nativeKey: string, dialect: ConfigDialect): string {
  return nativeKey === DIALECT_NAMES.native.rewind ? DIALECT_NAMES[dialect].rewind : nativeKey;
}

/**
 * A dot path (`database.use_db_rewind`, `ttl`) of a document in dialect `from` written in dialect
 * `to`: the section's name (first segment) and the rewind switch inside it are renamed.
 */
export function translatePath(path: readonly string[], from: ConfigDialect, to: ConfigDialect): string[] {
  if (from === to || path[0] !== DIALECT_NAMES[from].section) return [...path];
  const out = [DIALECT_NAMES[to].section, ...path.slice(1)];
  if (out.length >= 2 && out[1] === DIALECT_NAMES[from].rewind) out[1] = DIALECT_NAMES[to].rewind;
  return out;
}

/**
 * The database section of dialect `from` renamed to dialect `to` (a copy): the rewind switch gets
 * its other name unless a key of that name is already there (then both stay as they are, and the
 * one of the wrong dialect is reported as not read). Other keys, in order, unchanged.
 */
function renameSection(section: Record<string, unknown>, from: ConfigDialect, to: ConfigDialect): Record<string, unknown> {
  const fromKey = DIALECT_NAMES[from].rewind;
  const toKey = DIALECT_NAMES[to].rewind;
  const rename = Object.hasOwn(section, fromKey) && !Object.hasOwn(section, toKey);
  return Object.fromEntries(Object.entries(section).map(([k, v]) => [rename && k === fromKey ? toKey : k, v]));
}

/**
 * `doc`, written in dialect `from`, renamed into dialect `to` (a new top-level object, in the same
 * key order): the section's name and its rewind switch. Nothing else changes: a section that is
 * not a mapping is renamed as it is, and no default is added (see {@link convertDocument}).
 * With `from === to`, or no section of `from`, a shallow copy.
 */
export function renameDocument(doc: Record<string, unknown>, from: ConfigDialect, to: ConfigDialect): Record<string, unknown> {
  const fromSection = DIALECT_NAMES[from].section;
  if (from === to || !Object.hasOwn(doc, fromSection) || Object.hasOwn(doc, DIALECT_NAMES[to].section)) return { ...doc };
  return Object.fromEntries(
    Object.entries(doc).map(([k, v]) =>
      k === fromSection ? [DIALECT_NAMES[to].section, isObject(v) ? renameSection(v, from, to) : v] : [k, v],
    ),
  );
}

/**
 * A whole document of dialect `from` converted to dialect `to` so that it means the same:
 * renamed ({@link renameDocument}), and the defaults that differ between the dialects
 * ({@link DIALECT_DEFAULTS}) written out where `doc` leaves them to its dialect's defaults (a
 * database section is added when needed). Used by `hactl convert-config`, by `ha config
 * convert` for `bootstrap.dcs`, and by PUT /config for a body in the other dialect than the
 * stored document's.
 */
export function convertDocument(doc: Record<string, unknown>, from: ConfigDialect, to: ConfigDialect): Record<string, unknown> {
  if (from === to) return { ...doc };
  const out = renameDocument(doc, from, to);
  const sectionName = DIALECT_NAMES[to].section;
  const existing = out[sectionName];
  if (existing !== undefined && existing !== null && !isObject(existing)) return out;
  const section: Record<string, unknown> = { ...(existing ?? {}) };
  for (const [nativeKey, value] of Object.entries(DIALECT_DEFAULTS[from])) {
    const key = sectionKeyName(nativeKey, to);
    if (!Object.hasOwn(section, key)) section[key] = value;
  }
  out[sectionName] = section;
  return out;
}

/**
 * The stored document as the agent reads it, in the native dialect: a patroni-dialect document
 * renamed, with the reference's defaults written where they differ from ours and the document
 * leaves them out (so `withDefaults` fills only the defaults both dialects share). A native
 * document comes back as it is (same object). Never throws; anything that is not a mapping comes
 * back as it is.
 */
export function readAsNative(doc: unknown): unknown {
  if (!isObject(doc) || storedDialect(doc) === 'native') return doc;
  // A native-named rewind switch inside the reference's section is not read (it is reported).
  const pg = doc['postgresql'];
  const source =
    isObject(pg) && Object.hasOwn(pg, DIALECT_NAMES.native.rewind)
      ? { ...doc, postgresql: Object.fromEntries(Object.entries(pg).filter(([k]) => k !== DIALECT_NAMES.native.rewind)) }
      : doc;
  const out = renameDocument(source, 'patroni', 'native');
  const section = out['database'];
  if (section === null) out['database'] = {};
  else if (!isObject(section)) return out;
  const db = out['database'] as Record<string, unknown>;
  for (const [key, value] of Object.entries(DIALECT_DEFAULTS.patroni)) if (!Object.hasOwn(db, key)) db[key] = value;
  return out;
}
