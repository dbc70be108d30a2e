/**
 * etcd as a real 3-member cluster, every agent listing the three endpoints (`etcd3.hosts`): the
 * member the agents talk to first is killed, then (once it is back) the etcd leader. The agents
 * move to the other endpoints: no failover, the leader never stops acknowledging writes, nothing
 * acknowledged is lost, never two members acknowledging writes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EtcdMember } from '../../support/etcd.ts';
import { sleep, waitFor } from '../../support/processes.ts';
import { TestCluster } from '../support/cluster.ts';
import {
  assertNoLoss,
  createSafetyTables,
  formatTransitions,
  startWriteProbe,
  startWriter,
  type RecordedWriter,
  type WriteProbe,
} from '../support/writer.ts';
import { firstMiss, T } from './timing.ts';

describe('3-member etcd: an agent endpoint, then the etcd leader, killed', () => {
  let cluster: TestCluster;
  let probe: WriteProbe;
  let writer: RecordedWriter;
  let leader: string;
  let members: EtcdMember[];

  beforeAll(async () => {
    cluster = await TestCluster.create({
      nodes: 3,
      ttl: T.ttl,
      loopWait: T.loop_wait,
      retryTimeout: T.retry_timeout,
      etcdMembers: 3,
      watchdog: { mode: 'off' },
    });
    members = (cluster.etcd as unknown as { members: EtcdMember[] }).members;
    cluster.startAll();
    leader = await cluster.settled(120_000);
    await createSafetyTables(cluster, leader);
    probe = startWriteProbe(cluster);
    writer = startWriter(cluster);
  });

  afterAll(async () => {
    await writer?.stop();
    await probe?.stop();
    await cluster?.destroy();
  });

  const healthy = async (m: EtcdMember) => {
    try {
      return (await fetch(`${m.url}/health`, { signal: AbortSignal.timeout(1000) })).ok;
    } catch {
      return false;
    }
  };

  async function killFor(m: EtcdMember, label: string): Promise<void> {
    await sleep(2000);
    const at = Date.now();
    await m.kill();
    await sleep(2 * T.ttl * 1000);
    const report = {
      killed: `${m.name} (${label})`,
      leaderBefore: leader,
      leaderAfter: await cluster.leader(),
      leaderMissedWrites: firstMiss(probe, leader, at) !== undefined,
      twoPrimaries: probe.twoPrimaries().length,
    };
    console.log('3-member etcd:', JSON.stringify(report), '\n' + formatTransitions(probe.transitions(), at - 500));
    await m.restart();
    await waitFor(() => healthy(m), 30_000, `etcd member ${m.name} back`);
    expect(probe.twoPrimaries()).toEqual([]);
    expect(report.leaderAfter).toBe(leader);
    expect(report.leaderMissedWrites).toBe(false);
  }

  it('the first endpoint of every agent killed for 2 × ttl: no failover, writes go on', async () => {
    await killFor(members[0]!, 'first endpoint');
  });

  it('the etcd leader killed for 2 × ttl: no failover, writes go on, nothing lost', async () => {
    const etcdLeader = await (cluster.etcd as unknown as { leaderName(): Promise<string | undefined> }).leaderName();
    const m = members.find((x) => x.name === etcdLeader);
    expect(m).toBeDefined();
    await killFor(m!, 'etcd leader');
    const records = await writer.stop();
    const r = await assertNoLoss(cluster, records);
    console.log('3-member etcd, no loss:', JSON.stringify(r));
    expect(r.leader).toBe(leader);
  });
});
