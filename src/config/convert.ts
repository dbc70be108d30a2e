/**
 * `ha config convert FILE`: a member configuration file of either dialect printed in the native
 * form, comments and key order kept: the operations of the translation
 * (src/config/local-dialect.ts `translateFile`) applied to the YAML document itself, which is then
 * written as YAML 1.2 (the native files' version; a value the reference read as YAML 1.1, such as
 * `on`, is written as what it meant, `true`).
 */
import YAML, { isMap, isScalar, type Document, type Pair } from 'yaml';
import { ConfigError } from './config-error.ts';
import { readFileDocument, REFERENCE_YAML } from './load.ts';
import type { FileOp } from './local-dialect.ts';

/** The comments of a pair (before its key, after its value), joined. */
function pairComments(pair: Pair): string | undefined {
  const parts: string[] = [];
  const key = pair.key as { commentBefore?: string | null } | null;
  const value = pair.value as { commentBefore?: string | null; comment?: string | null } | null;
  for (const c of [key?.commentBefore, value?.commentBefore, value?.comment]) if (c) parts.push(c);
  return parts.length ? parts.join('\n') : undefined;
}

/**
 * Applies one translation operation to the YAML document (mutated); comments stay with their
 * keys, and those of a deleted key (a mapping left empty by commented-out lines carries the
 * lines after it) move to the end of its parent mapping.
 */
function applyToDocument(doc: Document, op: FileOp): void {
  if (op.op === 'delete') {
    const parent = op.path.length === 1 ? doc.contents : doc.getIn(op.path.slice(0, -1), true);
    const key = op.path[op.path.length - 1];
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === key);
      const comments = pair ? pairComments(pair) : undefined;
      if (comments) parent.comment = parent.comment ? `${comments}\n${parent.comment}` : comments;
    }
    doc.deleteIn(op.path);
    return;
  }
  if (op.op === 'set') {
    doc.setIn(op.path, doc.createNode(op.value));
    return;
  }
  const parent = op.path.length === 1 ? doc.contents : doc.getIn(op.path.slice(0, -1), true);
  if (!isMap(parent)) return;
  const key = op.path[op.path.length - 1];
  for (const pair of parent.items) {
    if (isScalar(pair.key) && pair.key.value === key) {
      pair.key.value = op.to;
      return;
    }
  }
}

/**
 * The native form of the member configuration `text` (either dialect), as YAML text with the
 * comments of `text`. `source` names the text in errors.
 * Errors: throws ConfigError for YAML syntax errors and for every key the translation refuses
 * (keys of the reference that are not implemented, unread keys of `bootstrap.dcs`); values are
 * not validated here (`ha config check` does that).
 */
export function convertConfigText(text: string, source: string): string {
  const t = readFileDocument(text, source);
  if (t.problems.length > 0) throw new ConfigError(source, t.problems);
  const doc = YAML.parseDocument(text, t.dialect === 'patroni' ? REFERENCE_YAML : { version: '1.2' });
  for (const op of t.ops) applyToDocument(doc, op);
  doc.setSchema('1.2');
  return doc.toString();
}
