import { describe, expect, it } from 'vitest';
import { DcsError } from '../../src/dcs/dcs.ts';
import { EtcdDcs } from '../../src/dcs/etcd.ts';
import { InMemoryDcs, InMemoryStore } from '../../src/dcs/memory.ts';

const base = { namespace: '/service/', scope: 'dl', ttlSeconds: 10, retryTimeoutMs: 3000 };

describe('the leader cycle deadline and retry_timeout of the DCS client', () => {
  it('InMemoryDcs: a call at or after the deadline is not made; clearing it restores calls', async () => {
    let now = 1_000_000;
    const store = new InMemoryStore({ now: () => now });
    const dcs = new InMemoryDcs({ ...base, store, name: 'a', now: () => now });
    await dcs.start();
    expect(dcs.lastKeepaliveMs()).toBe(now);
    dcs.setDeadline(() => 1_005_000);
    now = 1_004_000;
    await dcs.keepalive();
    expect(dcs.lastKeepaliveMs()).toBe(1_004_000);
    now = 1_005_000;
    await expect(dcs.keepalive()).rejects.toBeInstanceOf(DcsError);
    await expect(dcs.setStatus({ optime: 1 })).rejects.toThrow(/deadline passed/);
    expect(dcs.lastKeepaliveMs()).toBe(1_004_000);
    dcs.setDeadline(undefined);
    await dcs.keepalive();
    expect(dcs.lastKeepaliveMs()).toBe(1_005_000);
    dcs.setRetryTimeout(7000);
    expect(dcs.retryTimeout).toBe(7000);
    await dcs.close();
  });

  it('EtcdDcs: an unreachable etcd is given min(retry_timeout, deadline − now), and nothing after the deadline', async () => {
    // Port 1 on loopback refuses connections: every attempt fails "not sent" and is retried until the bound.
    const dcs = new EtcdDcs({ ...base, name: 'a', hosts: ['127.0.0.1:1'], retryTimeoutMs: 3000 });
    try {
      const t0 = Date.now();
      dcs.setDeadline(() => t0 + 600);
      await expect(dcs.keepalive()).rejects.toBeInstanceOf(DcsError);
      const took = Date.now() - t0;
      expect(took).toBeGreaterThanOrEqual(450);
      expect(took).toBeLessThan(1500);
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + 650 - Date.now())));
      const t1 = Date.now();
      await expect(dcs.setStatus({ optime: 1 })).rejects.toThrow(/deadline passed/);
      expect(Date.now() - t1).toBeLessThan(50);
      // retry_timeout lowered: without a deadline the bound is the new retry_timeout
      dcs.setDeadline(undefined);
      dcs.setRetryTimeout(400);
      const t2 = Date.now();
      await expect(dcs.setStatus({ optime: 1 })).rejects.toBeInstanceOf(DcsError);
      const took2 = Date.now() - t2;
      expect(took2).toBeGreaterThanOrEqual(250);
      expect(took2).toBeLessThan(1500);
    } finally {
      await dcs.close();
    }
  });
});
