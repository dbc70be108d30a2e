/**
 * The exporter in a real monitoring stack: a 3-member cluster (etcd, three agents, three
 * PostgreSQL 15), one `db-exporter` process probing the members (named targets, credentials from
 * an auth module) and a fourth PostgreSQL 15 with pg_stat_statements loaded (a DSN target on the
 * allowlist), and a real Prometheus running examples/prometheus/prometheus.yml (addresses
 * replaced) with the rules of monitoring/prometheus: /probe through relabelling, the agents'
 * /metrics, the exporter's own /metrics. Then bad input: unknown targets, DSNs outside the
 * allowlist or with a password, a hundred distinct targets, DSNs once they are not allowed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { freePort } from '../support/ports.ts';
import { startPostgres, type TestPostgres } from '../support/pg.ts';
import { promtoolCheckMetrics, startPrometheusConfig, type PrometheusServer } from '../support/prometheus.ts';
import { stopPid, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import { sampleOf } from './exporter-support.ts';
import { TestCluster } from './support/cluster.ts';

const root = resolve(import.meta.dirname, '../..');
const MONITOR_PASSWORD = 'e2e-monitor-secret';
const MAX_TARGETS = 8; // 3 named targets + 5 DSN targets
let cluster: TestCluster;
let stats: TestPostgres;
let tmp: string;
let exporter: ChildProcess;
let exporterUrl = '';
let probeConfigPath = '';
let prom: PrometheusServer & { configPath: string };
let leader = '';

const get = async (path: string) => {
  const r = await fetch(`${exporterUrl}${path}`);
  return { status: r.status, text: await r.text() };
};
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

function probeConfig(allowDsn: boolean): string {
  return stringifyYaml({
    auth_modules: {
      monitor: {
        type: 'userpass',
        userpass: { username: 'monitor', password_env: 'DB_EXPORTER_MONITOR_PASSWORD' },
        options: { sslmode: 'disable' },
      },
      trust: { userpass: { username: 'postgres' } },
    },
    targets: Object.fromEntries(cluster.nodes.map((n) => [n.name, { dsn: `127.0.0.1:${n.pgPort}/postgres`, auth_module: 'monitor' }])),
    allow_dsn: allowDsn,
    allowlist: [`127.0.0.1:${stats.port}`],
    default_auth_module: 'trust',
    limits: { max_targets: MAX_TARGETS, pool_size: 2, target_idle_seconds: 600 },
  });
}

beforeAll(async () => {
  tmp = await makeTempDir('exporter-stack-');
  cluster = await TestCluster.create({ nodes: 3, scope: 'demo', ttl: 10, loopWait: 2, retryTimeout: 3 });
  cluster.startAll();
  // the PostgreSQL with pg_stat_statements starts while the cluster bootstraps
  stats = await startPostgres(['shared_preload_libraries = pg_stat_statements']);
  await stats.psql('CREATE EXTENSION pg_stat_statements');
  await stats.psql('CREATE DATABASE nostats');
  leader = await cluster.waitForLeader(90_000);
  await cluster.waitForStreaming(
    cluster.nodes.map((n) => n.name).filter((n) => n !== leader),
    90_000,
  );
  await cluster.psql(leader, `CREATE ROLE monitor LOGIN PASSWORD '${MONITOR_PASSWORD}' IN ROLE pg_monitor`);

  probeConfigPath = join(tmp, 'probe.yml');
  writeFileSync(probeConfigPath, probeConfig(true));
  const port = await freePort();
  exporterUrl = `http://127.0.0.1:${port}`;
  exporter = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'src/cli/db-exporter.ts'),
      '--probe.config',
      probeConfigPath,
      '--web.listen-address',
      `127.0.0.1:${port}`,
      '--log.level',
      'error',
    ],
    {
      cwd: root,
      env: { ...process.env, DB_EXPORTER_MONITOR_PASSWORD: MONITOR_PASSWORD },
      stdio: 'ignore',
    },
  );
  await waitFor(
    () =>
      fetch(`${exporterUrl}/metrics`)
        .then((r) => r.ok)
        .catch(() => false),
    30_000,
    'db-exporter listening',
  );

  // examples/prometheus/prometheus.yml with this test's addresses and a 2 s interval
  const cfg = parseYaml(readFileSync(join(root, 'examples/prometheus/prometheus.yml'), 'utf8')) as {
    global: Record<string, string>;
    rule_files: string[];
    scrape_configs: {
      job_name: string;
      static_configs: { targets: string[] }[];
      relabel_configs?: { target_label: string; replacement?: string }[];
    }[];
  };
  cfg.global = { scrape_interval: '2s', scrape_timeout: '2s', evaluation_interval: '2s' };
  cfg.rule_files = cfg.rule_files.map((f) => resolve(root, 'examples/prometheus', f));
  for (const job of cfg.scrape_configs) {
    if (job.job_name === 'ha') job.static_configs[0]!.targets = cluster.nodes.map((n) => `127.0.0.1:${n.apiPort}`);
    if (job.job_name === 'db') job.relabel_configs!.find((r) => r.target_label === '__address__')!.replacement = `127.0.0.1:${port}`;
    if (job.job_name === 'db-exporter') job.static_configs[0]!.targets = [`127.0.0.1:${port}`];
  }
  prom = await startPrometheusConfig(stringifyYaml(cfg));
});

afterAll(async () => {
  await prom?.stop();
  if (exporter?.pid) await stopPid(exporter.pid);
  await cluster?.destroy();
  await stats?.stop();
  if (tmp) await removeTempDir(tmp);
});

describe('db-exporter in a real monitoring stack', () => {
  it('is scraped by Prometheus on /probe for the three members (relabelled) and the agents on /metrics: all up, series apart, rules evaluated', async () => {
    const q = (expr: string, n: number, what: string) =>
      waitFor(
        async () => {
          const r = await prom.query(expr);
          return r.length === n ? r : undefined;
        },
        60_000,
        what,
        500,
      );
    await q('up{job="db"} == 1', 3, 'the three probes up');
    await q('up{job="ha"} == 1', 3, 'the three agents up');
    await q('up{job="db-exporter"} == 1', 1, 'the exporter up');
    const dbUp = await q('db_up{job="db"} == 1', 3, 'db_up 1 for each member');
    expect(dbUp.map((r) => r.metric['instance']).sort()).toEqual(['node1', 'node2', 'node3']);
    expect(dbUp.every((r) => r.metric['scope'] === 'demo')).toBe(true);
    // each member's series apart, and PostgreSQL's view of the roles matches the agents'
    const recovery = await q('pg_instance_in_recovery{job="db"}', 3, 'pg_instance_in_recovery per member');
    expect(recovery.filter((r) => r.value[1] === '0').map((r) => r.metric['instance'])).toEqual([leader]);
    const primary = await q('ha_primary == 1', 1, 'one ha_primary');
    expect(primary[0]!.metric['name']).toBe(leader);
    const lag = await q(`pg_replication_flush_lag_bytes{instance="${leader}"}`, 2, "the leader's two standbys");
    expect(lag.map((r) => r.metric['application_name']).sort()).toEqual(
      cluster.nodes
        .map((n) => n.name)
        .filter((n) => n !== leader)
        .sort(),
    );
    // recording rules evaluated on real data; no critical alert
    await q('ha:leaders:count{scope="demo"} == 1', 1, 'the recording rule ha:leaders:count at 1');
    await q('ha:replica_lag:bytes{scope="demo"}', 2, 'ha:replica_lag:bytes for the two replicas');
    expect(await prom.query('ALERTS{alertstate="firing",severity="critical"}')).toEqual([]);
    // the statements collector is skipped by its predicate where pg_stat_statements is not loaded
    await q(
      'db_exporter_query_scrape_predicate_skip_count{job="db",query="pg_statements"} >= 1',
      3,
      'pg_statements skipped on the members',
    );
    expect(await prom.query('pg_statements_calls{job="db"}')).toEqual([]);
    // the exporter's own /metrics: self-monitoring labelled by target
    const own = (await get('/metrics')).text;
    for (const n of ['node1', 'node2', 'node3']) expect(sampleOf(own, 'db_exporter_target_up', `target="${n}"`), n).toBe(1);
    // a probe answer parses, and the configuration Prometheus runs is valid
    const body = (await get(`/probe?target=${leader}`)).text;
    const lint = promtoolCheckMetrics(body);
    expect(lint.code, lint.output).not.toBe(1);
    expect(lint.output).not.toMatch(/error while linting|parse error|text format parsing error/i);
    expect(body).not.toContain(MONITOR_PASSWORD);
    const { execFileSync } = await import('node:child_process');
    expect(execFileSync('promtool', ['check', 'config', prom.configPath], { encoding: 'utf8' })).toMatch(/SUCCESS: 2 rule files found/);
  });

  it('reports the statements the test ran where pg_stat_statements is loaded, and skips it by its predicate where the extension is absent', async () => {
    const marker = `stack_marker_${Date.now()}`;
    // constants are normalised away ($1), a column alias is kept
    for (let i = 0; i < 3; i++) await stats.psql(`SELECT count(*) AS ${marker} FROM pg_class WHERE relpages >= ${i}`);
    const dsn = `127.0.0.1:${stats.port}/postgres`;
    const r = await get(`/probe?target=${encodeURIComponent(dsn)}&collectors=pg_statements`);
    expect(r.status).toBe(200);
    expect(sampleOf(r.text, 'db_up')).toBe(1);
    const line = r.text.split('\n').find((l) => l.startsWith('pg_statements_calls{') && l.includes(marker));
    expect(
      line,
      r.text
        .split('\n')
        .filter((l) => l.startsWith('pg_statements_calls'))
        .join('\n'),
    ).toBeDefined();
    expect(line).toMatch(/datname="postgres"/);
    expect(line).toMatch(/username="postgres"/);
    expect(Number(line!.split(' ').at(-1))).toBe(3);
    expect(sampleOf(r.text, 'db_exporter_query_scrape_predicate_skip_count', 'query="pg_statements"')).toBe(0);
    // only the selected collector (and the fatal one) ran
    expect(r.text).not.toMatch(/^pg_database_/m);
    expect(r.text).toMatch(/^pg_instance_uptime_seconds /m);
    // /explain of that target shows the branch with its version range, TTL and predicate
    const explain = (await get(`/explain?target=${encodeURIComponent(dsn)}`)).text;
    expect(explain).toContain('#       Version    140000 ~ 170000\n');
    expect(explain).toMatch(/pg_statements_14:\n[\s\S]*predicate_queries:\n {8}- name: pg_stat_statements readable\n/);
    // a database without the extension: skipped, no series, no error
    const none = await get(`/probe?target=${encodeURIComponent(`127.0.0.1:${stats.port}/nostats`)}&collectors=pg_statements`);
    expect(none.status).toBe(200);
    expect(sampleOf(none.text, 'db_up')).toBe(1);
    expect(none.text).not.toMatch(/^pg_statements_/m);
    expect(sampleOf(none.text, 'db_exporter_query_scrape_predicate_skip_count', 'query="pg_statements"')).toBe(1);
    expect(sampleOf(none.text, 'db_exporter_query_scrape_error_count', 'query="pg_statements"')).toBe(0);
  });

  it('answers bad input clearly, and a hundred distinct targets with bounded pools, connections and memory', async () => {
    const enc = encodeURIComponent;
    expect(await get('/probe?target=node9')).toEqual({
      status: 404,
      text: 'unknown target "node9": not named in the probe configuration, and not a host of its allowlist',
    });
    const outside = await get(`/probe?target=${enc(`127.0.0.1:${cluster.nodes[0]!.pgPort}/postgres`)}`);
    expect(outside).toEqual({
      status: 403,
      text: `target host 127.0.0.1:${cluster.nodes[0]!.pgPort} is not in the allowlist of the probe configuration`,
    });
    const withPassword = await get(`/probe?target=${enc(`postgres://postgres:x@127.0.0.1:${stats.port}/postgres`)}`);
    expect(withPassword.status).toBe(400);
    expect(withPassword.text).toMatch(/must not hold a password/);
    expect((await get('/probe')).status).toBe(400);

    const backends = async () =>
      Number((await stats.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'db_exporter'")).trim());
    const before = rssMiB(exporter.pid!);
    const liveBefore = sampleOf((await get('/metrics')).text, 'db_exporter_targets')!;
    const wave = (from: number) =>
      Promise.all(Array.from({ length: 100 }, (_, i) => get(`/probe?target=${enc(`127.0.0.1:${stats.port}/nodb${from + i}`)}`)));
    const first = await wave(0);
    const room = MAX_TARGETS - liveBefore;
    expect(first.filter((r) => r.status === 200)).toHaveLength(room);
    const refused = first.filter((r) => r.status === 429);
    expect(refused).toHaveLength(100 - room);
    expect(refused[0]!.text).toMatch(/^too many DSN targets: 5 are live \(limits.max_targets 8, of which 3 kept for the named targets\)/);
    // the databases do not exist: the admitted targets answer db_up 0
    expect(first.filter((r) => r.status === 200).every((r) => sampleOf(r.text, 'db_up') === 0)).toBe(true);
    const second = await wave(100);
    expect(second.every((r) => r.status === 429)).toBe(true);
    const own = (await get('/metrics')).text;
    expect(sampleOf(own, 'db_exporter_targets')).toBe(MAX_TARGETS);
    expect(sampleOf(own, 'db_exporter_probe_rejected_count', 'reason="too_many_targets"')).toBe(200 - room);
    expect(await backends()).toBeLessThanOrEqual(2 * 5); // pool_size × DSN targets
    expect(rssMiB(exporter.pid!) - before).toBeLessThan(40);
    // the named targets still have their room
    for (const n of cluster.nodes) expect((await get(`/probe?target=${n.name}`)).status, n.name).toBe(200);

    // reload (SIGHUP) with DSN targets no longer allowed: a DSN in the URL is refused, live DSN targets are closed
    writeFileSync(probeConfigPath, probeConfig(false));
    exporter.kill('SIGHUP');
    const dsnRefused = await waitFor(
      async () => {
        const r = await get(`/probe?target=${enc(`127.0.0.1:${stats.port}/postgres`)}`);
        return r.status === 403 ? r : undefined;
      },
      10_000,
      'DSN targets refused after the reload',
      200,
    );
    expect(dsnRefused.text).toBe('a DSN target is not allowed here (allow_dsn is false): name a target of the probe configuration');
    await waitFor(async () => (await backends()) === 0, 10_000, "the DSN targets' connections closed");
    expect((await get(`/probe?target=${leader}`)).status).toBe(200);
  });
});
