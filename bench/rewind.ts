/**
 * Rejoin of a lost leader under the default configuration (issues 10 and 24; docs/ha.md
 * "Divergence", "Rewind"): real etcd, real PostgreSQL 15, two agent processes at ttl 10 /
 * loop_wait 2 / retry_timeout 3, nothing set under `database` about rewind or removal, a database
 * of about 1 GB (pgbench -i -s 70 by default). Three rejoins, each timed from the old node's
 * agent restart (or the request) to the node streaming from the new leader:
 *
 *   1. a crash that did not diverge: the leader's agent, postmaster and children are SIGKILLed
 *      while the replica has all of its WAL; the replica is promoted and written to; the old
 *      node's agent is started again. Its WAL end is read (pg_waldump), found at the switch point,
 *      and it starts as a replica: no rewind, no copy;
 *   2. a crash that did: the leader's walsenders are SIGSTOPped, a few rows are written on it,
 *      then it is killed the same way; after the failover the old node's agent is started again:
 *      receipt (pg_waldump over the discarded WAL) + crash recovery in single-user mode +
 *      pg_rewind + start, with pg_rewind's share (journal notices in the agent log);
 *   3. a re-copy: POST /reinitialize on the same (now replica) node: wipe + pg_basebackup of the
 *      whole database + start.
 * Prints figures only; never a timed test.
 *
 * pg_rewind copies the blocks changed since the last checkpoint the two share (and fsyncs the
 * whole target directory, as it always does); the load is checkpointed before the crashes
 * (`--no-checkpoint` skips that: the rewind then copies everything the load wrote). The test
 * cluster runs with fsync=off, so the re-copy (pg_basebackup --no-sync, then a start that skips
 * the data directory sync) is never fsynced: the comparison favours the re-copy.
 *
 *   node --import tsx bench/rewind.ts [--scale 70] [--no-checkpoint]
 */
import { TestCluster } from '../tests/e2e/support/cluster.ts';
import { pgBinDir } from '../tests/support/pg.ts';
import { run, sleep, waitFor } from '../tests/support/processes.ts';
import { loseMember } from '../tests/e2e/support/sync.ts';

const args = process.argv.slice(2);
const scale = Number(args[args.indexOf('--scale') + 1] ?? 70) || 70;

// The defaults under `database`; the lag allowance only so the replica may be promoted behind a
// loaded primary.
const c = await TestCluster.create({ nodes: 2, ttl: 10, loopWait: 2, retryTimeout: 3, dcsExtra: ['maximum_lag_on_failover: 67108864'] });

/** Waits until `name` is a running replica streaming from its upstream (GET /ha); returns epoch ms. */
function streaming(name: string, timeoutMs: number): Promise<number> {
  return c.streamingAt(name, timeoutMs);
}

/** The first agent log line (parsed) of `name` at or after `since` whose message matches `re`. */
function logLine(name: string, re: RegExp, since: number): Record<string, unknown> | undefined {
  return c.firstLogLine(name, re, since);
}

/** Epoch ms of that line. */
function logAt(name: string, re: RegExp, since: number): number | undefined {
  return logLine(name, re, since)?.['time'] as number | undefined;
}

try {
  c.startAll();
  const leader = await c.settled(120_000);
  const replica = c.nodes.map((n) => n.name).find((n) => n !== leader)!;
  const bin = pgBinDir();
  const t0 = Date.now();
  await run(
    `${bin}/pgbench`,
    ['-i', '-s', String(scale), '-q', '-h', '127.0.0.1', '-p', String(c.node(leader).pgPort), '-U', 'postgres', 'postgres'],
    {
      env: { ...process.env, PGPASSWORD: 'e2e-super' },
    },
  );
  const size = (await c.psql(leader, "select pg_size_pretty(pg_database_size('postgres'))")).trim();
  await c.settled(600_000);
  // A loaded database, as in production: checkpointed since the load. (Without it the last
  // checkpoint before the fork predates the load, and pg_rewind copies every block the load wrote.)
  if (!args.includes('--no-checkpoint')) await c.psql(leader, 'checkpoint', 300_000);
  console.log(`database: pgbench scale ${scale}, ${size}, loaded and replicated in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const s = (ms: unknown) => `${(Number(ms) / 1000).toFixed(1)} s`;

  // 1. A crash that did not diverge: the replica has every byte of WAL when the leader is lost.
  {
    const lsn = (await c.psql(leader, 'select pg_current_wal_insert_lsn()')).trim();
    await waitFor(
      async () => (await c.psql(replica, `select pg_last_wal_receive_lsn() >= '${lsn}'::pg_lsn`).catch(() => 'f')).trim() === 't',
      60_000,
      'the replica caught up',
    );
    await loseMember(c, leader);
    const next = await c.waitForLeader(120_000, leader);
    await waitFor(
      async () =>
        await c.psql(next, 'update pgbench_branches set bbalance = bbalance + 1', 2000).then(
          () => true,
          () => false,
        ),
      30_000,
      'a write on the new leader',
    );
    await sleep(1000);
    const tRestart = Date.now();
    c.start(leader);
    const tBack = await streaming(leader, 600_000);
    const rewound = logAt(leader, /^running pg_rewind from/, tRestart);
    console.log(
      `rejoin after a crash that did not diverge: ${s(tBack - tRestart)} from the agent's restart to streaming${rewound ? ' — WARNING: the log shows a rewind' : ' (no rewind: its WAL ended at the switch point)'}`,
    );
  }
  const leader2 = await c.waitForLeader(60_000);
  const other = c.nodes.map((n) => n.name).find((n) => n !== leader2)!;
  await streaming(other, 600_000);
  await c.psql(leader2, 'checkpoint', 300_000);
  await rejoinByRewind(leader2);
  void replica;
} finally {
  await c.destroy();
}

/** 2 and 3: a crash of `leader` with WAL nobody received, rejoin by pg_rewind; then a re-copy of the same node. */
async function rejoinByRewind(leader: string): Promise<void> {
  const s = (ms: unknown) => `${(Number(ms) / 1000).toFixed(1)} s`;
  const senders = c.postgresChildren(leader, 'walsender');
  for (const pid of senders) process.kill(pid, 'SIGSTOP');
  // Writes nobody receives (small: the replica must stay within maximum_lag_on_failover to be promoted).
  await c.psql(leader, 'update pgbench_accounts set abalance = abalance + 1 where aid <= 1000');
  const pm = c.postmasterPid(leader);
  for (const pid of [c.agentPid(leader), pm, ...senders]) {
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const next = await c.waitForLeader(120_000, leader);
  await waitFor(
    async () =>
      await c.psql(next, 'update pgbench_branches set bbalance = bbalance + 1', 2000).then(
        () => true,
        () => false,
      ),
    30_000,
    'a write on the new leader',
  );
  await sleep(1000);
  const tRestart = Date.now();
  c.start(leader);
  const tRewound = await streaming(leader, 600_000);
  const rewindStart = logAt(leader, /^running pg_rewind from/, tRestart);
  const rewindDone = logAt(leader, /^pg_rewind from \S+ done/, tRestart);
  const copied = logAt(leader, /bootstrap from|reinitializ/i, tRestart);
  const steps = logLine(leader, /^pg_rewind from \S+: (rewound|no rewind required)/, tRestart);
  const receipt = logLine(leader, /^the rewind from \S+ discards/, tRestart);
  const receiptAt = receipt?.['time'] as number | undefined;
  if (receipt && rewindStart)
    console.log(
      `receipt of the discarded WAL (pg_waldump): kept ${s(receiptAt! - rewindStart)} after the rewind decision — ${String(receipt['msg'])}`,
    );
  console.log(
    `rejoin by pg_rewind: ${s(tRewound - tRestart)} from the agent's restart to streaming` +
      (rewindStart ? `; ${s(tRewound - rewindStart)} from the rewind decision to streaming` : '') +
      (rewindStart && rewindDone ? ` (crash recovery + CHECKPOINT on the leader + pg_rewind: ${s(rewindDone - rewindStart)}` : '') +
      (steps
        ? `: crash recovery ${s(steps['crashRecoveryMs'])}, CHECKPOINT ${s(steps['sourceCheckpointMs'])}, pg_rewind ${s(steps['pgRewindMs'])}${steps['copiedMb'] !== undefined ? ` copying ${String(steps['copiedMb'])} of ${String(steps['sourceMb'])} MB` : ''} — ${String(steps['msg'])})`
        : rewindDone
          ? ')'
          : '') +
      (copied ? ' — WARNING: the log shows a re-copy' : ''),
  );

  // 2. Re-copy the same node from the leader (POST /reinitialize).
  const tReinit = Date.now();
  const r = await c.post(leader, '/reinitialize', {});
  if (r.status !== 200) throw new Error(`POST /reinitialize: ${r.status} ${r.body}`);
  await waitFor(async () => (await c.get(leader, '/ha')).json()?.state !== 'running', 30_000, 'reinitialize under way');
  const tCopied = await streaming(leader, 1_200_000);
  console.log(`re-copy (POST /reinitialize: wipe + pg_basebackup + start): ${((tCopied - tReinit) / 1000).toFixed(1)} s to streaming`);
}
