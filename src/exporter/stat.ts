/**
 * /stat table (pg_exporter.md §2.7): fixed-width left-aligned fields separated by one space:
 * name 24, total/hit/error/skip/metric 10, ttl/s 6 (integer, truncated), duration/ms 10 (`%f`).
 * Every line ends with `\n`; an over-long value pushes the rest of the line right.
 */

/** One row of /stat, for one installed collector of the primary server. */
export interface StatRow {
  name: string;
  /** Visits: executions plus cache replays. */
  total: number;
  /** Rows returned by the last real execution (this project's reading of the seed; see docs/exporter.md). */
  hit: number;
  error: number;
  skip: number;
  /** Samples produced by the last visit. */
  metric: number;
  /** Seconds of cache left after the last visit. */
  ttlLeftSeconds: number;
  /** Duration of the last real execution, milliseconds. */
  durationMs: number;
}

/** What a /stat row is read from: an installed collector's definition name and statistics (CollectorRun). */
export interface StatSource {
  def: { name: string };
  stats: { total: number; rows: number; errors: number; skips: number; metrics: number; ttlLeftSeconds: number; durationMs: number };
}

/** The /stat rows of `runs` (a target's installed collectors), in their order; none when not planned yet. */
export function statRowsOf(runs: readonly StatSource[] | undefined): StatRow[] {
  return (runs ?? []).map((r) => ({
    name: r.def.name,
    total: r.stats.total,
    hit: r.stats.rows,
    error: r.stats.errors,
    skip: r.stats.skips,
    metric: r.stats.metrics,
    ttlLeftSeconds: r.stats.ttlLeftSeconds,
    durationMs: r.stats.durationMs,
  }));
}

const pad = (s: string, n: number) => s.padEnd(n, ' ');

/** Renders the table with its header line. */
export function statText(rows: StatRow[]): string {
  let out = `${pad('name', 24)} ${pad('total', 10)} ${pad('hit', 10)} ${pad('error', 10)} ${pad('skip', 10)} ${pad('metric', 10)} ${pad('ttl/s', 6)} duration/ms\n`;
  for (const r of rows) {
    out +=
      `${pad(r.name, 24)} ${pad(String(r.total), 10)} ${pad(String(r.hit), 10)} ${pad(String(r.error), 10)} ` +
      `${pad(String(r.skip), 10)} ${pad(String(r.metric), 10)} ${pad(String(Math.trunc(r.ttlLeftSeconds)), 6)} ${pad(r.durationMs.toFixed(6), 10)}\n`;
  }
  return out;
}
