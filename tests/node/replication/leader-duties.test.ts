/**
 * LeaderDuties' slot round (src/node/replication/leader-duties.ts) over a real InMemoryDcs and a recording
 * PostgreSQL stand-in: the full slot listing is reused while nothing it was planned from moved
 * (issue 13), and taken again when the probe, the members, the slot settings or the time say so.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryDcs, InMemoryStore } from '../../../src/dcs/memory.ts';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import type { PgStatus } from '../../../src/domain/pg-status.ts';
import { LeaderDuties, type LeaderDutiesDeps } from '../../../src/node/replication/leader-duties.ts';
import { SLOT_LISTING_REUSE_MS } from '../../../src/node/replication/slot-listing.ts';
import type { SlotInfo } from '../../../src/postgres/types.ts';

const stores: InMemoryStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** Member data as an agent publishes it (version is required by the codec). */
const member = (role: 'primary' | 'replica', api_url: string, conn_url: string) => ({
  role,
  state: 'running' as const,
  api_url,
  conn_url,
  version: '4.0.0',
});

/** A primary's slots in memory; every call recorded. */
function fakePg() {
  const slots = new Map<string, SlotInfo>();
  const calls: string[] = [];
  const pg = {
    listSlots: async () => {
      calls.push('list');
      return [...slots.values()];
    },
    createPhysicalSlot: async (name: string) => {
      calls.push(`create ${name}`);
      slots.set(name, { name, type: 'physical', active: false, restartLsn: 0n });
    },
    createLogicalSlot: async (name: string, database: string, plugin: string) => {
      calls.push(`create ${name}`);
      slots.set(name, { name, type: 'logical', database, plugin, active: false, confirmedFlush: 100n });
    },
    dropSlot: async (name: string) => {
      calls.push(`drop ${name}`);
      slots.delete(name);
    },
    readTimelineHistory: async () => '',
    syncSlots: async () => undefined,
  } satisfies LeaderDutiesDeps['pg'];
  return { pg, slots, calls };
}

/** The probe of a primary that sees `slots`' physical slots. */
function probeOf(slots: Map<string, SlotInfo>): PgStatus {
  const physical: Record<string, bigint> = {};
  for (const s of slots.values()) if (s.type === 'physical') physical[s.name] = s.restartLsn ?? 0n;
  return {
    atMs: 0,
    inRecovery: false,
    serverVersion: 150000,
    postmasterStartTime: '2026-11-25 00:00:00+00',
    timeline: 1,
    flushLsn: 1000n,
    streaming: false,
    replication: [],
    pendingRestart: {},
    slots: physical,
  };
}

async function setup() {
  let t = 1_700_000_000_000;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  const store = new InMemoryStore({ now: clock.now, expiryCheckMs: 0 });
  stores.push(store);
  const client = async (name: string) => {
    const dcs = new InMemoryDcs({ store, namespace: 'service', scope: 'demo', name, ttlSeconds: 30, retryTimeoutMs: 1000, now: clock.now });
    await dcs.start({ watch: false });
    return dcs;
  };
  const a = await client('a');
  const b = await client('b');
  await a.attemptToAcquireLeader();
  await a.touchMember(member('primary', 'http://127.0.0.1:1/ha', 'postgres://127.0.0.1:1/postgres'));
  await b.touchMember(member('replica', 'http://127.0.0.1:2/ha', 'postgres://127.0.0.1:2/postgres'));
  const { pg, slots, calls } = fakePg();
  const duties = new LeaderDuties({ dcs: a, pg, name: 'a', log: pino({ level: 'silent' }), now: clock.now });
  const round = async (): Promise<ClusterView> => {
    const view = await a.refresh();
    await duties.run(view, probeOf(slots), true);
    return view;
  };
  return { clock, a, b, client, slots, calls, round };
}

describe('LeaderDuties: slot listing', () => {
  it('lists once, creates the member slot, then reuses a quiet listing until SLOT_LISTING_REUSE_MS has passed', async () => {
    const { clock, calls, round } = await setup();
    await round();
    expect(calls).toEqual(['list', 'create b']);
    await round(); // the creation is confirmed by a listing
    expect(calls.slice(2)).toEqual(['list']);
    calls.length = 0;
    for (let i = 0; i < 5; i++) {
      clock.advance(10_000);
      await round();
    }
    expect(calls).toEqual([]);
    clock.advance(SLOT_LISTING_REUSE_MS - 50_000);
    await round();
    expect(calls).toEqual(['list']);
  });

  it('lists again at once when the probe shows another set of physical slots (one dropped behind the agent)', async () => {
    const { slots, calls, round } = await setup();
    await round();
    await round();
    calls.length = 0;
    slots.delete('b');
    await round();
    expect(calls).toEqual(['list', 'create b']);
  });

  it('keeps listing while an unwanted slot is only kept because it is in use, and drops it once inactive', async () => {
    const { slots, calls, round } = await setup();
    await round();
    await round();
    // A slot of a member that now streams elsewhere (cascading), still in use for a moment.
    slots.set('gone', { name: 'gone', type: 'physical', active: true, restartLsn: 0n });
    await round(); // the probe shows a new physical slot: listed, left alone while active
    calls.length = 0;
    await round();
    expect(calls).toEqual(['list']); // not quiet: it waits on the slot going inactive
    slots.get('gone')!.active = false;
    await round();
    expect(calls).toEqual(['list', 'list', 'drop gone']);
  });

  it('lists again at once when a member joins', async () => {
    const { client, calls, round } = await setup();
    await round();
    await round();
    calls.length = 0;
    const c = await client('c');
    await c.touchMember(member('replica', 'http://127.0.0.1:3/ha', 'postgres://127.0.0.1:3/postgres'));
    await round();
    expect(calls).toEqual(['list', 'create c']);
  });

  it('lists every cycle while a permanent logical slot is configured (its confirmed position goes to the status key)', async () => {
    const { a, calls, round } = await setup();
    await a.setConfig({ slots: { cdc: { type: 'logical', database: 'postgres', plugin: 'pgoutput' } } });
    await round();
    await round();
    await round();
    expect(calls.filter((c) => c === 'list')).toHaveLength(3);
    expect((await a.refresh()).status?.slots?.['cdc']).toBe(100);
  });
});
