/**
 * The DCS contract against a real etcd (tests/support/etcd.ts), with raw reads through a plain
 * etcd3 client, then the failure rules: against a stopped etcd every call rejects with
 * DcsError('dcs_unavailable') within retryTimeoutMs, and the watch reports dcs.unreachable.
 */
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DcsError, type DcsEvent } from '../../src/dcs/dcs.ts';
import { EtcdDcs } from '../../src/dcs/etcd.ts';
import { runDcsContract, type DcsHarness } from '../dcs/contract.ts';
import { startEtcd, type EtcdServer } from '../support/etcd.ts';
import { sleep, waitFor } from '../support/processes.ts';

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

describe('EtcdDcs when etcd is gone', () => {
  const retryTimeoutMs = 1000;
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
    await a.touchMember({ conn_url: 'postgres://127.0.0.1:5432/postgres', api_url: 'http://127.0.0.1:8008/ha', state: 'running', role: 'replica', version: '0.1.0' });
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
      ['updateLeader', () => a.updateLeader()],
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
      expect(elapsed, what).toBeLessThanOrEqual(retryTimeoutMs + 300);
    }
    expect(a.lastSeenMs()).toBeLessThan(agentNow());

    const b = new EtcdDcs({ hosts: [etcd!.host], ...opts('b') });
    const t0 = Date.now();
    await expect(b.start()).rejects.toMatchObject({ code: 'dcs_unavailable' });
    expect(Date.now() - t0).toBeLessThanOrEqual(retryTimeoutMs + 300);

    const t1 = Date.now();
    await Promise.all([a.close(), b.close()]);
    expect(Date.now() - t1).toBeLessThanOrEqual(2 * retryTimeoutMs + 300);
  });
});
