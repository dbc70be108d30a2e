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

describe.skipIf(!referenceInstalled())('takeover of a cluster of the reference (patroni 3.0.2), and the hand back', () => {
  let c: TestCluster;
  const refs = new Map<string, ReferenceNode>();
  let writer: RecordedWriter | undefined;
  let records: WriteRecord[] = [];
  let before: Record<string, string> = {};

  beforeAll(async () => {
    c = await TestCluster.create({
      nodes: 3,
      ttl: REFERENCE_TIMING.ttl,
      loopWait: REFERENCE_TIMING.loopWait,
      retryTimeout: REFERENCE_TIMING.retryTimeout,
    });
    // The reference bootstraps node1, then the others clone from it.
    refs.set('node1', await startReference(c, c.node('node1')));
    await waitFor(async () => (await c.get('node1', '/primary')).status === 200, 90_000, 'the reference to bootstrap node1');
    for (const n of ['node2', 'node3']) refs.set(n, await startReference(c, c.node(n)));
    for (const n of ['node2', 'node3']) await waitFor(() => streaming(c, n), 120_000, `${n} streaming from the reference's leader`);
    await createSafetyTables(c, 'node1');
    writer = startWriter(c);
    await waitFor(() => writer!.stats().acked > 20, 30_000, 'the writer writing');
  }, 300_000);

  afterAll(async () => {
    await writer?.stop();
    for (const r of refs.values()) if (r.proc.pid && isAlive(r.proc.pid)) await stopReference(r, 5000);
    await c?.destroy();
  });

  it('takes the members over one by one in pause: no restart, no leader change, then a switchover by our agents, no write lost', async () => {
    const leaderKey = await c.watchKey('leader');
    try {
      expect(leaderKey.events[0]?.value).toBe('node1');
      await patronictl(refs.get('node1')!.configPath, ['pause', '--wait']);
      before = await startTimes(c);
      const t0 = Date.now();
      let leaderSwap = { fromMs: 0, toMs: 0 };
      for (const name of ['node2', 'node3', 'node1']) {
        const pm = c.postmasterPid(name);
        const ref = refs.get(name)!;
        const stopAt = Date.now();
        await stopReference(ref);
        refs.delete(name);
        expect(c.postmasterPid(name), `${name}: the reference stopped in pause leaves PostgreSQL running`).toBe(pm);
        // Our agent on the reference's own file (patroni.yml as it is).
        c.node(name).configPath = ref.configPath;
        c.start(name);
        await waitFor(async () => (await memberApi(c, name)) === '/ha', 60_000, `${name}: our member key`);
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
    } finally {
      await leaderKey.stop();
    }
  }, 600_000);

  it('hands the cluster back to the reference the same way', async () => {
    await patronictl(referenceConfigPath(c, c.node('node2')), ['pause', '--wait']);
    const leaderKey = await c.watchKey('leader');
    try {
      const ourLease = await leaderLease(c);
      const startedBefore = await startTimes(c);
      for (const name of ['node1', 'node3', 'node2']) {
        const pm = c.postmasterPid(name);
        await c.stopAgent(name);
        expect(c.postmasterPid(name), `${name}: our agent stopped in pause leaves PostgreSQL running`).toBe(pm);
        refs.set(name, await startReference(c, c.node(name)));
        await waitFor(async () => (await memberApi(c, name)) === '/patroni', 60_000, `${name}: the reference's member key`);
        if (name === 'node2') {
          await waitFor(
            async () => (await leaderLease(c)) !== ourLease,
            60_000,
            'the reference on node2 moving the leader key onto its lease',
          );
        }
        expect(c.postmasterPid(name)).toBe(pm);
      }
      expect(await startTimes(c)).toEqual(startedBefore);
      for (const n of NAMES) expect(await pendingRestart(c, n), `${n} pending restart after the hand back`).toBe('');
      // Our agent stopped in pause keeps its lease: the reference takes the key over, never deleted.
      leaderNeverChanged(leaderKey, 'node2');
      await patronictl(refs.get('node2')!.configPath, ['resume', '--wait']);
      await c.settled(90_000);
      records = await writer!.stop();
      writer = undefined;
      const report = await assertNoLoss(c, records);
      expect(report.leader).toBe('node2');
    } finally {
      await leaderKey.stop();
    }
  }, 600_000);
});
