/**
 * Replica faults (issue 10; reliability.md §3.3 #1 on a replica and #4), on real etcd, PostgreSQL
 * and agents (ttl 10, loop_wait 2, retry_timeout 3) with the write probe running (one INSERT per
 * member every 100 ms); every test asserts that no probe round sees two members acknowledge writes.
 *
 * (a) A replica's postmaster killed (SIGKILL, the agent alive): its agent starts PostgreSQL again
 *     and it streams within loop_wait + retry_timeout (+ PostgreSQL start slack); no failover:
 *     the leader key never changes and the leader never stops acknowledging.
 * (b) A replica lagging beyond `maximum_lag_on_failover` (set small through PATCH /config, the
 *     dynamic configuration) is never promoted. The lag: its walreceiver is SIGSTOPped and the
 *     leader writes several MB of WAL, until the leader's optime in the `status` key is past the
 *     limit. Then the leader is lost (kill -9 of agent, postmaster and children: loseMember):
 *     - with an up-to-date replica too, that one is promoted within
 *       ttl + loop_wait + 2 × retry_timeout (+ promotion slack), never the lagging one;
 *     - with the lagging replica the only other member, the cluster stays without primary and
 *       without leader key for 2 × ttl after the lease expired; when the lost node's agent is
 *       started again it leads again within ttl + 2·loop_wait + 2·retry_timeout (+ start slack).
 *
 * Every process started here is stopped by PID (TestCluster.destroy; frozen ones SIGCONTed first).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../support/processes.ts';
import { TestCluster } from '../support/cluster.ts';
import { loseMember } from '../support/sync.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, type WriteProbe } from '../support/writer.ts';
import { firstMiss, RECOVERY_BOUND_MS, T } from './timing.ts';

/** A killed replica postmaster streams again: one cycle to notice (loop_wait), a DCS call (retry_timeout), PostgreSQL start and reconnect (slack). */
export const REPLICA_RESTART_BOUND_MS = (T.loop_wait + T.retry_timeout) * 1000 + 10_000;
/** A new writable primary after the leader is lost: ttl + loop_wait + 2 × retry_timeout + promotion slack. */
export const LOSS_FAILOVER_BOUND_MS = (T.ttl + T.loop_wait + 2 * T.retry_timeout) * 1000 + 5000;
/** The lease of a lost leader is gone: ttl + a keepalive interval's slack. */
const LEASE_GONE_BOUND_MS = T.ttl * 1000 + 3000;
/** maximum_lag_on_failover set for (b), bytes. */
const MAX_LAG = 256 * 1024;
const LOG_RE = /leader|lock|promot|demot|lag|healthiest|race|start|restart|crash|secondary/i;

const frozen = new Set<number>();

function thawAll(): void {
  for (const pid of frozen) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      /* gone */
    }
  }
  frozen.clear();
}

function cluster(nodes: number): Promise<TestCluster> {
  return TestCluster.create({
    nodes,
    ttl: T.ttl,
    loopWait: T.loop_wait,
    retryTimeout: T.retry_timeout,
    dcsExtra: ['database: { remove_data_directory_on_diverged_timelines: true }'],
  });
}

async function patchConfig(c: TestCluster, member: string, body: Record<string, unknown>): Promise<number> {
  const r = await fetch(`http://${c.node(member).host ?? '127.0.0.1'}:${c.node(member).apiPort}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return r.status;
}

/** The leader's last optime (bytes) in the `status` key. */
async function statusOptime(c: TestCluster): Promise<bigint> {
  const raw = await c.etcdGet('status');
  return raw ? BigInt(JSON.parse(raw).optime ?? 0) : 0n;
}

async function lsnBytes(c: TestCluster, member: string, expr: string): Promise<bigint> {
  return BigInt((await c.psql(member, `select (${expr} - '0/0'::pg_lsn)::bigint`)).trim());
}

/**
 * Makes `lagging` lag: SIGSTOP its walreceiver, set maximum_lag_on_failover = MAX_LAG, write WAL on
 * the leader until the `status` optime is more than 8 × MAX_LAG past the lagging member's position.
 * Resolves with {received, optime} bytes.
 */
async function makeLag(c: TestCluster, leader: string, lagging: string): Promise<{ lagBytes: bigint; frozenPid: number }> {
  expect(await patchConfig(c, leader, { maximum_lag_on_failover: MAX_LAG })).toBe(200);
  await waitFor(
    async () => (await c.get(lagging, '/config')).json()?.maximum_lag_on_failover === MAX_LAG || undefined,
    30_000,
    'maximum_lag_on_failover on the lagging member',
  );
  const receivers = c.postgresChildren(lagging, 'walreceiver');
  expect(receivers.length, `walreceiver of ${lagging}`).toBe(1);
  process.kill(receivers[0]!, 'SIGSTOP');
  frozen.add(receivers[0]!);
  const position = await lsnBytes(c, lagging, 'greatest(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())');
  await c.psql(
    leader,
    `create table if not exists lag_fill (g int, pad text); insert into lag_fill select g, repeat('x', 200) from generate_series(1, 20000) g`,
    30_000,
  );
  const target = position + BigInt(8 * MAX_LAG);
  await waitFor(
    async () => (await statusOptime(c)) > target || undefined,
    30_000,
    'the leader optime in the status key past the lag limit',
  );
  const lag = (await statusOptime(c)) - (await lsnBytes(c, lagging, 'greatest(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())'));
  return { lagBytes: lag, frozenPid: receivers[0]! };
}

describe('replica faults on a 3-node cluster', () => {
  let c: TestCluster;
  let probe: WriteProbe | undefined;
  let leader: string;

  beforeAll(async () => {
    c = await cluster(3);
    c.startAll();
    try {
      leader = await c.settled(120_000, LOG_RE);
      await createSafetyTables(c, leader);
      probe = startWriteProbe(c);
    } catch (e) {
      throw new Error(`${String(e)}\n${c.logs()}`);
    }
  });

  afterAll(async () => {
    thawAll();
    await probe?.stop();
    await c?.destroy();
  });

  it("(a) a replica's postmaster killed: its agent restarts it, it streams again, no failover", async () => {
    const p = probe!;
    const replica = c.nodes.map((n) => n.name).find((n) => n !== leader)!;
    const watch = await c.watchKey('leader');
    try {
      await sleep(1000);
      const pm = c.postmasterPid(replica);
      expect(pm).toBeDefined();
      const killedAt = Date.now();
      process.kill(pm!, 'SIGKILL');
      await waitFor(
        async () => {
          const now = c.postmasterPid(replica);
          if (!now || now === pm) return undefined;
          // the new postmaster's own walreceiver, not the agent's cached view
          return (
            (await c.psql(replica, 'select status from pg_stat_wal_receiver', 2000).catch(() => '')).trim() === 'streaming' || undefined
          );
        },
        REPLICA_RESTART_BOUND_MS + 30_000,
        `${replica} streaming again`,
      ).catch(() => undefined);
      const streamingMs = Date.now() - killedAt;
      await sleep(T.loop_wait * 1000);
      const report = {
        replica,
        streamingAgainMs: streamingMs,
        boundMs: REPLICA_RESTART_BOUND_MS,
        leaderEvents: watch.events.map((e) => e.value),
        twoPrimaries: p.twoPrimaries().length,
      };
      console.log('replica postmaster SIGKILL:', JSON.stringify(report));
      if (streamingMs > REPLICA_RESTART_BOUND_MS)
        console.log(
          c
            .logsMatching(LOG_RE, killedAt - 1000)
            .slice(-40)
            .join('\n'),
        );
      expect(p.twoPrimaries()).toEqual([]);
      expect(firstMiss(p, leader, killedAt), 'the leader kept acknowledging').toBeUndefined();
      expect(
        watch.events.every((e) => e.value === leader),
        'the leader key never changed',
      ).toBe(true);
      expect(c.postmasterPid(replica)).not.toBe(pm);
      expect(streamingMs).toBeLessThanOrEqual(REPLICA_RESTART_BOUND_MS);
      expect(await c.leader()).toBe(leader);
    } finally {
      await watch.stop();
    }
  });

  it('(b) the leader lost with a lagging and an up-to-date replica: the up-to-date one is promoted, never the lagging one', async () => {
    const p = probe!;
    await c.settled(60_000, LOG_RE);
    const [lagging, upToDate] = c.nodes.map((n) => n.name).filter((n) => n !== leader) as [string, string];
    const { lagBytes } = await makeLag(c, leader, lagging);
    expect(lagBytes).toBeGreaterThan(BigInt(MAX_LAG));
    const watch = await c.watchKey('leader');
    try {
      const lostAt = Date.now();
      await loseMember(c, leader);
      const promoted = await waitFor(
        () => p.transitions().find((t) => t.at >= lostAt && t.members.length === 1),
        LOSS_FAILOVER_BOUND_MS + 30_000,
        'a new primary',
      ).catch(() => undefined);
      // keep watching for a while after the promotion: the lagging member must never lead
      await sleep(2 * T.loop_wait * 1000);
      const report = {
        lagging,
        upToDate,
        lagBytes: Number(lagBytes),
        maxLag: MAX_LAG,
        promoted: promoted?.members[0],
        newPrimaryMs: promoted ? promoted.at - lostAt : undefined,
        boundMs: LOSS_FAILOVER_BOUND_MS,
        leaderEvents: watch.events.map((e) => e.value ?? '(none)'),
        twoPrimaries: p.twoPrimaries().length,
      };
      console.log('lagging replica, leader lost:', JSON.stringify(report), '\n' + formatTransitions(p.transitions(), lostAt - 500));
      expect(p.twoPrimaries()).toEqual([]);
      expect(promoted?.members).toEqual([upToDate]);
      expect(promoted!.at - lostAt).toBeLessThanOrEqual(LOSS_FAILOVER_BOUND_MS);
      expect(
        watch.events.some((e) => e.value === lagging),
        'the lagging member never held the leader key',
      ).toBe(false);
      expect(
        p.transitions().some((t) => t.at >= lostAt && t.members.includes(lagging)),
        'the lagging member never acknowledged a write',
      ).toBe(false);
      expect(await c.leader()).toBe(upToDate);
    } finally {
      await watch.stop();
    }
  });
});

describe('replica faults on a 2-node cluster: the lagging replica is the only candidate', () => {
  let c: TestCluster;
  let probe: WriteProbe | undefined;

  beforeAll(async () => {
    c = await cluster(2);
    c.startAll();
    try {
      const leader = await c.settled(120_000, LOG_RE);
      await createSafetyTables(c, leader);
      probe = startWriteProbe(c);
    } catch (e) {
      throw new Error(`${String(e)}\n${c.logs()}`);
    }
  });

  afterAll(async () => {
    thawAll();
    await probe?.stop();
    await c?.destroy();
  });

  it('(b) it is never promoted: no primary for 2 × ttl after the lease expired; the lost node leads again when it returns', async () => {
    const p = probe!;
    const leader = await c.settled(60_000, LOG_RE);
    const lagging = c.nodes.map((n) => n.name).find((n) => n !== leader)!;
    const { lagBytes } = await makeLag(c, leader, lagging);
    const watch = await c.watchKey('leader');
    try {
      const lostAt = Date.now();
      await loseMember(c, leader);
      const expiredAt = await waitFor(
        async () => ((await c.leader()) === undefined ? Date.now() : undefined),
        LEASE_GONE_BOUND_MS + 10_000,
        'the lease gone',
      ).catch(() => undefined);
      const windowEnd = (expiredAt ?? Date.now()) + 2 * T.ttl * 1000;
      const leaderSeen: string[] = [];
      while (Date.now() < windowEnd) {
        const l = await c.leader();
        if (l) leaderSeen.push(l);
        await sleep(500);
      }
      const lagState = (await c.get(lagging, '/ha')).json();
      // the lagging member's own reason (logged on every change of its decision)
      const refusals = c.logsMatching(/exceeds maximum replication lag/, lostAt).filter((l) => l.includes(` ${lagging} `));
      const restartAt = Date.now();
      c.start(leader);
      const back = await waitFor(
        () => p.transitions().find((t) => t.at >= restartAt && t.members.length === 1),
        RECOVERY_BOUND_MS + 30_000,
        'a primary again',
      ).catch(() => undefined);
      const report = {
        lagging,
        lagBytes: Number(lagBytes),
        maxLag: MAX_LAG,
        leaseGoneMs: expiredAt ? expiredAt - lostAt : undefined,
        windowMs: 2 * T.ttl * 1000,
        leaderSeenInWindow: [...new Set(leaderSeen)],
        laggingDuringWindow: { role: lagState?.role, state: lagState?.state, refusal: refusals[0] },
        primaryAgain: back?.members[0],
        primaryAgainAfterRestartMs: back ? back.at - restartAt : undefined,
        recoveryBoundMs: RECOVERY_BOUND_MS,
        twoPrimaries: p.twoPrimaries().length,
      };
      console.log('only the lagging replica left:', JSON.stringify(report), '\n' + formatTransitions(p.transitions(), lostAt - 500));
      if (!back || leaderSeen.length)
        console.log(
          c
            .logsMatching(LOG_RE, lostAt - 1000)
            .slice(-60)
            .join('\n'),
        );
      expect(p.twoPrimaries()).toEqual([]);
      expect(expiredAt, 'the lost leader key expired').toBeDefined();
      expect(expiredAt! - lostAt).toBeLessThanOrEqual(LEASE_GONE_BOUND_MS);
      expect(leaderSeen, 'no leader key during 2 × ttl').toEqual([]);
      expect(
        p.transitions().some((t) => t.at >= lostAt && t.at < restartAt && t.members.length > 0),
        'nobody acknowledged writes while the leader was lost',
      ).toBe(false);
      expect(
        watch.events.some((e) => e.value === lagging),
        'the lagging member never held the leader key',
      ).toBe(false);
      expect(refusals.length, 'the lagging member stayed out of the race because of its lag').toBeGreaterThan(0);
      expect(back?.members).toEqual([leader]);
      expect(back!.at - restartAt).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    } finally {
      await watch.stop();
    }
  });
});
