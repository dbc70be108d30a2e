/**
 * Quorum failover benchmark (issue 28; docs/ha.md "Quorum failover"). Real etcd, PostgreSQL 15 and
 * agents at the default timing (ttl 30, loop_wait 10, retry_timeout 10), `synchronous_mode:
 * quorum`, `synchronous_mode_strict: true`, 3 and 5 members. For each size, in the same run:
 * the mode on (`quorum_failover_window`, default 2 s) and off (lease-based failover, the same
 * synchronous settings). The leader's node is lost ROUNDS times (kill -9 of its agent, postmaster
 * and children; the member started again after each) while the recorded writer commits one row at a
 * time through /primary. Per loss:
 *   - first acknowledged write on a new primary after the kill (a write tried every 5 ms on every
 *     survivor; in strict mode it is acknowledged only once a synchronous standby has it);
 *   - the new leader key, and (mode on) the first fence record, after the kill;
 *   - the detection window's share of the time to the first write (window / first write).
 * At the end: acknowledged writes of the recorded writer missing on the leader (must be 0).
 *
 *   node --import tsx bench/quorum-failover.ts [--nodes 3,5] [--rounds 3] [--window 2]
 */
import { TestCluster } from '../tests/e2e/support/cluster.ts';
import { loseMember, waitSyncReady } from '../tests/e2e/support/sync.ts';
import { createSafetyTables, firstAcknowledgedWrite, startWriter, WRITER_TABLE } from '../tests/e2e/support/writer.ts';
import { sleep } from '../tests/support/processes.ts';

const args = process.argv.slice(2);
const arg = (k: string, d: string) => {
  const i = args.indexOf(k);
  return i >= 0 && args[i + 1] ? args[i + 1]! : d;
};
const SIZES = arg('--nodes', '3,5').split(',').map(Number);
const ROUNDS = Number(arg('--rounds', '3'));
const WINDOW_S = Number(arg('--window', '2'));
const TTL = 30;
const LOOP_WAIT = 10;
const RETRY_TIMEOUT = 10;

interface Loss {
  firstWriteMs: number;
  leaderKeyMs: number;
  fenceMs: number | undefined;
}

/** Acknowledged ids of the recorded writer that the leader does not hold. */
async function lostWrites(c: TestCluster, leader: string, ids: number[]): Promise<number> {
  const out = await c.psql(leader, `select id from ${WRITER_TABLE}`, 10_000);
  const held = new Set(out.split('\n').filter(Boolean).map(Number));
  return ids.filter((id) => !held.has(id)).length;
}

async function runCase(nodes: number, quorum: boolean): Promise<{ losses: Loss[]; lost: number; acked: number }> {
  const c = await TestCluster.create({
    nodes,
    ttl: TTL,
    loopWait: LOOP_WAIT,
    retryTimeout: RETRY_TIMEOUT,
    dcsExtra: ['synchronous_mode: quorum', 'synchronous_mode_strict: true', ...(quorum ? [`quorum_failover_window: ${WINDOW_S}`] : [])],
  });
  c.startAll();
  const losses: Loss[] = [];
  let writer: ReturnType<typeof startWriter> | undefined;
  try {
    const first = await waitSyncReady(c, nodes - 1, 180_000);
    await createSafetyTables(c, first);
    await c.psql(first, 'create table bench_q (x int)');
    writer = startWriter(c);
    for (let i = 0; i < ROUNDS; i++) {
      const leader = await waitSyncReady(c, nodes - 1, 180_000);
      await sleep(2000);
      const survivors = c.nodes.map((n) => n.name).filter((n) => n !== leader);
      const t0 = Date.now();
      await loseMember(c, leader);
      const keyed = c.waitForLeader((TTL + 60) * 1000, leader).then(() => Date.now());
      const [at, keyAt] = await Promise.all([firstAcknowledgedWrite(c, survivors, 'bench_q', (TTL + 60) * 1000).then((w) => w.at), keyed]);
      const fence = survivors.map((n) => c.firstLogLine(n, /^fenced /, t0)).find((l) => l !== undefined);
      losses.push({ firstWriteMs: at - t0, leaderKeyMs: keyAt - t0, fenceMs: fence ? Number(fence['time']) - t0 : undefined });
      c.start(leader);
    }
    const leader = await waitSyncReady(c, nodes - 1, 180_000);
    await sleep(2000);
    const records = await writer.stop();
    writer = undefined;
    return {
      losses,
      lost: await lostWrites(
        c,
        leader,
        records.map((r) => r.id),
      ),
      acked: records.length,
    };
  } finally {
    await writer?.stop().catch(() => undefined);
    await c.destroy();
  }
}

const range = (xs: number[]) => {
  const v = xs.filter((x) => Number.isFinite(x));
  if (v.length === 0) return '–';
  const lo = Math.min(...v) / 1000;
  const hi = Math.max(...v) / 1000;
  const mean = v.reduce((a, b) => a + b, 0) / v.length / 1000;
  return `${mean.toFixed(1)} s (${lo.toFixed(1)}–${hi.toFixed(1)})`;
};

const rows: string[] = [];
for (const nodes of SIZES) {
  for (const quorum of [true, false]) {
    const r = await runCase(nodes, quorum);
    const writes = r.losses.map((l) => l.firstWriteMs);
    const share = quorum ? writes.map((w) => `${Math.round(((WINDOW_S * 1000) / w) * 100)}%`).join(', ') : '–';
    rows.push(
      `| ${nodes} | ${quorum ? `quorum failover, window ${WINDOW_S} s` : 'lease (mode off)'} | ${range(writes)} | ${range(r.losses.map((l) => l.leaderKeyMs))} | ` +
        `${quorum ? range(r.losses.map((l) => l.fenceMs ?? Number.NaN)) : '–'} | ${share} | ${r.lost} of ${r.acked} |`,
    );
    console.log(`${nodes} members, ${quorum ? 'quorum' : 'lease'}: ${JSON.stringify(r.losses)}`);
  }
}
console.log(
  `\nttl ${TTL} / loop_wait ${LOOP_WAIT} / retry_timeout ${RETRY_TIMEOUT}, synchronous_mode quorum + strict, ${ROUNDS} losses each (mean, range)`,
);
console.log(
  '| members | failover | kill → first acknowledged write | kill → new leader key | kill → first fence | window share | acknowledged writes lost |',
);
console.log('| ---: | --- | ---: | ---: | ---: | --- | ---: |');
for (const r of rows) console.log(r);
