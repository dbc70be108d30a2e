/**
 * Turns one collector's result rows into metric families (pg_exporter.md §1.6, §1.11):
 * `<name>_<column|rename>` per value column, LABEL columns as labels in config order, HISTOGRAM
 * columns as snapshot `_bucket`/`_count`/`_sum` gauges grouped by label tuple.
 */
import { labelValue, sampleValue } from './convert.ts';
import { formatGoFloat } from './go-float.ts';
import type { Family } from './exposition.ts';
import type { CollectorDef } from './types.ts';

/** A query result as the executor sees it. */
export interface QueryResult {
  rows: Record<string, unknown>[];
  /** Column names and type OIDs, in result order. */
  columns: { name: string; type: number }[];
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
 * Builds the families of `c` from `result`. Throws ResultError when a configured LABEL column is
 * missing (v1.4 rule) or a histogram observation is not finite.
 */
export function buildFamilies(c: CollectorDef, result: QueryResult): BuiltResult {
  const warnings: string[] = [];
  const present = new Map(result.columns.map((col) => [col.name, col.type]));
  if (result.columns.length !== c.columns.length) warnings.push(`column count not match, result ${result.columns.length} ≠ config ${c.columns.length}`);
  const labelCols = c.columns.filter((col) => col.usage === 'LABEL');
  for (const l of labelCols) if (!present.has(l.name)) throw new ResultError(`missing label column ${l.name}`);
  const families: Family[] = [];
  let sampleCount = 0;
  // Label pairs computed once per row and shared (read-only) by every family of the collector.
  const rowLabels: [string, string][][] = result.rows.map((row) => labelCols.map((l) => [l.rename ?? l.name, labelValue(row[l.name], present.get(l.name))]));
  for (const col of c.columns) {
    if (col.usage === 'LABEL' || col.usage === 'DISCARD') continue;
    if (!present.has(col.name)) {
      warnings.push(`missing metric column ${col.name}`);
      continue;
    }
    const base = `${c.name}_${col.rename ?? col.name}`;
    if (col.usage === 'HISTOGRAM') {
      const bounds = col.bucket ?? [];
      const groups = new Map<string, { labels: [string, string][]; counts: number[]; count: number; sum: number }>();
      for (let ri = 0; ri < result.rows.length; ri++) {
        const row = result.rows[ri]!;
        const raw = row[col.name];
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
      sampleCount += bucket.samples.length + count.samples.length + sum.samples.length;
      families.push(bucket, count, sum);
      continue;
    }
    const fam: Family = { name: base, help: col.description ?? '', type: col.usage === 'COUNTER' ? 'counter' : 'gauge', samples: [] };
    for (let ri = 0; ri < result.rows.length; ri++) fam.samples.push({ labels: rowLabels[ri]!, value: sampleValue(result.rows[ri]![col.name], col) });
    sampleCount += fam.samples.length;
    families.push(fam);
  }
  return { families, warnings, sampleCount };
}
