/**
 * Switchover benchmark (issue 13). Real etcd, real PostgreSQL 15, one agent per node (3 nodes,
 * ttl 30 / loop_wait 10 / retry_timeout 10 unless told otherwise). Prints figures, asserts nothing.
 *
 * For each of N switchovers (back and forth between two members), with one writer per member
 * sending an INSERT every ~2 ms (each on its own connection, none waiting for another):
 *   - POST /switchover → first acknowledged write on the new primary;
 *   - the write gap: last write the old primary acknowledged → first the new one acknowledged;
 *   - the phases, ms from the POST: from the etcd watch (failover key written, leader key deleted,
 *     leader key created by the candidate) and from the agents' journals (GET /events: the old
 *     leader's database machine running→stopping and →stopped, the candidate's cmd.promote and the
 *     end of its promote actor).
 * Then, optionally, node loss: SIGKILL of the leader's agent and postmaster → leader key expiry
 * (watched in etcd) → first write on a survivor.
 * Then the physical floors on a throwaway primary/standby pair (same binaries, same machine, same
 * moment): `pg_ctl stop -m fast` alone (with and without a CHECKPOINT just before), and
 * `SELECT pg_promote(false)` → pg_is_in_recovery() false.
 *
 *   node --import tsx bench/switchover.ts [--rounds 5] [--ttl 30 --loop-wait 10] [--no-node-loss] [--no-floors] [--logs]
 * `--logs` prints the agents' log lines of each round (up to its first write on the new primary).
 */
import { Etcd3 } from 'etcd3';
import postgres from 'postgres';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, chownSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { TestCluster } from '../tests/e2e/support/cluster.ts';
import { superuserClient } from '../tests/e2e/support/writer.ts';
import { sleep, stopPid, waitFor } from '../tests/support/processes.ts';

const args = process.argv.slice(2);
const arg = (k: string, d: string) => {
  const i = args.indexOf(k);
  return i >= 0 && args[i + 1] ? args[i + 1]! : d;
};
const rounds = Number(arg('--rounds', '5'));
const ttl = Number(arg('--ttl', '30'));
const loopWait = Number(arg('--loop-wait', '10'));
const retryTimeout = Number(arg('--retry-timeout', '10'));
const BIN = process.env['PG_BIN'] ?? '/usr/lib/postgresql/15/bin';

interface JournalEntry {
  time: string;
  machine: string;
  kind: string;
  from?: string;
  to?: string;
  event?: { type?: string };
}

async function journal(c: TestCluster, n: string, sinceMs: number): Promise<JournalEntry[]> {
  const r = await c.get(n, '/events?limit=1000');
  const es = ((r.json()?.events ?? []) as JournalEntry[]).filter((e) => Date.parse(e.time) >= sinceMs);
  return es.reverse();
}
const firstAt = (es: JournalEntry[], p: (e: JournalEntry) => boolean): number | undefined => {
  const e = es.find(p);
  return e ? Date.parse(e.time) : undefined;
};

const fmt = (v: number | undefined, t0: number) => (v === undefined ? '   ?' : String(v - t0).padStart(4));
const range = (xs: number[]) =>
  xs.length ? `${Math.min(...xs)}–${Math.max(...xs)} ms (median ${[...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]})` : 'n/a';

async function switchovers(c: TestCluster, etcd: Etcd3): Promise<{ leader: string }> {
  let leader = await c.waitForLeader(120_000);
  let replicas = c.nodes.map((n) => n.name).filter((n) => n !== leader);
  await c.waitForStreaming(replicas, 120_000);
  await c.psql(leader, 'create table if not exists bench_w (x int)');
  await sleep(3000);
  const firsts: number[] = [];
  const gaps: number[] = [];
  const phaseSums: Record<string, number[]> = {};
  const keyEvents: { at: number; key: string; type: 'put' | 'delete'; value: string }[] = [];
  const watchers = await Promise.all(
    ['leader', 'failover'].map(async (k) => {
      const w = await etcd.watch().key(`/service/${c.scope}/${k}`).create();
      w.on('put', (kv) => keyEvents.push({ at: Date.now(), key: k, type: 'put', value: kv.value.toString() }));
      w.on('delete', () => keyEvents.push({ at: Date.now(), key: k, type: 'delete', value: '' }));
      return w;
    }),
  );
  console.log(`\n## switchovers (ttl ${ttl} / loop_wait ${loopWait} / retry_timeout ${retryTimeout}), ms from POST /switchover`);
  console.log(
    'round  old→new      failover-put  demote  lock-del  old-stopped  lock-put  cmd.promote  promoted  POST-answer  last-old-write  FIRST-WRITE  gap',
  );
  for (let round = 0; round < rounds; round++) {
    const cand = replicas[0]!;
    const clients = c.nodes.map((n) => ({ n: n.name, sql: superuserClient(c, n.name) }));
    // One loop per member, so that a member slow to refuse (a postmaster shutting down or
    // starting) never delays the attempts on another: the figures are the members' own.
    let lastOkOnOld = 0;
    let firstOnNew = 0;
    let writing = true;
    let t0 = Number.MAX_SAFE_INTEGER;
    let lastCandError = { at: 0, msg: '' };
    let slowestCandAttempt = 0;
    const writer = Promise.all(
      clients.map(async ({ n, sql }) => {
        while (writing) {
          const started = Date.now();
          try {
            await sql`insert into bench_w values (1)`;
            const now = Date.now();
            if (n === leader && now >= t0 && !firstOnNew) lastOkOnOld = now;
            if (n === cand && now >= t0 && !firstOnNew) firstOnNew = now;
          } catch (e) {
            if (n === cand && !firstOnNew && Date.now() >= t0)
              lastCandError = { at: Date.now(), msg: String((e as Error).message).slice(0, 60) };
          }
          if (n === cand && started >= t0 && !firstOnNew) slowestCandAttempt = Math.max(slowestCandAttempt, Date.now() - started);
          await sleep(2);
        }
      }),
    );
    await sleep(500);
    t0 = Date.now();
    const evFrom = keyEvents.length;
    const res = fetch(`http://127.0.0.1:${c.node(leader).apiPort}/switchover`, {
      method: 'POST',
      body: JSON.stringify({ leader, candidate: cand }),
    }).then(
      (r) => ({ status: r.status, at: Date.now() }),
      () => ({ status: 0, at: Date.now() }),
    );
    await waitFor(() => firstOnNew > 0, 60_000, 'a write on the new primary');
    const answered = await res;
    await sleep(300);
    writing = false;
    await writer;
    await Promise.all(clients.map(({ sql }) => sql.end({ timeout: 1 }).catch(() => undefined)));
    const gap = firstOnNew - (lastOkOnOld || t0);
    const evs = keyEvents.slice(evFrom);
    const jOld = await journal(c, leader, t0);
    const jNew = await journal(c, cand, t0);
    const isDb = (e: JournalEntry) => e.machine.toLowerCase().includes('database') || e.machine.toLowerCase() === 'db';
    const p = {
      'failover-put': evs.find((e) => e.key === 'failover' && e.type === 'put' && e.value.includes(cand))?.at,
      demote: firstAt(jOld, (e) => isDb(e) && e.kind === 'transition' && e.from === 'running' && e.to === 'stopping'),
      'lock-del': evs.find((e) => e.key === 'leader' && e.type === 'delete')?.at,
      'old-stopped': firstAt(jOld, (e) => isDb(e) && e.kind === 'transition' && e.from === 'stopping'),
      'lock-put': evs.find((e) => e.key === 'leader' && e.type === 'put' && e.value === cand)?.at,
      'cmd.promote': firstAt(jNew, (e) => isDb(e) && e.kind === 'event' && e.event?.type === 'cmd.promote'),
      promoted: firstAt(jNew, (e) => isDb(e) && e.kind === 'event' && e.event?.type === 'xstate.done.actor.promote'),
      'POST-answer': answered.at,
      'last-old-write': lastOkOnOld || undefined,
      'FIRST-WRITE': firstOnNew,
    };
    for (const [k, v] of Object.entries(p)) if (v !== undefined) (phaseSums[k] ??= []).push(v - t0);
    firsts.push(firstOnNew - t0);
    gaps.push(gap);
    const widths = [12, 6, 8, 11, 8, 11, 8, 11, 14, 11];
    console.log(
      `${String(round).padEnd(6)} ${`${leader}→${cand}`.padEnd(12)} ` +
        Object.values(p)
          .map((v, i) => fmt(v, t0).padStart(widths[i]!))
          .join('  ') +
        `  ${String(gap).padStart(4)}   (HTTP ${answered.status}, load ${loadavg()[0]!.toFixed(2)}; writer: slowest attempt on the candidate ${slowestCandAttempt} ms, last refusal by the candidate at ${lastCandError.at - t0}: ${lastCandError.msg})`,
    );
    if (args.includes('--logs'))
      for (const l of c.logsMatching(/./, t0 - 20))
        if (Date.parse(`1970-01-01T${l.slice(0, 12)}Z`) <= (firstOnNew % 86_400_000) + 50) console.log(`    ${l}`);
    leader = cand;
    replicas = c.nodes.map((n) => n.name).filter((n) => n !== leader);
    try {
      await c.waitForStreaming(replicas, 60_000);
    } catch (e) {
      for (const l of c.logsMatching(/./, t0 - 20).slice(-80)) console.log(`    ${l}`);
      throw e;
    }
    await sleep(3000);
  }
  await Promise.all(watchers.map((w) => w.cancel()));
  console.log('\nper phase over the rounds (ms from POST):');
  for (const [k, xs] of Object.entries(phaseSums)) console.log(`  ${k.padEnd(15)} ${range(xs)}`);
  console.log(`POST → first write on the new primary: ${range(firsts)} (target ≤ 250 ms)`);
  console.log(`longest write gap:                     ${range(gaps)} (target ≤ 200 ms)`);
  return { leader };
}

/** Node loss: SIGKILL of the leader's agent and postmaster → leader key expiry → first write on a survivor. */
async function nodeLoss(c: TestCluster, etcd: Etcd3, leader: string): Promise<void> {
  const survivors = c.nodes.map((n) => n.name).filter((n) => n !== leader);
  let expiredAt = 0;
  const watcher = await etcd.watch().key(`/service/${c.scope}/leader`).create();
  watcher.on('delete', () => {
    if (!expiredAt) expiredAt = Date.now();
  });
  const pgPid = c.postmasterPid(leader);
  const t = Date.now();
  await c.killAgent(leader);
  if (pgPid) await stopPid(pgPid, 'SIGKILL');
  const clients = survivors.map((n) => ({ n, sql: superuserClient(c, n) }));
  let first = 0;
  const deadline = Date.now() + (ttl + 60) * 1000;
  while (!first && Date.now() < deadline) {
    const ok = await Promise.any(clients.map(async ({ sql }) => void (await sql`insert into bench_w values (1)`))).then(
      () => true,
      () => false,
    );
    if (ok && expiredAt) first = Date.now();
    else await sleep(2);
  }
  await watcher.cancel();
  await Promise.all(clients.map(({ sql }) => sql.end({ timeout: 1 }).catch(() => undefined)));
  console.log(
    `\n## node loss\nkill → leader key expiry ${((expiredAt - t) / 1000).toFixed(2)} s; expiry → first write ${first - expiredAt} ms (target ≤ 100 ms)`,
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Runs a PostgreSQL binary as the postgres OS user when we are root. */
function asPg(cmd: string, argv: string[], input?: string): string {
  const root = process.getuid?.() === 0;
  const r = root
    ? spawnSync('runuser', ['-u', 'postgres', '--', join(BIN, cmd), ...argv], { encoding: 'utf8', input })
    : spawnSync(join(BIN, cmd), argv, { encoding: 'utf8', input });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}
/** Alive and not a zombie (an exited postmaster reparented to PID 1 can stay a zombie for a while here). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
}

/** The physical floors on a throwaway primary + streaming standby. */
async function floors(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'swbench-'));
  const root = process.getuid?.() === 0;
  const pgUid = root ? Number(execFileSync('id', ['-u', 'postgres']).toString().trim()) : process.getuid!();
  const pgGid = root ? Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) : process.getgid!();
  chownSync(dir, pgUid, pgGid);
  const p1 = join(dir, 'p');
  const s1 = join(dir, 's');
  const [port1, port2] = [await freePort(), await freePort()];
  const conf = (port: number) =>
    `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nwal_level = replica\nmax_wal_senders = 5\nhot_standby = on\nfsync = on\nshared_buffers = 32MB\n`;
  const started: string[] = [];
  const start = (d: string) => {
    asPg('pg_ctl', ['start', '-D', d, '-l', join(d, 'log'), '-w', '-s']);
    started.push(d);
  };
  const stopFast = async (d: string): Promise<number> => {
    const pid = postmasterPid(d)!;
    const t = performance.now();
    asPg('pg_ctl', ['stop', '-D', d, '-m', 'fast', '-W', '-s']);
    while (alive(pid)) await sleep(1);
    return Math.round(performance.now() - t);
  };
  const sqlOn = (port: number) => postgres({ host: dir, port, user: 'postgres', database: 'postgres', max: 1, onnotice: () => {} });
  try {
    asPg('initdb', ['-D', p1, '-U', 'postgres', '--auth=trust', '-N']);
    writeFileSync(join(p1, 'postgresql.auto.conf'), conf(port1));
    writeFileSync(
      join(p1, 'pg_hba.conf'),
      'local all all trust\nlocal replication all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n',
    );
    start(p1);
    const stopMs: number[] = [];
    const stopCkMs: number[] = [];
    const ckMs: number[] = [];
    for (let i = 0; i < 3; i++) {
      // A little dirty data, as a live primary has, then the two ways of stopping.
      for (const withCk of [false, true]) {
        const sql = sqlOn(port1);
        await sql`create table if not exists f (x int, pad text)`;
        await sql`insert into f select g, repeat('x', 200) from generate_series(1, 20000) g`;
        if (withCk) {
          const t = performance.now();
          await sql`checkpoint`;
          ckMs.push(Math.round(performance.now() - t));
        }
        await sql.end({ timeout: 1 });
        (withCk ? stopCkMs : stopMs).push(await stopFast(p1));
        started.splice(started.indexOf(p1), 1);
        start(p1);
      }
    }
    console.log(`\n## floors (throwaway instance, load ${loadavg()[0]!.toFixed(2)})`);
    console.log(`pg_ctl stop -m fast (dirty buffers):          ${range(stopMs)}`);
    console.log(`CHECKPOINT itself:                            ${range(ckMs)}`);
    console.log(`pg_ctl stop -m fast right after a CHECKPOINT: ${range(stopCkMs)}`);
    const promoteMs: number[] = [];
    for (let i = 0; i < 3; i++) {
      rmSync(s1, { recursive: true, force: true });
      asPg('pg_basebackup', ['-D', s1, '-h', dir, '-p', String(port1), '-U', 'postgres', '-R', '-X', 'stream', '-c', 'fast']);
      writeFileSync(join(s1, 'postgresql.auto.conf'), conf(port2) + `primary_conninfo = 'host=${dir} port=${port1} user=postgres'\n`);
      writeFileSync(join(s1, 'standby.signal'), '');
      start(s1);
      const sql = sqlOn(port2);
      await waitFor(async () => (await sql`select status from pg_stat_wal_receiver`).length > 0, 30_000, 'standby streaming');
      const t = performance.now();
      await sql`select pg_promote(false)`;
      while ((await sql`select pg_is_in_recovery() as r`)[0]!['r']) await sleep(1);
      promoteMs.push(Math.round(performance.now() - t));
      await sql.end({ timeout: 1 });
      await stopFast(s1);
      started.splice(started.indexOf(s1), 1);
    }
    console.log(`pg_promote(false) → out of recovery:          ${range(promoteMs)}`);
  } finally {
    for (const d of started) if (existsSync(join(d, 'postmaster.pid'))) await stopFast(d).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `load average at start: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
if (!args.includes('--no-floors')) await floors();
const c = await TestCluster.create({ nodes: 3, ttl, loopWait, retryTimeout });
const etcd = new Etcd3({ hosts: c.etcd.host });
try {
  c.startAll();
  const { leader } = await switchovers(c, etcd);
  if (!args.includes('--no-node-loss')) await nodeLoss(c, etcd, leader);
} finally {
  etcd.close();
  await c.destroy();
}
console.log(
  `load average at end: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
