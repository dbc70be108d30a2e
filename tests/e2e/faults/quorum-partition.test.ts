/**
 * Quorum failover under network partitions (issue 28; docs/ha.md "Quorum failover"), on real etcd,
 * PostgreSQL and agents at the default timing (ttl 30, loop_wait 10, retry_timeout 10),
 * `synchronous_mode: quorum`, `synchronous_mode_strict: true`, `quorum_failover_window: 2`, every
 * other option at its default. Three members: node1 and node2 each in a network namespace of their
 * own, node3, etcd and the test runner in the root namespace (createMemberLab); etcd is reached
 * at an address of its own, so a member can be cut from its peers but not from etcd.
 *
 * In order, on one cluster:
 * 1. all standbys cut from the leader for half the window: no fence, no failover;
 * 2. one standby cut from the leader for 10 s: it fences alone, which is not enough; no failover,
 *    and it streams again after healing;
 * 3. the leader cut from its standbys but not from etcd: a new leader by quorum within
 *    QUORUM_PARTITION_BOUND_MS; the old primary acknowledges nothing after the new one's first
 *    write, demotes once it sees its key taken, and rejoins as a replica after healing;
 * 4. the leader (in a namespace) cut from everything: the same, the old primary demoting by its
 *    own lease logic.
 *
 * The write probe reaches every member through its unix socket (a path no network fault cuts):
 * no probe round may see two members acknowledging. The recorded writer (TCP, through whichever
 * member answers /primary) loses no acknowledged write. Bounds, as formulas:
 * - a partition closes no connection, so a standby sees its stream end only when its WAL receiver
 *   times out (wal_receiver_timeout, set to the window by the agent in this mode), then the
 *   leader must stay unreachable for the window: the new leader within 2 × window + retry_timeout
 *   (one DCS round of the fence records and the take) + TOOLS_MS;
 * - no failover: nothing changes within that same bound after a cut shorter than it heals;
 * - the old primary cut from its standbys only demotes within loop_wait + retry_timeout of the
 *   take (its next HA cycle at the latest; it watches the leader key); cut from etcd too, before
 *   its lease (ttl) from the cut;
 * - rejoin after healing: PARTITION_REJOIN_BOUND_MS (reliability.md §3.2).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../support/processes.ts';
import { TestCluster } from '../support/cluster.ts';
import { createMemberLab, startWithNode1Leading, type MemberLab } from '../support/netlab.ts';
import { waitSyncReady } from '../support/sync.ts';
import {
  assertNoLoss,
  createSafetyTables,
  formatTransitions,
  startWriteProbe,
  startWriter,
  type RecordedWriter,
  type WriteProbe,
} from '../support/writer.ts';
import { DEMOTION_SLACK_MS, firstMiss, PARTITION_REJOIN_BOUND_MS } from './timing.ts';

const TTL = 30;
const LOOP_WAIT = 10;
const RETRY_TIMEOUT = 10;
const WINDOW_S = 2;
/** The promotion and a loaded 2-core machine's delays, ms. */
const TOOLS_MS = 5000;
/** From the cut to the new leader key: the receiver's timeout (the window), the window, one DCS round, the tools. */
const QUORUM_PARTITION_BOUND_MS = (2 * WINDOW_S + RETRY_TIMEOUT) * 1000 + TOOLS_MS;
/** The old primary cut from its standbys only: demoted within its next HA cycle of the take. */
const SEES_TAKEN_BOUND_MS = (LOOP_WAIT + RETRY_TIMEOUT) * 1000 + DEMOTION_SLACK_MS;
/** The old primary cut from etcd too: demoted before its lease, taken from the cut, could expire. */
const LEASE_BOUND_MS = TTL * 1000;
const LOG_RE = /fence|took the leader|quorum|promot|demot|rewind|diverg|clone/i;

describe('quorum failover under network partitions (namespaces, ttl 30, window 2 s)', () => {
  let lab: MemberLab | undefined;
  let c: TestCluster | undefined;
  let probe: WriteProbe | undefined;
  let writer: RecordedWriter | undefined;
  const figures: string[] = [];

  beforeAll(async () => {
    lab = await createMemberLab(['node1', 'node2']);
    const l = lab;
    c = await TestCluster.create({
      nodes: 3,
      ttl: TTL,
      loopWait: LOOP_WAIT,
      retryTimeout: RETRY_TIMEOUT,
      dcsExtra: ['synchronous_mode: quorum', 'synchronous_mode_strict: true', `quorum_failover_window: ${WINDOW_S}`],
      hosts: { node1: l.members['node1']!.ip, node2: l.members['node2']!.ip, node3: l.rootIp },
      wrapCommand: { node1: ['ip', 'netns', 'exec', l.members['node1']!.ns], node2: ['ip', 'netns', 'exec', l.members['node2']!.ns] },
      etcdListenHosts: [l.etcdIp],
      etcdHosts: (port) => [`${l.etcdIp}:${port}`],
      pgHba: [`host all all ${l.subnet} scram-sha-256`, `host replication replicator ${l.subnet} scram-sha-256`],
    });
    try {
      await startWithNode1Leading(c);
      await waitSyncReady(c, 2);
      await createSafetyTables(c, 'node1');
      probe = startWriteProbe(c, { viaSocket: true });
      writer = startWriter(c);
    } catch (e) {
      throw new Error(`${String(e)}\n${c.logs()}`);
    }
  }, 300_000);

  afterAll(async () => {
    try {
      console.log(`[quorum-partition]\n${figures.join('\n')}`);
      for (const name of Object.keys(lab?.members ?? {})) await lab?.heal(name).catch(() => undefined);
      await writer?.stop().catch(() => undefined);
      await probe?.stop().catch(() => undefined);
      await c?.destroy();
    } finally {
      await lab?.destroy();
    }
  });

  /** The addresses a namespaced member reaches its peers at (every other member and the runner), not etcd's. */
  const peersOf = (name: string): string[] => [
    lab!.rootIp,
    ...Object.entries(lab!.members)
      .filter(([n]) => n !== name)
      .map(([, m]) => m.ip),
  ];

  const fenceOfKey = async (): Promise<{ leader: string; members: Record<string, string> } | undefined> => {
    const raw = await c!.etcdGet('sync');
    return raw ? (JSON.parse(raw) as { fence?: { leader: string; members: Record<string, string> } }).fence : undefined;
  };

  const replicationState = async (name: string): Promise<string | undefined> =>
    (await c!.get(name, '/ha').catch(() => undefined))?.json()?.replication_state as string | undefined;

  /** Asserts nothing failed over since `fromMs`: the same leader, no take logged, no two writers. */
  const assertNoFailover = async (leader: string, fromMs: number): Promise<void> => {
    expect(await c!.leader()).toBe(leader);
    expect(c!.logsMatching(/took the leader key/, fromMs)).toEqual([]);
    expect(probe!.twoPrimaries(fromMs)).toEqual([]);
  };

  it('all standbys cut from the leader for half the window: no fence, no failover', async () => {
    const cc = c!;
    const leader = await waitSyncReady(cc, 2);
    expect(leader).toBe('node1');
    const t0 = Date.now();
    await lab!.cut('node1', peersOf('node1'));
    await sleep((WINDOW_S * 1000) / 2);
    await lab!.uncut('node1', peersOf('node1'));
    let fenced = false;
    const until = t0 + QUORUM_PARTITION_BOUND_MS;
    while (Date.now() < until) {
      if (await fenceOfKey()) fenced = true;
      await sleep(250);
    }
    await assertNoFailover('node1', t0);
    expect(fenced, 'a fence recorded after a cut shorter than the window').toBe(false);
    expect(firstMiss(probe!, 'node1', Date.now() - 1000), 'node1 acknowledging writes again').toBeUndefined();
    figures.push(`cut of ${WINDOW_S / 2} s: no fence, no failover (watched ${QUORUM_PARTITION_BOUND_MS} ms)`);
  });

  it('one standby cut from the leader for 10 s: it fences alone, no failover; it streams again after healing', async () => {
    const cc = c!;
    await waitSyncReady(cc, 2);
    const n1 = lab!.members['node1']!.ip;
    const n2 = lab!.members['node2']!.ip;
    const t0 = Date.now();
    await lab!.cut('node1', [n2]);
    await lab!.cut('node2', [n1]);
    let seen: string[] | undefined;
    let stopped = false;
    while (Date.now() < t0 + 10_000) {
      const f = await fenceOfKey();
      if (f) seen = Object.keys(f.members);
      if (f && (await replicationState('node2')) !== 'streaming') stopped = true;
      await sleep(250);
    }
    const healedAt = Date.now();
    await lab!.uncut('node1', [n2]);
    await lab!.uncut('node2', [n1]);
    // node3 kept acknowledging for the leader (ANY 1 of the two standbys).
    expect(firstMiss(probe!, 'node1', t0 + 1000)).toBeUndefined();
    await waitFor(
      async () => ((await replicationState('node2')) === 'streaming' ? true : undefined),
      PARTITION_REJOIN_BOUND_MS,
      'node2 streaming',
    );
    const streamingMs = Date.now() - healedAt;
    await waitFor(async () => ((await fenceOfKey()) ? undefined : true), (LOOP_WAIT + RETRY_TIMEOUT) * 1000, 'the fence left');
    const rest = t0 + 10_000 + QUORUM_PARTITION_BOUND_MS - Date.now();
    if (rest > 0) await sleep(rest);
    await assertNoFailover('node1', t0);
    expect(seen, 'node2 recorded its fence, alone').toEqual(['node2']);
    expect(stopped, 'node2 stopped streaming once fenced').toBe(true);
    figures.push(`one standby cut 10 s: fence ${JSON.stringify(seen)}, no failover; node2 streaming ${streamingMs} ms after healing`);
  });

  /**
   * Cuts `leader` (in a namespace) by `cut`, waits for the new leader, checks the old one
   * acknowledged nothing after the new one's first write and demoted within `demoteBoundMs` of
   * `demoteFrom` (the take or the cut), then heals it and waits for it to stream again.
   */
  const partitionLeader = async (
    what: string,
    leader: string,
    cut: () => Promise<void>,
    heal: () => Promise<void>,
    demote: { from: 'take' | 'cut'; boundMs: number },
  ): Promise<void> => {
    const cc = c!;
    const p = probe!;
    const t0 = Date.now();
    await cut();
    const next = await cc.waitForLeader(TTL * 1000 + 30_000, leader);
    const tookMs = Date.now() - t0;
    const newFirst = await waitFor(
      async () => p.transitions().find((x) => x.at >= t0 && x.members.length === 1 && x.members[0] === next),
      60_000,
      `${next} acknowledging writes`,
    );
    const demoted = await waitFor(async () => cc.firstLogLine(leader, /demot/i, t0), TTL * 1000 + 30_000, `${leader} demoting`).catch(
      () => undefined,
    );
    const oldLast = p
      .acknowledged()
      .filter((a) => a.member === leader)
      .at(-1)?.at;
    const healedAt = Date.now();
    await heal();
    await waitFor(
      async () => ((await replicationState(leader)) === 'streaming' ? true : undefined),
      PARTITION_REJOIN_BOUND_MS,
      `${leader} streaming again`,
    ).catch(() => undefined);
    const rejoinMs = Date.now() - healedAt;
    const status = (await cc.get(leader, '/ha')).json();
    const takeLine = cc.firstLogLine(next, /took the leader key/, t0);
    const demotedMs = demoted ? Number(demoted['time']) - (demote.from === 'cut' ? t0 : Number(takeLine?.['time'] ?? t0)) : undefined;
    figures.push(
      `${what}: ${leader} -> ${next}: leader key in ${tookMs} ms (by quorum: ${takeLine !== undefined}), first write on ${next} at ${newFirst.at - t0} ms, ` +
        `${leader}'s last acknowledgement at ${oldLast !== undefined ? oldLast - t0 : '-'} ms, demoted ${demotedMs} ms after the ${demote.from}, rejoined ${rejoinMs} ms after healing`,
    );
    const context = `${figures.at(-1)}\n${formatTransitions(p.transitions(), t0 - 500)}\n${cc
      .logsMatching(LOG_RE, t0 - 2000)
      .slice(-60)
      .join('\n')}`;
    expect(p.twoPrimaries(t0 - 1000), context).toEqual([]);
    expect(takeLine, context).toBeDefined();
    expect(tookMs, context).toBeLessThanOrEqual(QUORUM_PARTITION_BOUND_MS);
    expect(oldLast === undefined || oldLast < newFirst.at, context).toBe(true);
    expect(demotedMs, context).toBeDefined();
    expect(demotedMs!, context).toBeLessThanOrEqual(demote.boundMs);
    expect(status?.role, context).toBe('replica');
    expect(status?.replication_state, context).toBe('streaming');
    expect(rejoinMs, context).toBeLessThanOrEqual(PARTITION_REJOIN_BOUND_MS);
  };

  it('the leader cut from its standbys but not from etcd: a new leader by quorum; the old one demotes on seeing its key taken and rejoins', async () => {
    await waitSyncReady(c!, 2);
    const leader = 'node1';
    expect(await c!.leader()).toBe(leader);
    await partitionLeader(
      'leader cut from its standbys',
      leader,
      () => lab!.cut(leader, peersOf(leader)),
      () => lab!.uncut(leader, peersOf(leader)),
      { from: 'take', boundMs: SEES_TAKEN_BOUND_MS },
    );
  });

  it('the leader cut from its standbys and etcd: a new leader by quorum; the old one demotes by its lease logic and rejoins', async () => {
    const cc = c!;
    let leader = await waitSyncReady(cc, 2);
    if (!(leader in lab!.members)) {
      // The leader must be in a namespace to be cut: switch over to node1.
      const r = await cc.post(leader, '/switchover', { leader, candidate: 'node1' });
      expect(r.status, r.body).toBe(200);
      await waitFor(async () => ((await cc.leader()) === 'node1' ? true : undefined), 120_000, 'node1 leading after the switchover');
      leader = await waitSyncReady(cc, 2);
    }
    expect(leader in lab!.members).toBe(true);
    await partitionLeader(
      'leader cut from everything',
      leader,
      () => lab!.isolate(leader),
      () => lab!.heal(leader),
      { from: 'cut', boundMs: LEASE_BOUND_MS },
    );
  });

  it('every write the recorded writer saw acknowledged is on every member', async () => {
    await waitSyncReady(c!, 2);
    await sleep(1500);
    const records = await writer!.stop();
    writer = undefined;
    expect(records.length).toBeGreaterThan(0);
    await assertNoLoss(c!, records);
    figures.push(`recorded writer: ${records.length} acknowledged writes, none lost`);
  });
});
