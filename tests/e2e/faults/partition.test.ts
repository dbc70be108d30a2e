/**
 * The leader isolated from etcd and its peers (issue 10; reliability.md §3.3 #16: "ifdown the
 * primary's veth"), on real etcd, PostgreSQL and agents (ttl 10, loop_wait 2, retry_timeout 3,
 * the software fence at its default, `use_db_rewind` and `remove_data_directory_on_diverged_timelines`).
 *
 * Lab layout (reliability.md §3.1), made here and removed in afterAll even after a failure:
 *
 *   root namespace ── veth ──┐                       ┌── veth ── netns <n1>: node1's agent,
 *   10.213.X.1: etcd,        ├── netns <hub>: bridge ┤          PostgreSQL and fence
 *   node2 and node3          │   (the cut: node1's   │          (10.213.X.2)
 *   (API and PostgreSQL)     │    port set down)     │
 *
 * Every address is in a private /24 that exists only on these veths (no default route, no NAT);
 * etcd and the other members also keep loopback. node1 runs under `ip netns exec <n1>`
 * (TestCluster's `wrapCommand`) and starts first, so it is the leader. The cut sets node1's bridge
 * port down for 2 × ttl: node1 then reaches neither etcd nor its peers, and they cannot reach it.
 *
 * The write probe reaches every member through its unix socket (a path no network fault cuts), so
 * it still sees whether the isolated old primary acknowledges writes: no probe round may see two
 * members acknowledging. Asserted bounds (timing.ts): the isolated leader stops acknowledging within
 * ttl − retry_timeout (+ slack) of the cut, before its lease can expire; a new primary within
 * ttl + loop_wait + 2 × retry_timeout (+ promotion slack) of the cut; after healing node1 is a
 * streaming replica of the new leader within the rejoin bound (rewind or re-clone).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../support/processes.ts';
import type { TestCluster } from '../support/cluster.ts';
import { createNetLab, createPartitionCluster, PARTITION_LOG_RE as LOG_RE, startWithNode1Leading, type NetLab } from '../support/netlab.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, type WriteProbe } from '../support/writer.ts';
import { DEMOTION_SLACK_MS, firstMiss, PARTITION_REJOIN_BOUND_MS, STOP_ACK_BOUND_MS, T } from './timing.ts';

/** A new writable primary after the cut: lease expiry (ttl) + a cycle (loop_wait) + two DCS calls (2 × retry_timeout) + promotion slack. */
export const PARTITION_FAILOVER_BOUND_MS = (T.ttl + T.loop_wait + 2 * T.retry_timeout) * 1000 + 5000;

describe('the leader isolated from etcd and its peers (network namespace)', () => {
  let lab: NetLab | undefined;
  let c: TestCluster | undefined;
  let probe: WriteProbe | undefined;

  beforeAll(async () => {
    lab = await createNetLab();
    c = await createPartitionCluster(lab);
    try {
      await startWithNode1Leading(c);
      await createSafetyTables(c, 'node1');
      probe = startWriteProbe(c, { viaSocket: true });
    } catch (e) {
      throw new Error(`${String(e)}\n${c.logs()}`);
    }
  });

  afterAll(async () => {
    try {
      await lab?.heal().catch(() => undefined);
      await probe?.stop();
      await c?.destroy();
    } finally {
      await lab?.destroy();
    }
  });

  it('cut for 2 × ttl: the old leader stops acknowledging before the new one starts; it rejoins as a replica after healing', async () => {
    const cc = c!;
    const p = probe!;
    await sleep(2000);
    expect(firstMiss(p, 'node1', Date.now() - 1500), 'node1 acknowledged through its socket before the cut').toBeUndefined();
    const cutAt = Date.now();
    await lab!.isolate();
    const newPrimary = () => p.transitions().find((t) => t.at >= cutAt && t.members.length === 1 && t.members[0] !== 'node1');
    await waitFor(newPrimary, PARTITION_FAILOVER_BOUND_MS + 30_000, 'a new primary').catch(() => undefined);
    const rest = 2 * T.ttl * 1000 - (Date.now() - cutAt);
    if (rest > 0) await sleep(rest);
    const healedAt = Date.now();
    await lab!.heal();

    const stoppedAt = firstMiss(p, 'node1', cutAt);
    const firstNew = newPrimary();
    await waitFor(
      async () => {
        if ((await cc.leader()) === 'node1') return undefined;
        return (await cc.get('node1', '/ha')).json()?.replication_state === 'streaming' || undefined;
      },
      PARTITION_REJOIN_BOUND_MS,
      'node1 streaming again',
    ).catch(() => undefined);
    const rejoinedAt = Date.now();
    const node1 = (await cc.get('node1', '/ha')).json();
    const report = {
      stopAcknowledgingMs: stoppedAt !== undefined ? stoppedAt - cutAt : undefined,
      stopBoundMs: STOP_ACK_BOUND_MS,
      newPrimary: firstNew?.members[0],
      newPrimaryMs: firstNew ? firstNew.at - cutAt : undefined,
      failoverBoundMs: PARTITION_FAILOVER_BOUND_MS,
      gapMs: firstNew && stoppedAt !== undefined ? firstNew.at - stoppedAt : undefined,
      rejoinAfterHealMs: rejoinedAt - healedAt,
      node1: { role: node1?.role, replication_state: node1?.replication_state, timeline: node1?.timeline },
      twoPrimaries: p.twoPrimaries().length,
    };
    console.log('partition 2 × ttl:', JSON.stringify(report), '\n' + formatTransitions(p.transitions(), cutAt - 500));
    if (!firstNew || stoppedAt === undefined || node1?.replication_state !== 'streaming')
      console.log(
        cc
          .logsMatching(LOG_RE, cutAt - 2000)
          .slice(-60)
          .join('\n'),
      );

    expect(p.twoPrimaries(), 'two members acknowledging writes in one probe round').toEqual([]);
    expect(stoppedAt, 'the isolated leader stopped acknowledging').toBeDefined();
    expect(stoppedAt! - cutAt).toBeLessThanOrEqual(STOP_ACK_BOUND_MS);
    // before its lease could expire anywhere (its last renewal was before the cut)
    expect(stoppedAt! - cutAt).toBeLessThan(T.ttl * 1000 + DEMOTION_SLACK_MS);
    expect(firstNew, 'a new primary on the other side').toBeDefined();
    expect(firstNew!.at).toBeGreaterThan(stoppedAt!);
    expect(firstNew!.at - cutAt).toBeLessThanOrEqual(PARTITION_FAILOVER_BOUND_MS);
    expect(node1?.role, 'node1 after healing').toBe('replica');
    expect(node1?.replication_state).toBe('streaming');
    expect(rejoinedAt - healedAt).toBeLessThanOrEqual(PARTITION_REJOIN_BOUND_MS);
    expect((await cc.primaries()).length).toBe(1);
  });
});
