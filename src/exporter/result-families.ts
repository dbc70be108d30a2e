/**
 * Turns one collector's result rows into metric families (pg_exporter.md §1.6, §1.11):
 * `<name>_<column|rename>` per value column, LABEL columns as labels in config order, HISTOGRAM
 * columns as snapshot `_bucket`/`_count`/`_sum` gauges grouped by label tuple.
 */
import { labelValue, sampleValue } from './convert.ts';
import { formatGoFloat } from './go-float.ts';
import { escapeLabel, labelLayout, RenderedFamily, type Family, type LabelLayout, type RowForm } from './exposition.ts';
import type { CollectorDef, ColumnDef } from './types.ts';

/** Integer text that Number() reads exactly and formatGoFloat writes back unchanged (|x| < 1e6, no leading zero, not -0). */
const SHORT_INT = /^(?:0|-?[1-9]\d{0,5})$/;

/** A query result as the executor sees it. */
export interface QueryResult {
  rows: Record<string, unknown>[];
  /** Column names and type OIDs, in result order. */
  columns: { name: string; type: number }[];
}

/** A query result with rows as arrays in `columns` order (postgres.js `.values()`): the exporter's form. */
export interface ArrayResult {
  values: unknown[][];
  columns: { name: string; type: number }[];
}

/** Rows of either form. */
export function resultRowCount(r: QueryResult | ArrayResult): number {
  return 'values' in r ? r.values.length : r.rows.length;
}

/**
 * Index of the column named `name` in `columns` as an object row sees it: the last column of that
 * name (postgres.js assigns `row[name]` column by column). -1 when absent.
 */
function columnIndex(columns: readonly { name: string }[], name: string): number {
  for (let i = columns.length - 1; i >= 0; i--) if (columns[i]!.name === name) return i;
  return -1;
}

/** Families plus warnings (missing value columns, column count mismatch). */
export interface BuiltResult {
  families: Family[];
  warnings: string[];
  /** Number of samples in `families`. */
  sampleCount: number;
}

/** Error thrown when the result cannot be used (missing label column, non-finite histogram value). */
export class ResultError extends Error {
  readonly code = 'ERESULT';
}

/**
 * Builds the families of `c` from `result`: the plain reference implementation. The exporter
 * serves `renderFamilies` (below); tests/exporter/render-equivalence.test.ts checks on random
 * results that both give the same output, which is why this simpler form is kept. Throws
 * ResultError when a configured LABEL column is missing (v1.4 rule) or a histogram observation is
 * not finite.
 */
export function buildFamilies(c: CollectorDef, result: QueryResult): BuiltResult {
  const warnings: string[] = [];
  const present = new Map(result.columns.map((col) => [col.name, col.type]));
  if (result.columns.length !== c.columns.length)
    warnings.push(`column count not match, result ${result.columns.length} ≠ config ${c.columns.length}`);
  const labelCols = c.columns.filter((col) => col.usage === 'LABEL');
  for (const l of labelCols) if (!present.has(l.name)) throw new ResultError(`missing label column ${l.name}`);
  const families: Family[] = [];
  let sampleCount = 0;
  // Label pairs computed once per row and shared (read-only) by every family of the collector.
  const rowLabels: [string, string][][] = result.rows.map((row) =>
    labelCols.map((l) => [l.rename ?? l.name, labelValue(row[l.name], present.get(l.name))]),
  );
  for (const col of c.columns) {
    if (col.usage === 'LABEL' || col.usage === 'DISCARD') continue;
    if (!present.has(col.name)) {
      warnings.push(`missing metric column ${col.name}`);
      continue;
    }
    const base = `${c.name}_${col.rename ?? col.name}`;
    if (col.usage === 'HISTOGRAM') {
      const fams = histogramFamilies(
        col,
        base,
        result.rows.map((row) => row[col.name]),
        rowLabels,
      );
      for (const f of fams) sampleCount += f.samples.length;
      families.push(...fams);
      continue;
    }
    const fam: Family = { name: base, help: col.description ?? '', type: col.usage === 'COUNTER' ? 'counter' : 'gauge', samples: [] };
    for (let ri = 0; ri < result.rows.length; ri++)
      fam.samples.push({ labels: rowLabels[ri]!, value: sampleValue(result.rows[ri]![col.name], col) });
    sampleCount += fam.samples.length;
    families.push(fam);
  }
  return { families, warnings, sampleCount };
}

/** Snapshot `_bucket`/`_count`/`_sum` gauges of one HISTOGRAM column, grouped by label tuple. */
function histogramFamilies(col: ColumnDef, base: string, column: unknown[], rowLabels: [string, string][][]): Family[] {
  const bounds = col.bucket ?? [];
  const groups = new Map<string, { labels: [string, string][]; counts: number[]; count: number; sum: number }>();
  for (let ri = 0; ri < column.length; ri++) {
    const raw = column[ri];
    if ((raw === null || raw === undefined) && col.defaultValue === undefined) continue;
    const x = sampleValue(raw, col);
    if (!Number.isFinite(x)) throw new ResultError(`histogram column ${col.name}: non-finite value ${x}`);
    const labels = rowLabels[ri]!;
    const key = JSON.stringify(labels);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { labels, counts: bounds.map(() => 0), count: 0, sum: 0 }));
    bounds.forEach((b, i) => {
      if (x <= b) g!.counts[i]!++;
    });
    g.count++;
    g.sum += x;
    if (!Number.isFinite(g.sum)) throw new ResultError(`histogram column ${col.name}: sum overflow`);
  }
  const help = (suffix: string) => (col.description ? `${col.description} (${suffix})` : suffix);
  const bucket: Family = { name: `${base}_bucket`, help: help('cumulative bucket'), type: 'gauge', samples: [] };
  const count: Family = { name: `${base}_count`, help: help('observation count'), type: 'gauge', samples: [] };
  const sum: Family = { name: `${base}_sum`, help: help('observation sum'), type: 'gauge', samples: [] };
  for (const g of groups.values()) {
    bounds.forEach((b, i) => bucket.samples.push({ labels: [...g.labels, ['le', formatGoFloat(b)]], value: g.counts[i]! }));
    bucket.samples.push({ labels: [...g.labels, ['le', '+Inf']], value: g.count });
    count.samples.push({ labels: g.labels, value: g.count });
    sum.samples.push({ labels: g.labels, value: g.sum });
  }
  return [bucket, count, sum];
}

/**
 * The fast path of buildFamilies (same families, same warnings and errors, same output once
 * rendered): label keys and label blocks are computed once per row with `constLabels` merged,
 * rows are sorted by key once for the whole collector and later duplicates removed, then each
 * value column becomes a RenderedFamily whose exposition lines are written here, while other
 * collectors' queries may still be running. HISTOGRAM columns take the generic path.
 */
export function renderFamilies(
  c: CollectorDef,
  result: QueryResult | ArrayResult,
  constLabels: readonly [string, string][] = [],
  layoutCache?: RenderCache,
): BuiltResult {
  const warnings: string[] = [];
  const present = new Map<string, number>();
  for (const col of result.columns) present.set(col.name, col.type);
  if (result.columns.length !== c.columns.length)
    warnings.push(`column count not match, result ${result.columns.length} ≠ config ${c.columns.length}`);
  const labelCols = c.columns.filter((col) => col.usage === 'LABEL');
  for (const l of labelCols) if (!present.has(l.name)) throw new ResultError(`missing label column ${l.name}`);
  let layout = layoutCache?.layout;
  if (!layout) {
    layout = labelLayout(
      labelCols.map((l) => l.rename ?? l.name),
      constLabels,
    );
    if (layoutCache) layoutCache.layout = layout;
  }
  const columns = result.columns;
  // Rows as arrays in column order (the exporter's queries arrive so; object rows are converted).
  const rows: unknown[][] = 'values' in result ? result.values : result.rows.map((row) => columns.map((col) => row[col.name]));
  const n = rows.length;
  const L = labelCols.length;
  const oids = labelCols.map((l) => present.get(l.name));
  const idx = labelCols.map((l) => columnIndex(columns, l.name));
  // Label values (row-major, config order).
  const vals = new Array<string>(n * L);
  for (let r = 0; r < n; r++) {
    const row = rows[r]!;
    for (let j = 0; j < L; j++) vals[r * L + j] = labelValue(row[idx[j]!], oids[j]);
  }
  // The same label values as this collector's previous result (the usual case: the same tables,
  // databases, settings scrape after scrape): its series order and label blocks still hold.
  const prev = layoutCache?.rows;
  let cached: CachedRows;
  if (prev && prev.n === n && sameStrings(prev.form.labelValues, vals)) {
    cached = prev;
  } else {
    cached = { n, ...rowForm(layout, vals, n, L), fams: new Map() };
    if (layoutCache) layoutCache.rows = cached;
  }
  const { form, texts } = cached;
  const { order } = form;
  const families: Family[] = [];
  let sampleCount = 0;
  let rowLabels: [string, string][][] | undefined;
  for (const col of c.columns) {
    if (col.usage === 'LABEL' || col.usage === 'DISCARD') continue;
    if (!present.has(col.name)) {
      warnings.push(`missing metric column ${col.name}`);
      continue;
    }
    const base = `${c.name}_${col.rename ?? col.name}`;
    if (col.usage === 'HISTOGRAM') {
      rowLabels ??= rows.map((_, r) => layout.names.map((name, j): [string, string] => [name, vals[r * L + j]!]));
      const ci = columnIndex(columns, col.name);
      const fams = histogramFamilies(
        col,
        base,
        rows.map((row) => row[ci]),
        rowLabels,
      );
      for (const f of fams) sampleCount += f.samples.length;
      families.push(...fams);
      continue;
    }
    const values = new Float64Array(n);
    const valueTexts = new Array<string>(n);
    const ci = columnIndex(columns, col.name);
    const unscaled = col.scale === 1;
    for (let r = 0; r < n; r++) {
      const raw = rows[r]![ci];
      // int8/numeric columns arrive as text: a short canonical integer is already its own Go %g text.
      if (unscaled && typeof raw === 'string' && SHORT_INT.test(raw)) {
        values[r] = Number(raw);
        valueTexts[r] = raw;
      } else {
        const v = sampleValue(raw, col);
        values[r] = v;
        valueTexts[r] = formatGoFloat(v);
      }
    }
    // One flat string per family, built here (while other collectors' queries still run): `+=`
    // would build a rope of m pieces that the final render then has to flatten, serially. The
    // family is written in chunks of CHUNK series: a chunk whose value texts are those of the
    // previous result (same label values) is reused as is, so idle tables cost a comparison.
    let ft = cached.fams.get(base);
    if (!ft) cached.fams.set(base, (ft = { values: undefined, offsets: undefined, lines: '' }));
    const lines = familyText(ft, base, texts, valueTexts, order);
    families.push(
      new RenderedFamily(base, col.description ?? '', col.usage === 'COUNTER' ? 'counter' : 'gauge', form, values, lines, constLabels),
    );
    sampleCount += n;
  }
  return { families, warnings, sampleCount };
}

/** What renderFamilies keeps per collector between results: the label layout and the last row form. */
export interface RenderCache {
  layout?: LabelLayout;
  /** Row form and label blocks (series order) of the last result. */
  rows?: CachedRows;
}

/** Row form of a result, its label blocks, and per value family the text before each value. */
interface CachedRows {
  n: number;
  form: RowForm;
  texts: string[];
  /** Per value family (by name): its texts from the last result with these label values. */
  fams: Map<string, FamilyText>;
}

/** Series per reusable chunk of a family's text. */
const CHUNK = 128;

interface FamilyText {
  /** Value texts of the last result, series order. */
  values: string[] | undefined;
  /** Start of every CHUNK series in `lines`, and its end. */
  offsets: Int32Array | undefined;
  /** The whole family text of the last result (the last line ends with `\n`). */
  lines: string;
}

/**
 * The family text for value texts `valueTexts` (result order) in series order `order`, reusing
 * the text of unchanged chunks (a slice of the previous text, no copy until the join). Little
 * stays alive across scrapes: the text, its chunk offsets and the previous value texts.
 */
function familyText(ft: FamilyText, base: string, texts: string[], valueTexts: string[], order: number[]): string {
  const m = order.length;
  if (m === 0) return '';
  const first = ft.values === undefined;
  const prev = (ft.values ??= new Array<string>(m));
  const nch = Math.ceil(m / CHUNK);
  const offsets = (ft.offsets ??= new Int32Array(nch + 1));
  let changed = first;
  const chunks = new Array<string>(nch);
  for (let c = 0; c < nch; c++) {
    const lo = c * CHUNK;
    const hi = Math.min(m, lo + CHUNK);
    let i = lo;
    if (!first) while (i < hi && valueTexts[order[i]!] === prev[i]) i++;
    if (i === hi) {
      chunks[c] = ft.lines.slice(offsets[c]!, offsets[c + 1]!);
      continue;
    }
    changed = true;
    const parts = new Array<string>(5 * (hi - lo) + (hi === m ? 1 : 0));
    let k = 0;
    for (i = lo; i < hi; i++) {
      const v = valueTexts[order[i]!]!;
      prev[i] = v;
      parts[k++] = i ? '\n' : '';
      parts[k++] = base;
      parts[k++] = texts[i]!;
      parts[k++] = ' ';
      parts[k++] = v;
    }
    if (hi === m) parts[k] = '\n';
    chunks[c] = parts.join('');
  }
  if (!changed) return ft.lines;
  for (let c = 0; c < nch; c++) offsets[c + 1] = offsets[c]! + chunks[c]!.length;
  ft.lines = nch === 1 ? chunks[0]! : chunks.join('');
  return ft.lines;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Series keys of rows with label values `vals` (row-major, `L` per row), sorted, the first row
 * of equal keys kept (a stable sort), and the label block of every kept row in that order.
 */
function rowForm(layout: LabelLayout, vals: string[], n: number, L: number): { form: RowForm; texts: string[] } {
  const { slots, keySegs, textSegs } = layout;
  const S = slots.length;
  const keys = new Array<string>(n);
  for (let r = 0; r < n; r++) {
    let key = keySegs[0]!;
    for (let s = 0; s < S; s++) key += vals[r * L + slots[s]!]! + keySegs[s + 1]!;
    keys[r] = key;
  }
  let order: number[] = new Array<number>(n);
  let sorted = true;
  for (let r = 0; r < n; r++) {
    order[r] = r;
    if (r > 0 && keys[r - 1]! > keys[r]!) sorted = false;
  }
  if (!sorted) order.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : a - b));
  let dupes = 0;
  if (n > 1) {
    const kept: number[] = [order[0]!];
    for (let i = 1; i < n; i++) {
      if (keys[order[i]!] === keys[kept[kept.length - 1]!]) dupes++;
      else kept.push(order[i]!);
    }
    if (dupes > 0) order = kept;
  }
  const m = order.length;
  // Keys and label blocks are not kept in the form: the builder recomputes them in the rare merge case.
  const texts = new Array<string>(m);
  for (let i = 0; i < m; i++) {
    const r = order[i]!;
    let text = textSegs[0]!;
    for (let s = 0; s < S; s++) text += escapeLabel(vals[r * L + slots[s]!]!) + textSegs[s + 1]!;
    texts[i] = text;
  }
  return { form: { layout, labelValues: vals, order, dupes }, texts };
}
