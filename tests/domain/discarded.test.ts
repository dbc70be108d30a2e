/** The pure part of receipts (src/domain/discarded.ts): which WAL is discarded, and what its records say. */
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../src/domain/cluster.ts';
import {
  buildReceipt,
  discardedRanges,
  forkPoint,
  ReceiptBuilder,
  RECEIPT_MAX_TRANSACTIONS,
  walTimestamp,
  type WalRecord,
} from '../../src/domain/discarded.ts';

const rec = (lsn: bigint, xid: number, rmgr: string, description: string, totalBytes = 50): WalRecord => ({
  lsn,
  xid,
  rmgr,
  description,
  totalBytes,
});

describe('forkPoint and discardedRanges', () => {
  // The leader n2 promoted from timeline 1 at 500 to timeline 2.
  const history: HistoryEntry[] = [[1, 500, 'no recovery target specified', '2026-01-01T00:00:00Z', 'n2']];

  it('a former primary whose WAL on timeline 1 goes past the switch point: [500, end) of timeline 1', () => {
    const local = { timeline: 1, endLsn: 800n };
    expect(forkPoint(local, 2, history)).toBe(500n);
    expect(discardedRanges(local, 2, history)).toEqual([{ timeline: 1, fromLsn: 500n, toLsn: 800n }]);
  });

  it('a same-number fork seen by position (otherLineage): the whole local timeline 2 from its start', () => {
    const local = { timeline: 2, endLsn: 900n, history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }], otherLineage: true };
    expect(forkPoint(local, 2, history)).toBe(500n);
    expect(discardedRanges(local, 2, history)).toEqual([{ timeline: 2, fromLsn: 500n, toLsn: 900n }]);
    // Without the flag the same lineage is the leader's own: nothing.
    expect(discardedRanges({ ...local, otherLineage: false }, 2, history)).toEqual([]);
  });

  it('WAL that ends at or before the switch point discards nothing', () => {
    expect(forkPoint({ timeline: 1, endLsn: 500n }, 2, history)).toBeUndefined();
    expect(discardedRanges({ timeline: 1, endLsn: 400n }, 2, history)).toEqual([]);
  });

  it('the same timeline as the leader, its own lineage: nothing', () => {
    expect(discardedRanges({ timeline: 2, endLsn: 900n, history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }] }, 2, history)).toEqual(
      [],
    );
  });

  it('a timeline of its own (promoted from 1 at 450, the leader at 500): from 450, over both local timelines', () => {
    const local = { timeline: 2, endLsn: 700n, history: [{ timeline: 1, switchLsn: 450n, reason: 'x' }], promotedBy: 'n1' };
    expect(forkPoint(local, 2, history)).toBe(450n);
    expect(discardedRanges(local, 2, history)).toEqual([{ timeline: 2, fromLsn: 450n, toLsn: 700n }]);
  });

  it("a timeline of its own that forked after the leader's switch point: from the leader's switch point on timeline 1, then all of its own", () => {
    const local = { timeline: 2, endLsn: 900n, history: [{ timeline: 1, switchLsn: 600n, reason: 'x' }], promotedBy: 'n1' };
    expect(forkPoint(local, 3, [...history, [2, 950, 'x', '', 'n2']])).toBe(500n);
    expect(discardedRanges(local, 3, [...history, [2, 950, 'x', '', 'n2']])).toEqual([
      { timeline: 1, fromLsn: 500n, toLsn: 600n },
      { timeline: 2, fromLsn: 600n, toLsn: 900n },
    ]);
  });

  it("the leader's timeline number and switch point, made by another member's promotion (the marker): the whole local timeline", () => {
    const local = { timeline: 2, endLsn: 700n, history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }], promotedBy: 'n1' };
    expect(forkPoint(local, 2, history)).toBe(500n);
    expect(discardedRanges(local, 2, history)).toEqual([{ timeline: 2, fromLsn: 500n, toLsn: 700n }]);
  });

  it("a local timeline ahead of the leader's (it promoted from the leader's timeline at 900)", () => {
    const local = {
      timeline: 3,
      endLsn: 1200n,
      history: [
        { timeline: 1, switchLsn: 500n, reason: 'x' },
        { timeline: 2, switchLsn: 900n, reason: 'x' },
      ],
      promotedBy: 'n1',
    };
    expect(discardedRanges(local, 2, history)).toEqual([{ timeline: 3, fromLsn: 900n, toLsn: 1200n }]);
  });

  it('a leader that skipped a timeline number (local on 2 from 500, leader on 3 from 500): all of local timeline 2', () => {
    const leader: HistoryEntry[] = [[1, 500, 'x', '', 'n2']];
    const local = { timeline: 2, endLsn: 650n, history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }] };
    expect(discardedRanges(local, 3, leader)).toEqual([{ timeline: 2, fromLsn: 500n, toLsn: 650n }]);
  });

  it('an end that could not be read counts as past every point, and the last range stays open', () => {
    const local = { timeline: 1 };
    expect(discardedRanges(local, 2, history)).toEqual([{ timeline: 1, fromLsn: 500n }]);
  });
});

describe('ReceiptBuilder', () => {
  it('folds records into transactions: commit, abort, unfinished; relations and first/last LSN', () => {
    const b = new ReceiptBuilder();
    b.add(rec(100n, 0, 'XLOG', 'CHECKPOINT_ONLINE redo 0/64'));
    b.add(rec(200n, 731, 'Heap', 'INSERT off 1 flags 0x00, blkref #0: rel 1663/5/16384 blk 0'));
    b.add(rec(250n, 732, 'Heap', 'INSERT off 2 flags 0x00, blkref #0: rel 1663/5/16390 blk 3'));
    b.add(rec(300n, 731, 'Btree', 'INSERT_LEAF off 7, blkref #0: rel 1663/5/16387 blk 1'));
    b.add(rec(350n, 731, 'Transaction', 'COMMIT 2026-11-27 03:09:44.718084 UTC', 34));
    b.add(rec(400n, 732, 'Transaction', 'ABORT 2026-11-27 03:09:45.000001 UTC', 34));
    b.add(rec(450n, 733, 'Heap', 'HOT_UPDATE off 4 xmax 733, blkref #0: rel 1663/5/16384 blk 0'));
    expect(b.transactions()).toEqual([
      {
        xid: 731,
        status: 'committed',
        at: '2026-11-27T03:09:44.718Z',
        relations: ['1663/5/16384', '1663/5/16387'],
        firstLsn: '0/C8',
        lastLsn: '0/15E',
        records: 3,
      },
      {
        xid: 732,
        status: 'aborted',
        at: '2026-11-27T03:09:45.000Z',
        relations: ['1663/5/16390'],
        firstLsn: '0/FA',
        lastLsn: '0/190',
        records: 2,
      },
      { xid: 733, status: 'unfinished', relations: ['1663/5/16384'], firstLsn: '0/1C2', lastLsn: '0/1C2', records: 1 },
    ]);
    expect(b.counts()).toEqual({
      records: 7,
      transactions: 3,
      committed: 1,
      aborted: 1,
      prepared: 0,
      unfinished: 1,
      bytes: 50 * 5 + 34 * 2,
    });
  });

  it('folds subtransactions into the transaction whose commit lists them', () => {
    const b = new ReceiptBuilder();
    b.add(rec(100n, 740, 'Heap', 'INSERT off 1, blkref #0: rel 1663/5/16384 blk 0'));
    b.add(rec(150n, 741, 'Heap', 'INSERT off 2, blkref #0: rel 1663/5/16400 blk 0'));
    b.add(rec(200n, 740, 'Transaction', 'COMMIT 2026-11-27 03:09:44.000000 UTC; subxacts: 741 742'));
    b.add(rec(250n, 742, 'Heap', 'INSERT off 3, blkref #0: rel 1663/5/16401 blk 0'));
    const [t, ...rest] = b.transactions();
    expect(rest).toEqual([]);
    expect(t).toMatchObject({
      xid: 740,
      status: 'committed',
      subxacts: [741, 742],
      relations: ['1663/5/16384', '1663/5/16400', '1663/5/16401'],
      records: 4,
    });
    expect(b.counts().transactions).toBe(1);
  });

  it('PREPARE TRANSACTION is `prepared`', () => {
    const b = new ReceiptBuilder();
    b.add(rec(100n, 750, 'Heap', 'INSERT off 1, blkref #0: rel 1663/5/16384 blk 0'));
    b.add(rec(200n, 750, 'Transaction', 'PREPARE gid t1: 2026-11-27 03:09:44.000000 UTC'));
    expect(b.transactions()[0]!.status).toBe('prepared');
  });

  it(`stays bounded: past ${RECEIPT_MAX_TRANSACTIONS} transactions only the counts go on`, () => {
    const b = new ReceiptBuilder();
    const n = RECEIPT_MAX_TRANSACTIONS + 5;
    for (let i = 0; i < n; i++) {
      b.add(rec(BigInt(1000 + i * 100), 1000 + i, 'Heap', 'INSERT off 1, blkref #0: rel 1663/5/16384 blk 0'));
      b.add(rec(BigInt(1050 + i * 100), 1000 + i, 'Transaction', 'COMMIT 2026-11-27 03:09:44.000000 UTC'));
    }
    expect(b.truncated).toBe(true);
    expect(b.transactions()).toHaveLength(RECEIPT_MAX_TRANSACTIONS);
    expect(b.counts()).toMatchObject({ transactions: n, committed: n });
  });
});

describe('walTimestamp and buildReceipt', () => {
  it('UTC timestamps become ISO 8601 (milliseconds); others stay as printed', () => {
    expect(walTimestamp('2026-11-27 03:09:44.718084 UTC')).toBe('2026-11-27T03:09:44.718Z');
    expect(walTimestamp('2026-11-27 03:09:44 UTC')).toBe('2026-11-27T03:09:44.000Z');
    expect(walTimestamp('2026-11-27 04:09:44.718084 CET')).toBe('2026-11-27 04:09:44.718084 CET');
  });

  it('a receipt carries the plan, the ranges in X/Y with bytes, the counts and the transactions', () => {
    const b = new ReceiptBuilder();
    b.add(rec(0x3000100n, 800, 'Heap', 'INSERT off 1, blkref #0: rel 1663/5/16384 blk 0'));
    b.add(rec(0x3000140n, 800, 'Transaction', 'COMMIT 2026-11-27 03:09:44.000000 UTC', 34));
    const r = buildReceipt(
      'n1',
      Date.parse('2026-11-27T04:00:00Z'),
      {
        action: 'rewind',
        leader: 'n2',
        leaderTimeline: 2,
        reason: 'diverged from leader n2: x',
        ranges: [{ timeline: 1, fromLsn: 0x3000000n, toLsn: 0x3000200n }],
      },
      b,
      {
        relationNames: { '1663/5/16384': 'postgres.public.t' },
      },
    );
    expect(r).toMatchObject({
      version: 1,
      member: 'n1',
      at: '2026-11-27T04:00:00.000Z',
      action: 'rewind',
      leader: 'n2',
      leaderTimeline: 2,
      ranges: [{ timeline: 1, from: '0/3000000', to: '0/3000200', bytes: 0x200 }],
      counts: { transactions: 1, committed: 1 },
      relationNames: { '1663/5/16384': 'postgres.public.t' },
    });
    expect(r.transactions[0]).toMatchObject({ xid: 800, status: 'committed' });
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });
});
