/**
 * Loading collector configuration (pg_exporter's format): one YAML file (a map branch ->
 * collector) or a directory of `.yml`/`.yaml` files merged in byte-wise name order, a later
 * branch replacing an earlier one as a whole. Rules: pg_exporter.md §1.1–§1.4.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as v from 'valibot';
import { parse as parseYaml } from 'yaml';
import { CollectorSchema, ColumnSchema } from './config-schema.ts';
import { parseGoFloat } from './go-float.ts';
import type { CollectorDef, ColumnDef, LoadedConfig } from './types.ts';

/** A configuration that cannot be used; `message` names the file and the problem. */
export class ConfigError extends Error {
  readonly code = 'ECONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Parses YAML twice: with the core schema for values, with failsafe to keep scalar source text. */
function parseTwice(text: string): { data: unknown; raw: unknown } {
  return { data: parseYaml(text, { schema: 'core' }), raw: parseYaml(text, { schema: 'failsafe' }) };
}

function rawText(raw: unknown, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof raw === 'string') return raw;
  return String(value);
}

function issueText(issues: v.BaseIssue<unknown>[]): string {
  return issues.map((i) => `${v.getDotPath(i) ?? ''}${v.getDotPath(i) ? ': ' : ''}${i.message}`).join('; ');
}

function buildColumn(branch: string, item: Record<string, unknown>, rawItem: unknown): ColumnDef {
  const [key, value] = Object.entries(item)[0]!;
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new ConfigError(`collector ${branch}: column ${key} must be a non-empty map`);
  }
  const parsed = v.safeParse(ColumnSchema, value);
  if (!parsed.success) throw new ConfigError(`collector ${branch}: column ${key}: ${issueText(parsed.issues)}`);
  const c = parsed.output;
  const rawCol = (rawItem as Record<string, Record<string, unknown>> | undefined)?.[key] ?? {};
  const col: ColumnDef = { name: c.name ?? key, usage: c.usage, scale: 1 };
  if (c.rename) col.rename = c.rename;
  if (c.description) col.description = c.description;
  const scaleText = rawText(rawCol['scale'], c.scale);
  if (scaleText !== undefined) {
    const s = parseGoFloat(scaleText);
    if (s === undefined) throw new ConfigError(`collector ${branch}: column ${key}: scale ${JSON.stringify(scaleText)} is not a float`);
    col.scaleText = scaleText;
    col.scale = s;
  }
  const defaultText = rawText(rawCol['default'], c.default);
  if (defaultText !== undefined) {
    const d = parseGoFloat(defaultText);
    if (d === undefined) throw new ConfigError(`collector ${branch}: column ${key}: default ${JSON.stringify(defaultText)} is not a float`);
    col.defaultText = defaultText;
    col.defaultValue = d;
  }
  if (c.bucket && c.bucket.length > 0) col.bucket = c.bucket;
  return col;
}

/** Cross-field rules of pg_exporter v1.4 (§1.4); throws ConfigError naming the branch. */
function validateCollector(c: CollectorDef): void {
  const seenCols = new Set<string>();
  const labels = new Set<string>();
  const families = new Set<string>();
  let values = 0;
  const family = (n: string) => {
    if (!METRIC_NAME.test(n)) throw new ConfigError(`collector ${c.branch}: invalid metric name ${n}`);
    if (families.has(n)) throw new ConfigError(`collector ${c.branch}: metric family ${n} defined twice`);
    families.add(n);
  };
  for (const col of c.columns) {
    if (seenCols.has(col.name)) throw new ConfigError(`collector ${c.branch}: duplicate column ${col.name}`);
    seenCols.add(col.name);
    if (col.usage === 'LABEL') {
      const l = col.rename ?? col.name;
      if (!LABEL_NAME.test(l) || l.startsWith('__')) throw new ConfigError(`collector ${c.branch}: invalid label name ${l}`);
      if (labels.has(l)) throw new ConfigError(`collector ${c.branch}: duplicate label name ${l}`);
      labels.add(l);
    } else if (col.usage !== 'DISCARD') {
      values++;
      const base = `${c.name}_${col.rename ?? col.name}`;
      if (col.usage === 'HISTOGRAM') {
        const b = col.bucket;
        if (!b || b.length === 0) throw new ConfigError(`collector ${c.branch}: histogram column ${col.name} has no bucket`);
        for (let i = 0; i < b.length; i++) {
          if (!Number.isFinite(b[i]!))
            throw new ConfigError(`collector ${c.branch}: histogram column ${col.name}: bucket bounds must be finite`);
          if (i > 0 && !(b[i]! > b[i - 1]!))
            throw new ConfigError(`collector ${c.branch}: histogram column ${col.name}: buckets must be strictly increasing`);
        }
        family(`${base}_bucket`);
        family(`${base}_count`);
        family(`${base}_sum`);
      } else family(base);
    }
  }
  if (values === 0) throw new ConfigError(`collector ${c.branch} defines no GAUGE/COUNTER/HISTOGRAM columns`);
  if (labels.has('le') && c.columns.some((x) => x.usage === 'HISTOGRAM'))
    throw new ConfigError(`collector ${c.branch}: histogram collector cannot have a label named le`);
}

/**
 * Parses one file's text into collectors (in file order). `defaultPriority` applies to collectors
 * without `priority` (0 for a single file, 100+rank in directory mode). A document that is empty
 * or only comments yields no collectors. Throws ConfigError on a YAML or validation error.
 */
export function parseCollectorFile(text: string, fileName: string, defaultPriority = 0): CollectorDef[] {
  let docs: { data: unknown; raw: unknown };
  try {
    docs = parseTwice(text);
  } catch (e) {
    throw new ConfigError(`${fileName}: YAML error: ${(e as Error).message.split('\n')[0]}`);
  }
  const { data, raw } = docs;
  if (data === null || data === undefined) return [];
  if (typeof data !== 'object' || Array.isArray(data)) throw new ConfigError(`${fileName}: top level must be a map of collector branches`);
  const out: CollectorDef[] = [];
  for (const [branch, body] of Object.entries(data as Record<string, unknown>)) {
    if (body === null || body === undefined) throw new ConfigError(`${fileName}: collector ${branch} is null`);
    const parsed = v.safeParse(CollectorSchema, body);
    if (!parsed.success) throw new ConfigError(`${fileName}: collector ${branch}: ${issueText(parsed.issues)}`);
    const r = parsed.output;
    const rawBody = (raw as Record<string, Record<string, unknown>>)[branch] ?? {};
    const rawMetrics = (rawBody['metrics'] as unknown[] | undefined) ?? [];
    let timeout = r.timeout ?? 0;
    if (timeout === 0) timeout = 0.1;
    const c: CollectorDef = {
      branch,
      name: r.name || branch,
      desc: r.desc ?? '',
      query: r.query,
      predicates: (r.predicate_queries ?? []).map((p) => ({
        ...(p.name ? { name: p.name } : {}),
        query: p.predicate_query,
        ttlSeconds: p.ttl ?? 0,
      })),
      tags: r.tags ?? [],
      ttlSeconds: r.ttl ?? 0,
      timeoutSeconds: timeout,
      priority: r.priority ?? defaultPriority,
      minVersion: r.min_version ?? 0,
      maxVersion: r.max_version ?? 0,
      fatal: r.fatal ?? false,
      skip: r.skip ?? false,
      columns: r.metrics.map((m, i) => {
        try {
          return buildColumn(branch, m, rawMetrics[i]);
        } catch (e) {
          throw new ConfigError(`${fileName}: ${(e as Error).message}`);
        }
      }),
      source: fileName,
    };
    try {
      validateCollector(c);
    } catch (e) {
      throw new ConfigError(`${fileName}: ${(e as Error).message}`);
    }
    out.push(c);
  }
  return out;
}

/** Byte-wise comparison of file names (Go's sort.Strings order), not locale order. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * Sorts collectors for planning and /explain: ascending priority, ties by branch name (stable
 * and deterministic; upstream leaves ties unordered).
 */
export function sortCollectors(cs: CollectorDef[]): CollectorDef[] {
  return [...cs].sort((a, b) => a.priority - b.priority || byteOrder(a.branch, b.branch));
}

/**
 * Loads a file or a directory. A single file must parse and validate completely. In a directory,
 * only its own `.yml`/`.yaml` entries count, in byte-wise name order; a bad file is skipped with
 * a warning `skip config <file> due to error: <problem>`; default priority is 100 + the 1-based
 * rank among files that loaded. Throws ConfigError when the path is unreadable, a single file is
 * invalid, or a directory yields no collector at all.
 */
export function loadConfig(path: string): LoadedConfig {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    throw new ConfigError(`fail loading config ${path}: ${(e as Error).message}`);
  }
  if (!st.isDirectory()) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      throw new ConfigError(`fail loading config ${path}: ${(e as Error).message}`);
    }
    const cs = parseCollectorFile(text, basename(path), 0);
    return { path, collectors: sortCollectors(cs), warnings: [] };
  }
  const names = readdirSync(path, { withFileTypes: true })
    .filter((d) => (d.isFile() || d.isSymbolicLink()) && /\.ya?ml$/.test(d.name))
    .map((d) => d.name)
    .sort(byteOrder);
  const merged = new Map<string, CollectorDef>();
  const warnings: string[] = [];
  let rank = 0;
  for (const name of names) {
    let cs: CollectorDef[];
    try {
      const text = readFileSync(join(path, name), 'utf8');
      // Parse first with a placeholder priority so that a bad file does not consume a rank.
      cs = parseCollectorFile(text, name, NaN);
    } catch (e) {
      warnings.push(`skip config ${join(path, name)} due to error: ${(e as Error).message}`);
      continue;
    }
    rank++;
    for (const c of cs) {
      if (Number.isNaN(c.priority)) c.priority = 100 + rank;
      merged.delete(c.branch);
      merged.set(c.branch, c);
    }
  }
  if (merged.size === 0)
    throw new ConfigError(`no valid queries loaded from config dir ${path}${warnings.length ? `: ${warnings.join('; ')}` : ''}`);
  return { path, collectors: sortCollectors([...merged.values()]), warnings };
}
