/**
 * Exporter benchmark (prints figures). On one PostgreSQL 15 database with 1,000 tables:
 *  (a) wall time of a full scrape (cache disabled) with the project's default collector set and
 *      with the reference set pg_exporter-config in $HA_REFERENCE_DIR (../shared in CI; without
 *      the variable that set is left out, with a message), and the series count;
 *  (b) the same planned collectors' SQL (pre-check, predicates + main queries) run directly
 *      through postgres.js on a pool with the exporter's settings and the exporter's concurrency
 *      (fatal collectors one after another, then the others with up to 3 in flight, in priority
 *      order), in the same process and run, alternating with (a) scrape by scrape; the
 *      one-after-another figure is printed too;
 *  (c) Debian's prometheus-postgres-exporter default scrape time and series count, same database;
 *  (d) RSS of a `db-exporter` process after its first scrape and after 100 scrapes: the source
 *      under tsx, or the build when DB_EXPORTER_ENTRY names it (e.g. dist/src/cli/db-exporter.js,
 *      after `npm run build`; what operators run, without tsx's ~30 MB of fixed RSS);
 *  (e) multi-target: for each count in DB_EXPORTER_BENCH_TARGETS (10,50), that many databases
 *      (20 tables each) scraped every DB_EXPORTER_BENCH_INTERVAL_S (15) seconds, each target at
 *      its own offset in the interval as Prometheus spreads them, for DB_EXPORTER_BENCH_INTERVALS
 *      (4) intervals after one to warm up: one `db-exporter --probe.config` process answering
 *      /probe?target=<name> for all of them, against one `db-exporter --url` process per target
 *      answering /metrics (each with its own role probe, as operators would run them). Printed:
 *      CPU (utime+stime of the processes, /proc) per target and scrape and as a share of one core,
 *      RSS per target, median scrape wall time, series per scrape and time per series, beside (c)
 *      measured in the same run.
 * Parts: DB_EXPORTER_BENCH_PARTS (default abcde; e.g. ce for the multi-target comparison only).
 * Run: HA_REFERENCE_DIR=$PWD/../shared node --import tsx bench/exporter-bench.ts [scrapes=60]
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import postgres from 'postgres';
import { Exporter } from '../src/exporter/exporter.ts';
import { FACTS_SQL } from '../src/exporter/target.ts';
import { freePort } from '../tests/support/ports.ts';
import { startPostgres } from '../tests/support/pg.ts';
import { sleep, stopPid, waitFor } from '../tests/support/processes.ts';
import { makeTempDir, removeTempDir } from '../tests/support/tmp.ts';
import { REFERENCE_DIR, REFERENCE_ENV, referencePath } from '../tests/support/reference.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const SETS: Record<string, string> = { default: resolve(repoRoot, 'collectors') };
if (REFERENCE_DIR) SETS.shared = referencePath('pg_exporter-config');
else console.log(`${REFERENCE_ENV} is not set to an existing directory: skipping the shared (pg_exporter-config) set\n`);
const N = Number(process.argv[2] ?? 60);
const builtExporter = process.env['DB_EXPORTER_ENTRY'];
const exporterEntry = builtExporter ? [resolve(repoRoot, builtExporter)] : ['--import', 'tsx', resolve(repoRoot, 'src/cli/db-exporter.ts')];
/** Node/V8 flags for the db-exporter process of part (d) (space-separated), e.g. `--single-threaded-gc`. */
const exporterNodeFlags = (process.env['DB_EXPORTER_BENCH_NODE_FLAGS'] ?? '').split(/\s+/).filter(Boolean);
/** Part (d) only (measuring RSS settings). */
const onlyRss = process.env['DB_EXPORTER_BENCH_ONLY_RSS'] === '1';
const parts = onlyRss ? 'd' : (process.env['DB_EXPORTER_BENCH_PARTS'] ?? 'abcde');
const TARGET_COUNTS = (process.env['DB_EXPORTER_BENCH_TARGETS'] ?? '10,50')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const INTERVAL_S = Number(process.env['DB_EXPORTER_BENCH_INTERVAL_S'] ?? 15);
const INTERVALS = Number(process.env['DB_EXPORTER_BENCH_INTERVALS'] ?? 4);
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const seriesCount = (body: string) => body.split('\n').filter((l) => l && !l.startsWith('#')).length;
const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
/** CPU seconds (user + system) a process has used so far. */
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
};

/** (c): prometheus-postgres-exporter's median scrape time, series and time per series, same run. */
let ppeFigures: { ms: number; series: number } | undefined;

/**
 * Scrapes every URL once per interval, each at its own offset (i / n of the interval), for
 * `warm` + `measured` intervals; resolves with the scrape wall times and series counts of the
 * measured intervals and the window's start and end (ms).
 */
async function scrapeSpread(
  urls: string[],
  warm: number,
  measured: number,
): Promise<{ ms: number[]; series: number[]; window: [number, number]; failed: number }> {
  const ms: number[] = [];
  const series: number[] = [];
  let failed = 0;
  const t0 = performance.now() + 200;
  const pending: Promise<void>[] = [];
  let windowStart = 0;
  for (let r = 0; r < warm + measured; r++) {
    if (r === warm) {
      await sleep(Math.max(0, t0 + r * INTERVAL_S * 1000 - performance.now()));
      windowStart = performance.now();
    }
    for (let i = 0; i < urls.length; i++) {
      const at = t0 + (r * INTERVAL_S + (i * INTERVAL_S) / urls.length) * 1000;
      await sleep(Math.max(0, at - performance.now()));
      const timed = r >= warm;
      const start = performance.now();
      pending.push(
        fetch(urls[i]!)
          .then(async (res) => {
            const body = await res.text();
            if (!res.ok) failed++;
            if (timed) {
              ms.push(performance.now() - start);
              series.push(seriesCount(body));
            }
          })
          .catch(() => {
            failed++;
          }),
      );
    }
  }
  await sleep(Math.max(0, t0 + (warm + measured) * INTERVAL_S * 1000 - performance.now()));
  const windowEnd = performance.now();
  await Promise.all(pending);
  return { ms, series, window: [windowStart, windowEnd], failed };
}

const pg = await startPostgres(['max_connections = 400']);
const children: number[] = [];
try {
  if (/[abcd]/.test(parts)) {
    await pg.psql(
      `DO $$ BEGIN FOR i IN 1..1000 LOOP EXECUTE format('CREATE TABLE bench_t%s (id int PRIMARY KEY, v text)', i); END LOOP; END $$`,
    );
    await pg.psql('ANALYZE');
  }
  console.log(
    `load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `database: ${/[abcd]/.test(parts) ? '1000 tables (+1000 indexes)' : 'empty'}, PostgreSQL ${(await pg.psql('SHOW server_version')).trim()}, ${N} timed scrapes each, medians\n`,
  );

  if (onlyRss) console.log('DB_EXPORTER_BENCH_ONLY_RSS set: parts (a)-(c) and (e) skipped\n');
  else if (parts !== 'abcde') console.log(`DB_EXPORTER_BENCH_PARTS=${parts}\n`);
  if (parts.includes('a') || parts.includes('b')) {
    for (const [name, configPath] of Object.entries(SETS)) {
      const exp = new Exporter({ url: pg.url, configPath, disableCache: true, autoDiscovery: false, connectTimeoutMs: 5000 });
      await exp.collect(); // plan + warm connections
      const defs = (exp.primary.runs ?? []).map((r) => r.def);
      const poolMax = exp.primary.poolMax;
      // (b) same SQL straight through postgres.js: a pool with the exporter's settings (src/exporter/target.ts).
      const sql = postgres(pg.url, {
        max: poolMax,
        prepare: false,
        fetch_types: false,
        connect_timeout: 5,
        max_lifetime: 60,
        idle_timeout: 60,
        connection: { application_name: 'bench_direct' },
      });
      // The exporter's per-scrape pre-check statement is SQL it must run too: include it.
      const factsSql = FACTS_SQL;
      const one = async (d: (typeof defs)[number]) => {
        for (const p of d.predicates) await sql.unsafe(p.query);
        await sql.unsafe(d.query).catch(() => undefined);
      };
      // Like Target.scrape: fatal collectors in order, then the rest with up to poolMax in flight.
      const concurrent = async () => {
        await sql.unsafe(factsSql);
        for (const d of defs.filter((x) => x.fatal)) await one(d);
        const rest = defs.filter((x) => !x.fatal);
        let next = 0;
        const worker = async () => {
          for (let i = next++; i < rest.length; i = next++) await one(rest[i]!);
        };
        await Promise.all(Array.from({ length: Math.min(poolMax, rest.length) }, worker));
      };
      const sequential = async () => {
        await sql.unsafe(factsSql);
        for (const d of defs) await one(d);
      };
      await concurrent();
      // (a), (b) and the one-at-a-time run alternate, so that the load of the machine (other work
      // runs on it) weighs on all three alike; the ratio is also taken per round.
      const scrapeMs: number[] = [];
      const directMs: number[] = [];
      const seqMs: number[] = [];
      const ratios: number[] = [];
      let body = '';
      for (let i = 0; i < N; i++) {
        let t0 = performance.now();
        body = await exp.collect();
        scrapeMs.push(performance.now() - t0);
        t0 = performance.now();
        await concurrent();
        directMs.push(performance.now() - t0);
        ratios.push(scrapeMs[i]! / directMs[i]!);
        t0 = performance.now();
        await sequential();
        seqMs.push(performance.now() - t0);
      }
      await exp.stop();
      await sql.end();
      const a = median(scrapeMs);
      const b = median(directMs);
      const bs = median(seqMs);
      const series = seriesCount(body);
      console.log(`[${name}] collectors planned: ${defs.length}`);
      console.log(`  (a) full scrape wall time: ${a.toFixed(1)} ms, series: ${series}, ${((a / series) * 1000).toFixed(2)} µs/series`);
      console.log(
        `  (b) same SQL via postgres.js, exporter's concurrency (${poolMax}): ${b.toFixed(1)} ms  → (a)/(b) = ${(a / b).toFixed(2)} (target <= 1.2); median of the per-round ratios ${median(ratios).toFixed(2)}`,
      );
      console.log(`      one statement at a time: ${bs.toFixed(1)} ms (a / that = ${(a / bs).toFixed(2)})\n`);
    }
  }

  if (parts.includes('c')) {
    // (c) Debian's prometheus-postgres-exporter with its defaults.
    const ppePort = await freePort();
    const ppe = spawn('prometheus-postgres-exporter', [`--web.listen-address=127.0.0.1:${ppePort}`], {
      env: { ...process.env, DATA_SOURCE_NAME: `postgresql://postgres@127.0.0.1:${pg.port}/postgres?sslmode=disable` },
      stdio: 'ignore',
    });
    children.push(ppe.pid!);
    const ppeUrl = `http://127.0.0.1:${ppePort}/metrics`;
    await waitFor(
      () =>
        fetch(ppeUrl)
          .then((r) => r.ok)
          .catch(() => false),
      30_000,
      'postgres_exporter',
    );
    await (await fetch(ppeUrl)).text();
    const ppeMs: number[] = [];
    let ppeBody = '';
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      ppeBody = await (await fetch(ppeUrl)).text();
      ppeMs.push(performance.now() - t0);
    }
    const c = median(ppeMs);
    const cs = seriesCount(ppeBody);
    console.log(
      `[prometheus-postgres-exporter ${'default'}] scrape: ${c.toFixed(1)} ms, series: ${cs} (of which pg_*: ${ppeBody.split('\n').filter((l) => l.startsWith('pg_')).length}), ${((c / cs) * 1000).toFixed(2)} µs/series\n`,
    );
    ppeFigures = { ms: c, series: cs };
    await stopPid(ppe.pid!);
  }

  // (d) RSS of a db-exporter process: after the first scrape and after 100 scrapes (cache disabled).
  for (const [name, configPath] of parts.includes('d') ? Object.entries(SETS) : []) {
    const port = await freePort();
    const cli = spawn(
      process.execPath,
      [
        ...exporterNodeFlags,
        ...exporterEntry,
        '-c',
        configPath,
        '--url',
        pg.url,
        '--web.listen-address',
        `127.0.0.1:${port}`,
        '--disable-cache',
        '--no-auto-discovery',
        '--log.level',
        'error',
      ],
      {
        cwd: repoRoot,
        stdio: 'ignore',
      },
    );
    children.push(cli.pid!);
    const url = `http://127.0.0.1:${port}/metrics`;
    await waitFor(
      () =>
        fetch(url)
          .then((r) => r.ok)
          .catch(() => false),
      30_000,
      'db-exporter',
    );
    const first = rssKb(cli.pid!);
    const ms: number[] = [];
    for (let i = 0; i < 99; i++) {
      const t0 = performance.now();
      await (await fetch(url)).text();
      ms.push(performance.now() - t0);
    }
    const after = rssKb(cli.pid!);
    console.log(
      `[db-exporter RSS, ${name}${builtExporter ? ', built' : ', tsx'}${exporterNodeFlags.length ? `, ${exporterNodeFlags.join(' ')}` : ''}${process.env['MALLOC_ARENA_MAX'] ? `, MALLOC_ARENA_MAX=${process.env['MALLOC_ARENA_MAX']}` : ''}] after first scrape: ${(first / 1024).toFixed(1)} MiB, after 100 scrapes: ${(after / 1024).toFixed(1)} MiB → ratio ${(after / first).toFixed(2)} (target <= 1.2); scrapes 2–100 over HTTP: median ${median(ms).toFixed(1)} ms`,
    );
    await stopPid(cli.pid!);
  }

  // (e) one multi-target exporter against one process per target.
  if (parts.includes('e') && TARGET_COUNTS.length > 0) {
    const most = Math.max(...TARGET_COUNTS);
    await pg.psql('CREATE DATABASE bench_tpl');
    await pg.psql(
      `DO $$ BEGIN FOR i IN 1..20 LOOP EXECUTE format('CREATE TABLE t%s (id int PRIMARY KEY, v text)', i); EXECUTE format('INSERT INTO t%s SELECT g, md5(g::text) FROM generate_series(1, 1000) g', i); END LOOP; END $$`,
      'bench_tpl',
    );
    await pg.psql('ANALYZE', 'bench_tpl');
    for (let i = 1; i <= most; i++) await pg.psql(`CREATE DATABASE bench_t${i} TEMPLATE bench_tpl`);
    const tmp = await makeTempDir('exporter-bench-');
    const collectors = resolve(repoRoot, 'collectors');
    const start = async (args: string[]): Promise<{ pid: number; url: string }> => {
      const port = await freePort();
      const child = spawn(
        process.execPath,
        [
          ...exporterNodeFlags,
          ...exporterEntry,
          '-c',
          collectors,
          '--web.listen-address',
          `127.0.0.1:${port}`,
          '--log.level',
          'error',
          ...args,
        ],
        { cwd: repoRoot, stdio: 'ignore' },
      );
      children.push(child.pid!);
      const url = `http://127.0.0.1:${port}`;
      await waitFor(
        () =>
          fetch(`${url}/version`)
            .then((r) => r.ok)
            .catch(() => false),
        60_000,
        'db-exporter',
      );
      return { pid: child.pid!, url };
    };
    console.log(
      `(e) one exporter for N targets against one process per target: databases of 20 tables, default collector set, a scrape of each target every ${INTERVAL_S} s, ${INTERVALS} intervals measured after 1 (${builtExporter ? 'built' : 'tsx'})`,
    );
    try {
      for (const n of TARGET_COUNTS) {
        const names = Array.from({ length: n }, (_, i) => `bench_t${i + 1}`);
        // one process, /probe
        const probeConfig = join(tmp, `probe-${n}.yml`);
        writeFileSync(
          probeConfig,
          [
            'auth_modules:',
            '  bench: { userpass: { username: postgres } }',
            'targets:',
            ...names.map((d) => `  ${d}: { dsn: "127.0.0.1:${pg.port}/${d}", auth_module: bench }`),
            `limits: { max_targets: ${n}, pool_size: 3 }`,
            '',
          ].join('\n'),
        );
        const multi = await start(['--probe.config', probeConfig]);
        const cpu0 = cpuSeconds(multi.pid);
        const m = await scrapeSpread(
          names.map((d) => `${multi.url}/probe?target=${d}`),
          1,
          INTERVALS,
        );
        const multiCpu = cpuSeconds(multi.pid) - cpu0;
        const multiRss = rssKb(multi.pid) / 1024;
        await stopPid(multi.pid);
        // one process per target, /metrics
        const singles: { pid: number; url: string }[] = [];
        for (const d of names) singles.push(await start(['--url', `postgres://postgres@127.0.0.1:${pg.port}/${d}`, '--no-auto-discovery']));
        const scpu0 = singles.reduce((a, p) => a + cpuSeconds(p.pid), 0);
        const sres = await scrapeSpread(
          singles.map((p) => `${p.url}/metrics`),
          1,
          INTERVALS,
        );
        const singleCpu = singles.reduce((a, p) => a + cpuSeconds(p.pid), 0) - scpu0;
        const singleRss = singles.reduce((a, p) => a + rssKb(p.pid), 0) / 1024;
        for (const p of singles) await stopPid(p.pid);
        const report = (what: string, r: typeof m, cpu: number, rss: number) => {
          const windowS = (r.window[1] - r.window[0]) / 1000;
          const scrapes = n * INTERVALS;
          const ms = median(r.ms);
          const series = median(r.series);
          console.log(
            `  [${what}, ${n} targets] CPU ${((cpu * 1000) / scrapes).toFixed(1)} ms per target and scrape (${((cpu / windowS / n) * 100).toFixed(3)} % of a core per target), RSS ${(rss / n).toFixed(1)} MiB per target (${rss.toFixed(0)} MiB), scrape median ${ms.toFixed(1)} ms, ${series} series, ${((ms / series) * 1000).toFixed(2)} µs/series${r.failed ? `, ${r.failed} failed` : ''}`,
          );
          return { cpu, rss, ms, series };
        };
        const a = report('one process, /probe', m, multiCpu, multiRss);
        const b = report('one process per target, /metrics', sres, singleCpu, singleRss);
        console.log(
          `  → one process / one per target: CPU ${(a.cpu / b.cpu).toFixed(2)}, RSS ${(a.rss / b.rss).toFixed(2)}${ppeFigures ? `; time per series ${((a.ms / a.series) * 1000).toFixed(2)} µs against prometheus-postgres-exporter's ${((ppeFigures.ms / ppeFigures.series) * 1000).toFixed(2)} µs (c)` : ''}\n`,
        );
      }
    } finally {
      await removeTempDir(tmp);
    }
  }
} finally {
  for (const pid of children) await stopPid(pid);
  await pg.stop();
}
