/**
 * Pure parts of `edit-config` and `show-config`: the YAML rendering of the dynamic configuration
 * (keys sorted, so diffs are stable), `-s key=value` / `-p param=value` changes, `--apply` patches
 * (recursive merge, `null` deletes) and the checks of the result (src/config/dynamic-change.ts:
 * keys the agent does not read, the dialect, types and the timing rule).
 */
import YAML from 'yaml';
import { checkEdit, checkReplacement, type ChangeResult } from '../config/dynamic-change.ts';
import { DIALECT_NAMES, storedDialect } from '../domain/config-dialect.ts';
import { usageError } from './errors.ts';

type Doc = Record<string, unknown>;

function isObject(v: unknown): v is Doc {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isObject(v)) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortKeys(v[k])]),
  );
}

/** The configuration as YAML, keys sorted at every level ('{}' for an empty document). */
export function configYaml(doc: Doc): string {
  return YAML.stringify(sortKeys(doc));
}

/** Parses the value of `-s`/`-p` as YAML (`10` → number, `on` → string, `null` → null, `a b` → string). */
function parseValue(text: string): unknown {
  try {
    return YAML.parse(text, { version: '1.2' }) as unknown;
  } catch {
    return text;
  }
}

/** Sets `path` (already split) in `doc` (mutated); `null` deletes the key. */
function setPath(doc: Doc, path: string[], value: unknown): void {
  let cur = doc;
  for (const key of path.slice(0, -1)) {
    const next = cur[key];
    if (!isObject(next)) {
      if (value === null) return;
      cur[key] = {};
    }
    cur = cur[key] as Doc;
  }
  const last = path[path.length - 1]!;
  if (value === null) delete cur[last];
  else cur[last] = value;
}

/** Splits `key=value`; throws a usage error naming the option when there is no `=` or no key. */
function splitAssignment(option: string, text: string): [string, string] {
  const i = text.indexOf('=');
  if (i <= 0) throw usageError(`invalid ${option} ${JSON.stringify(text)}: expected key=value`);
  return [text.slice(0, i).trim(), text.slice(i + 1)];
}

/**
 * Applies `-s key.path=value` settings (dotted path into the document) and `-p name=value`
 * database parameters (`<section>.parameters.<name>`: `database`, or `postgresql` in a document
 * of the reference's dialect). Values are YAML scalars; `null` deletes. Returns a new document.
 */
export function applySettings(doc: Doc, sets: string[], params: string[]): Doc {
  const section = DIALECT_NAMES[storedDialect(doc)].section;
  const out = structuredClone(doc);
  for (const s of sets) {
    const [key, value] = splitAssignment('-s', s);
    setPath(out, key.split('.'), parseValue(value));
  }
  for (const p of params) {
    const [name, value] = splitAssignment('-p', p);
    setPath(out, [section, 'parameters', name], parseValue(value));
  }
  return out;
}

/** Recursive merge of `patch` into `doc` (PATCH /config semantics): objects merge, `null` deletes, the rest replaces. */
export function mergePatch(doc: Doc, patch: Doc): Doc {
  const out: Doc = structuredClone(doc);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (isObject(v) && isObject(out[k])) out[k] = mergePatch(out[k], v);
    else out[k] = structuredClone(v);
  }
  return out;
}

/**
 * Parses a YAML (or JSON) document given to `--apply`/`--replace`/the editor. Throws a usage error
 * naming `source` when it is not a mapping.
 */
export function parseConfigText(text: string, source: string): Doc {
  let v: unknown;
  try {
    v = YAML.parse(text);
  } catch (e) {
    throw usageError(`${source}: not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (v === null || v === undefined) return {};
  if (!isObject(v)) throw usageError(`${source}: the configuration must be a mapping`);
  return v;
}

/**
 * Checks `after`, the operator's edit of the stored `before`: `replace` (the whole document from
 * `--replace`) as PUT /config, else as a PATCH (src/config/dynamic-change.ts). Returns the
 * document to write (in the stored dialect) and the settings it lets fall back to their
 * defaults, or every problem (`<path>: <problem>`).
 */
export function checkEditedConfig(before: Doc, after: Doc, replace: boolean): ChangeResult {
  return replace ? checkReplacement(before, after) : checkEdit(before, after);
}

/** Validates a new document as an edit of `{}`: undefined when valid, else the problems (`<path>: <problem>`). */
export function configProblems(doc: Doc): string[] | undefined {
  const r = checkEdit({}, doc);
  return r.ok ? undefined : r.problems;
}

/** True when two documents are equal as JSON with sorted keys. */
export function sameConfig(a: Doc, b: Doc): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}
