/**
 * Receipts of discarded transactions (docs/ha.md "Receipts"): before a rewind or a re-clone throws
 * away the WAL a member wrote past the point where the leader's history left its own, the agent
 * decodes that WAL and keeps what it held. This module is the pure part: which WAL ranges are
 * discarded (from the local lineage and the leader's `history` key), and what a stream of WAL
 * records says about the transactions in them. Reading the WAL (pg_waldump) and keeping the
 * receipts are src/postgres/waldump.ts and src/node/local/receipts.ts.
 */
import type { HistoryEntry } from './cluster.ts';
import { formatLsn } from './lsn.ts';
import type { HistoryLine } from './timeline-history.ts';

/** One WAL record, as pg_waldump prints it (src/postgres/waldump.ts parseWaldumpLine). */
export interface WalRecord {
  /** Resource manager: `Heap`, `Transaction`, `XLOG`, `Btree`, … */
  rmgr: string;
  /** Total length of the record, bytes (pg_waldump's "tot"). */
  totalBytes: number;
  /** Transaction id (0: not part of a transaction). */
  xid: number;
  /** Start of the record, bytes. */
  lsn: bigint;
  /** pg_waldump's description, block references included (`INSERT off 3 …, blkref #0: rel 1663/5/16384 blk 0`). */
  description: string;
}

/** A piece of one timeline's WAL: [fromLsn, toLsn); no `toLsn`: to the end of the valid WAL. */
export interface WalRange {
  timeline: number;
  fromLsn: bigint;
  toLsn?: bigint;
}

/** The local lineage discardedRanges compares: the newest local timeline, where its WAL ends, and its history. */
export interface LocalLineage {
  timeline: number;
  /** End of the local WAL on `timeline`, bytes; undefined when it could not be read (then taken as past every point). */
  endLsn?: bigint;
  /** The history file of `timeline`: where each earlier timeline of this lineage ended. */
  history?: HistoryLine[];
  /** The member whose promotion made `timeline` here (the promotion marker), when known. */
  promotedBy?: string;
  /**
   * `timeline` here has the leader's number but was made by another promotion, as the divergence
   * check saw by position (WAL past the leader's own on that timeline: ha-cycle's sameNumberFork).
   */
  otherLineage?: boolean;
}

interface Piece {
  timeline: number;
  from: bigint;
  /** Exclusive end; undefined: open (the leader's current timeline). */
  to: bigint | undefined;
}

function localPieces(l: LocalLineage): Piece[] {
  const out: Piece[] = [];
  let from = 0n;
  for (const line of l.history ?? []) {
    out.push({ timeline: line.timeline, from, to: line.switchLsn });
    from = line.switchLsn;
  }
  out.push({ timeline: l.timeline, from, to: l.endLsn });
  return out;
}

function leaderPieces(history: HistoryEntry[], leaderTimeline: number): Piece[] {
  const out: Piece[] = [];
  let from = 0n;
  for (const e of history) {
    out.push({ timeline: e[0], from, to: BigInt(e[1]) });
    from = BigInt(e[1]);
  }
  out.push({ timeline: leaderTimeline, from, to: undefined });
  return out;
}

/**
 * Where the local lineage leaves the leader's (bytes), or undefined when the local WAL is a prefix
 * of the leader's history. Walks both lineages timeline by timeline (number and start must
 * match): the first timeline the leader does not have at that place, or the earlier of the two
 * ends of a shared timeline where they differ, is the fork. A local newest timeline with the
 * leader's number and start, made by another member's promotion (the marker, against the
 * `history` entry's new leader, or `otherLineage`: seen by position), forks where it starts.
 */
export function forkPoint(local: LocalLineage, leaderTimeline: number, history: HistoryEntry[]): bigint | undefined {
  const mine = localPieces(local);
  const theirs = leaderPieces(history, leaderTimeline);
  for (let k = 0; k < mine.length; k++) {
    const m = mine[k]!;
    const r = theirs[k];
    if (!r || r.timeline !== m.timeline || r.from !== m.from) return m.from;
    const last = k === mine.length - 1;
    if (last) {
      // An unknown end (m.to undefined) counts as past every point: the verdict said diverged.
      if (r.to !== undefined && (m.to === undefined || m.to > r.to)) return r.to;
      // Seen by position (finding 29): the whole local timeline past its start (its local
      // history's switch point, equal to the leader's here) is another promotion's.
      if (local.otherLineage && m.timeline > 1 && (m.to === undefined || m.to > m.from)) return m.from;
      if (m.timeline > 1 && local.promotedBy !== undefined) {
        const made = history.find((e) => e[0] === m.timeline - 1);
        if (made && made[4] !== undefined && made[4] !== local.promotedBy && (m.to === undefined || m.to > m.from)) return m.from;
      }
      return undefined;
    }
    if (r.to === undefined || m.to! < r.to) return m.to;
    if (m.to! > r.to) return r.to;
  }
  return undefined;
}

/**
 * The local WAL a rewind or re-clone discards: every piece of the local lineage past forkPoint(),
 * one range per local timeline (pg_waldump reads one timeline at a time). Empty when nothing
 * diverged.
 */
export function discardedRanges(local: LocalLineage, leaderTimeline: number, history: HistoryEntry[]): WalRange[] {
  const fork = forkPoint(local, leaderTimeline, history);
  if (fork === undefined) return [];
  const out: WalRange[] = [];
  for (const p of localPieces(local)) {
    const from = p.from > fork ? p.from : fork;
    if (p.to === undefined) out.push({ timeline: p.timeline, fromLsn: from });
    else if (p.to > from) out.push({ timeline: p.timeline, fromLsn: from, toLsn: p.to });
  }
  return out;
}

/** What became of a discarded transaction, as far as the discarded WAL shows. */
export type DiscardedStatus = 'committed' | 'aborted' | 'prepared' | 'unfinished';

/** One transaction whose WAL records lie in the discarded ranges. */
export interface DiscardedTransaction {
  /** Top-level transaction id (32 bits, as pg_waldump prints it). */
  xid: number;
  /**
   * `committed`: its commit record is in the discarded WAL (a commit that was durable on this
   * member and that the leader never received); `aborted`: rolled back; `prepared`: PREPARE
   * TRANSACTION; `unfinished`: neither (in progress when the WAL ended, never committed).
   */
  status: DiscardedStatus;
  /** The commit (or abort) time pg_waldump reads from the record, ISO 8601 when it is in UTC. */
  at?: string;
  /** Relations it wrote: `tablespace/database/relfilenode` (pg_waldump's `rel` references), sorted. */
  relations: string[];
  /** Its first and last record in the discarded WAL (X/Y), and how many records. */
  firstLsn: string;
  lastLsn: string;
  records: number;
  /** Subtransactions whose records were folded into this one (committed or aborted with it). */
  subxacts?: number[];
}

/** Counts of a receipt. */
export interface ReceiptCounts {
  records: number;
  transactions: number;
  committed: number;
  aborted: number;
  prepared: number;
  unfinished: number;
  bytes: number;
}

/** At most this many transactions are listed one by one in a receipt (the counts go on). */
export const RECEIPT_MAX_TRANSACTIONS = 20_000;

/** pg_waldump's commit/abort timestamp (`2026-11-27 03:09:44.718084 UTC`) as ISO 8601 when in UTC, else as printed. */
export function walTimestamp(text: string): string {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?) UTC$/.exec(text.trim());
  if (!m) return text.trim();
  const frac = m[2]!.includes('.') ? m[2]!.replace(/(\.\d{3})\d*$/, '$1') : `${m[2]}.000`;
  return `${m[1]}T${frac}Z`;
}

interface TxAcc {
  xid: number;
  status: DiscardedStatus;
  at?: string;
  relations: Set<string>;
  first: bigint;
  last: bigint;
  records: number;
  subxacts?: number[];
}

const REL_RE = /\brel (\d+)\/(\d+)\/(\d+)/g;
const END_RE = /^(COMMIT|ABORT|PREPARE)\b ?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [A-Z]+)?/;

/**
 * Folds WAL records (in LSN order, from the discarded ranges) into transactions: records with a
 * transaction id belong to it; a `Transaction` record's COMMIT/ABORT/PREPARE decides its status and
 * time, and its `subxacts:` list folds those subtransactions into it. Records of no transaction
 * (checkpoints, …) only count. Memory stays bounded: past RECEIPT_MAX_TRANSACTIONS distinct
 * transactions only the counts go on (`truncated`).
 */
export class ReceiptBuilder {
  private readonly txs = new Map<number, TxAcc>();
  private readonly folded = new Map<number, number>();
  private overflow = new Map<number, DiscardedStatus>();
  records = 0;
  bytes = 0;
  truncated = false;

  /** Adds one record. */
  add(r: WalRecord): void {
    this.records++;
    this.bytes += r.totalBytes;
    if (r.xid === 0) return;
    const xid = this.folded.get(r.xid) ?? r.xid;
    let t = this.txs.get(xid);
    if (!t) {
      if (this.txs.size >= RECEIPT_MAX_TRANSACTIONS) {
        this.truncated = true;
        this.overflowStatus(r, xid);
        return;
      }
      t = { xid, status: 'unfinished', relations: new Set(), first: r.lsn, last: r.lsn, records: 0 };
      this.txs.set(xid, t);
    }
    t.records++;
    t.last = r.lsn;
    for (const m of r.description.matchAll(REL_RE)) t.relations.add(`${m[1]}/${m[2]}/${m[3]}`);
    if (r.rmgr !== 'Transaction') return;
    const end = END_RE.exec(r.description);
    if (!end) return;
    t.status = end[1] === 'COMMIT' ? 'committed' : end[1] === 'ABORT' ? 'aborted' : 'prepared';
    if (end[2]) t.at = walTimestamp(end[2]);
    const sub = /subxacts:((?: \d+)+)/.exec(r.description);
    if (sub) {
      const ids = sub[1]!.trim().split(/\s+/).map(Number);
      for (const id of ids) {
        const s = this.txs.get(id);
        if (s && id !== xid) {
          for (const rel of s.relations) t.relations.add(rel);
          if (s.first < t.first) t.first = s.first;
          t.records += s.records;
          this.txs.delete(id);
        }
        this.folded.set(id, xid);
      }
      t.subxacts = ids;
    }
  }

  private overflowStatus(r: WalRecord, xid: number): void {
    if (!this.overflow.has(xid)) this.overflow.set(xid, 'unfinished');
    if (r.rmgr !== 'Transaction') return;
    const end = END_RE.exec(r.description);
    if (end) this.overflow.set(xid, end[1] === 'COMMIT' ? 'committed' : end[1] === 'ABORT' ? 'aborted' : 'prepared');
  }

  /** The transactions, in the order of their first record. */
  transactions(): DiscardedTransaction[] {
    return [...this.txs.values()]
      .sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0))
      .map((t) => ({
        xid: t.xid,
        status: t.status,
        ...(t.at !== undefined ? { at: t.at } : {}),
        relations: [...t.relations].sort(),
        firstLsn: formatLsn(t.first),
        lastLsn: formatLsn(t.last),
        records: t.records,
        ...(t.subxacts ? { subxacts: t.subxacts } : {}),
      }));
  }

  /** The counts (over every transaction, listed or not). */
  counts(): ReceiptCounts {
    const c = { records: this.records, transactions: 0, committed: 0, aborted: 0, prepared: 0, unfinished: 0, bytes: this.bytes };
    const statuses = [...[...this.txs.values()].map((t) => t.status), ...this.overflow.values()];
    for (const s of statuses) {
      c.transactions++;
      c[s]++;
    }
    return c;
  }
}

/** Why the WAL was discarded, and by what. */
export interface DiscardPlan {
  /** `rewind`: pg_rewind from the leader; `reinitialize`: the data directory wiped and copied again. */
  action: 'rewind' | 'reinitialize';
  leader: string;
  leaderTimeline: number;
  /** The divergence verdict's reason. */
  reason: string;
  ranges: WalRange[];
}

/** A receipt: what a rewind or re-clone of this member threw away (docs/ha.md "Receipts"). JSON-safe. */
export interface Receipt {
  /** Format version. */
  version: 1;
  member: string;
  /** ISO 8601: when the receipt was taken, right before the data was discarded. */
  at: string;
  action: DiscardPlan['action'];
  leader: string;
  leaderTimeline: number;
  reason: string;
  /** The discarded WAL, per timeline: X/Y bounds and bytes (`to` and `bytes` absent: to the end of the valid WAL, unknown). */
  ranges: { timeline: number; from: string; to?: string; bytes?: number }[];
  counts: ReceiptCounts;
  /** True when more transactions were found than are listed (RECEIPT_MAX_TRANSACTIONS). */
  truncated?: boolean;
  transactions: DiscardedTransaction[];
  /**
   * Names of the relations, resolved on the leader where it still has them
   * (`tablespace/database/relfilenode` → `database.schema.table`); best effort.
   */
  relationNames?: Record<string, string>;
  /** Set when the WAL could not be read whole: the receipt then lists what was read, and says why. */
  error?: string;
}

/** Builds the receipt of `plan` from what `builder` read. */
export function buildReceipt(
  member: string,
  atMs: number,
  plan: DiscardPlan,
  builder: ReceiptBuilder,
  extra: { relationNames?: Record<string, string>; error?: string } = {},
): Receipt {
  return {
    version: 1,
    member,
    at: new Date(atMs).toISOString(),
    action: plan.action,
    leader: plan.leader,
    leaderTimeline: plan.leaderTimeline,
    reason: plan.reason,
    ranges: plan.ranges.map((r) => ({
      timeline: r.timeline,
      from: formatLsn(r.fromLsn),
      ...(r.toLsn !== undefined ? { to: formatLsn(r.toLsn), bytes: Number(r.toLsn - r.fromLsn) } : {}),
    })),
    counts: builder.counts(),
    ...(builder.truncated ? { truncated: true } : {}),
    transactions: builder.transactions(),
    ...(extra.relationNames && Object.keys(extra.relationNames).length ? { relationNames: extra.relationNames } : {}),
    ...(extra.error ? { error: extra.error } : {}),
  };
}
