/**
 * `bootstrap.initdb` options (patroni.md §4.1): a list whose entries are either a flag name
 * (`data-checksums`) or a single-key map (`{encoding: UTF8}`), turned into initdb arguments.
 */
import * as v from 'valibot';
import { mapping } from './fields.ts';

/** One entry as written in YAML. */
export type InitdbOption = string | Record<string, string | number | boolean>;

/** Schema of one entry: a non-empty string, or a map with exactly one key and a scalar value. */
export const InitdbOptionSchema = v.union(
  [
    v.pipe(v.string(), v.nonEmpty('must not be empty')),
    v.pipe(
      mapping(v.record(v.string(), v.union([v.string(), v.number(), v.boolean()]))),
      v.check((m) => Object.keys(m).length === 1, 'a map entry must have exactly one key, e.g. {encoding: UTF8}'),
    ),
  ],
  (i) => `must be an option name or a one-key map such as {encoding: UTF8}, got ${i.received}`,
);

/**
 * Normalizes options to initdb arguments, in order:
 * `data-checksums` -> `--data-checksums`; `{encoding: UTF8}` -> `--encoding=UTF8`;
 * `{data-checksums: true}` -> `--data-checksums`; `{data-checksums: false}` -> dropped.
 * Leading dashes already written (`--data-checksums`) are not doubled.
 */
export function normalizeInitdbOptions(options: readonly InitdbOption[]): string[] {
  const out: string[] = [];
  for (const o of options) {
    if (typeof o === 'string') {
      out.push(`--${stripDashes(o)}`);
      continue;
    }
    for (const [key, value] of Object.entries(o)) {
      if (value === false) continue;
      out.push(value === true ? `--${stripDashes(key)}` : `--${stripDashes(key)}=${value}`);
    }
  }
  return out;
}

function stripDashes(s: string): string {
  return s.trim().replace(/^-+/, '');
}
