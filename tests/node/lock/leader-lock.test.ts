/**
 * LeaderLock (src/node/lock/leader-lock.ts, docs/ha.md "The leader lock") over real InMemoryDcs
 * clients sharing one InMemoryStore, on a fake clock. The raw store is read around the lock to
 * check what really reached the DCS.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryDcs, InMemoryStore } from '../../../src/dcs/memory.ts';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { LeaderLock } from '../../../src/node/lock/leader-lock.ts';

const TTL_S = 30;
const LEADER_KEY = '/service/demo/leader';

const stores: InMemoryStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function setup() {
  let t = 1_700_000_000_000;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  // expiryCheckMs 0: no background timer; leases expire lazily on the fake clock.
  const store = new InMemoryStore({ now: clock.now, expiryCheckMs: 0 });
  stores.push(store);
  const client = async (name: string) => {
    const dcs = new InMemoryDcs({
      store,
      namespace: 'service',
      scope: 'demo',
      name,
      ttlSeconds: TTL_S,
      retryTimeoutMs: 1000,
      now: clock.now,
    });
    await dcs.start({ watch: false });
    return dcs;
  };
  let ttlMs = TTL_S * 1000;
  const lockOf = (dcs: InMemoryDcs) =>
    new LeaderLock({ dcs, name: dcs.name, now: clock.now, ttlMs: () => ttlMs, leaseId: () => dcs.currentLeaseId() });
  return {
    clock,
    store,
    client,
    lockOf,
    setTtlMs: (ms: number) => (ttlMs = ms),
    raw: () => store.get(LEADER_KEY),
  };
}

/** A fresh, linearizable view of the store through `dcs`. */
const viewOf = (dcs: InMemoryDcs): Promise<ClusterView> => dcs.refresh();

describe('LeaderLock', () => {
  it('acquire wins once and records the create revision of the key it created', async () => {
    const { client, lockOf, raw } = setup();
    const a = await client('a');
    const b = await client('b');
    const la = lockOf(a);
    const lb = lockOf(b);
    expect(la.state).toEqual({ kind: 'none' });
    expect(la.held).toBe(false);

    expect(await la.acquire()).toEqual({ acquired: true });
    const key = raw();
    expect(key?.value).toBe('a');
    expect(la.held).toBe(true);
    expect(la.state).toMatchObject({ kind: 'held', createRevision: key!.createRevision });

    expect(await lb.acquire()).toEqual({ acquired: false, holder: 'a' });
    expect(lb.held).toBe(false);
    expect(lb.state.kind).toBe('none');
    // A second race of the holder itself does not win again (create-only), nor change the key.
    expect(await la.acquire()).toEqual({ acquired: false, holder: 'a' });
    expect(raw()).toEqual(key);
    expect(la.state).toMatchObject({ kind: 'held', createRevision: key!.createRevision });

    const view = await viewOf(b);
    expect(la.read(view)).toBe('mine');
    expect(lb.read(view)).toBe('other');
  });

  it("renew 'ok' moves untilMs to now + ttl (the current ttl) on the agent's clock", async () => {
    const { clock, client, lockOf, setTtlMs, raw } = setup();
    const a = await client('a');
    const la = lockOf(a);
    const t0 = clock.now();
    await la.acquire();
    expect(la.untilMs).toBe(t0 + TTL_S * 1000);
    const rev = raw()!.createRevision;

    clock.advance(7_000);
    expect(await la.renew()).toBe('ok');
    expect(la.untilMs).toBe(t0 + 7_000 + TTL_S * 1000);
    expect(la.state).toMatchObject({ kind: 'held', renewedMs: t0 + 7_000, createRevision: rev });

    setTtlMs(12_000);
    clock.advance(3_000);
    expect(await la.renew()).toBe('ok');
    expect(la.untilMs).toBe(t0 + 10_000 + 12_000);
    // Renewal is a compare-and-set: same incarnation, still ours.
    expect(raw()).toMatchObject({ value: 'a', createRevision: rev });
  });

  it('renew after the caller kept the lease alive sends no second keepalive and counts validity from that keepalive', async () => {
    const { clock, store, client, lockOf, raw } = setup();
    const a = await client('a');
    const la = lockOf(a);
    await la.acquire();
    const lease = a.currentLeaseId()!;

    clock.advance(5_000);
    const basis = la.mark();
    await a.keepalive();
    const extendedAt = store.leaseTimeToLive(lease)!.remainingMs;
    clock.advance(2_000);
    expect(await la.renew(basis)).toBe('ok');
    // The lease was not extended again by the renewal (2 s of its remaining time went by)…
    expect(store.leaseTimeToLive(lease)!.remainingMs).toBe(extendedAt - 2_000);
    // …and the lock is held until the keepalive's send time + ttl, not the renewal's.
    expect(la.state).toMatchObject({ kind: 'held', renewedMs: basis.sentMs });
    expect(la.untilMs).toBe(basis.sentMs + TTL_S * 1000);
    expect(raw()).toMatchObject({ value: 'a', lease });

    // Without a basis the renewal keeps the lease alive itself.
    clock.advance(1_000);
    expect(await la.renew()).toBe('ok');
    expect(store.leaseTimeToLive(lease)!.remainingMs).toBe(TTL_S * 1000);
    expect(la.untilMs).toBe(clock.now() + TTL_S * 1000);
  });

  it('renew with nothing held is lost and writes nothing', async () => {
    const { client, lockOf, raw } = setup();
    const a = await client('a');
    const la = lockOf(a);
    expect(await la.renew()).toBe('lost');
    expect(la.held).toBe(false);
    expect(la.untilMs).toBe(0);
    expect(raw()).toBeUndefined();
  });

  it("after release the lock is not held, a stale view naming us reads 'stale', renew is 'lost' and never re-creates the key", async () => {
    const { client, lockOf, raw } = setup();
    const a = await client('a');
    const la = lockOf(a);
    await la.acquire();
    const rev = raw()!.createRevision;
    const staleView = await viewOf(a);
    expect(staleView.leader).toMatchObject({ name: 'a', createRevision: rev, leaseId: a.currentLeaseId() });

    expect(await la.release()).toBe(true);
    expect(la.held).toBe(false);
    expect(la.untilMs).toBe(0);
    expect(la.releasePending).toBe(false);
    expect(la.state).toMatchObject({ kind: 'released', createRevision: rev, deleted: true, why: 'released' });
    expect(raw()).toBeUndefined();

    // The view still names us, with our own lease: it is stale, never 'mine' nor 'adoptable'.
    expect(la.read(staleView)).toBe('stale');
    expect(await la.adopt(staleView)).toBe(false);

    expect(await la.renew()).toBe('lost');
    expect(la.held).toBe(false);
    expect(raw()).toBeUndefined();
    expect((await viewOf(a)).leader).toBeUndefined();

    // A second release is a no-op.
    expect(await la.release()).toBe(true);
    expect(raw()).toBeUndefined();
  });

  it('a renewal racing with a release does not bring the hold back', async () => {
    const { client, lockOf, raw } = setup();
    const a = await client('a');
    const la = lockOf(a);
    await la.acquire();
    const renewing = la.renew();
    const releasing = la.release();
    expect(await renewing).toBe('lost');
    expect(await releasing).toBe(true);
    expect(la.held).toBe(false);
    expect(raw()).toBeUndefined();
  });

  it("after another member deletes our key and creates its own, renew is 'lost' and leaves the other's key alone", async () => {
    const { client, lockOf, raw } = setup();
    const a = await client('a');
    const b = await client('b');
    const la = lockOf(a);
    const lb = lockOf(b);
    await la.acquire();
    const seen = (await viewOf(b)).leader!;
    expect(await b.clearLeader({ name: 'a', revision: seen.revision })).toBe(true);
    expect(await lb.acquire()).toEqual({ acquired: true });
    const theirs = raw()!;
    expect(theirs.value).toBe('b');

    expect(await la.renew()).toBe('lost');
    expect(la.held).toBe(false);
    expect(la.state).toMatchObject({ kind: 'released', why: 'lost', createRevision: seen.createRevision });
    expect(raw()).toEqual(theirs);
    expect(la.read(await viewOf(a))).toBe('other');
    expect(await lb.renew()).toBe('ok');
  });

  it('a key deleted and re-created by the same member through a new acquire is another incarnation: the old one is not renewed', async () => {
    const { store, client, lockOf, raw } = setup();
    const a = await client('a');
    const old = lockOf(a);
    await old.acquire();
    const rev1 = raw()!.createRevision;

    // The key goes (e.g. removed by an operator) and this member wins a new race in a new lock.
    store.delete(LEADER_KEY);
    const fresh = lockOf(a);
    expect(await fresh.acquire()).toEqual({ acquired: true });
    const second = raw()!;
    expect(second.value).toBe('a');
    expect(second.createRevision).not.toBe(rev1);
    expect(fresh.state).toMatchObject({ kind: 'held', createRevision: second.createRevision });

    expect(await old.renew()).toBe('lost');
    expect(old.held).toBe(false);
    expect(raw()).toEqual(second);
    expect(await fresh.renew()).toBe('ok');
    expect(raw()!.createRevision).toBe(second.createRevision);

    // The same lock object: release then a new race gives a new incarnation too.
    expect(await fresh.release()).toBe(true);
    expect(await fresh.acquire()).toEqual({ acquired: true });
    const third = raw()!;
    expect(third.createRevision).not.toBe(second.createRevision);
    expect(fresh.state).toMatchObject({ kind: 'held', createRevision: third.createRevision });
  });

  it('a fresh lock adopts the key its previous run held (compare-and-set), moves it to its lease, then renews it', async () => {
    const { client, lockOf, raw } = setup();
    const before = await client('a');
    await lockOf(before).acquire();
    const key = raw()!;
    // The agent restarts: a new client (new lease) and a fresh lock; the old lease is abandoned.
    const a = await client('a');
    expect(a.currentLeaseId()).not.toBe(key.lease);
    const la = lockOf(a);
    const view = await viewOf(a);
    expect(la.read(view)).toBe('adoptable');
    expect(la.held).toBe(false);

    expect(await la.adopt(view)).toBe(true);
    expect(la.held).toBe(true);
    expect(la.state).toMatchObject({ kind: 'held', createRevision: key.createRevision });
    expect(raw()).toMatchObject({ value: 'a', createRevision: key.createRevision, lease: a.currentLeaseId() });
    expect(await la.renew()).toBe('ok');
    expect(la.read(await viewOf(a))).toBe('mine');
  });

  it('a fresh lock whose view is stale (key already gone) fails to adopt, holds nothing and creates nothing', async () => {
    const { client, lockOf, raw } = setup();
    const before = await client('a');
    const previous = lockOf(before);
    await previous.acquire();
    const a = await client('a');
    const la = lockOf(a);
    const view = await viewOf(a);
    expect(la.read(view)).toBe('adoptable');
    await previous.release();
    expect(raw()).toBeUndefined();

    expect(await la.adopt(view)).toBe(false);
    expect(la.held).toBe(false);
    expect(la.state.kind).toBe('none');
    expect(raw()).toBeUndefined();
    expect(await la.renew()).toBe('lost');
    expect(raw()).toBeUndefined();
  });

  it('a fresh lock does not adopt a key naming another member', async () => {
    const { client, lockOf, raw } = setup();
    const b = await client('b');
    await lockOf(b).acquire();
    const a = await client('a');
    const la = lockOf(a);
    const view = await viewOf(a);
    expect(la.read(view)).toBe('other');
    expect(await la.adopt(view)).toBe(false);
    expect(la.held).toBe(false);
    expect(raw()?.value).toBe('b');
  });

  it('a release whose delete fails while partitioned stays pending; retryRelease after reconnection deletes the key', async () => {
    const { store, client, lockOf, raw } = setup();
    const a = await client('a');
    const la = lockOf(a);
    await la.acquire();
    const rev = raw()!.createRevision;
    const staleView = await viewOf(a);

    store.setReachable('a', false);
    expect(await la.release()).toBe(false);
    expect(la.releasePending).toBe(true);
    expect(la.held).toBe(false);
    expect(la.state).toMatchObject({ kind: 'released', createRevision: rev, deleted: false });
    expect(la.read(staleView)).toBe('stale');
    expect(raw()?.createRevision).toBe(rev);
    expect(await la.retryRelease()).toBe(false);
    expect(la.releasePending).toBe(true);
    expect(await la.renew()).toBe('lost');

    store.setReachable('a', true);
    expect(await la.retryRelease()).toBe(true);
    expect(la.releasePending).toBe(false);
    expect(la.state).toMatchObject({ kind: 'released', deleted: true });
    expect(raw()).toBeUndefined();
    expect(await la.renew()).toBe('lost');
    expect(raw()).toBeUndefined();
  });

  it("renew while partitioned is 'failed' and keeps the hold (untilMs runs on)", async () => {
    const { clock, store, client, lockOf, raw } = setup();
    const a = await client('a');
    const la = lockOf(a);
    await la.acquire();
    const until = la.untilMs;
    const rev = raw()!.createRevision;

    store.setReachable('a', false);
    clock.advance(5_000);
    expect(await la.renew()).toBe('failed');
    expect(la.held).toBe(true);
    expect(la.untilMs).toBe(until);
    expect(la.state).toMatchObject({ kind: 'held', createRevision: rev });

    store.setReachable('a', true);
    expect(await la.renew()).toBe('ok');
    expect(la.untilMs).toBe(clock.now() + TTL_S * 1000);
  });
});
