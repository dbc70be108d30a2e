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
 *      after `npm run build`; what operators run, without tsx's ~30 MB of fixed RSS).
 * Run: HA_REFERENCE_DIR=$PWD/../shared node --import tsx bench/exporter-bench.ts [scrapes=60]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import postgres from 'postgres';
import { Exporter } from '../src/exporter/exporter.ts';
import { FACTS_SQL } from '../src/exporter/target.ts';
import { freePort } from '../tests/support/ports.ts';
import { startPostgres } from '../tests/support/pg.ts';
import { stopPid, waitFor } from '../tests/support/processes.ts';
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

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const seriesCount = (body: string) => body.split('\n').filter((l) => l && !l.startsWith('#')).length;
const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

const pg = await startPostgres(['max_connections = 200']);
const children: number[] = [];
try {
  await pg.psql(`DO $$ BEGIN FOR i IN 1..1000 LOOP EXECUTE format('CREATE TABLE bench_t%s (id int PRIMARY KEY, v text)', i); END LOOP; END $$`);
  await pg.psql('ANALYZE');
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`database: 1000 tables (+1000 indexes), PostgreSQL ${(await pg.psql('SHOW server_version')).trim()}, ${N} timed scrapes each, medians\n`);

  if (onlyRss) console.log('DB_EXPORTER_BENCH_ONLY_RSS set: parts (a)-(c) skipped\n');
  else {
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
      console.log(`  (b) same SQL via postgres.js, exporter's concurrency (${poolMax}): ${b.toFixed(1)} ms  → (a)/(b) = ${(a / b).toFixed(2)} (target <= 1.2); median of the per-round ratios ${median(ratios).toFixed(2)}`);
      console.log(`      one statement at a time: ${bs.toFixed(1)} ms (a / that = ${(a / bs).toFixed(2)})\n`);
    }

    // (c) Debian's prometheus-postgres-exporter with its defaults.
    const ppePort = await freePort();
    const ppe = spawn('prometheus-postgres-exporter', [`--web.listen-address=127.0.0.1:${ppePort}`], {
      env: { ...process.env, DATA_SOURCE_NAME: `postgresql://postgres@127.0.0.1:${pg.port}/postgres?sslmode=disable` },
      stdio: 'ignore',
    });
    children.push(ppe.pid!);
    const ppeUrl = `http://127.0.0.1:${ppePort}/metrics`;
    await waitFor(() => fetch(ppeUrl).then((r) => r.ok).catch(() => false), 30_000, 'postgres_exporter');
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
    console.log(`[prometheus-postgres-exporter ${'default'}] scrape: ${c.toFixed(1)} ms, series: ${cs} (of which pg_*: ${ppeBody.split('\n').filter((l) => l.startsWith('pg_')).length}), ${((c / cs) * 1000).toFixed(2)} µs/series\n`);
    await stopPid(ppe.pid!);

  }

  // (d) RSS of a db-exporter process: after the first scrape and after 100 scrapes (cache disabled).
  for (const [name, configPath] of Object.entries(SETS)) {
    const port = await freePort();
    const cli = spawn(process.execPath, [...exporterNodeFlags, ...exporterEntry, '-c', configPath, '--url', pg.url, '--web.listen-address', `127.0.0.1:${port}`, '--disable-cache', '--no-auto-discovery', '--log.level', 'error'], {
      cwd: repoRoot,
      stdio: 'ignore',
    });
    children.push(cli.pid!);
    const url = `http://127.0.0.1:${port}/metrics`;
    await waitFor(() => fetch(url).then((r) => r.ok).catch(() => false), 30_000, 'db-exporter');
    const first = rssKb(cli.pid!);
    const ms: number[] = [];
    for (let i = 0; i < 99; i++) {
      const t0 = performance.now();
      await (await fetch(url)).text();
      ms.push(performance.now() - t0);
    }
    const after = rssKb(cli.pid!);
    console.log(`[db-exporter RSS, ${name}${builtExporter ? ', built' : ', tsx'}${exporterNodeFlags.length ? `, ${exporterNodeFlags.join(' ')}` : ''}${process.env['MALLOC_ARENA_MAX'] ? `, MALLOC_ARENA_MAX=${process.env['MALLOC_ARENA_MAX']}` : ''}] after first scrape: ${(first / 1024).toFixed(1)} MiB, after 100 scrapes: ${(after / 1024).toFixed(1)} MiB → ratio ${(after / first).toFixed(2)} (target <= 1.2); scrapes 2–100 over HTTP: median ${median(ms).toFixed(1)} ms`);
    await stopPid(cli.pid!);
  }
} finally {
  for (const pid of children) await stopPid(pid);
  await pg.stop();
}
