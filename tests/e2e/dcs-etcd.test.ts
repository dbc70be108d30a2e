/**
 * The DCS contract against a real etcd (tests/support/etcd.ts), with raw reads through a plain
 * etcd3 client, then the failure rules: against a stopped etcd every call rejects with
 * DcsError('dcs_unavailable') within retryTimeoutMs, and the watch reports dcs.unreachable.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DcsError, type DcsEvent } from '../../src/dcs/dcs.ts';
import { EtcdDcs } from '../../src/dcs/etcd.ts';
import { runDcsContract, type DcsHarness } from '../dcs/contract.ts';
import { startEtcd, type EtcdServer } from '../support/etcd.ts';
import { freePorts } from '../support/ports.ts';
import { sleep, stopPid, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

let etcd: EtcdServer | undefined;
let raw: Etcd3 | undefined;
/** Agent clock deliberately off from Date.now: lastSeen/lastKeepalive must follow the `now` option. */
const CLOCK_OFFSET_MS = 1_000_000_000;
const agentNow = () => Date.now() + CLOCK_OFFSET_MS;

beforeAll(async () => {
  etcd = await startEtcd();
  raw = new Etcd3({ hosts: [etcd.host] });
});

afterAll(async () => {
  raw?.close();
  await etcd?.stop();
});

runDcsContract('EtcdDcs (real etcd)', (): DcsHarness => {
  const server = etcd!;
  const r = raw!;
  return {
    namespace: '/service/',
    shortTtlSeconds: 2,
    expiryGraceMs: 1500,
    now: agentNow,
    make: ({ scope, name, ttlSeconds }) =>
      new EtcdDcs({ hosts: [server.host], namespace: '/service/', scope, name, ttlSeconds, retryTimeoutMs: 2000, now: agentNow }),
    async passTime(ms, tick) {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        await tick();
        await sleep(Math.min(300, Math.max(0, end - Date.now())));
      }
    },
    async raw(key) {
      const kv = (await r.get(key).exec()).kvs[0];
      return kv && { value: kv.value.toString('utf8'), lease: String(kv.lease) };
    },
    async rawPut(key, value) {
      await r.put(key).value(value);
    },
    async leaseTtlSeconds(id) {
      const res = await r.leaseClient.leaseTimeToLive({ ID: id });
      return Number(res.TTL) < 0 ? undefined : Number(res.grantedTTL);
    },
  };
});

/** Starts etcd on fixed ports and data dir (so it can be restarted in place); resolves with its PID once healthy. */
async function spawnEtcd(dir: string, client: number, peer: number): Promise<number> {
  const url = `http://127.0.0.1:${client}`;
  const child = spawn(
    'etcd',
    [
      '--name',
      'r1',
      '--data-dir',
      join(dir, 'data'),
      '--listen-client-urls',
      url,
      '--advertise-client-urls',
      url,
      '--listen-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-cluster',
      `r1=http://127.0.0.1:${peer}`,
      '--initial-cluster-state',
      'new',
      '--log-level',
      'error',
    ],
    { stdio: 'ignore' },
  );
  const pid = child.pid!;
  try {
    await waitFor(async () => (await fetch(`${url}/health`)).ok, 15000, `etcd on ${url}`);
  } catch (e) {
    await stopPid(pid, 'SIGKILL');
    throw e;
  }
  return pid;
}

describe('EtcdDcs renewal after the cycle keepalive', () => {
  it("answers from the cache only when the cache is at the keepalive's store revision and shows this incarnation; otherwise the transaction decides", async () => {
    const r = raw!;
    const a = new EtcdDcs({
      hosts: [etcd!.host],
      namespace: '/service/',
      scope: 'renew-cache',
      name: 'a',
      ttlSeconds: 10,
      retryTimeoutMs: 2000,
      now: agentNow,
    });
    // Count the transactions the adapter sends (white box: the optimization is one txn less).
    const client = (a as unknown as { client: Etcd3 }).client;
    const origIf = client.if.bind(client);
    let txns = 0;
    client.if = ((...args: Parameters<Etcd3['if']>) => {
      txns++;
      return origIf(...args);
    }) as Etcd3['if'];
    try {
      await a.start();
      const won = await a.attemptToAcquireLeader();
      if (!won.acquired) throw new Error('a did not win');
      await waitFor(() => a.view().leader?.createRevision === won.createRevision, 5000, 'the leader key in the cache', 20);
      // The cycle's keepalive, then the renewal: answered from the cache, no transaction.
      await a.keepalive();
      txns = 0;
      expect(await a.updateLeader(won.createRevision, { keepalive: false })).toBe(true);
      expect(txns).toBe(0);
      // Each renewal needs its own keepalive: without one, the transaction runs.
      expect(await a.updateLeader(won.createRevision, { keepalive: false })).toBe(true);
      expect(txns).toBe(1);
      // A write outside the prefix moves the store revision past the cache: the transaction runs.
      await r.put('/elsewhere/renew-cache').value('x');
      await a.keepalive();
      expect(await a.updateLeader(won.createRevision, { keepalive: false })).toBe(true);
      expect(txns).toBe(2);
      // The key deleted and created again under the same name (not by this agent): not renewed,
      // once the watch has delivered it (cache current) and before (the transaction decides).
      await r.delete().key('/service/renew-cache/leader');
      await r.put('/service/renew-cache/leader').value('a');
      await waitFor(
        () => a.view().leader !== undefined && a.view().leader!.createRevision !== won.createRevision,
        5000,
        'the new key in the cache',
        20,
      );
      await a.keepalive();
      expect(await a.updateLeader(won.createRevision, { keepalive: false })).toBe(false);
      expect(txns).toBe(3);
    } finally {
      await a.close();
      await r.delete().prefix('/service/renew-cache/');
      await r.delete().key('/elsewhere/renew-cache');
    }
  });
});

describe('EtcdDcs across an etcd restart', () => {
  it('reports unreachable, then re-lists, re-watches and reports reachable; the lease survives', async () => {
    const dir = await makeTempDir('ha-dcs-etcd-');
    const [clientPort, peerPort] = await freePorts(2);
    const host = `127.0.0.1:${clientPort}`;
    let pid = await spawnEtcd(dir, clientPort!, peerPort!);
    const a = new EtcdDcs({
      hosts: [host],
      namespace: '/service/',
      scope: 'restart',
      name: 'a',
      ttlSeconds: 10,
      retryTimeoutMs: 1000,
      now: agentNow,
      resyncDelayMs: 200,
    });
    let writer: Etcd3 | undefined;
    try {
      await a.start();
      await a.touchMember({
        conn_url: 'postgres://127.0.0.1:5432/postgres',
        api_url: 'http://127.0.0.1:8008/ha',
        state: 'running',
        role: 'replica',
        version: '0.1.0',
      });
      const lease = a.currentLeaseId();
      const events: DcsEvent[] = [];
      a.subscribe((e) => events.push(e));

      await stopPid(pid, 'SIGKILL');
      await waitFor(() => events.some((e) => e.type === 'dcs.unreachable'), 5000, 'dcs.unreachable', 20);
      pid = await spawnEtcd(dir, clientPort!, peerPort!);
      writer = new Etcd3({ hosts: [host] });
      await writer.put('/service/restart/config').value('{"ttl":31}');

      await waitFor(() => a.view().config?.value['ttl'] === 31, 10000, 'config seen through the new watch', 20);
      expect(events.some((e) => e.type === 'dcs.reachable')).toBe(true);
      expect(events).toContainEqual({ type: 'dcs.configChanged' });
      await a.keepalive();
      expect(a.currentLeaseId()).toBe(lease);
      expect(a.view().members.map((m) => m.name)).toEqual(['a']);
      // The new watch is live: a later write arrives without a refresh.
      await writer.put('/service/restart/config').value('{"ttl":32}');
      await waitFor(() => a.view().config?.value['ttl'] === 32, 5000, 'later write by watch', 20);
    } finally {
      writer?.close();
      await a.close();
      await stopPid(pid, 'SIGTERM', 5000);
      await removeTempDir(dir);
    }
  });
});

describe('EtcdDcs when etcd is gone', () => {
  const retryTimeoutMs = 700;
  /** Slack for timers on a loaded 2-core machine. */
  const slackMs = 500;
  const opts = (name: string) => ({
    namespace: '/service/',
    scope: 'gone',
    name,
    ttlSeconds: 10,
    retryTimeoutMs,
    now: agentNow,
  });

  it('rejects every call within retryTimeoutMs with DcsError and reports the watch unreachable', async () => {
    const a = new EtcdDcs({ hosts: [etcd!.host], ...opts('a') });
    await a.start();
    await a.touchMember({
      conn_url: 'postgres://127.0.0.1:5432/postgres',
      api_url: 'http://127.0.0.1:8008/ha',
      state: 'running',
      role: 'replica',
      version: '0.1.0',
    });
    const events: DcsEvent[] = [];
    a.subscribe((e) => events.push(e));
    const seenBefore = a.lastSeenMs();
    expect(seenBefore).toBeGreaterThan(CLOCK_OFFSET_MS);

    await etcd!.stop();
    await waitFor(() => events.some((e) => e.type === 'dcs.unreachable'), 5000, 'dcs.unreachable', 20);

    const calls: Array<[string, () => Promise<unknown>]> = [
      ['keepalive', () => a.keepalive()],
      ['refresh', () => a.refresh()],
      ['attemptToAcquireLeader', () => a.attemptToAcquireLeader()],
      ['updateLeader', () => a.updateLeader('1')],
      ['deleteLeader', () => a.deleteLeader()],
      ['setConfig', () => a.setConfig({ ttl: 30 }, '0')],
      ['initialize', () => a.initialize('', { create: true })],
    ];
    for (const [what, call] of calls) {
      const t0 = Date.now();
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      const elapsed = Date.now() - t0;
      expect(err, what).toBeInstanceOf(DcsError);
      expect((err as DcsError).code, what).toBe('dcs_unavailable');
      expect(elapsed, what).toBeLessThanOrEqual(retryTimeoutMs + slackMs);
    }
    expect(a.lastSeenMs()).toBeLessThan(agentNow());

    const b = new EtcdDcs({ hosts: [etcd!.host], ...opts('b') });
    const t0 = Date.now();
    await expect(b.start()).rejects.toMatchObject({ code: 'dcs_unavailable' });
    expect(Date.now() - t0).toBeLessThanOrEqual(retryTimeoutMs + slackMs);

    const t1 = Date.now();
    await Promise.all([a.close(), b.close()]);
    expect(Date.now() - t1).toBeLessThanOrEqual(2 * retryTimeoutMs + slackMs);
  });
});
