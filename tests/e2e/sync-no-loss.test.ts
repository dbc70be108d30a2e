/**
 * Zero acknowledged-write loss in synchronous mode (issue 9), on real etcd, PostgreSQL and agents.
 *
 * A recorded writer commits one row at a time through whichever member answers 200 on /primary
 * and records every acknowledged id. The leader is lost (kill -9 of its agent and its postmaster
 * together) LOSSES times and restarted each time, then SWITCHOVERS switchovers run. Before each
 * loss the leader's walsenders are frozen (SIGSTOP) for FREEZE_MS, the replication lag a busy
 * network or disk gives: asynchronously the primary acknowledges what no replica received,
 * synchronously it does not acknowledge until a synchronous standby has it. At the end
 * every acknowledged id is on the final leader and on every member (`assertNoLoss`).
 *
 * Runs in `synchronous_mode: true`, in `quorum`, and asynchronously as the baseline (its loss is
 * printed, not asserted). Each failover must give a new leader within
 * FAILOVER_BOUND_MS = (ttl + 2*loop_wait + retry_timeout) s of the loss (lease expiry, one cycle
 * to notice, one to promote, the DCS budget), and a write probe asserts that no two members ever
 * acknowledge writes in the same round.
 */
import { describe, expect, it } from 'vitest';
import { sleep } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';
import { loseMember, syncKey, waitSyncReady } from './support/sync.ts';
import { assertNoLoss, createSafetyTables, formatTransitions, startWriteProbe, startWriter, WRITER_TABLE } from './support/writer.ts';

const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 3;
const LOSSES = 5;
const SWITCHOVERS = 5;
/** The leader's walsenders stay frozen this long before each loss, ms. */
const FREEZE_MS = 1000;
/** From the kill to a new leader key: ttl + 2*loop_wait + retry_timeout. */
const FAILOVER_BOUND_MS = (TTL + 2 * LOOP_WAIT + RETRY_TIMEOUT) * 1000;

type Mode = 'on' | 'quorum' | 'off';

async function lossRun(mode: Mode): Promise<{ acknowledged: number; lost: number; failoversMs: number[] }> {
  const dcsExtra = ['database: { remove_data_directory_on_diverged_timelines: true }'];
  if (mode !== 'off') dcsExtra.push(`synchronous_mode: ${mode === 'on' ? 'true' : 'quorum'}`);
  const c = await TestCluster.create({ nodes: 3, ttl: TTL, loopWait: LOOP_WAIT, retryTimeout: RETRY_TIMEOUT, dcsExtra });
  // Quorum with synchronous_node_count 1 on two replicas: ANY 1 of both, so a promotion needs
  // both replicas' votes (quorum 2); mode true needs its one synchronous standby.
  const standbys = mode === 'quorum' ? 2 : mode === 'on' ? 1 : 0;
  const ready = async () => {
    if (standbys > 0) return waitSyncReady(c, standbys);
    const l = await c.waitForLeader(90_000);
    await c.waitForStreaming(c.nodes.map((n) => n.name).filter((n) => n !== l), 90_000);
    return l;
  };
  c.startAll();
  let writer: ReturnType<typeof startWriter> | undefined;
  let probe: ReturnType<typeof startWriteProbe> | undefined;
  try {
    const first = await ready();
    await createSafetyTables(c, first);
    writer = startWriter(c);
    probe = startWriteProbe(c);
    const failoversMs: number[] = [];
    for (let i = 0; i < LOSSES; i++) {
      const leader = await ready();
      await sleep(1500);
      const receivers = c.postgresChildren(leader, 'walsender');
      for (const pid of receivers) process.kill(pid, 'SIGSTOP');
      const ackedBefore = writer.stats().acked;
      await sleep(FREEZE_MS);
      const t0 = Date.now();
      try {
        await loseMember(c, leader);
      } finally {
        for (const pid of receivers) {
          try {
            process.kill(pid, 'SIGCONT');
          } catch {
            /* gone */
          }
        }
      }
      const next = await c.waitForLeader(FAILOVER_BOUND_MS + 30_000, leader);
      const took = Date.now() - t0;
      console.log(`[sync-no-loss] ${mode} loss ${i + 1}: ${receivers.length} walsenders frozen, ${writer.stats().acked - ackedBefore} writes acknowledged meanwhile; ${leader} -> ${next} in ${took} ms`);
      failoversMs.push(took);
      expect(took, `loss ${i + 1}: ${leader} -> ${next} took ${took} ms`).toBeLessThanOrEqual(FAILOVER_BOUND_MS);
      if (mode === 'on') {
        // Only a member the sync key listed may have taken over.
        const key = await syncKey(c);
        expect(key?.leader).toBe(next);
      }
      c.start(leader);
    }
    for (let i = 0; i < SWITCHOVERS; i++) {
      const leader = await ready();
      await sleep(1000);
      const r = await c.post(leader, '/switchover', { leader }, 60_000);
      expect(r.status, `switchover ${i + 1} from ${leader}: ${r.body}`).toBe(200);
    }
    await ready();
    await sleep(1500);
    const records = await writer.stop();
    writer = undefined;
    const overlaps = probe.twoPrimaries();
    expect(overlaps, formatTransitions(overlaps)).toEqual([]);
    await probe.stop();
    probe = undefined;
    expect(records.length).toBeGreaterThan(100);
    if (mode === 'off') {
      const leader = await ready();
      const held = new Set(
        (await c.psql(leader, `select id from ${WRITER_TABLE}`))
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map(Number),
      );
      const lost = records.filter((r) => !held.has(r.id)).length;
      return { acknowledged: records.length, lost, failoversMs };
    }
    await assertNoLoss(c, records, { timeoutMs: 90_000 });
    return { acknowledged: records.length, lost: 0, failoversMs };
  } catch (e) {
    throw new Error(`${String(e)}\n${c.logsMatching(/sync|leader|lock|promot|demot|diverg|reinit|follow/i).slice(-150).join('\n')}`);
  } finally {
    await probe?.stop();
    await writer?.stop();
    await c.destroy();
  }
}

describe('acknowledged writes survive the loss of the leader', () => {
  for (const mode of ['on', 'quorum', 'off'] as const) {
    const title =
      mode === 'off'
        ? `asynchronous baseline: ${LOSSES} leader losses and ${SWITCHOVERS} switchovers (loss printed)`
        : `synchronous_mode ${mode === 'on' ? 'true' : 'quorum'}: ${LOSSES} leader losses and ${SWITCHOVERS} switchovers, zero loss`;
    it(title, { timeout: 900_000 }, async () => {
      const r = await lossRun(mode);
      console.log(
        `[sync-no-loss] mode ${mode}: ${r.acknowledged} acknowledged, ${r.lost} lost; failover ms ${r.failoversMs.join(', ')}`,
      );
      if (mode !== 'off') expect(r.lost).toBe(0);
    });
  }
});
