/**
 * Self-monitoring families of scraped servers, shared by `/metrics` (the primary connection and
 * its discovered databases) and `/probe` (one target): per server `<ns>_exporter_server_scrape_*`
 * {datname}, per installed collector `<ns>_exporter_query_*` {datname, query}. Names, help texts
 * and types follow pg_exporter v1.4 (pg_exporter.md §4).
 */
import type { Family } from './exposition.ts';
import type { Target } from './target.ts';

/** What the families read from a target. */
export type StatTarget = Pick<Target, 'datname' | 'stats' | 'runs'>;

/**
 * The server and query families for `targets`, in the order `/metrics` has always written them.
 * `include` limits the query families to some collectors (a `/probe` that selected a subset).
 */
export function serverStatFamilies(
  ns: string,
  targets: Iterable<StatTarget>,
  include?: (def: { name: string; branch: string; fatal: boolean; tags: string[] }) => boolean,
): Family[] {
  const fam = (suffix: string, help: string): Family => ({ name: `${ns}_exporter_${suffix}`, help, type: 'gauge', samples: [] });
  const sDur = fam('server_scrape_duration', 'seconds exporter server spending on scraping last scrape');
  const sSec = fam('server_scrape_total_seconds', 'cumulative total seconds exporter server spending on scraping');
  const sCnt = fam('server_scrape_total_count', 'times exporter server was scraped for metrics');
  const sErr = fam('server_scrape_error_count', 'cumulative times exporter server scrape failed (fatal scrape failures only)');
  const qTtl = fam('query_cache_ttl', 'times to live of query cache');
  const qTot = fam('query_scrape_total_count', 'times exporter server was scraped for metrics');
  const qErr = fam('query_scrape_error_count', 'times the query failed');
  const qSkip = fam('query_scrape_predicate_skip_count', 'times the query was skipped due to a predicate returning false');
  const qDur = fam('query_scrape_duration', 'seconds query spending on scraping');
  const qMet = fam('query_scrape_metric_count', 'numbers of metrics been scraped from this query');
  const qHit = fam('query_scrape_hit_count', 'numbers of rows returned by the last execution of this query');
  for (const t of targets) {
    const dl: [string, string][] = [['datname', t.datname]];
    sDur.samples.push({ labels: dl, value: t.stats.lastDurationSeconds });
    sSec.samples.push({ labels: dl, value: t.stats.totalSeconds });
    sCnt.samples.push({ labels: dl, value: t.stats.totalCount });
    sErr.samples.push({ labels: dl, value: t.stats.errorCount });
    for (const r of t.runs ?? []) {
      if (include && !include(r.def)) continue;
      const l: [string, string][] = [...dl, ['query', r.def.name]];
      const s = r.stats;
      qTtl.samples.push({ labels: l, value: s.ttlLeftSeconds });
      qTot.samples.push({ labels: l, value: s.total });
      qErr.samples.push({ labels: l, value: s.errors });
      if (r.def.predicates.length > 0) qSkip.samples.push({ labels: l, value: s.skips });
      qDur.samples.push({ labels: l, value: s.durationMs / 1000 });
      qMet.samples.push({ labels: l, value: s.metrics });
      qHit.samples.push({ labels: l, value: s.rows });
    }
  }
  return [sDur, sSec, sCnt, sErr, qTtl, qTot, qErr, qSkip, qDur, qMet, qHit];
}
