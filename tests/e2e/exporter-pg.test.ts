/**
 * The exporter against a real PostgreSQL 15 primary and a streaming replica: shared and default
 * collector sets, cache, predicates, fatal failures, timeout cancellation, planning, re-planning
 * after promotion, auto-discovery, reload, /explain and /stat, and the no-query health probes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exporter, type ExporterOptions } from '../../src/exporter/exporter.ts';
import { createExporterApp } from '../../src/exporter/http.ts';
import { listen } from '../../src/exporter/serve.ts';
import { freePort } from '../support/ports.ts';
import { startPostgres, type TestPostgres } from '../support/pg.ts';
import { sleep, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import {
  DEFAULT_COLLECTORS,
  HAS_SHARED_CONFIG,
  promtoolCheck,
  REFERENCE_SKIP,
  sampleOf,
  SHARED_CONFIG,
  startReplica,
  type TestReplica,
} from './exporter-support.ts';

let pg: TestPostgres;
let replica: TestReplica;
let tmp: string;
const exporters: Exporter[] = [];

function make(opts: Partial<ExporterOptions> & { configPath: string }): Exporter {
  const e = new Exporter({ url: pg.url, connectTimeoutMs: 2000, ...opts });
  exporters.push(e);
  return e;
}
let n = 0;
/** Writes collector YAML into a fresh file and returns its path. */
function config(text: string): string {
  const p = join(tmp, `c${++n}.yml`);
  writeFileSync(p, text);
  return p;
}
const gauge = (branch: string, query: string, extra = '') =>
  `${branch}:\n  query: ${JSON.stringify(query)}\n${extra}  metrics:\n    - v: { usage: GAUGE, description: "v" }\n`;
/** promtool exit 1 means a parse error; 3 means lint only (names chosen by collector files). */
const expectParses = (body: string) => {
  const r = promtoolCheck(body);
  expect(r.code, r.output).not.toBe(1);
  expect(r.output).not.toMatch(/error while linting|parse error|text format parsing error/i);
};

beforeAll(async () => {
  tmp = await makeTempDir('exporter-e2e-');
  pg = await startPostgres(['wal_level = replica', 'max_wal_senders = 5']);
  replica = await startReplica(pg);
  await pg.psql('CREATE TABLE t1 (id int primary key); INSERT INTO t1 VALUES (1)');
});

afterAll(async () => {
  for (const e of exporters) await e.stop();
  await replica?.stop();
  await pg?.stop();
  if (tmp) await removeTempDir(tmp);
});

describe('exporter against real PostgreSQL 15', () => {
  it.skipIf(!HAS_SHARED_CONFIG)(
    `serves the shared collector files on a primary and a replica with no promtool parse error ${REFERENCE_SKIP}`,
    async () => {
      for (const [url, recovery, branch] of [
        [pg.url, 0, 'pg_lsn'],
        [replica.url, 1, 'pg_receive_lsn'],
      ] as const) {
        const e = make({ url, configPath: SHARED_CONFIG });
        await e.collect();
        const body = await e.collect();
        expect(sampleOf(body, 'db_up')).toBe(1);
        expect(sampleOf(body, 'db_in_recovery')).toBe(recovery);
        expect(sampleOf(body, 'db_version')).toBeGreaterThanOrEqual(150000);
        expect(sampleOf(body, branch)).toBeGreaterThan(0);
        expect(sampleOf(body, 'pg_setting_max_connections')).toBe(100);
        expect(body).toMatch(
          /^db_exporter_build_info\{branch="[^"]*",builddate="[^"]*",goarch="[^"]*",goos="[^"]*",goversion="[^"]*",revision="[^"]*",version="[^"]*"\} 1$/m,
        );
        expect(sampleOf(body, 'db_exporter_dropped_series_count')).toBe(0);
        expect(e.statRows().every((r) => r.error === 0)).toBe(true);
        expectParses(body);
      }
    },
  );

  it('serves the project default collector set with no promtool parse error', async () => {
    const e = make({ configPath: DEFAULT_COLLECTORS });
    const body = await e.collect();
    expect(sampleOf(body, 'db_up')).toBe(1);
    expect(sampleOf(body, 'pg_instance_in_recovery')).toBe(0);
    expect(sampleOf(body, 'pg_tables_live_rows', 'table="t1"')).toBeDefined();
    expect(sampleOf(body, 'pg_replication_replay_lag_bytes')).toBeDefined();
    expect(e.statRows().filter((r) => r.error > 0)).toEqual([]);
    expectParses(body);
  });

  it('caches per collector TTL, and --disable-cache bypasses it', async () => {
    const cfg = config(gauge('clock', 'SELECT extract(epoch FROM clock_timestamp()) AS v', '  ttl: 30\n'));
    const cached = make({ configPath: cfg });
    const a = sampleOf(await cached.collect(), 'clock_v');
    await sleep(20);
    const b = sampleOf(await cached.collect(), 'clock_v');
    expect(b).toBe(a);
    expect(cached.statRows()[0]).toMatchObject({ total: 2, hit: 1 });
    const uncached = make({ configPath: cfg, disableCache: true });
    const c = sampleOf(await uncached.collect(), 'clock_v');
    await sleep(20);
    expect(sampleOf(await uncached.collect(), 'clock_v')).not.toBe(c);
  });

  it('skips on a predicate, and caches a predicate verdict for its ttl', async () => {
    const cfg = config(
      gauge(
        'gated',
        'SELECT 1 AS v',
        '  predicate_queries:\n    - { name: has gate, predicate_query: "SELECT to_regclass(\'gate1\') IS NOT NULL" }\n',
      ) +
        gauge(
          'gated_ttl',
          'SELECT 2 AS v',
          '  predicate_queries:\n    - { predicate_query: "SELECT to_regclass(\'gate1\') IS NOT NULL", ttl: 60 }\n',
        ),
    );
    const e = make({ configPath: cfg });
    let body = await e.collect();
    expect(sampleOf(body, 'gated_v')).toBeUndefined();
    expect(sampleOf(body, 'db_exporter_query_scrape_predicate_skip_count', 'query="gated"')).toBe(1);
    await pg.psql('CREATE TABLE gate1 (x int)');
    body = await e.collect();
    expect(sampleOf(body, 'gated_v')).toBe(1);
    expect(sampleOf(body, 'gated_ttl_v')).toBeUndefined(); // verdict cached for 60 s
    expect(sampleOf(body, 'db_exporter_query_scrape_predicate_skip_count', 'query="gated_ttl"')).toBe(2);
    expect(sampleOf(body, 'db_exporter_query_scrape_error_count', 'query="gated"')).toBe(0);
  });

  it('marks the scrape failed when a fatal collector fails, and counts a non-fatal error', async () => {
    const cfg = config(
      gauge('boom', 'SELECT 1/0 AS v', '  fatal: true\n  priority: 5\n') + gauge('later', 'SELECT 7 AS v', '  priority: 1\n'),
    );
    const e = make({ configPath: cfg });
    const body = await e.collect();
    expect(sampleOf(body, 'db_up')).toBe(0);
    expect(sampleOf(body, 'db_exporter_scrape_error_count')).toBe(1);
    expect(sampleOf(body, 'later_v')).toBeUndefined();
    const soft = make({ configPath: config(gauge('soft', 'SELECT 1/0 AS v') + gauge('fine', 'SELECT 7 AS v')) });
    const b2 = await soft.collect();
    expect(sampleOf(b2, 'db_up')).toBe(1);
    expect(sampleOf(b2, 'fine_v')).toBe(7);
    expect(sampleOf(b2, 'soft_v')).toBeUndefined();
    expect(sampleOf(b2, 'db_exporter_query_scrape_error_count', 'query="soft"')).toBe(1);
  });

  it('cancels a query that exceeds its timeout: the statement is gone from pg_stat_activity', async () => {
    const e = make({ configPath: config(gauge('sleepy', 'SELECT 1 AS v FROM pg_sleep(30)', '  timeout: 0.3\n')) });
    const t0 = Date.now();
    const body = await e.collect();
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(sampleOf(body, 'db_exporter_query_scrape_error_count', 'query="sleepy"')).toBe(1);
    expect(sampleOf(body, 'db_up')).toBe(1);
    await waitFor(
      async () =>
        (
          await pg.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()",
          )
        ).trim() === '0',
      5000,
      'cancelled query to disappear',
    );
  });

  it('plans by version range and tags, including --tag and not:', async () => {
    const cfg = config(
      gauge('v16', 'SELECT 1 AS v', '  min_version: 160000\n') +
        gauge('v15', 'SELECT 1 AS v', '  min_version: 150000\n  max_version: 160000\n') +
        gauge('v14', 'SELECT 1 AS v', '  max_version: 150000\n') +
        gauge('rep', 'SELECT 1 AS v', '  tags: [replica]\n') +
        gauge('prim', 'SELECT 1 AS v', '  tags: [primary, cluster]\n') +
        gauge('custom', 'SELECT 1 AS v', '  tags: [nightly]\n') +
        gauge('negated', 'SELECT 1 AS v', '  tags: ["not:nightly"]\n') +
        gauge('ext', 'SELECT 1 AS v', '  tags: ["extension:plpgsql", "schema:public", "dbname:postgres", "username:postgres"]\n'),
    );
    const e = make({ configPath: cfg, tags: ['nightly'] });
    await e.collect();
    expect(
      e
        .statRows()
        .map((r) => r.name)
        .sort(),
    ).toEqual(['custom', 'ext', 'prim', 'v15']);
    const r = make({ url: replica.url, configPath: cfg });
    await r.collect();
    expect(
      r
        .statRows()
        .map((x) => x.name)
        .sort(),
    ).toEqual(['ext', 'negated', 'rep', 'v15']);
  });

  it('serves /explain and /stat of the installed collectors', async () => {
    const e = make({
      configPath: config(
        gauge('one', 'SELECT 1 AS v', '  ttl: 10\n  desc: first\n  priority: 10\n') + gauge('two', 'SELECT 2 AS v', '  priority: 5\n'),
      ),
    });
    const app = createExporterApp(e);
    await app.request('/metrics');
    const explain = await (await app.request('/explain')).text();
    expect(explain).toMatch(/^##\n# SYNOPSIS\n# {7}two_\*\n/);
    expect(explain).toContain('\n\n##\n# SYNOPSIS\n#       one_*\n#\n# DESCRIPTION\n#       first\n');
    expect(explain).toContain('#       TTL        10\n');
    const stat = await (await app.request('/stat')).text();
    const lines = stat.split('\n');
    expect(lines[0]).toBe('name                     total      hit        error      skip       metric     ttl/s  duration/ms');
    expect(lines[1]).toMatch(/^two {22}1 {10}1 {10}0 {10}0 {10}1 {10}0 {6}\d+\.\d{6}/);
    expect(lines[2]).toMatch(/^one {22}1 {10}1 {10}0 {10}0 {10}1 {10}10 {5}\d+\.\d{6}/);
  });

  it('reload: a broken single file answers 500 and the old configuration keeps serving', async () => {
    const path = config(gauge('keep', 'SELECT 3 AS v'));
    const e = make({ configPath: path });
    const app = createExporterApp(e);
    expect(sampleOf(await (await app.request('/metrics')).text(), 'keep_v')).toBe(3);
    writeFileSync(path, 'keep: [ broken');
    const r = await app.request('/reload', { method: 'POST' });
    expect(r.status).toBe(500);
    expect(await r.text()).toMatch(/^fail to reload: fail loading config .*c\d+\.yml/);
    expect(sampleOf(await (await app.request('/metrics')).text(), 'keep_v')).toBe(3);
    writeFileSync(path, gauge('fresh', 'SELECT 4 AS v'));
    const ok = await app.request('/reload');
    expect(await ok.text()).toBe('server reloaded');
    const body = await (await app.request('/metrics')).text();
    expect(sampleOf(body, 'fresh_v')).toBe(4);
    expect(sampleOf(body, 'keep_v')).toBeUndefined();
  });

  it('drops a duplicate series instead of failing the whole answer', async () => {
    const e = make({
      configPath: config(
        "dup:\n  query: SELECT 'a' AS l, 1 AS v UNION ALL SELECT 'a', 2\n  metrics:\n    - l: { usage: LABEL }\n    - v: { usage: GAUGE }\n",
      ),
    });
    const body = await e.collect();
    expect(sampleOf(body, 'dup_v', 'l="a"')).toBe(1);
    expect(sampleOf(body, 'db_exporter_dropped_series_count')).toBe(1);
    expectParses(body);
  });

  it('discovers a new database, runs database-level collectors there, and forgets it when dropped', async () => {
    const cfg = config(
      'perdb:\n  query: SELECT current_database() AS datname, 1 AS v\n  metrics:\n    - datname: { usage: LABEL }\n    - v: { usage: GAUGE }\n' +
        gauge('once', 'SELECT 1 AS v', '  tags: [cluster]\n'),
    );
    const e = make({ configPath: cfg });
    let body = await e.collect();
    expect(sampleOf(body, 'perdb_v', 'datname="postgres"')).toBe(1);
    await pg.psql('CREATE DATABASE discovered1');
    body = await e.collect();
    expect(sampleOf(body, 'perdb_v', 'datname="discovered1"')).toBe(1);
    expect(body.match(/^once_v /gm)).toHaveLength(1);
    expect(sampleOf(body, 'db_exporter_server_scrape_total_count', 'datname="discovered1"')).toBe(1);
    await pg.psql('DROP DATABASE discovered1 WITH (FORCE)');
    body = await e.collect();
    expect(sampleOf(body, 'perdb_v', 'datname="discovered1"')).toBeUndefined();
    expect(body).not.toContain('datname="discovered1"');
  });

  it('answers 1,000 concurrent health probes from the cached role without a new backend', async () => {
    const e = make({ configPath: DEFAULT_COLLECTORS });
    e.start();
    await waitFor(() => e.role === 'primary', 10_000, 'role primary');
    await sleep(300);
    const port = await freePort();
    const server = await listen(createExporterApp(e), { host: '127.0.0.1', port });
    try {
      const backends = () =>
        pg.psql("SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity WHERE application_name = 'db_exporter'");
      const before = await backends();
      const res = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => fetch(`http://127.0.0.1:${port}/${i % 2 ? 'primary' : 'replica'}`).then((r) => r.status)),
      );
      expect(res.filter((s) => s === 200)).toHaveLength(500);
      expect(res.filter((s) => s === 404)).toHaveLength(500);
      expect(await backends()).toBe(before);
    } finally {
      server.close();
    }
  });

  it('serves db_up 0 while the database is unreachable, with the role down', async () => {
    const port = await freePort();
    const e = make({ url: `postgres://postgres@127.0.0.1:${port}/postgres`, configPath: DEFAULT_COLLECTORS, connectTimeoutMs: 500 });
    const app = createExporterApp(e);
    const res = await app.request('/metrics');
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(sampleOf(body, 'db_up')).toBe(0);
    expect(sampleOf(body, 'db_exporter_up')).toBe(1);
    expect(body).not.toMatch(/^pg_/m);
    expect((await app.request('/up')).status).toBe(503);
    expect(await (await app.request('/up')).text()).toBe('down');
  });

  it.skipIf(!HAS_SHARED_CONFIG)(
    `re-plans after a promotion: replica-only collectors swap for primary-only ones ${REFERENCE_SKIP}`,
    async () => {
      const e = make({ url: replica.url, configPath: SHARED_CONFIG });
      await e.collect();
      expect(e.explain()).toContain('pg_replica_only:');
      await replica.promote();
      await waitFor(async () => (await replica.psql('SELECT pg_is_in_recovery()')).trim() === 'f', 20_000, 'promotion');
      const body = await e.collect();
      expect(sampleOf(body, 'db_up')).toBe(1);
      expect(sampleOf(body, 'db_in_recovery')).toBe(0);
      expect(e.explain()).toContain('pg_primary_only:');
      expect(e.explain()).not.toContain('pg_replica_only:');
      expect(sampleOf(body, 'pg_is_in_recovery')).toBe(0);
    },
  );
});
