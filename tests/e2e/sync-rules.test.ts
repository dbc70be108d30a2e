/**
 * Synchronous replication rules on real etcd, PostgreSQL and agents (issue 9):
 * - a member tagged `nosync` is never chosen, and `synchronous_node_count: 2` lists every other
 *   eligible replica (FIRST 2 on the leader, both in the `sync` key);
 * - every reader of the synchronous state answers from it: /sync, /async, /read-only-sync, the
 *   roles in /cluster, `ha_sync_standby`;
 * - strict mode with every replica stopped: an INSERT does not return within 3 s; turning strict
 *   off degrades to asynchronous, says so in /ha and `ha_sync_degraded`, and the INSERT returns;
 * - a switchover to a member outside the sync key answers 412 with the reason.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';
import { standbyNames, syncKey, waitSyncReady } from './support/sync.ts';

const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 3;
/** A change of the synchronous set is in place within two cycles plus the DCS budget. */
const SETTLE_MS = (2 * LOOP_WAIT + RETRY_TIMEOUT) * 1000 + 5000;

describe('nosync and synchronous_node_count', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.create({
      nodes: 4,
      ttl: TTL,
      loopWait: LOOP_WAIT,
      retryTimeout: RETRY_TIMEOUT,
      dcsExtra: ['synchronous_mode: true', 'synchronous_node_count: 2'],
      tags: { node4: { nosync: true } },
    });
    // node1 first, so that it bootstraps and leads: the nosync member is a replica.
    c.start('node1');
    await c.waitForLeader(60_000);
    for (const n of ['node2', 'node3', 'node4']) c.start(n);
  }, 120_000);
  afterAll(async () => {
    await c?.destroy();
  });

  it('lists both eligible replicas and never the nosync member', { timeout: 180_000 }, async () => {
    const leader = await waitSyncReady(c, 2);
    expect(leader).toBe('node1');
    await c.waitForStreaming(['node4'], 60_000);
    const key = await syncKey(c);
    expect(key).toEqual({ leader: 'node1', members: ['node2', 'node3'], quorum: 0 });
    expect(await standbyNames(c, 'node1')).toBe('FIRST 2 ("node2","node3")');
    // Watched over several cycles: node4 never enters.
    for (let i = 0; i < 5; i++) {
      await sleep(LOOP_WAIT * 1000);
      expect((await syncKey(c))?.members).not.toContain('node4');
    }
    const codes = async (path: string) => Promise.all(c.nodes.map(async (n) => (await c.get(n.name, path)).status));
    expect(await codes('/sync')).toEqual([503, 200, 200, 503]);
    expect(await codes('/async')).toEqual([503, 503, 503, 200]);
    expect(await codes('/read-only-sync')).toEqual([200, 200, 200, 503]);
    const cluster = (await c.get('node2', '/cluster')).json() as { members: { name: string; role: string }[] };
    expect(Object.fromEntries(cluster.members.map((m) => [m.name, m.role]))).toEqual({
      node1: 'leader',
      node2: 'sync_standby',
      node3: 'sync_standby',
      node4: 'replica',
    });
    const metrics = (await c.get('node2', '/metrics')).body;
    expect(metrics).toMatch(/^ha_sync_standby\{[^}]*\} 1$/m);
    // The changes of the synchronous set are journaled with their reason (/events, the UI).
    const events = ((await c.get('node1', '/events?limit=1000')).json() as { events: { event?: { type?: string; reason?: string } }[] })
      .events;
    const reasons = events.filter((e) => e.event?.type?.startsWith('ha.sync.')).map((e) => `${e.event!.type}: ${e.event!.reason}`);
    expect(
      reasons.some((r) => /ha\.sync\.standby_names: synchronous_standby_names: .* -> FIRST/.test(r)),
      reasons.join('\n'),
    ).toBe(true);
    expect(
      reasons.some((r) => /ha\.sync\.key: .*added to the sync key/.test(r)),
      reasons.join('\n'),
    ).toBe(true);
    const r = await c.post('node1', '/switchover', { leader: 'node1', candidate: 'node4' });
    expect(r.status).toBe(412);
    expect(r.body).toContain('candidate name does not match with sync_standby');
  });

  it('synchronous_node_count back to 1: the key shrinks before the set does', { timeout: 120_000 }, async () => {
    const watch = await c.watchKey('sync');
    try {
      const res = await fetch(`http://127.0.0.1:${c.node('node1').apiPort}/config`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ synchronous_node_count: 1 }),
      });
      expect(res.status).toBe(200);
      const since = Date.now();
      let last = '';
      try {
        await waitFor(async () => ((await syncKey(c))?.members.length === 1 ? true : undefined), SETTLE_MS, 'one member in the sync key');
        await waitFor(
          async () => (/^FIRST 1 \("node[23]"\)$/.test((last = await standbyNames(c, 'node1'))) ? true : undefined),
          SETTLE_MS,
          'FIRST 1 on the leader',
        );
      } catch (e) {
        const lines = c.logsMatching(/sync|synchronous|config/i, since - 1000).slice(-40);
        throw new Error(
          `${String(e)}\nsynchronous_standby_names on node1: ${last}\nsync key: ${JSON.stringify(await syncKey(c))}\nnode1 /ha: ${(await c.get('node1', '/ha')).body}\n${lines.join('\n')}`,
        );
      }
      const key = await syncKey(c);
      expect(await standbyNames(c, 'node1')).toBe(`FIRST 1 ("${key!.members[0]}")`);
    } finally {
      await watch.stop();
    }
  });
});

describe('strict mode', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.create({
      nodes: 3,
      ttl: TTL,
      loopWait: LOOP_WAIT,
      retryTimeout: RETRY_TIMEOUT,
      dcsExtra: ['synchronous_mode: true', 'synchronous_mode_strict: true'],
    });
    c.startAll();
  }, 120_000);
  afterAll(async () => {
    await c?.destroy();
  });

  it('with every replica stopped an INSERT does not return within 3 s; non-strict degrades and says so', { timeout: 240_000 }, async () => {
    const leader = await waitSyncReady(c, 1);
    const replicas = c.nodes.map((n) => n.name).filter((n) => n !== leader);
    await c.psql(leader, 'create table strict_t (id int)');
    for (const r of replicas) await c.stopAgent(r);
    await waitFor(async () => (replicas.every((r) => c.postmasterPid(r) === undefined) ? true : undefined), 30_000, 'replicas stopped');
    // Give the leader cycles to see the standbys gone: strict keeps commits waiting.
    await sleep(2 * LOOP_WAIT * 1000);
    const sql = postgres({
      host: '127.0.0.1',
      port: c.node(leader).pgPort,
      user: 'postgres',
      password: 'e2e-super',
      database: 'postgres',
      max: 1,
      onnotice: () => {},
    });
    try {
      let returned = false;
      const insert = sql`insert into strict_t values (1)`.then(
        () => {
          returned = true;
        },
        () => undefined,
      );
      await sleep(3000);
      expect(returned, 'an INSERT returned success with no synchronous standby in strict mode').toBe(false);
      const ha = (await c.get(leader, '/ha')).json() as Record<string, unknown>;
      expect(String(ha['synchronous_degraded'])).toMatch(/commits wait/);
      expect((await c.get(leader, '/metrics')).body).toMatch(/^ha_sync_degraded\{[^}]*\} 1$/m);

      // Strict off: the leader falls back to asynchronous, the waiting INSERT returns.
      const res = await fetch(`http://127.0.0.1:${c.node(leader).apiPort}/config`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ synchronous_mode_strict: false }),
      });
      expect(res.status).toBe(200);
      await waitFor(async () => (returned ? true : undefined), SETTLE_MS, 'the INSERT to return after strict mode was turned off');
      await insert;
      await waitFor(
        async () =>
          /asynchronously/.test(String(((await c.get(leader, '/ha')).json() as Record<string, unknown>)['synchronous_degraded']))
            ? true
            : undefined,
        SETTLE_MS,
        '/ha synchronous_degraded to say the primary went asynchronous',
      );
      expect(await standbyNames(c, leader)).toBe('');
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
