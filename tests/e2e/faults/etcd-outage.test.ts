/**
 * DCS outage without failsafe (docs/ha.md "DCS outage"), on real etcd, PostgreSQL and agents:
 * - etcd frozen (SIGSTOP) for 2 × ttl: the leader stops acknowledging writes within
 *   ttl − retry_timeout of the freeze (before its lease could expire anywhere), then the cluster
 *   recovers one primary;
 * - etcd killed and restarted within ttl: no failover (same leader), writes resume.
 * A write probe runs throughout: never two members acknowledging writes at the same time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, type WriteProbe } from '../support/writer.ts';
import { sleep, waitFor } from '../../support/processes.ts';
import { firstMiss, firstSinglePrimary, RECOVERY_BOUND_MS, STOP_ACK_BOUND_MS, T } from './timing.ts';

describe('etcd outage without failsafe', () => {
  let cluster: TestCluster;
  let probe: WriteProbe;
  let leader: string;

  beforeAll(async () => {
    // The software fence (docs/ha.md "Fencing") runs as by default: its margin (at most
    // retry_timeout / 2) keeps it behind the agent's own deadline, so these tests still measure
    // the agent's own demotion on a DCS outage, and prove the two do not collide.
    cluster = await TestCluster.create({ nodes: 3, ttl: T.ttl, loopWait: T.loop_wait, retryTimeout: T.retry_timeout });
    cluster.startAll();
    leader = await cluster.settled(120_000);
    await createSafetyTables(cluster, leader);
    probe = startWriteProbe(cluster);
  });

  afterAll(async () => {
    await probe?.stop();
    await cluster?.destroy();
  });

  it('etcd frozen for 2 × ttl: the leader stops acknowledging within ttl − retry_timeout, then one primary again', async () => {
    await sleep(2000);
    expect(firstMiss(probe, leader, Date.now() - 1500)).toBeUndefined();
    const frozenAt = Date.now();
    cluster.etcd.freeze();
    await sleep(2 * T.ttl * 1000);
    const thawedAt = Date.now();
    cluster.etcd.thaw();
    await waitFor(() => firstSinglePrimary(probe, thawedAt), RECOVERY_BOUND_MS + 30_000, 'one primary acknowledging writes').catch(
      () => undefined,
    );
    const stoppedAt = firstMiss(probe, leader, frozenAt);
    const back = firstSinglePrimary(probe, thawedAt);
    console.log(
      'etcd frozen 2 × ttl (before settling):',
      JSON.stringify({
        stopAcknowledgingMs: stoppedAt !== undefined ? stoppedAt - frozenAt : undefined,
        primaryAgainAfterThawMs: back ? back.at - thawedAt : undefined,
      }),
    );
    const after = await cluster.settled(120_000, /demot|leader|DCS|deadline/);
    const report = {
      stopAcknowledgingMs: stoppedAt !== undefined ? stoppedAt - frozenAt : undefined,
      boundMs: STOP_ACK_BOUND_MS,
      primaryAgainAfterThawMs: back ? back.at - thawedAt : undefined,
      newLeader: after,
      twoPrimaries: probe.twoPrimaries().length,
    };
    console.log('etcd frozen 2 × ttl:', JSON.stringify(report), '\n' + formatTransitions(probe.transitions(), frozenAt - 500));
    expect(probe.twoPrimaries()).toEqual([]);
    expect(stoppedAt).toBeDefined();
    expect(stoppedAt! - frozenAt).toBeLessThanOrEqual(STOP_ACK_BOUND_MS);
    // stopped before the lease could expire anywhere (its last renewal was before the freeze)
    expect(stoppedAt! - frozenAt).toBeLessThan(T.ttl * 1000);
    expect(back).toBeDefined();
    expect(back!.at - thawedAt).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    leader = after;
  });

  it('etcd killed and restarted within ttl: no failover, writes resume on the same leader', async () => {
    await createSafetyTables(cluster, leader);
    await sleep(2000);
    const before = await cluster.leader();
    expect(before).toBe(leader);
    const killedAt = Date.now();
    await cluster.etcd.kill();
    await sleep(3000);
    await cluster.etcd.restart();
    const backAt = Date.now();
    expect(backAt - killedAt).toBeLessThan(T.ttl * 1000);
    const resumedAt = await waitFor(
      async () => {
        const t = probe.transitions().at(-1);
        return t && t.members.length === 1 && t.members[0] === leader ? Date.now() : undefined;
      },
      60_000,
      `writes on ${leader} again`,
      100,
    );
    await cluster.settled(120_000);
    const report = {
      downMs: backAt - killedAt,
      leaderMissedWrites: firstMiss(probe, leader, killedAt) !== undefined,
      writesResumedAfterEtcdBackMs: Math.max(0, resumedAt - backAt),
      leaderAfter: await cluster.leader(),
      twoPrimaries: probe.twoPrimaries().length,
    };
    console.log('etcd killed and restarted:', JSON.stringify(report), '\n' + formatTransitions(probe.transitions(), killedAt - 500));
    expect(probe.twoPrimaries()).toEqual([]);
    expect(await cluster.leader()).toBe(leader);
    // no other member acknowledged a write: no failover
    expect(probe.transitions().filter((t) => t.at >= killedAt && t.members.some((m) => m !== leader))).toEqual([]);
    expect(resumedAt - backAt).toBeLessThanOrEqual(T.ttl * 1000);
  });
});
