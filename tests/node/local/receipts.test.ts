/** ReceiptKeeper and the receipt stores (src/node/local/receipts.ts), with a PgControl that serves WAL records from a list. */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DiscardPlan, WalRecord } from '../../../src/domain/discarded.ts';
import {
  describe as describeReceipt,
  FileReceiptStore,
  MemoryReceiptStore,
  ReceiptKeeper,
  type ReceiptKeeperDeps,
  type ReceiptStore,
} from '../../../src/node/local/receipts.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const plan: DiscardPlan = {
  action: 'rewind',
  leader: 'n2',
  leaderTimeline: 2,
  reason: 'diverged from leader n2: local WAL (ends at 800) goes past the switch point (500) of timeline 1',
  ranges: [{ timeline: 1, fromLsn: 500n, toLsn: 800n }],
};

const records: WalRecord[] = [
  { rmgr: 'Heap', totalBytes: 59, xid: 900, lsn: 520n, description: 'INSERT off 1, blkref #0: rel 1663/5/16384 blk 0' },
  { rmgr: 'Transaction', totalBytes: 34, xid: 900, lsn: 600n, description: 'COMMIT 2026-11-27 03:09:44.000000 UTC' },
  { rmgr: 'Heap', totalBytes: 59, xid: 901, lsn: 700n, description: 'INSERT off 2, blkref #0: rel 1663/5/16384 blk 0' },
];

/** A PgControl whose readWalRange serves `records` in range (or fails), and records its calls. */
function fakePg(opts: { fail?: string; names?: Record<string, string> } = {}) {
  const calls: { timeline: number; from: bigint; to: bigint | undefined }[] = [];
  const pg = {
    async readWalRange(timeline: number, from: bigint, to: bigint | undefined, onRecord: (r: WalRecord) => void) {
      calls.push({ timeline, from, to });
      for (const r of records) {
        if (r.lsn >= from && (to === undefined || r.lsn < to)) {
          if (opts.fail && r.lsn >= 700n) throw new Error(opts.fail);
          onRecord(r);
        }
      }
    },
    ...(opts.names ? { relationNames: async () => opts.names! } : {}),
  } satisfies ReceiptKeeperDeps['pg'];
  return { pg, calls };
}

function keeper(store: ReceiptStore, pg: ReceiptKeeperDeps['pg']) {
  const notices: string[] = [];
  let changed = 0;
  const k = new ReceiptKeeper({
    name: 'n1',
    pg,
    store,
    now: () => Date.parse('2026-11-27T04:00:00Z'),
    notice: (type, text) => notices.push(`${type}: ${text}`),
    leaderUpstream: () => ({ host: '127.0.0.1', port: 5433, name: 'n2' }),
    changed: () => changed++,
  });
  return { k, notices, changes: () => changed };
}

describe('ReceiptKeeper', () => {
  it("decodes the plan's ranges, keeps the receipt, journals it and counts it", async () => {
    const store = new MemoryReceiptStore();
    const { pg, calls } = fakePg({ names: { '1663/5/16384': 'postgres.public.t' } });
    const { k, notices, changes } = keeper(store, pg);
    const r = await k.take(plan);
    expect(calls).toEqual([{ timeline: 1, from: 500n, to: 800n }]);
    expect(r?.transactions.map((t) => [t.xid, t.status])).toEqual([
      [900, 'committed'],
      [901, 'unfinished'],
    ]);
    expect(r?.relationNames).toEqual({ '1663/5/16384': 'postgres.public.t' });
    expect(store.receipts).toHaveLength(1);
    expect(k.summary()).toEqual({ receipts: 1, transactions: 2, committed: 1, lastAt: '2026-11-27T04:00:00.000Z', location: 'memory' });
    expect(notices).toEqual([
      expect.stringMatching(
        /^discarded: the rewind from n2 discards 300 bytes of WAL \(timeline 1 0\/1F4–0\/320\): 2 transactions, 1 committed, 0 aborted, 1 unfinished; receipt: memory #1$/,
      ),
    ]);
    expect(changes()).toBeGreaterThan(0);
  });

  it('does not take the same plan twice (a rewind tried again), nor an empty one', async () => {
    const store = new MemoryReceiptStore();
    const { k } = keeper(store, fakePg().pg);
    await k.take(plan);
    expect(await k.take(plan)).toBeUndefined();
    expect(await k.take({ ...plan, ranges: [] })).toBeUndefined();
    expect(store.receipts).toHaveLength(1);
    await k.take({ ...plan, leaderTimeline: 3 });
    expect(store.receipts).toHaveLength(2);
  });

  it('a WAL read that fails still gives a receipt of what was read, saying why', async () => {
    const store = new MemoryReceiptStore();
    const { k, notices } = keeper(store, fakePg({ fail: 'could not read WAL segment' }).pg);
    const r = await k.take(plan);
    expect(r?.error).toMatch(/^reading timeline 1 from 0\/1F4: could not read WAL segment/);
    expect(r?.transactions.map((t) => t.xid)).toEqual([900]);
    expect(notices[0]).toMatch(/read in part: reading timeline 1/);
  });

  it('a store that cannot write is reported, never thrown: the discard goes on', async () => {
    const broken: ReceiptStore = { location: '/nowhere', write: async () => Promise.reject(new Error('EACCES')), list: async () => [] };
    const { k, notices } = keeper(broken, fakePg().pg);
    await expect(k.take(plan)).resolves.toBeDefined();
    expect(notices[0]).toMatch(/^discarded\.unkept: could not keep the receipt/);
    expect(k.summary().receipts).toBe(0);
  });

  it('a new keeper over the same store counts what an earlier agent kept, and does not take its last plan again', async () => {
    const store = new MemoryReceiptStore();
    await keeper(store, fakePg().pg).k.take(plan);
    const { k } = keeper(store, fakePg().pg);
    await k.load();
    expect(k.summary()).toMatchObject({ receipts: 1, transactions: 2, committed: 1 });
    expect(await k.take(plan)).toBeUndefined();
  });
});

describe('FileReceiptStore', () => {
  it('writes one JSON file per receipt (0600, in a 0700 directory) and lists them back, oldest first', async () => {
    const base = mkdtempSync(join(tmpdir(), 'ha-receipts-'));
    dirs.push(base);
    const store = new FileReceiptStore(join(base, 'n1.discarded'));
    expect(await store.list()).toEqual([]);
    const { k } = keeper(store, fakePg().pg);
    await k.take(plan);
    await k.take({ ...plan, leaderTimeline: 3 });
    const files = readdirSync(store.location).sort();
    expect(files).toEqual(['2026-11-27T04-00-00-000Z-tl2.json', '2026-11-27T04-00-00-000Z-tl3.json']);
    expect(statSync(join(store.location, files[0]!)).mode & 0o777).toBe(0o600);
    expect(statSync(store.location).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(join(store.location, files[0]!), 'utf8'))).toMatchObject({
      member: 'n1',
      leaderTimeline: 2,
      counts: { committed: 1 },
    });
    expect((await store.list()).map((r) => r.leaderTimeline)).toEqual([2, 3]);
  });

  it('skips files that are not receipts', async () => {
    const base = mkdtempSync(join(tmpdir(), 'ha-receipts-'));
    dirs.push(base);
    const store = new FileReceiptStore(base);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(base, 'junk.json'), '{not json');
    writeFileSync(join(base, 'other.json'), '{"version": 2}');
    expect(await store.list()).toEqual([]);
  });
});

describe('describe', () => {
  it('an open range (WAL end unknown) is said as such', async () => {
    const { k } = keeper(new MemoryReceiptStore(), fakePg().pg);
    const r = await k.take({ ...plan, ranges: [{ timeline: 1, fromLsn: 500n }] });
    expect(describeReceipt(r!)).toMatch(/discards WAL \(timeline 1 0\/1F4–end\)/);
  });
});
