/**
 * Takeover of a live cluster of the reference (Debian's patroni 3.0.2) by our agents, and the hand
 * back (issue 26; the procedure is docs/migration.md). A 3-member cluster of the reference runs
 * under the recorded writer; in pause each member's reference agent is stopped with SIGTERM
 * (PostgreSQL keeps running) and ours started on the same data directory, name and configuration
 * file (the reference's patroni.yml, as it is), replicas first, the leader last. Checked: every postmaster keeps its start time (no restart), the leader key
 * only ever names the first leader and is never deleted (our agent moves the reference's key onto
 * its own lease: LeaderLock.adopt), no parameter is left pending restart, our agents list the
 * reference's members while the cluster is mixed; after the resume a switchover by our agents;
 * every acknowledged write is on every member. Then the cluster is handed back the same way (our
 * agent stopped in pause keeps its lease, so the reference takes its leader key over too).
 *
 * First, a mixed cluster (node3 ours, node1 and node2 the reference's) takes a switchover through
 * each agent's API: our node3 promoted at its own API's request, the reference's leader handing
 * over; then back to node1 at the reference's API's request, our node3 demoted and following.
 * After the takeover our agents handle a switchover and the loss of the leader's node (agent and
 * postmaster SIGKILL): a new leader within ttl + loop_wait + 2 × retry_timeout (+ 5 s), and the
 * lost member, its agent restarted, streams again.
 *
 * The write pause: the writer routes by GET /primary (as a load balancer would), so while no agent
 * answers on the leader's API the writer waits; PostgreSQL itself never stops accepting writes.
 * Its bound is the leader's agent swap: the reference's shutdown + our agent's start until its
 * first HA cycle adopted the leader key + the writer's health-check interval (1 s); the measured
 * longest gap between acknowledged writes is printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, waitFor } from '../support/processes.ts';
import { TestCluster, type KeyWatch } from './support/cluster.ts';
import {
  patronictl,
  REFERENCE_TIMING,
  referenceConfigPath,
  referenceInstalled,
  startReference,
  stopReference,
  type ReferenceNode,
} from './support/reference.ts';
import { runHactl } from '../hactl/run-hactl.ts';
import { loseMember } from './support/sync.ts';
import { assertNoLoss, createSafetyTables, startWriter, type RecordedWriter, type WriteRecord } from './support/writer.ts';

const NAMES = ['node1', 'node2', 'node3'];

/** pg_postmaster_start_time() of each member, read over TCP. */
async function startTimes(c: TestCluster): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const n of NAMES) out[n] = (await c.psql(n, 'select pg_postmaster_start_time()')).trim();
  return out;
}

/** True when a member's WAL receiver streams (pg_stat_wal_receiver, over TCP). */
async function streaming(c: TestCluster, name: string): Promise<boolean> {
  return (await c.psql(name, 'select status from pg_stat_wal_receiver').catch(() => '')).trim() === 'streaming';
}

/**
 * Names of the parameters PostgreSQL shows pending restart on a member, but the recovery targets:
 * a promoted replica's configuration drops them, and both agents leave them out of the pending
 * restart they publish (src/postgres/probe.ts; the reference skips recovery parameters there too).
 */
async function pendingRestart(c: TestCluster, name: string): Promise<string> {
  return (
    await c.psql(
      name,
      "select coalesce(string_agg(name, ','), '') from pg_settings where pending_restart and name not like 'recovery_target%'",
    )
  ).trim();
}

/** The member key's `api_url` path: `/ha` for ours, `/patroni` for the reference's. */
async function memberApi(c: TestCluster, name: string): Promise<string | undefined> {
  const raw = await c.etcdGet(`members/${name}`);
  return raw ? new URL(JSON.parse(raw).api_url).pathname : undefined;
}

/** The lease of the leader key, as etcdctl prints it (a 64-bit decimal, kept as text: JSON numbers would round it). */
async function leaderLease(c: TestCluster): Promise<string | undefined> {
  return /"lease":(\d+)/.exec(await c.etcdctl(['get', '-w', 'json', c.key('leader')]))?.[1];
}

/** The longest gap, ms, between consecutive acknowledged writes in [fromMs, toMs]. */
function longestGap(records: WriteRecord[], fromMs: number, toMs: number): number {
  const at = records.map((r) => r.at).filter((t) => t >= fromMs && t <= toMs);
  let gap = 0;
  for (let i = 1; i < at.length; i++) gap = Math.max(gap, at[i]! - at[i - 1]!);
  return gap;
}

/** The leader key's events: every value names `leader` and it was never deleted. */
function leaderNeverChanged(watch: KeyWatch, leader: string): void {
  const shown = watch.events.map((e) => `${new Date(e.at).toISOString().slice(11, 23)} ${e.value ?? '(deleted)'}`).join('\n');
  expect(
    watch.events.every((e) => e.value === leader),
    shown,
  ).toBe(true);
}

/** Our agent on `name` in place of the reference's, on the reference's own patroni.yml (in pause). */
async function takeOver(c: TestCluster, refs: Map<string, ReferenceNode>, name: string): Promise<void> {
  const ref = refs.get(name)!;
  await stopReference(ref);
  refs.delete(name);
  c.node(name).configPath = ref.configPath;
  c.start(name);
  await waitFor(async () => (await memberApi(c, name)) === '/ha', 60_000, `${name}: our member key`);
}

/** Waits until every member but the leader streams (pg_stat_wal_receiver), whichever agent runs it. */
async function allStreaming(c: TestCluster, leader: string, timeoutMs: number): Promise<void> {
  for (const n of NAMES.filter((x) => x !== leader)) await waitFor(() => streaming(c, n), timeoutMs, `${n} streaming from ${leader}`);
}

/** A new leader after the leader's node is lost: lease expiry + a cycle + two DCS calls (the reference's timing) + promotion slack. */
const FAILOVER_BOUND_MS = (REFERENCE_TIMING.ttl + REFERENCE_TIMING.loopWait + 2 * REFERENCE_TIMING.retryTimeout) * 1000 + 5_000;
/** Back as a streaming replica after its agent restarts: two cycles and their DCS calls, the not-streaming grace, and 20 s for crash recovery or pg_rewind on a loaded 2-core machine (as tests/e2e/faults/node-loss.test.ts). */
const REJOIN_BOUND_MS =
  (2 * REFERENCE_TIMING.loopWait +
    2 * REFERENCE_TIMING.retryTimeout +
    Math.max(2 * REFERENCE_TIMING.loopWait, REFERENCE_TIMING.retryTimeout)) *
    1000 +
  20_000;

describe.skipIf(!referenceInstalled())('takeover of a cluster of the reference (patroni 3.0.2), and the hand back', () => {
  let c: TestCluster;
  const refs = new Map<string, ReferenceNode>();
  let writer: RecordedWriter | undefined;
  let records: WriteRecord[] = [];
  let before: Record<string, string> = {};
  /** Every reference process started, stopped by PID in afterAll (the map above forgets replaced ones). */
  const started: ReferenceNode[] = [];
  const launch = async (name: string): Promise<ReferenceNode> => {
    const r = await startReference(c, c.node(name));
    started.push(r);
    return r;
  };

  beforeAll(async () => {
    c = await TestCluster.create({
      nodes: 3,
      ttl: REFERENCE_TIMING.ttl,
      loopWait: REFERENCE_TIMING.loopWait,
      retryTimeout: REFERENCE_TIMING.retryTimeout,
    });
    // The reference bootstraps node1, then the others clone from it.
    refs.set('node1', await launch('node1'));
    await waitFor(async () => (await c.get('node1', '/primary')).status === 200, 90_000, 'the reference to bootstrap node1');
    for (const n of ['node2', 'node3']) refs.set(n, await launch(n));
    for (const n of ['node2', 'node3']) await waitFor(() => streaming(c, n), 120_000, `${n} streaming from the reference's leader`);
    await createSafetyTables(c, 'node1');
    writer = startWriter(c);
    await waitFor(() => writer!.stats().acked > 20, 30_000, 'the writer writing');
  }, 300_000);

  afterAll(async () => {
    await writer?.stop();
    // Every reference process this file started, whatever the map holds after a failed test.
    for (const r of started) if (r.proc.pid && isAlive(r.proc.pid)) await stopReference(r, 5000);
    await c?.destroy();
  });

  it("a mixed cluster (node3 ours, node1 and node2 the reference's) switches over through either agent's API", async () => {
    await patronictl(refs.get('node1')!.configPath, ['pause', '--wait']);
    const pm = c.postmasterPid('node3');
    await takeOver(c, refs, 'node3');
    expect(c.postmasterPid('node3'), 'node3 adopted without a restart').toBe(pm);
    await patronictl(refs.get('node1')!.configPath, ['resume', '--wait']);
    await c.settled(90_000);
    // Through our agent's API: the reference's leader hands over to our node3.
    const ours = await c.post('node3', '/switchover', { leader: 'node1', candidate: 'node3' });
    expect(ours.status, ours.body).toBe(200);
    expect(await c.waitForLeader(60_000, 'node1')).toBe('node3');
    expect(await c.settled(90_000)).toBe('node3');
    await allStreaming(c, 'node3', 90_000);
    const listed = JSON.parse(await patronictl(refs.get('node1')!.configPath, ['list', '--format', 'json'])) as {
      Member: string;
      Role: string;
    }[];
    expect(listed.map((r) => `${r.Member} ${r.Role}`).sort()).toEqual(['node1 Replica', 'node2 Replica', 'node3 Leader']);
    // hactl, on the reference's file as well, lists the same, once the reference's demoted node1
    // has published its restart as a replica (its member key says `starting` until its next loop).
    const hactlRows = await waitFor(
      async () => {
        const r = await runHactl(['-c', refs.get('node1')!.configPath, 'list', '--format', 'json']);
        if (r.code !== 0) throw new Error(`hactl list: ${r.stderr}`);
        const rows = JSON.parse(r.stdout) as { Member: string; Role: string; State: string }[];
        return rows.every((x) => x.State === 'running' || x.State === 'streaming') ? rows : undefined;
      },
      60_000,
      'hactl list showing every member running',
    );
    expect(hactlRows.map((r) => `${r.Member} ${r.Role}`).sort()).toEqual(['node1 Replica', 'node2 Replica', 'node3 Leader']);
    // Through the reference's API (node1's REST API, the reference's): our leader hands back.
    const theirs = await c.post('node1', '/switchover', { leader: 'node3', candidate: 'node1' });
    expect(theirs.status, theirs.body).toBe(200);
    expect(await c.waitForLeader(60_000, 'node3')).toBe('node1');
    expect(await c.settled(90_000)).toBe('node1');
    await allStreaming(c, 'node1', 90_000);
    expect((await c.get('node3', '/ha')).json()?.replication_state).toBe('streaming');
    const report = await assertNoLoss(c, writer!.records());
    console.log(`mixed cluster: two switchovers, ${report.acknowledged} acknowledged writes, all on every member`);
  }, 600_000);

  it('takes the members over one by one in pause: no restart, no leader change, then a switchover by our agents, no write lost', async () => {
    const leaderKey = await c.watchKey('leader');
    try {
      expect(leaderKey.events[0]?.value).toBe('node1');
      await patronictl(refs.get('node1')!.configPath, ['pause', '--wait']);
      before = await startTimes(c);
      const t0 = Date.now();
      let leaderSwap = { fromMs: 0, toMs: 0 };
      // node3 is ours since the mixed-cluster test.
      for (const name of ['node2', 'node1']) {
        const pm = c.postmasterPid(name);
        const stopAt = Date.now();
        // Our agent on the reference's own file (patroni.yml as it is).
        await takeOver(c, refs, name);
        expect(c.postmasterPid(name), `${name}: the reference stopped in pause leaves PostgreSQL running`).toBe(pm);
        if (name === 'node1') {
          await waitFor(async () => (await c.get(name, '/primary')).status === 200, 60_000, 'our agent on node1 answering /primary');
          leaderSwap = { fromMs: stopAt, toMs: Date.now() };
        } else {
          await waitFor(async () => (await c.get(name, '/ha')).json()?.replication_state === 'streaming', 60_000, `${name} streaming`);
        }
        // Mixed: our agent lists every member, the reference's included, and node1 as the leader.
        const cluster = (await c.get(name, '/cluster')).json();
        expect(cluster.members.map((m: { name: string }) => m.name).sort(), `${name} /cluster`).toEqual(NAMES);
        expect(cluster.members.find((m: { role: string }) => m.role === 'leader')?.name).toBe('node1');
        expect(c.postmasterPid(name)).toBe(pm);
      }
      // The reference's client reads our agents' cluster: three members, node1 the leader.
      const list = await patronictl(referenceConfigPath(c, c.node('node1')), ['list', '--format', 'json']);
      const rows = JSON.parse(list) as { Member: string; Role: string }[];
      expect(rows.map((r) => `${r.Member} ${r.Role}`).sort(), list).toEqual(['node1 Leader', 'node2 Replica', 'node3 Replica']);
      // Every postmaster kept its start time; no parameter waits for a restart.
      expect(await startTimes(c)).toEqual(before);
      for (const n of NAMES) expect(await pendingRestart(c, n), `${n} pending restart`).toBe('');
      leaderNeverChanged(leaderKey, 'node1');
      const gap = longestGap(writer!.records(), t0, Date.now());
      console.log(
        `takeover: longest gap between acknowledged writes ${gap} ms; leader agent swap (reference SIGTERM → our /primary 200) ${leaderSwap.toMs - leaderSwap.fromMs} ms`,
      );
      expect(gap).toBeLessThanOrEqual(leaderSwap.toMs - leaderSwap.fromMs + 3000);

      // Resume, then one switchover by our agents.
      await patronictl(referenceConfigPath(c, c.node('node1')), ['resume', '--wait']);
      await c.settled(60_000);
      const sw = await c.post('node1', '/switchover', { leader: 'node1', candidate: 'node2' });
      expect(sw.status, sw.body).toBe(200);
      expect(await c.waitForLeader(60_000, 'node1')).toBe('node2');
      await c.settled(90_000);
      records = writer!.records();
      const report = await assertNoLoss(c, records);
      expect(report.leader).toBe('node2');
      console.log(`takeover: ${report.acknowledged} acknowledged writes, all on every member`);

      // The leader's node lost (agent, postmaster and its children SIGKILL): our agents fail over,
      // and the lost member, its agent started again, streams from the new leader.
      const lostAt = Date.now();
      await loseMember(c, 'node2');
      const next = await c.waitForLeader(FAILOVER_BOUND_MS, 'node2');
      await waitFor(async () => (await c.get(next, '/primary')).status === 200, FAILOVER_BOUND_MS, `${next} writable`);
      const failoverMs = Date.now() - lostAt;
      expect(failoverMs, `failover after the node loss (bound ${FAILOVER_BOUND_MS} ms)`).toBeLessThanOrEqual(FAILOVER_BOUND_MS);
      const restartAt = Date.now();
      c.start('node2');
      await waitFor(() => streaming(c, 'node2'), REJOIN_BOUND_MS, 'node2 streaming again after its agent restarted');
      const rejoinMs = Date.now() - restartAt;
      expect(await c.settled(90_000)).toBe(next);
      const afterLoss = await assertNoLoss(c, writer!.records());
      console.log(
        `takeover: node2 lost; ${next} writable after ${failoverMs} ms (bound ${FAILOVER_BOUND_MS}); node2 streaming ${rejoinMs} ms after its restart (bound ${REJOIN_BOUND_MS}); ${afterLoss.acknowledged} acknowledged writes, all on every member`,
      );
    } finally {
      await leaderKey.stop();
    }
  }, 600_000);

  it('hands the cluster back to the reference the same way', async () => {
    const leader = (await c.leader())!;
    await patronictl(referenceConfigPath(c, c.node(leader)), ['pause', '--wait']);
    const leaderKey = await c.watchKey('leader');
    try {
      const ourLease = await leaderLease(c);
      const startedBefore = await startTimes(c);
      for (const name of [...NAMES.filter((n) => n !== leader), leader]) {
        const pm = c.postmasterPid(name);
        await c.stopAgent(name);
        expect(c.postmasterPid(name), `${name}: our agent stopped in pause leaves PostgreSQL running`).toBe(pm);
        refs.set(name, await launch(name));
        await waitFor(async () => (await memberApi(c, name)) === '/patroni', 60_000, `${name}: the reference's member key`);
        if (name === leader) {
          await waitFor(
            async () => (await leaderLease(c)) !== ourLease,
            60_000,
            `the reference on ${leader} moving the leader key onto its lease`,
          );
        }
        expect(c.postmasterPid(name)).toBe(pm);
      }
      expect(await startTimes(c)).toEqual(startedBefore);
      for (const n of NAMES) expect(await pendingRestart(c, n), `${n} pending restart after the hand back`).toBe('');
      // Our agent stopped in pause keeps its lease: the reference takes the key over, never deleted.
      leaderNeverChanged(leaderKey, leader);
      await patronictl(refs.get(leader)!.configPath, ['resume', '--wait']);
      await c.settled(90_000);
      records = await writer!.stop();
      writer = undefined;
      const report = await assertNoLoss(c, records);
      expect(report.leader).toBe(leader);
    } finally {
      await leaderKey.stop();
    }
  }, 600_000);
});
