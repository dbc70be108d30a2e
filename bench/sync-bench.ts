/**
 * Synchronous replication benchmark (issue 9). Real etcd, PostgreSQL 15 and agents, 3 nodes,
 * ttl 10 / loop_wait 2 / retry_timeout 3, fsync on. For each mode (asynchronous, synchronous_mode
 * true, quorum):
 *   1. pgbench (TPC-B-like, scale 10, 8 clients, 2 threads) for SECONDS s on the leader: TPS and
 *      the p99 of the per-transaction latency (pgbench --log), commit included;
 *   2. node loss (kill -9 of the leader's agent, postmaster and its children) → first
 *      acknowledged write on the new primary, ms.
 * Prints one table, and the ratio of each mode's TPS to the asynchronous run in the same process.
 *
 *   node --import tsx bench/sync-bench.ts [--seconds 30] [--modes off,on,quorum]
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TestCluster } from '../tests/e2e/support/cluster.ts';
import { firstAcknowledgedWrite } from '../tests/e2e/support/writer.ts';
import { loseMember, waitSyncReady } from '../tests/e2e/support/sync.ts';
import { pgBinDir } from '../tests/support/pg.ts';
import { makeTempDir, removeTempDir } from '../tests/support/tmp.ts';

const run = promisify(execFile);
const args = process.argv.slice(2);
const arg = (k: string, d: string) => {
  const i = args.indexOf(k);
  return i >= 0 && args[i + 1] ? args[i + 1]! : d;
};
const SECONDS = Number(arg('--seconds', '30'));
const MODES = arg('--modes', 'off,on,quorum').split(',') as ('off' | 'on' | 'quorum')[];
const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 3;

interface Row {
  mode: string;
  tps: number;
  p50Ms: number;
  p99Ms: number;
  lossToWriteMs: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function benchMode(mode: 'off' | 'on' | 'quorum'): Promise<Row> {
  const dcsExtra = [
    'database: { remove_data_directory_on_diverged_timelines: true, parameters: { fsync: "on", synchronous_commit: "on" } }',
  ];
  if (mode !== 'off') dcsExtra.push(`synchronous_mode: ${mode === 'on' ? 'true' : 'quorum'}`);
  const c = await TestCluster.create({ nodes: 3, ttl: TTL, loopWait: LOOP_WAIT, retryTimeout: RETRY_TIMEOUT, dcsExtra });
  const logDir = await makeTempDir('ha-sync-bench-');
  c.startAll();
  try {
    const leader = mode === 'off' ? await c.waitForLeader(90_000) : await waitSyncReady(c, mode === 'quorum' ? 2 : 1);
    await c.waitForStreaming(
      c.nodes.map((n) => n.name).filter((n) => n !== leader),
      90_000,
    );
    const port = String(c.node(leader).pgPort);
    const env = { ...process.env, PGPASSWORD: 'e2e-super' };
    const common = ['-h', '127.0.0.1', '-p', port, '-U', 'postgres'];
    await run(join(pgBinDir(), 'pgbench'), [...common, '-i', '-q', '-s', '10', 'postgres'], { env });
    if (mode !== 'off') await waitSyncReady(c, mode === 'quorum' ? 2 : 1);
    const { stdout } = await run(
      join(pgBinDir(), 'pgbench'),
      [...common, '-c', '8', '-j', '2', '-T', String(SECONDS), '-l', '--log-prefix', join(logDir, 'tx'), 'postgres'],
      { env, cwd: logDir, maxBuffer: 1 << 24 },
    );
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1] ?? NaN);
    const lat: number[] = [];
    for (const f of readdirSync(logDir)) {
      for (const line of readFileSync(join(logDir, f), 'utf8').split('\n')) {
        const us = Number(line.split(' ')[2]);
        if (Number.isFinite(us) && us > 0) lat.push(us / 1000);
      }
    }
    lat.sort((a, b) => a - b);

    await c.psql(leader, 'create table if not exists bench_w (x int)');
    if (mode !== 'off') await waitSyncReady(c, mode === 'quorum' ? 2 : 1);
    const t0 = Date.now();
    await loseMember(c, leader);
    const { at } = await firstAcknowledgedWrite(
      c,
      c.nodes.map((n) => n.name).filter((n) => n !== leader),
      'bench_w',
      120_000,
      1000,
    );
    return { mode, tps, p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), lossToWriteMs: at - t0 };
  } finally {
    await c.destroy();
    await removeTempDir(logDir);
  }
}

const rows: Row[] = [];
for (const m of MODES) {
  const r = await benchMode(m);
  rows.push(r);
  console.log(
    `${m}: ${r.tps.toFixed(0)} tps, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, node loss → first write ${r.lossToWriteMs} ms`,
  );
}
const base = rows.find((r) => r.mode === 'off');
console.log(
  `\npgbench -c 8 -j 2 -T ${SECONDS}, scale 10, 3 nodes, ttl ${TTL} / loop_wait ${LOOP_WAIT} / retry_timeout ${RETRY_TIMEOUT}, fsync on`,
);
console.log('| mode | TPS | TPS vs async | p50 ms | p99 ms | node loss → first write, ms |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  const name = r.mode === 'off' ? 'asynchronous' : r.mode === 'on' ? 'synchronous_mode: true' : 'synchronous_mode: quorum';
  console.log(
    `| ${name} | ${r.tps.toFixed(0)} | ${base ? (r.tps / base.tps).toFixed(2) : '-'} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.lossToWriteMs} |`,
  );
}
process.exit(0);
