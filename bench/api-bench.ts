/**
 * Node API benchmark (issue: "The whole cluster node API"). Real etcd, real PostgreSQL 15, one
 * agent process per node, at ttl 30 / loop_wait 10 / retry_timeout 10.
 *   1. Health-check throughput and latency with wrk (-t2 -c16) on GET /primary of the leader and
 *      GET /replica of a replica, against a bare Hono route (served in this process) that answers
 *      the same bytes as the leader's GET /primary: its status, Content-Type and body, taken from
 *      the leader just before (Content-Length and the other node-server headers are the same). The
 *      two alternate, `--rounds` times (default 3), and the ratio is taken per round. Also: PostgreSQL transactions counted during the load
 *      against the same idle interval (the agents' own 1 s probe is the floor).
 *   2. Switchover: from POST /switchover to the first successful write on the new primary, and
 *      how long writes failed.
 *
 *   node --import tsx bench/api-bench.ts [--seconds 10] [--rounds 3] [--health-only]
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import postgres from 'postgres';
import { TestCluster } from '../tests/e2e/support/cluster.ts';
import { freePort } from '../tests/support/ports.ts';
import { run, sleep, waitFor } from '../tests/support/processes.ts';

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf('--seconds') + 1] ?? 10) || 10;
const rounds = args.includes('--rounds') ? Number(args[args.indexOf('--rounds') + 1]) || 3 : 3;
const healthOnly = args.includes('--health-only');

/** Thrown to end the run after the health checks (`--health-only`). */
class SkipSwitchover extends Error {}

interface WrkResult {
  rps: number;
  p50: string;
  p99: string;
  non2xx: number;
}

/** Runs wrk with --latency and parses requests/s, p50, p99 and non-2xx count. */
async function wrk(url: string): Promise<WrkResult> {
  const out = await run('wrk', ['-t2', '-c16', `-d${seconds}s`, '--latency', url]);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const p50 = /\s50%\s+(\S+)/.exec(out)?.[1] ?? '?';
  const p99 = /\s99%\s+(\S+)/.exec(out)?.[1] ?? '?';
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { rps, p50, p99, non2xx };
}

async function xactCount(sql: postgres.Sql): Promise<number> {
  const [r] = await sql<{ n: string }[]>`select sum(xact_commit + xact_rollback)::text as n from pg_stat_database`;
  return Number(r!.n);
}

const c = await TestCluster.create({ nodes: 3, ttl: 30, loopWait: 10, retryTimeout: 10 });
// The bare route answers what the leader's GET /primary answered (set once the cluster is up).
let bareAnswer = { status: 200, contentType: 'text/plain', body: '' };
const bare = new Hono();
bare.get('/const', (ctx) => ctx.body(bareAnswer.body, bareAnswer.status as 200, { 'Content-Type': bareAnswer.contentType }));
const barePort = await freePort();
const bareServer = serve({ fetch: bare.fetch, port: barePort, hostname: '127.0.0.1' });
try {
  c.startAll();
  let leader = await c.waitForLeader(120_000);
  let replicas = c.nodes.map((n) => n.name).filter((n) => n !== leader);
  await c.waitForStreaming(replicas, 120_000);
  await c.psql(leader, 'create table bench_w (x int)');
  for (const r of replicas) await waitFor(async () => (await c.get(r, '/readiness')).status === 200, 60_000, `${r} ready`);

  // 1. throughput
  const primaryUrl = `http://127.0.0.1:${c.node(leader).apiPort}/primary`;
  const sample = await fetch(primaryUrl);
  bareAnswer = { status: sample.status, contentType: sample.headers.get('content-type') ?? '', body: await sample.text() };
  const bareCheck = await fetch(`http://127.0.0.1:${barePort}/const`);
  const bareBody = await bareCheck.text();
  if (
    bareCheck.status !== bareAnswer.status ||
    bareBody !== bareAnswer.body ||
    bareCheck.headers.get('content-type') !== bareAnswer.contentType ||
    bareCheck.headers.get('content-length') !== sample.headers.get('content-length')
  ) {
    throw new Error('the bare route does not answer the same bytes as GET /primary');
  }
  console.log(
    `GET /primary answers ${sample.status}, ${sample.headers.get('content-type')}, ${sample.headers.get('content-length')} bytes; the bare route answers the same`,
  );
  const sqlL = postgres({
    host: '127.0.0.1',
    port: c.node(leader).pgPort,
    user: 'postgres',
    password: 'e2e-super',
    database: 'postgres',
    max: 1,
  });
  const idle0 = await xactCount(sqlL);
  await sleep(seconds * 1000);
  const idleTx = (await xactCount(sqlL)) - idle0 - 1;
  const replica = await wrk(`http://127.0.0.1:${c.node(replicas[0]!).apiPort}/replica`);
  const load0 = await xactCount(sqlL);
  const pairs: { base: WrkResult; primary: WrkResult }[] = [];
  for (let i = 0; i < rounds; i++) {
    const base = await wrk(`http://127.0.0.1:${barePort}/const`);
    const primary = await wrk(primaryUrl);
    pairs.push({ base, primary });
  }
  const loadTx = (await xactCount(sqlL)) - load0 - 1;
  await sqlL.end();
  console.log(
    `\n## Health checks (wrk -t2 -c16 -d${seconds}s, ${rounds} rounds, load average ${(await import('node:os'))
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')})`,
  );
  for (const [i, { base, primary }] of pairs.entries()) {
    console.log(
      `round ${i + 1}: bare route (same bytes) ${base.rps.toFixed(0)} req/s  p50 ${base.p50}  p99 ${base.p99} | GET /primary ${primary.rps.toFixed(0)} req/s  p50 ${primary.p50}  p99 ${primary.p99}  non-2xx ${primary.non2xx} | ratio ${(primary.rps / base.rps).toFixed(2)} (target ≥ 0.80)`,
    );
  }
  const ratios = pairs.map((p) => p.primary.rps / p.base.rps).sort((x, y) => x - y);
  console.log(
    `median ratio ${ratios[Math.floor(ratios.length / 2)]!.toFixed(2)} (min ${ratios[0]!.toFixed(2)}, max ${ratios[ratios.length - 1]!.toFixed(2)})`,
  );
  console.log(
    `GET /replica on a replica    ${replica.rps.toFixed(0)} req/s  p50 ${replica.p50}  p99 ${replica.p99}  non-2xx ${replica.non2xx}`,
  );
  console.log(
    `PostgreSQL transactions on the leader: ${loadTx} during ${rounds * seconds} s of /primary probes vs ${idleTx} in ${seconds} s idle (the agent's own probe)`,
  );
  console.log('reference manager: 1,280 req/s on GET /primary, p99 120–300 ms, 37% of a core in PostgreSQL');

  if (healthOnly) throw new SkipSwitchover();
  // 2. switchover at loop_wait 10
  const cand = replicas[0]!;
  const clients = c.nodes.map((n) => ({
    n: n.name,
    sql: postgres({
      host: '127.0.0.1',
      port: n.pgPort,
      user: 'postgres',
      password: 'e2e-super',
      database: 'postgres',
      max: 1,
      connect_timeout: 1,
      onnotice: () => {},
    }),
  }));
  let lastOk = Date.now();
  let firstFail = 0;
  let longestGap = 0;
  let firstOnNew = 0;
  let writing = true;
  const writer = (async () => {
    while (writing) {
      const ok = await Promise.any(
        clients.map(async ({ n, sql }) => {
          await sql`insert into bench_w values (1)`;
          return n;
        }),
      ).catch(() => undefined);
      const now = Date.now();
      if (ok) {
        if (firstFail) longestGap = Math.max(longestGap, now - firstFail);
        firstFail = 0;
        lastOk = now;
        if (ok === cand && !firstOnNew) firstOnNew = now;
      } else if (!firstFail) firstFail = lastOk;
      await sleep(2);
    }
  })();
  await sleep(500);
  const t0 = Date.now();
  const res = await fetch(`http://127.0.0.1:${c.node(leader).apiPort}/switchover`, {
    method: 'POST',
    body: JSON.stringify({ leader, candidate: cand }),
  });
  const answered = Date.now();
  await waitFor(() => firstOnNew > 0, 30_000, 'a write on the new primary');
  await sleep(500);
  writing = false;
  await writer;
  await Promise.all(clients.map(({ sql }) => sql.end({ timeout: 1 })));
  console.log('\n## Switchover (loop_wait 10)');
  console.log(`POST /switchover answered ${res.status} "${await res.text()}" after ${answered - t0} ms`);
  console.log(`POST → first write on the new primary: ${((firstOnNew - t0) / 1000).toFixed(3)} s (reference 1.52 s; target ≤ 0.6 s)`);
  console.log(`writes failing for at most: ${(longestGap / 1000).toFixed(3)} s (reference 1.3 s; target ≤ 0.4 s)`);
  leader = cand;
  replicas = c.nodes.map((n) => n.name).filter((n) => n !== leader);
} catch (e) {
  if (!(e instanceof SkipSwitchover)) throw e;
} finally {
  bareServer.close();
  await c.destroy();
}
