/**
 * /explain text: one block per collector in pg_exporter's template (pg_exporter.md §2.6, checked
 * byte for byte against pg_exporter-explain-example.txt in tests/exporter/explain.test.ts).
 */
import { formatGoDuration, formatGoFloat } from './go-float.ts';
import { dumpYaml, type DumpMap, type DumpValue } from './yaml-dump.ts';
import type { CollectorDef } from './types.ts';

function collectorDump(c: CollectorDef): DumpMap {
  const nz = (n: number): number | undefined => (n === 0 ? undefined : n);
  const ns = (s: string): string | undefined => (s === '' ? undefined : s);
  const preds: DumpValue[] = c.predicates.map((p) => ({
    entries: [
      ['name', p.name ? p.name : undefined],
      ['predicate_query', p.query],
      ['ttl', nz(p.ttlSeconds)],
    ],
  }));
  const metrics: DumpValue[] = c.columns.map((col) => ({
    entries: [
      [
        col.name,
        {
          entries: [
            ['name', col.name],
            ['usage', col.usage],
            ['rename', col.rename],
            ['bucket', col.bucket && col.bucket.length ? col.bucket : undefined],
            ['scale', col.scaleText],
            ['default', col.defaultText],
            ['description', col.description],
          ],
        },
      ],
    ],
  }));
  return {
    entries: [
      ['name', ns(c.name)],
      ['desc', ns(c.desc)],
      ['query', ns(c.query)],
      ['predicate_queries', preds.length ? preds : undefined],
      ['tags', c.tags.length ? c.tags : undefined],
      ['ttl', nz(c.ttlSeconds)],
      ['timeout', nz(c.timeoutSeconds)],
      ['priority', nz(c.priority)],
      ['min_version', nz(c.minVersion)],
      ['max_version', nz(c.maxVersion)],
      ['fatal', c.fatal ? true : undefined],
      ['skip', c.skip ? true : undefined],
      ['metrics', metrics.length ? metrics : undefined],
    ],
  };
}

/**
 * One /explain block for a collector; ends with a newline. SYNOPSIS is `<name>_*`, or
 * `<name>.<branch>_*` when they differ; Timeout is a Go duration (`0s` when disabled).
 */
export function explainBlock(c: CollectorDef): string {
  const timeout = c.timeoutSeconds < 0 ? '0s' : formatGoDuration(c.timeoutSeconds);
  const version = `${c.minVersion === 0 ? 'lower' : c.minVersion} ~ ${c.maxVersion === 0 ? 'higher' : c.maxVersion}`;
  const lines = [
    '##',
    '# SYNOPSIS',
    `#       ${c.name === c.branch ? c.name : `${c.name}.${c.branch}`}_*`,
    '#',
    '# DESCRIPTION',
    `#       ${c.desc || 'N/A'}`,
    '#',
    '# OPTIONS',
    `#       Tags       [${c.tags.join(', ')}]`,
    `#       TTL        ${formatGoFloat(c.ttlSeconds)}`,
    `#       Priority   ${c.priority}`,
    `#       Timeout    ${timeout}`,
    `#       Fatal      ${c.fatal}`,
    `#       Version    ${version}`,
    `#       Source     ${c.source}`,
    '#',
    '# METRICS',
  ];
  for (const col of c.columns) {
    lines.push(`#       ${col.name} (${col.usage})`, `#           ${col.description || 'N/A'}`);
    if (col.usage === 'HISTOGRAM' && col.bucket) lines.push(`#           Bucket [${col.bucket.map(formatGoFloat).join(' ')}]`);
  }
  lines.push('#');
  return `${lines.join('\n')}\n${dumpYaml(c.branch, collectorDump(c))}`;
}

/** The /explain body: blocks joined by a newline (so one empty line between blocks). */
export function explainText(collectors: CollectorDef[]): string {
  return collectors.map(explainBlock).join('\n');
}
