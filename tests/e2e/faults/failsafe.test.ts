/**
 * DCS failsafe mode (patroni.md §3.7; docs/ha.md "DCS outage"), on real etcd, PostgreSQL and
 * agents with `failsafe_mode: true`:
 * - etcd frozen (SIGSTOP) for 2 × ttl: every member accepts the leader's POST /failsafe, so the
 *   primary keeps acknowledging writes (no write lost to the outage), shows
 *   `failsafe_mode_is_active`, and keeps the lock afterwards (the members that accepted do not race);
 * - the same outage with one replica's agent stopped (SIGSTOP: its API does not answer): the
 *   leader demotes within ttl − retry_timeout of the outage start.
 * A write probe runs throughout: never two members acknowledging writes at the same time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, type WriteProbe } from '../support/writer.ts';
import { sleep, waitFor } from '../../support/processes.ts';
import { firstMiss, firstSinglePrimary, RECOVERY_BOUND_MS, STOP_ACK_BOUND_MS, T } from './timing.ts';

describe('etcd outage with failsafe_mode: true', () => {
  let cluster: TestCluster;
  let probe: WriteProbe;
  let leader: string;

  beforeAll(async () => {
    // The software fence is off: it is fed by accepted failsafe rounds too, but with its default
    // safety_margin (5 s) at ttl 10 it fires about when the next round confirms; measured here: the agent.
    cluster = await TestCluster.create({
      nodes: 3,
      ttl: T.ttl,
      loopWait: T.loop_wait,
      retryTimeout: T.retry_timeout,
      dcsExtra: ['failsafe_mode: true'],
      watchdog: { mode: 'off' },
    });
    cluster.startAll();
    leader = await cluster.settled(120_000);
    await createSafetyTables(cluster, leader);
    // the leader publishes the failsafe key with every member
    await waitFor(
      async () => Object.keys(JSON.parse((await cluster.etcdGet('failsafe')) ?? '{}')).length === 3,
      30_000,
      'the failsafe key listing 3 members',
    );
    probe = startWriteProbe(cluster);
  });

  afterAll(async () => {
    await probe?.stop();
    await cluster?.destroy();
  });

  it('etcd frozen for 2 × ttl costs no write: the primary keeps acknowledging and keeps the lock', async () => {
    await sleep(2000);
    const frozenAt = Date.now();
    cluster.etcd.freeze();
    // while frozen: the leader is active in failsafe mode, replicas accepted it
    const active = await waitFor(
      async () => ((await cluster.get(leader, '/ha')).json()?.failsafe_mode_is_active === true ? Date.now() : undefined),
      2 * T.ttl * 1000,
      'failsafe_mode_is_active on the leader',
    ).catch((e) => {
      cluster.etcd.thaw();
      console.log(cluster.logsMatching(/./, frozenAt - 5000).join('\n'));
      throw e;
    });
    const replicaActive = (
      await Promise.all(
        cluster.nodes
          .filter((n) => n.name !== leader)
          .map(async (n) => (await cluster.get(n.name, '/ha')).json()?.failsafe_mode_is_active === true),
      )
    ).every(Boolean);
    await sleep(Math.max(0, frozenAt + 2 * T.ttl * 1000 - Date.now()));
    const primaryDuringOutage = await cluster.primaries();
    const thawedAt = Date.now();
    cluster.etcd.thaw();
    await sleep(2 * T.ttl * 1000);
    const after = await cluster.settled(120_000, /failsafe|demot|leader|DCS/);
    const report = {
      failsafeActiveAfterMs: active - frozenAt,
      replicasShowActive: replicaActive,
      primaryDuringOutage,
      leaderMissedAWrite: firstMiss(probe, leader, frozenAt) !== undefined,
      leaderAfter: after,
      twoPrimaries: probe.twoPrimaries().length,
    };
    console.log('failsafe, etcd frozen 2 × ttl:', JSON.stringify(report), '\n' + formatTransitions(probe.transitions(), frozenAt - 500));
    console.log(
      cluster
        .logsMatching(/failsafe|demot|lock/, frozenAt)
        .slice(0, 40)
        .join('\n'),
    );
    expect(probe.twoPrimaries()).toEqual([]);
    expect(firstMiss(probe, leader, frozenAt)).toBeUndefined();
    expect(after).toBe(leader);
    expect(primaryDuringOutage).toEqual([leader]);
    expect(replicaActive).toBe(true);
    expect(thawedAt - frozenAt).toBeGreaterThanOrEqual(2 * T.ttl * 1000);
  });

  it('with one replica agent stopped, the same outage demotes the leader within ttl − retry_timeout', async () => {
    const victim = cluster.nodes.find((n) => n.name !== leader)!.name;
    const pid = cluster.agentPid(victim)!;
    await sleep(1000);
    expect(firstMiss(probe, leader, Date.now() - 500)).toBeUndefined();
    process.kill(pid, 'SIGSTOP');
    const frozenAt = Date.now();
    cluster.etcd.freeze();
    try {
      await sleep(2 * T.ttl * 1000);
    } finally {
      cluster.etcd.thaw();
      process.kill(pid, 'SIGCONT');
    }
    const thawedAt = Date.now();
    await waitFor(() => firstSinglePrimary(probe, thawedAt), RECOVERY_BOUND_MS + 30_000, 'one primary acknowledging writes').catch(
      () => undefined,
    );
    const stoppedAt = firstMiss(probe, leader, frozenAt);
    const back = firstSinglePrimary(probe, thawedAt);
    const report = {
      stopped: victim,
      stopAcknowledgingMs: stoppedAt !== undefined ? stoppedAt - frozenAt : undefined,
      boundMs: STOP_ACK_BOUND_MS,
      primaryAgainAfterThawMs: back ? back.at - thawedAt : undefined,
      twoPrimaries: probe.twoPrimaries().length,
    };
    console.log('failsafe, one member unreachable:', JSON.stringify(report), '\n' + formatTransitions(probe.transitions(), frozenAt - 500));
    console.log(
      cluster
        .logsMatching(/failsafe|demot|DCS/, frozenAt)
        .slice(0, 30)
        .join('\n'),
    );
    await cluster.settled(120_000, /failsafe|demot|leader|DCS/);
    expect(probe.twoPrimaries()).toEqual([]);
    expect(stoppedAt).toBeDefined();
    expect(stoppedAt! - frozenAt).toBeLessThanOrEqual(STOP_ACK_BOUND_MS);
    expect(back).toBeDefined();
    expect(back!.at - thawedAt).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
  });
});
