import { afterEach, describe, expect, it } from 'vitest';
import { DcsError, type DcsEvent } from '../../src/dcs/dcs.ts';
import { createDcs } from '../../src/dcs/index.ts';
import { InMemoryDcs, InMemoryStore } from '../../src/dcs/memory.ts';
import { waitFor } from '../support/processes.ts';
import { runDcsContract, type DcsHarness } from './contract.ts';

/** A fake clock shared by the store and its clients. */
function fakeClock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const stores: InMemoryStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

runDcsContract('InMemoryDcs', (): DcsHarness => {
  const clock = fakeClock();
  const store = new InMemoryStore({ now: clock.now });
  stores.push(store);
  return {
    namespace: '/service/',
    shortTtlSeconds: 2,
    expiryGraceMs: 1,
    now: clock.now,
    make: ({ scope, name, ttlSeconds }) =>
      new InMemoryDcs({ store, namespace: '/service/', scope, name, ttlSeconds, retryTimeoutMs: 1000, now: clock.now }),
    async passTime(ms, tick) {
      for (let done = 0; done < ms; ) {
        const step = Math.min(250, ms - done);
        clock.advance(step);
        done += step;
        await tick();
      }
    },
    raw: async (key) => {
      const kv = store.get(key);
      return kv && { value: kv.value, lease: kv.lease };
    },
    rawPut: async (key, value) => {
      store.put(key, value);
    },
    leaseTtlSeconds: async (id) => store.leaseTimeToLive(id)?.ttlSeconds,
  };
});

describe('InMemoryDcs only', () => {
  const setup = () => {
    const clock = fakeClock();
    const store = new InMemoryStore({ now: clock.now, expiryCheckMs: 20 });
    stores.push(store);
    const make = (name: string, ttlSeconds = 10) =>
      new InMemoryDcs({ store, namespace: 'service', scope: 'demo', name, ttlSeconds, retryTimeoutMs: 1000, now: clock.now });
    return { clock, store, make };
  };

  it('rejects calls of a partitioned client with dcs_unavailable, then recovers and re-lists', async () => {
    const { store, make } = setup();
    const a = make('a');
    const b = make('b');
    await a.start();
    await b.start();
    const events: DcsEvent[] = [];
    b.subscribe((e) => events.push(e));

    store.setReachable('b', false);
    expect(events).toContainEqual(expect.objectContaining({ type: 'dcs.unreachable' }));
    const err = await b.keepalive().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DcsError);
    expect((err as DcsError).code).toBe('dcs_unavailable');
    await expect(b.attemptToAcquireLeader()).rejects.toMatchObject({ code: 'dcs_unavailable' });
    await expect(b.refresh()).rejects.toBeInstanceOf(DcsError);

    // a is not partitioned: its writes land, but b's cache does not see them.
    expect(await a.attemptToAcquireLeader()).toMatchObject({ acquired: true });
    await new Promise((r) => setTimeout(r, 10));
    expect(b.view().leader).toBeUndefined();

    store.setReachable('b', true);
    await waitFor(() => events.some((e) => e.type === 'dcs.reachable'), 2000, 'reachable', 5);
    expect(b.view().leader?.name).toBe('a');
    expect(events).toContainEqual({ type: 'dcs.leaderChanged', leader: 'a' });
    expect(await b.attemptToAcquireLeader()).toEqual({ acquired: false, holder: 'a' });
    await a.close();
    await b.close();
  });

  it('expires leases by timer, so watchers see the delete without any call', async () => {
    const { clock, make } = setup();
    const a = make('a', 2);
    const b = make('b', 60);
    await a.start();
    await b.start();
    await a.attemptToAcquireLeader();
    await waitFor(() => b.view().leader?.name === 'a', 1000, 'leader a', 5);
    const events: DcsEvent[] = [];
    b.subscribe((e) => events.push(e));
    clock.advance(1999);
    await new Promise((r) => setTimeout(r, 60));
    expect(b.view().leader?.name).toBe('a');
    clock.advance(1);
    await waitFor(() => events.some((e) => e.type === 'dcs.leaderChanged' && e.leader === undefined), 2000, 'expiry', 5);
    expect(b.view().leader).toBeUndefined();
    await a.close();
    await b.close();
  });

  it('keeps per-key create and mod revisions and one store revision per write', () => {
    const { store } = setup();
    const r0 = BigInt(store.revision());
    store.put('/x/a', '1');
    store.put('/x/a', '2');
    const kv = store.get('/x/a')!;
    expect(BigInt(kv.createRevision)).toBe(r0 + 1n);
    expect(BigInt(kv.modRevision)).toBe(r0 + 2n);
    store.put('/x/b', '1');
    expect(store.deletePrefix('/x/')).toBe(2);
    expect(BigInt(store.revision())).toBe(r0 + 4n);
    expect(store.put('/x/c', '1', '42')).toBe(false);
  });

  it('reports lastSeenMs and lastKeepaliveMs on the agent clock', async () => {
    const { clock, make } = setup();
    const a = make('a');
    expect(a.lastSeenMs()).toBe(0);
    expect(a.lastKeepaliveMs()).toBe(0);
    await a.start();
    const t0 = clock.now();
    expect(a.lastKeepaliveMs()).toBe(t0);
    clock.advance(3000);
    await a.keepalive();
    expect(a.lastKeepaliveMs()).toBe(t0 + 3000);
    clock.advance(1000);
    await a.refresh();
    expect(a.lastSeenMs()).toBe(t0 + 4000);
    expect(a.lastKeepaliveMs()).toBe(t0 + 3000);
    await a.close();
  });

  it('creates both implementations with createDcs', async () => {
    const { store } = setup();
    const opts = { namespace: '/service/', scope: 'demo', name: 'a', ttlSeconds: 10, retryTimeoutMs: 1000 };
    const mem = createDcs({ kind: 'memory', store, ...opts });
    expect(mem).toBeInstanceOf(InMemoryDcs);
    await mem.start();
    await mem.close();
    const etcd = createDcs({ kind: 'etcd3', hosts: ['127.0.0.1:1'], ...opts });
    expect(etcd.name).toBe('a');
    await etcd.close();
    expect(() => createDcs({ kind: 'etcd3', hosts: [], ...opts })).toThrow(RangeError);
  });
});
