/**
 * The one DCS contract suite (shared/docs/dcs-layout.md, src/dcs/dcs.ts), run against
 * InMemoryDcs (tests/dcs/memory.test.ts) and EtcdDcs on a real etcd (tests/e2e/dcs-etcd.test.ts).
 * Each test works in a scope of its own, so tests never see each other's keys.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Dcs, DcsEvent } from '../../src/dcs/dcs.ts';
import { DcsError, clusterPrefix } from '../../src/dcs/dcs.ts';
import type { MemberData } from '../../src/domain/member.ts';
import { waitFor } from '../support/processes.ts';

/** A Dcs plus the lease id accessor both implementations have. */
export type ContractDcs = Dcs & { currentLeaseId(): string | undefined };

/** What an implementation gives the contract suite. */
export interface DcsHarness {
  /** Namespace used by every client. */
  namespace: string;
  /** Lease TTL (s) for expiry tests: short for etcd (real waiting), anything for a fake clock. */
  shortTtlSeconds: number;
  /** Clock given to every client as `now`. */
  now(): number;
  /** A new, not started client. */
  make(o: { scope: string; name: string; ttlSeconds: number }): ContractDcs;
  /**
   * Lets `ms` of store time pass, calling `tick` (a keepalive of the members that stay alive)
   * at least every 300 ms of that time: fake clock steps, or real waiting.
   */
  passTime(ms: number, tick: () => Promise<void>): Promise<void>;
  /** Extra time after the TTL until the store has surely expired a lease, ms (etcd checks every 500 ms). */
  expiryGraceMs: number;
  /** Raw stored value and lease of an absolute key, read around the Dcs under test. */
  raw(key: string): Promise<{ value: string; lease: string } | undefined>;
  /** Raw put of an absolute key, around the Dcs under test. */
  rawPut(key: string, value: string): Promise<void>;
  /** Granted TTL (s) of a lease; undefined when the store does not know it. */
  leaseTtlSeconds(id: string): Promise<number | undefined>;
}

const member = (extra: Partial<MemberData> = {}): MemberData => ({
  conn_url: `postgres://127.0.0.1:5432/postgres`,
  api_url: `http://127.0.0.1:8008/ha`,
  state: 'running',
  role: 'replica',
  version: '0.1.0',
  xlog_location: 12345678,
  tags: { nofailover: false },
  ...extra,
});

/** Collects a client's events and waits for one. */
function recorder(dcs: Dcs) {
  const events: DcsEvent[] = [];
  dcs.subscribe((e) => events.push(e));
  return {
    events,
    waitFor: (pred: (e: DcsEvent) => boolean, timeoutMs: number, what: string) => waitFor(() => events.some(pred), timeoutMs, what, 20),
  };
}

let scopeCounter = 0;

/** Registers the contract tests for one implementation. `makeHarness` is called once per test. */
export function runDcsContract(name: string, makeHarness: () => DcsHarness): void {
  describe(`Dcs contract: ${name}`, () => {
    let clients: ContractDcs[] = [];
    let h: DcsHarness;
    let scope = '';

    const client = async (memberName: string, ttlSeconds = 30, opts?: { lease?: boolean; watch?: boolean }) => {
      const d = h.make({ scope, name: memberName, ttlSeconds });
      clients.push(d);
      await d.start(opts);
      return d;
    };
    const key = (rel: string) => clusterPrefix(h.namespace, scope) + rel;
    const setup = () => {
      h = makeHarness();
      scope = `contract-${process.pid}-${++scopeCounter}`;
    };

    afterEach(async () => {
      await Promise.all(clients.map((c) => c.close()));
      clients = [];
    });

    it('starts on an empty prefix with an empty view and a fresh lease', async () => {
      setup();
      const before = h.now();
      const a = await client('a');
      expect(a.view()).toEqual({ members: [] });
      expect(a.currentLeaseId()).toMatch(/^\d+$/);
      expect(a.lastKeepaliveMs()).toBeGreaterThanOrEqual(before);
      expect(a.lastSeenMs()).toBeGreaterThanOrEqual(before);
      expect(a.lastKeepaliveMs()).toBeLessThanOrEqual(h.now());
    });

    it('lets exactly one member win the bootstrap race on initialize; an empty key is given back, a system identifier never', async () => {
      setup();
      const [a, b, c] = await Promise.all([client('a'), client('b'), client('c')]);
      const first = await Promise.all([a, b, c].map((d) => d.initialize('', { create: true })));
      expect(first.filter(Boolean)).toHaveLength(1);
      // The winner's bootstrap failed: the empty key is given back and the race runs again.
      expect(await [a, b, c][first.indexOf(true)]!.cancelInitialize()).toBe(true);
      expect((await a.refresh()).initialize).toBeUndefined();
      const results = await Promise.all([a, b, c].map((d) => d.initialize('', { create: true })));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = [a, b, c][results.indexOf(true)]!;
      expect(await winner.initialize('7412345678901234567', { create: false })).toBe(true);
      expect((await a.refresh()).initialize).toBe('7412345678901234567');
      expect(await h.raw(key('initialize'))).toMatchObject({ value: '7412345678901234567', lease: '0' });
      expect(await b.initialize('', { create: true })).toBe(false);
      expect(await winner.cancelInitialize()).toBe(false);
      expect((await a.refresh()).initialize).toBe('7412345678901234567');
    });

    it('lets exactly one member win the leader race; the losers learn the holder', async () => {
      setup();
      const ds = await Promise.all(['a', 'b', 'c'].map((n) => client(n)));
      const results = await Promise.all(ds.map((d) => d.attemptToAcquireLeader()));
      const winners = results.filter((r) => r.acquired);
      expect(winners).toHaveLength(1);
      const winner = ds[results.findIndex((r) => r.acquired)]!;
      for (const r of results) if (!r.acquired) expect(r.holder).toBe(winner.name);
      const view = await ds[0]!.refresh();
      expect(view.leader?.name).toBe(winner.name);
      expect(view.leader?.leaseId).toBe(winner.currentLeaseId());
    });

    it('stores keys and values exactly as dcs-layout.md says', async () => {
      setup();
      const a = await client('pg-1');
      const data = member({ role: 'primary' });
      await a.touchMember(data);
      expect(await a.attemptToAcquireLeader()).toMatchObject({ acquired: true });
      await a.setStatus({ optime: 67108864, slots: {}, retain_slots: [] });
      await a.setConfig({ ttl: 30, loop_wait: 10, database: { use_slots: true } });
      await a.setFailover({ leader: 'pg-1', member: 'pg-2' });
      await a.setSync({ leader: 'pg-1', sync_standby: 'pg-2' });
      await a.setHistory([[1, 25165984, 'no recovery target specified', '2024-08-28T19:39:26+00:00', 'pg-1']]);
      await a.setFailsafe({ 'pg-1': 'http://127.0.0.1:8008/ha' });

      const leader = await h.raw(key('leader'));
      expect(leader).toEqual({ value: 'pg-1', lease: a.currentLeaseId() });
      const m = await h.raw(key('members/pg-1'));
      expect(m?.value).toBe(
        '{"conn_url":"postgres://127.0.0.1:5432/postgres","api_url":"http://127.0.0.1:8008/ha","state":"running",' +
          '"role":"primary","version":"0.1.0","xlog_location":12345678,"tags":{"nofailover":false}}',
      );
      expect(m?.lease).toBe(a.currentLeaseId());
      expect((await h.raw(key('status')))?.value).toBe('{"optime":67108864}');
      expect(await h.raw(key('config'))).toEqual({ value: '{"ttl":30,"loop_wait":10,"database":{"use_slots":true}}', lease: '0' });
      expect((await h.raw(key('failover')))?.value).toBe('{"leader":"pg-1","member":"pg-2"}');
      expect((await h.raw(key('sync')))?.value).toBe('{"leader":"pg-1","sync_standby":"pg-2"}');
      expect((await h.raw(key('history')))?.value).toBe('[[1,25165984,"no recovery target specified","2024-08-28T19:39:26+00:00","pg-1"]]');
      expect((await h.raw(key('failsafe')))?.value).toBe('{"pg-1":"http://127.0.0.1:8008/ha"}');

      const view = await a.refresh();
      expect(view.members).toEqual([{ name: 'pg-1', data }]);
      expect(view.leader?.name).toBe('pg-1');
      expect(view.status).toEqual({ optime: 67108864 });
      expect(view.config?.value).toEqual({ ttl: 30, loop_wait: 10, database: { use_slots: true } });
      expect(view.config?.revision).toMatch(/^\d+$/);
      expect(view.failover?.value).toEqual({ leader: 'pg-1', member: 'pg-2' });
      expect(view.sync?.value).toEqual({ leader: 'pg-1', sync_standby: 'pg-2' });
      expect(view.history).toEqual([[1, 25165984, 'no recovery target specified', '2024-08-28T19:39:26+00:00', 'pg-1']]);
      expect(view.failsafe).toEqual({ 'pg-1': 'http://127.0.0.1:8008/ha' });
    });

    it('leaves a value that does not parse out of the view without breaking it', async () => {
      setup();
      const a = await client('a');
      await a.touchMember(member());
      await h.rawPut(key('members/bad'), '{"conn_url": 5');
      await h.rawPut(key('members/worse'), '{"conn_url":"x"}');
      await h.rawPut(key('status'), 'not json');
      const view = await a.refresh();
      expect(view.members.map((m) => m.name)).toEqual(['a']);
      expect(view.status).toBeUndefined();
    });

    it('keeps the lock with updateLeader and refuses it to another member', async () => {
      setup();
      const a = await client('a');
      const b = await client('b');
      const won = await a.attemptToAcquireLeader();
      if (!won.acquired) throw new Error('a did not win');
      expect(won.createRevision).toBe((await a.refresh()).leader?.createRevision);
      const rev = (await h.raw(key('leader')))!;
      expect(await a.updateLeader(won.createRevision)).toBe(true);
      expect(await h.raw(key('leader'))).toEqual(rev); // renewed by keepalive, not by rewriting
      // After the caller's own keepalive (the HA cycle): the compare-and-set alone.
      await a.keepalive();
      expect(await a.updateLeader(won.createRevision, { keepalive: false })).toBe(true);
      expect(await h.raw(key('leader'))).toEqual(rev);
      expect(await b.updateLeader(won.createRevision)).toBe(false);
      expect(await b.updateLeader(won.createRevision, { keepalive: false })).toBe(false);
      expect(await b.attemptToAcquireLeader()).toEqual({ acquired: false, holder: 'a' });
      expect((await h.raw(key('leader')))?.value).toBe('a');
    });

    it('never re-creates the leader key in updateLeader: a released lock is won back only through the race', async () => {
      setup();
      const a = await client('a');
      const b = await client('b');
      const won = await a.attemptToAcquireLeader();
      if (!won.acquired) throw new Error('a did not win');
      expect(await a.deleteLeader(won.createRevision)).toBe(true);
      expect(await a.updateLeader(won.createRevision)).toBe(false);
      expect(await h.raw(key('leader'))).toBeUndefined();
      // Another member's key is not renewed, even when a stale holder names the old incarnation.
      const other = await b.attemptToAcquireLeader();
      if (!other.acquired) throw new Error('b did not win');
      expect(await a.updateLeader(won.createRevision)).toBe(false);
      expect(await b.updateLeader(other.createRevision)).toBe(true);
      expect(await h.raw(key('leader'))).toEqual({ value: 'b', lease: b.currentLeaseId() });
    });

    it('renews only the incarnation it created: a key deleted and created again under the same name is not renewed', async () => {
      setup();
      const a = await client('a');
      const first = await a.attemptToAcquireLeader();
      if (!first.acquired) throw new Error('a did not win');
      expect(await a.deleteLeader()).toBe(true);
      const second = await a.attemptToAcquireLeader();
      if (!second.acquired) throw new Error('a did not win again');
      expect(second.createRevision).not.toBe(first.createRevision);
      expect(await a.updateLeader(first.createRevision)).toBe(false);
      expect(await a.deleteLeader(first.createRevision)).toBe(false);
      expect(await a.updateLeader(second.createRevision)).toBe(true);
      expect(await a.deleteLeader(second.createRevision)).toBe(true);
    });

    it('takeLeader replaces the lock only while both the leader key and the sync key are as read (quorum failover)', async () => {
      setup();
      const a = await client('a');
      const b = await client('b');
      const won = await a.attemptToAcquireLeader();
      if (!won.acquired) throw new Error('a did not win');
      expect(await a.setSync({ leader: 'a', sync_standby: 'b', quorum: 1 }, '0')).toBe(true);
      const seen = await b.refresh();
      const leader = { name: 'a', revision: seen.leader!.revision };
      // A stale view of either key: nothing changes.
      expect(await b.takeLeader({ leader: { name: 'a', revision: '1' }, syncRevision: seen.sync!.revision })).toEqual({
        acquired: false,
        holder: 'a',
      });
      expect(await b.takeLeader({ leader, syncRevision: '1' })).toMatchObject({ acquired: false });
      expect(await b.takeLeader({ leader: { ...leader, name: 'b' }, syncRevision: seen.sync!.revision })).toMatchObject({
        acquired: false,
      });
      expect((await h.raw(key('leader')))?.value).toBe('a');
      // As read: b holds the key on its lease; a's renewal fails from then on, b renews it.
      const taken = await b.takeLeader({ leader, syncRevision: seen.sync!.revision });
      if (!taken.acquired) throw new Error('b did not take the lock');
      expect(await h.raw(key('leader'))).toEqual({ value: 'b', lease: b.currentLeaseId() });
      expect(await a.updateLeader(won.createRevision)).toBe(false);
      expect(await b.updateLeader(taken.createRevision)).toBe(true);
      // The sync key changed since the read (a member left the fence): refused.
      const again = await a.refresh();
      expect(await a.setSync({ leader: 'b', sync_standby: 'a', quorum: 1 }, again.sync!.revision)).toBe(true);
      expect(
        await a.takeLeader({ leader: { name: 'b', revision: again.leader!.revision }, syncRevision: again.sync!.revision }),
      ).toMatchObject({
        acquired: false,
        holder: 'b',
      });
    });

    it('setSyncUnderLeader writes the sync key only while the sync key and the leader key are as read (a member leaving a fence)', async () => {
      setup();
      const a = await client('a');
      const b = await client('b');
      await a.attemptToAcquireLeader();
      expect(await a.setSync({ leader: 'a', sync_standby: 'b', quorum: 1 }, '0')).toBe(true);
      const seen = await b.refresh();
      const leader = { name: 'a', revision: seen.leader!.revision };
      const left = { leader: 'a', sync_standby: 'b', quorum: 1 };
      expect(await b.setSyncUnderLeader(left, '1', leader)).toBe(false);
      expect(await b.setSyncUnderLeader(left, seen.sync!.revision, { name: 'a', revision: '1' })).toBe(false);
      expect(await b.setSyncUnderLeader(left, seen.sync!.revision, { ...leader, name: 'b' })).toBe(false);
      expect(await b.setSyncUnderLeader({ ...left, sync_standby: 'b,c' }, seen.sync!.revision, leader)).toBe(true);
      expect((await b.refresh()).sync?.value.sync_standby).toBe('b,c');
    });

    it('releases the lock with deleteLeader only for the holder', async () => {
      setup();
      const a = await client('a');
      const b = await client('b');
      expect(await a.deleteLeader()).toBe(false);
      await a.attemptToAcquireLeader();
      expect(await b.deleteLeader()).toBe(false);
      expect((await h.raw(key('leader')))?.value).toBe('a');
      expect(await a.deleteLeader()).toBe(true);
      expect(await h.raw(key('leader'))).toBeUndefined();
      expect(await b.attemptToAcquireLeader()).toMatchObject({ acquired: true });
    });

    it('revokes the lease on close: member and leader keys are gone at once', async () => {
      setup();
      const a = await client('a');
      const b = await client('b');
      await a.touchMember(member());
      await a.attemptToAcquireLeader();
      await a.setConfig({ ttl: 30 });
      await a.close();
      expect(await h.raw(key('leader'))).toBeUndefined();
      expect(await h.raw(key('members/a'))).toBeUndefined();
      expect(await h.raw(key('config'))).toBeDefined();
      const view = await b.refresh();
      expect(view.leader).toBeUndefined();
      expect(view.members).toEqual([]);
      await expect(a.refresh()).rejects.toBeInstanceOf(DcsError);
    });

    it('keeps the lease on close when asked: member and leader keys stay, and the next client of the member adopts the leader key', async () => {
      setup();
      const a = await client('a');
      await a.touchMember(member());
      const won = await a.attemptToAcquireLeader();
      expect(won.acquired).toBe(true);
      const createRevision = won.acquired ? won.createRevision : '';
      const lease = a.currentLeaseId();
      await a.close({ keepLease: true });
      expect(await h.raw(key('leader'))).toEqual({ value: 'a', lease });
      expect((await h.raw(key('members/a')))?.lease).toBe(lease);
      // The member's next agent (a new lease) takes the same incarnation onto its lease.
      const next = await client('a');
      expect(await next.updateLeader(createRevision)).toBe(true);
      expect(await h.raw(key('leader'))).toEqual({ value: 'a', lease: next.currentLeaseId() });
    });

    it('returns false on compare-and-set conflicts of config, failover and sync', async () => {
      setup();
      const a = await client('a');
      expect(await a.setConfig({ ttl: 30 }, '0')).toBe(true);
      expect(await a.setConfig({ ttl: 31 }, '0')).toBe(false);
      const rev = (await a.refresh()).config!.revision;
      expect(await a.setConfig({ ttl: 32 }, rev)).toBe(true);
      expect(await a.setConfig({ ttl: 33 }, rev)).toBe(false);
      expect((await a.refresh()).config?.value).toEqual({ ttl: 32 });
      expect(await a.setConfig({ ttl: 34 })).toBe(true);

      expect(await a.setFailover({ member: 'b' }, '0')).toBe(true);
      const frev = (await a.refresh()).failover!.revision;
      expect(await a.setFailover({}, '1')).toBe(false);
      expect(await a.setFailover({}, frev)).toBe(true);
      const cleared = await a.refresh();
      expect(cleared.failover?.value).toEqual({});
      expect((await h.raw(key('failover')))?.value).toBe('{}');

      expect(await a.setSync({ leader: 'a', sync_standby: null }, '0')).toBe(true);
      const srev = (await a.refresh()).sync!.revision;
      expect(await a.setSync(null, '1')).toBe(false);
      expect(await a.setSync(null, srev)).toBe(true);
      expect((await a.refresh()).sync).toBeUndefined();
    });

    it('updates the view by watch and emits events', async () => {
      setup();
      const a = await client('a');
      const b = await client('b');
      const rec = recorder(b);
      await a.touchMember(member());
      await rec.waitFor((e) => e.type === 'dcs.memberChanged' && e.name === 'a', 5000, 'memberChanged a');
      expect(b.view().members.map((m) => m.name)).toEqual(['a']);
      await a.attemptToAcquireLeader();
      await rec.waitFor((e) => e.type === 'dcs.leaderChanged' && e.leader === 'a', 5000, 'leaderChanged a');
      expect(b.view().leader?.name).toBe('a');
      await a.setConfig({ ttl: 30 });
      await a.setFailover({ member: 'b' });
      await a.setStatus({ optime: 1 });
      await a.setSync({ leader: 'a', sync_standby: 'b' });
      await a.setHistory([]);
      await a.initialize('', { create: true });
      for (const type of [
        'dcs.configChanged',
        'dcs.failoverChanged',
        'dcs.statusChanged',
        'dcs.syncChanged',
        'dcs.historyChanged',
        'dcs.initializeChanged',
      ]) {
        await rec.waitFor((e) => e.type === type, 5000, type);
      }
      expect(b.view().config?.value).toEqual({ ttl: 30 });
      expect(b.view().history).toEqual([]);
      await a.deleteLeader();
      await rec.waitFor((e) => e.type === 'dcs.leaderChanged' && e.leader === undefined, 5000, 'leaderChanged undefined');
      expect(b.view().leader).toBeUndefined();
      expect(b.lastSeenMs()).toBeGreaterThan(0);
    });

    it('loses leader and member keys when the lease is not kept alive, and tells watchers', async () => {
      setup();
      const ttl = h.shortTtlSeconds;
      const a = await client('a', ttl);
      const c = await client('c', ttl);
      const b = await client('b', 30);
      const rec = recorder(b);
      await a.touchMember(member());
      await c.touchMember(member());
      expect(await a.attemptToAcquireLeader()).toMatchObject({ acquired: true });
      await rec.waitFor((e) => e.type === 'dcs.leaderChanged' && e.leader === 'a', 5000, 'leader a');
      const keptAt = a.lastKeepaliveMs();
      // c keeps its lease alive (as each HA loop does); a is frozen.
      await h.passTime(ttl * 1000 + h.expiryGraceMs, () => c.keepalive());
      await rec.waitFor((e) => e.type === 'dcs.leaderChanged' && e.leader === undefined, 3000, 'leader expiry');
      await waitFor(() => !b.view().members.some((m) => m.name === 'a'), 3000, 'member a expired', 20);
      expect(b.view().leader).toBeUndefined();
      expect(b.view().members.map((m) => m.name)).toEqual(['c']);
      expect(await h.raw(key('leader'))).toBeUndefined();
      expect(a.lastKeepaliveMs()).toBe(keptAt);
      // The frozen member comes back: keepalive regrants, and it can race again.
      await a.keepalive();
      expect(a.lastKeepaliveMs()).toBeGreaterThan(keptAt);
      expect(await a.attemptToAcquireLeader()).toMatchObject({ acquired: true });
    });

    it('regrants the lease on setTtl and keeps the lock', async () => {
      setup();
      const a = await client('a', 30);
      await a.touchMember(member());
      const won = await a.attemptToAcquireLeader();
      if (!won.acquired) throw new Error('a did not win');
      const oldLease = a.currentLeaseId()!;
      expect(await h.leaseTtlSeconds(oldLease)).toBe(30);
      await a.setTtl(20);
      const newLease = a.currentLeaseId()!;
      expect(newLease).not.toBe(oldLease);
      expect(await h.leaseTtlSeconds(newLease)).toBe(20);
      expect((await h.raw(key('leader')))?.lease).toBe(oldLease);
      expect(await a.updateLeader(won.createRevision)).toBe(true);
      expect(await h.raw(key('leader'))).toEqual({ value: 'a', lease: newLease });
      expect((await a.refresh()).leader?.createRevision).toBe(won.createRevision);
      await a.touchMember(member());
      expect((await h.raw(key('members/a')))?.lease).toBe(newLease);
    });

    it('deletes the whole prefix with deleteCluster, and nothing outside it', async () => {
      setup();
      const a = await client('a');
      await a.touchMember(member());
      await a.attemptToAcquireLeader();
      await a.setConfig({ ttl: 30 });
      await a.initialize('123', { create: true });
      const outside = clusterPrefix(h.namespace, `${scope}-other`) + 'config';
      await h.rawPut(outside, '{}');
      await a.deleteCluster();
      expect(await a.refresh()).toEqual({ members: [] });
      for (const k of ['leader', 'members/a', 'config', 'initialize']) expect(await h.raw(key(k))).toBeUndefined();
      expect(await h.raw(outside)).toBeDefined();
    });

    it('serves a read-only client without a lease or a watch', async () => {
      setup();
      const a = await client('a');
      await a.setConfig({ ttl: 30 });
      const ro = await client('hactl', 30, { lease: false, watch: false });
      expect(ro.currentLeaseId()).toBeUndefined();
      expect(ro.view().config?.value).toEqual({ ttl: 30 });
      await a.setConfig({ ttl: 40 });
      expect((await ro.refresh()).config?.value).toEqual({ ttl: 40 });
    });
  });
}
