/**
 * The /probe side of the exporter without a database: the target registry (limit, idle drop,
 * serialised and shared scrapes) and the HTTP answers of a Prober whose targets are fakes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createExporterApp } from '../../src/exporter/http.ts';
import { probeOnlyApi } from '../../src/exporter/probe-only.ts';
import { Prober } from '../../src/exporter/probe.ts';
import { DEFAULT_PROBE_LIMITS } from '../../src/exporter/probe-config.ts';
import type { TargetSpec } from '../../src/exporter/probe-request.ts';
import { ProbeTargets, type ProbeTargetLike } from '../../src/exporter/probe-targets.ts';
import type { CollectorFilter, TargetScrape } from '../../src/exporter/target.ts';
import type { CollectorDef } from '../../src/exporter/types.ts';

const DEFAULTS = resolve(import.meta.dirname, '../../collectors');
const dir = mkdtempSync(join(tmpdir(), 'probe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A target that never connects: each scrape answers after `delayMs` with one family naming its URL. */
class FakeTarget implements ProbeTargetLike {
  static made: FakeTarget[] = [];
  closed = false;
  scrapes = 0;
  running = 0;
  maxRunning = 0;
  filters: (CollectorFilter | undefined)[] = [];
  readonly stats = { lastDurationSeconds: 0, totalSeconds: 0, totalCount: 0, errorCount: 0 };
  runs: ProbeTargetLike['runs'];
  facts: ProbeTargetLike['facts'] = undefined;
  readonly poolMax = 2;
  constructor(
    readonly spec: TargetSpec,
    defs: CollectorDef[] = [],
    private readonly delayMs = 5,
  ) {
    FakeTarget.made.push(this);
    this.runs = defs.map((def) => ({
      def,
      stats: { total: 0, rows: 0, errors: 0, skips: 0, metrics: 0, ttlLeftSeconds: 0, durationMs: 0 },
    })) as unknown as ProbeTargetLike['runs'];
  }
  get datname() {
    return 'postgres';
  }
  async scrape(select?: CollectorFilter): Promise<TargetScrape> {
    this.scrapes++;
    this.filters.push(select);
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    await new Promise((r) => setTimeout(r, this.delayMs));
    this.running--;
    this.stats.totalCount++;
    const down = this.spec.url.includes('/down');
    this.facts = { version: 150004, inRecovery: false, dbname: 'postgres', username: 'u', databases: [], schemas: [], extensions: [] };
    return down
      ? { up: false, families: [], error: new Error('connection refused') }
      : {
          up: true,
          families: [{ name: 'pg_fake', help: 'fake', type: 'gauge', samples: [{ labels: [['url', this.spec.url]], value: 1 }] }],
        };
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}
afterEach(() => {
  FakeTarget.made = [];
});

const spec = (key: string): TargetSpec => ({ key, label: key, url: `postgres://h/${key}`, tags: [], named: false });

describe('ProbeTargets', () => {
  it('holds at most max_targets, refuses the next, and drops targets idle past target_idle_seconds', async () => {
    let now = 1_000_000;
    const reg = new ProbeTargets(
      { ...DEFAULT_PROBE_LIMITS, maxTargets: 2, targetIdleSeconds: 60 },
      (s) => new FakeTarget(s),
      () => now,
    );
    const a = reg.acquire(spec('a'))!;
    expect(reg.acquire(spec('a'))).toBe(a);
    expect(reg.acquire(spec('b'))).toBeDefined();
    expect(reg.acquire(spec('c'))).toBeUndefined();
    expect(FakeTarget.made).toHaveLength(2);
    now += 30_000;
    await reg.scrape(a, '', undefined); // a used at +30 s
    now += 45_000; // b idle 75 s, a idle 45 s
    const c = reg.acquire(spec('c'));
    expect(c).toBeDefined();
    expect(reg.entries().map((e) => e.spec.key)).toEqual(['a', 'c']);
    expect(FakeTarget.made[1]!.closed).toBe(true);
    expect(FakeTarget.made[0]!.closed).toBe(false);
    await reg.closeAll();
    expect(FakeTarget.made.every((t) => t.closed)).toBe(true);
    expect(reg.size).toBe(0);
  });

  it('never drops a target while a probe of it runs', async () => {
    let now = 0;
    const reg = new ProbeTargets(
      { ...DEFAULT_PROBE_LIMITS, targetIdleSeconds: 1 },
      (s) => new FakeTarget(s, [], 50),
      () => now,
    );
    const e = reg.acquire(spec('a'))!;
    const p = reg.scrape(e, '', undefined);
    now += 10_000;
    expect(reg.sweep()).toEqual([]);
    await p;
    now += 10_000;
    expect(reg.sweep()).toEqual(['a']);
  });

  it('runs the probes of one target one after another, and shares concurrent identical ones', async () => {
    const reg = new ProbeTargets(DEFAULT_PROBE_LIMITS, (s) => new FakeTarget(s, [], 20));
    const e = reg.acquire(spec('a'))!;
    const same = await Promise.all([reg.scrape(e, 'x', undefined), reg.scrape(e, 'x', undefined), reg.scrape(e, 'x', undefined)]);
    expect(same[0]).toBe(same[1]);
    const t = FakeTarget.made[0]!;
    expect(t.scrapes).toBe(1);
    await Promise.all([reg.scrape(e, 'x', undefined), reg.scrape(e, 'y', () => true), reg.scrape(e, 'z', () => false)]);
    expect(t.scrapes).toBe(4);
    expect(t.maxRunning).toBe(1);
    expect(e).toMatchObject({ probes: 4, errors: 0, up: 1, busy: 0 });
  });
});

describe('Prober over HTTP', () => {
  let n = 0;
  const probeConfig = (text: string) => {
    const p = join(dir, `probe${++n}.yml`);
    writeFileSync(p, text);
    return p;
  };
  const CONFIG = [
    'auth_modules:',
    '  mon: { userpass: { username: monitor, password: s3cret } }',
    'targets:',
    '  node1: { dsn: "10.0.0.1:5432/postgres", auth_module: mon }',
    '  node2: { dsn: "10.0.0.2:5432/down", auth_module: mon }',
    'allow_dsn: true',
    'allowlist: ["127.0.0.1"]',
    'default_auth_module: mon',
    'limits: { max_targets: 8 }',
    '',
  ].join('\n');
  const make = (text = CONFIG, extra: Partial<ConstructorParameters<typeof Prober>[0]> = {}) => {
    const prober = new Prober({
      probeConfigPath: probeConfig(text),
      configPath: DEFAULTS,
      makeTarget: (s, defs) => new FakeTarget(s, defs),
      ...extra,
    });
    return { prober, app: createExporterApp(probeOnlyApi(prober), { probe: prober }) };
  };
  const get = async (app: ReturnType<typeof make>['app'], path: string) => {
    const r = await app.request(path);
    return { status: r.status, text: await r.text(), headers: r.headers };
  };

  it('answers a named target with its series and self-monitoring, and a down one with db_up 0', async () => {
    const { prober, app } = make();
    const a = await get(app, '/probe?target=node1');
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(a.text).toContain('pg_fake{url="postgres://10.0.0.1:5432/postgres"} 1\n');
    expect(a.text).toMatch(/^db_up 1$/m);
    expect(a.text).toMatch(/^db_version 150004$/m);
    expect(a.text).toMatch(/^db_exporter_server_scrape_total_count\{datname="postgres"\} 1$/m);
    expect(a.text).not.toContain('s3cret');
    const b = await get(app, '/probe?target=node2');
    expect(b.status).toBe(200);
    expect(b.text).toMatch(/^db_up 0$/m);
    const own = await get(app, '/metrics');
    expect(own.text).toMatch(/^db_exporter_target_up\{target="node1"\} 1$/m);
    expect(own.text).toMatch(/^db_exporter_target_up\{target="node2"\} 0$/m);
    expect(own.text).toMatch(/^db_exporter_target_scrape_error_count\{target="node2"\} 1$/m);
    expect(own.text).toMatch(/^db_exporter_targets 2$/m);
    await prober.stop();
  });

  it('gives clear 4xx answers that create no target, and counts them by reason', async () => {
    const { prober, app } = make(CONFIG.replace('allow_dsn: true', 'allow_dsn: false'));
    const cases: [string, number, RegExp][] = [
      ['/probe', 400, /^target is required/],
      ['/probe?target=node9', 404, /^unknown target "node9"/],
      ['/probe?target=127.0.0.1:5432/postgres', 403, /^a DSN target is not allowed here/],
      ['/probe?target=node1&target=node2', 400, /^target is given more than once/],
      ['/probe?target=node1&collectors=pg_nope', 400, /^unknown collector "pg_nope"/],
      ['/probe?target=node1&auth_module=ghost', 400, /^auth_module "ghost" not found/],
    ];
    for (const [path, status, body] of cases) {
      const r = await get(app, path);
      expect(r.status, path).toBe(status);
      expect(r.text, path).toMatch(body);
      expect(r.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    }
    expect(FakeTarget.made).toHaveLength(0);
    expect(prober.targets.size).toBe(0);
    const own = (await get(app, '/metrics')).text;
    expect(own).toMatch(/^db_exporter_probe_rejected_count\{reason="bad_request"\} 1$/m);
    expect(own).toMatch(/^db_exporter_probe_rejected_count\{reason="unknown_target"\} 1$/m);
    expect(own).toMatch(/^db_exporter_probe_rejected_count\{reason="dsn_not_allowed"\} 1$/m);
    await prober.stop();
  });

  it('bounds a hundred distinct targets: max_targets pools with room kept for the named ones, 429 for the rest', async () => {
    const { prober, app } = make();
    const res = await Promise.all(Array.from({ length: 100 }, (_, i) => get(app, `/probe?target=127.0.0.1:5432/db${i}`)));
    // max_targets 8, two named targets: six DSN targets
    expect(res.filter((r) => r.status === 200)).toHaveLength(6);
    const refused = res.filter((r) => r.status === 429);
    expect(refused).toHaveLength(94);
    expect(refused[0]!.text).toMatch(/^too many DSN targets: 6 are live \(limits.max_targets 8, of which 2 kept for the named targets\)/);
    expect(refused[0]!.headers.get('retry-after')).toBe('300');
    expect(FakeTarget.made).toHaveLength(6);
    // the named targets still get in
    expect((await get(app, '/probe?target=node1')).status).toBe(200);
    expect((await get(app, '/probe?target=node2')).status).toBe(200);
    expect((await get(app, '/probe?target=127.0.0.1:5432/db99')).status).toBe(429);
    expect((await get(app, '/probe?target=10.0.0.9:5432/x')).status).toBe(403);
    expect(FakeTarget.made).toHaveLength(8);
    expect(prober.targets.size).toBe(8);
    await prober.stop();
  });

  it('runs only the selected collectors (and the fatal ones), and reports only theirs', async () => {
    const { prober, app } = make();
    const body = (await get(app, '/probe?target=node1&collectors=pg_settings')).text;
    const filter = FakeTarget.made[0]!.filters[0]!;
    const defs = prober.collectors.collectors;
    expect(filter(defs.find((d) => d.name === 'pg_settings')!)).toBe(true);
    expect(filter(defs.find((d) => d.name === 'pg_database')!)).toBe(false);
    expect(body).toContain('query="pg_settings"');
    expect(body).toContain('query="pg_instance"'); // fatal
    expect(body).not.toContain('query="pg_database"');
    const all = (await get(app, '/probe?target=node1')).text;
    expect(all).toContain('query="pg_database"');
    expect(FakeTarget.made[0]!.filters[1]).toBeUndefined();
    await prober.stop();
  });

  it('serves /explain and /stat of a probed target, 404 before its first probe', async () => {
    const { prober, app } = make();
    const before = await get(app, '/explain?target=node1');
    expect(before.status).toBe(404);
    expect(before.text).toMatch(/has not been probed yet/);
    await get(app, '/probe?target=node1');
    const ex = await get(app, '/explain?target=node1');
    expect(ex.status).toBe(200);
    expect(ex.text).toContain('# SYNOPSIS');
    expect((await get(app, '/stat?target=node1')).text).toMatch(/^name +total/);
    expect((await get(app, '/explain?target=nope')).status).toBe(404);
    await prober.stop();
  });

  it('answers 404 on /probe when the exporter has no probe configuration', async () => {
    const { prober } = make();
    const app = createExporterApp(probeOnlyApi(prober));
    const r = await get(app, '/probe?target=node1');
    expect(r.status).toBe(404);
    expect(r.text).toMatch(/--probe\.config/);
    await prober.stop();
  });

  it('reload: a broken probe configuration keeps the old one; a good one closes every target', async () => {
    const path = probeConfig(CONFIG);
    const prober = new Prober({ probeConfigPath: path, configPath: DEFAULTS, makeTarget: (s, defs) => new FakeTarget(s, defs) });
    await prober.probe({ target: 'node1' });
    writeFileSync(path, 'allow_dsn: true\n');
    const bad = await prober.reload();
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/allow_dsn needs an allowlist/);
    expect((await prober.probe({ target: 'node1' })).status).toBe(200);
    writeFileSync(path, CONFIG.replace('node1:', 'nodeA:'));
    expect(await prober.reload()).toEqual({ ok: true });
    expect(FakeTarget.made[0]!.closed).toBe(true);
    expect((await prober.probe({ target: 'node1' })).status).toBe(404);
    expect((await prober.probe({ target: 'nodeA' })).status).toBe(200);
    await prober.stop();
  });
});
