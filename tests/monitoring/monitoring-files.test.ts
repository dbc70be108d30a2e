/**
 * The monitoring files that ship with the project (monitoring/, examples/prometheus/): every
 * metric their PromQL names exists (the agents' HA_METRICS, the default collectors' series,
 * db-exporter's self-monitoring, the recording rules, Prometheus's own), every alert has a
 * severity and a summary and a promtool test that makes it fire, and the Grafana dashboard is
 * well-formed. promtool itself runs in tests/e2e/monitoring-rules.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/exporter/config-load.ts';
import { Exporter } from '../../src/exporter/exporter.ts';
import type { Family } from '../../src/exporter/exposition.ts';
import { probeOnlyApi } from '../../src/exporter/probe-only.ts';
import { Prober } from '../../src/exporter/probe.ts';
import { HA_METRICS } from '../../src/http/metrics.ts';

const root = resolve(import.meta.dirname, '../..');
const RULE_FILES = ['monitoring/prometheus/ha.rules.yml', 'monitoring/prometheus/db-exporter.rules.yml'];
const TEST_FILES = ['monitoring/prometheus/tests/ha.rules.test.yml', 'monitoring/prometheus/tests/db-exporter.rules.test.yml'];
const DASHBOARD = 'monitoring/grafana/ha-cluster.json';
const read = (p: string) => readFileSync(join(root, p), 'utf8');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules: Rule[] = RULE_FILES.flatMap((f) => (parseYaml(read(f)) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules));

const dir = mkdtempSync(join(tmpdir(), 'monitoring-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every metric name the project's processes can expose, plus Prometheus's own series. */
async function knownMetrics(): Promise<Set<string>> {
  const names = new Set<string>(['up', 'scrape_duration_seconds', 'scrape_samples_scraped', 'ALERTS', 'ALERTS_FOR_STATE']);
  for (const [n] of HA_METRICS) names.add(n);
  for (const r of rules) if (r.record) names.add(r.record);
  for (const c of loadConfig(join(root, 'collectors')).collectors) {
    for (const col of c.columns) {
      const base = `${c.name}_${col.rename ?? col.name}`;
      if (col.usage === 'GAUGE' || col.usage === 'COUNTER') names.add(base);
      if (col.usage === 'HISTOGRAM') for (const s of ['_bucket', '_count', '_sum']) names.add(base + s);
    }
  }
  // db-exporter's self-monitoring: a single-target exporter's /metrics (nothing connects), and a
  // probe-only exporter's /metrics and probe answer (a fake target).
  const exp = new Exporter({ url: 'postgres://nobody@127.0.0.1:1/postgres', configPath: join(root, 'collectors'), heapTuning: false });
  for (const f of (exp as unknown as { selfFamilies(): Family[] }).selfFamilies()) names.add(f.name);
  await exp.stop();
  const probeConfig = join(dir, 'probe.yml');
  writeFileSync(probeConfig, 'targets:\n  t: { dsn: "127.0.0.1:1/postgres" }\n');
  const fakeRun = {
    def: { name: 'q', branch: 'q', predicates: [{}], fatal: false, tags: [] },
    stats: { total: 0, rows: 0, errors: 0, skips: 0, metrics: 0, ttlLeftSeconds: 0, durationMs: 0 },
  };
  const prober = new Prober({
    probeConfigPath: probeConfig,
    configPath: join(root, 'collectors'),
    makeTarget: () =>
      ({
        datname: 'postgres',
        stats: { lastDurationSeconds: 0, totalSeconds: 0, totalCount: 0, errorCount: 0 },
        runs: [fakeRun],
        facts: undefined,
        poolMax: 1,
        scrape: async () => ({ up: true, families: [] }),
        close: async () => undefined,
      }) as never,
  });
  const body = (await prober.probe({ target: 't' })).body + (await probeOnlyApi(prober).collect());
  await prober.stop();
  for (const line of body.split('\n')) if (line.startsWith('# TYPE ')) names.add(line.split(' ')[2]!);
  return names;
}

const FUNCTIONS_AND_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
  'Inf',
  'NaN',
]);

/** Metric names a PromQL expression reads (strings, label matchers, ranges, grouping clauses and function calls removed). */
export function metricNames(expr: string): string[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const out: string[] = [];
  for (const m of e.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const tok = m[0];
    const after = e.slice(m.index! + tok.length).trimStart();
    if (after.startsWith('(') || FUNCTIONS_AND_KEYWORDS.has(tok)) continue;
    if (/^\d/.test(tok) || /^e\d+$/.test(tok)) continue;
    out.push(tok);
  }
  return out;
}

describe('metricNames', () => {
  it('finds the metrics of an expression and nothing else', () => {
    expect(
      metricNames('sum by (scope) (rate(pg_database_commits{datname!="x"}[5m])) / on (scope) group_right () ha:leaders:count > 1e6'),
    ).toEqual(['pg_database_commits', 'ha:leaders:count']);
    expect(metricNames('time() - ha_dcs_last_seen > 60 and changes(ha:timeline:max[$__range]) == 0')).toEqual([
      'ha_dcs_last_seen',
      'ha:timeline:max',
    ]);
    expect(metricNames('topk(15, db:statement_exec:seconds_rate5m{scope="$scope"})')).toEqual(['db:statement_exec:seconds_rate5m']);
  });
});

describe('Prometheus rules', () => {
  it('read only metrics that exist', async () => {
    const known = await knownMetrics();
    const unknown = rules.flatMap((r) =>
      metricNames(r.expr)
        .filter((n) => !known.has(n))
        .map((n) => `${r.alert ?? r.record}: ${n}`),
    );
    expect(unknown).toEqual([]);
  });

  it('give every alert a severity and a summary, and every recording rule a level:metric:operation name', () => {
    for (const r of rules) {
      if (r.alert) {
        expect(['critical', 'warning', 'info'], r.alert).toContain(r.labels?.['severity']);
        expect(r.annotations?.['summary'], r.alert).toBeTruthy();
      } else expect(r.record).toMatch(/^[a-z]+:[a-z0-9_]+:[a-z0-9_]+$/);
    }
  });

  it('make every alert fire in a promtool test, and check a healthy cluster stays silent', () => {
    const firing = new Set<string>();
    const silent = new Set<string>();
    for (const f of TEST_FILES) {
      const doc = parseYaml(read(f)) as {
        rule_files: string[];
        tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
      };
      for (const t of doc.tests) for (const a of t.alert_rule_test ?? []) (a.exp_alerts.length > 0 ? firing : silent).add(a.alertname);
    }
    const alerts = rules.filter((r) => r.alert).map((r) => r.alert!);
    expect(alerts.filter((a) => !firing.has(a))).toEqual([]);
    expect(alerts.filter((a) => !silent.has(a))).toEqual([]);
  });
});

describe('Grafana dashboard', () => {
  const dash = JSON.parse(read(DASHBOARD)) as {
    uid: string;
    templating: { list: { name: string; type: string }[] };
    annotations: { list: { expr: string }[] };
    panels: {
      id: number;
      type: string;
      title: string;
      gridPos: { x: number; y: number; w: number; h: number };
      datasource?: { uid: string };
      targets?: { expr: string; datasource: { uid: string } }[];
    }[];
  };

  it('has unique panel ids, panels inside the 24-column grid and not overlapping, and the datasource and scope variables', () => {
    expect(dash.uid).toBe('ha-cluster');
    expect(dash.templating.list.map((v) => `${v.name}:${v.type}`)).toEqual(['datasource:datasource', 'scope:query']);
    const ids = dash.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dash.panels) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      for (const q of dash.panels) {
        if (q === p) continue;
        const overlap =
          p.gridPos.x < q.gridPos.x + q.gridPos.w &&
          q.gridPos.x < p.gridPos.x + p.gridPos.w &&
          p.gridPos.y < q.gridPos.y + q.gridPos.h &&
          q.gridPos.y < p.gridPos.y + p.gridPos.h;
        expect(overlap, `${p.title} / ${q.title}`).toBe(false);
      }
    }
  });

  it('queries the chosen datasource for metrics that exist, covering members, lag, timelines and scrape health', async () => {
    const known = await knownMetrics();
    const exprs: string[] = [...dash.annotations.list.map((a) => a.expr)];
    for (const p of dash.panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.datasource.uid).toBe('${datasource}');
        exprs.push(t.expr);
      }
    }
    const used = new Set(exprs.flatMap(metricNames));
    expect([...used].filter((n) => !known.has(n))).toEqual([]);
    for (const n of [
      'ha_primary',
      'ha:leaders:count',
      'ha_database_timeline',
      'ha:timeline:max',
      'pg_replication_flush_lag_bytes',
      'ha:replica_lag:bytes',
      'up',
      'db_up',
      'db_exporter_query_scrape_error_count',
    ]) {
      expect(used.has(n), n).toBe(true);
    }
  });
});

describe('examples/prometheus/prometheus.yml', () => {
  const cfg = parseYaml(read('examples/prometheus/prometheus.yml')) as {
    rule_files: string[];
    scrape_configs: {
      job_name: string;
      metrics_path?: string;
      static_configs: { targets: string[]; labels?: Record<string, string> }[];
      relabel_configs?: { source_labels?: string[]; target_label: string; replacement?: string }[];
    }[];
  };

  it('loads the shipped rule files and scrapes the agents, the probes and the exporter with the job names the rules use', () => {
    expect(cfg.rule_files.map((f) => resolve(root, 'examples/prometheus', f)).sort()).toEqual(
      RULE_FILES.map((f) => resolve(root, f)).sort(),
    );
    expect(cfg.scrape_configs.map((j) => j.job_name)).toEqual(['ha', 'db', 'db-exporter']);
    const db = cfg.scrape_configs.find((j) => j.job_name === 'db')!;
    expect(db.metrics_path).toBe('/probe');
    expect(db.static_configs[0]!.targets).toEqual(['node1', 'node2', 'node3']);
    expect(db.static_configs[0]!.labels?.['scope']).toBe('demo');
    expect(db.relabel_configs?.map((r) => r.target_label)).toEqual(['__param_target', 'instance', '__address__']);
  });
});
