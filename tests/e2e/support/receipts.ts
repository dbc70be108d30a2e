/**
 * Checking a member's receipts of discarded transactions (docs/ha.md "Receipts") against what the
 * test's clients recorded: every write a member acknowledged that the leader does not hold must be
 * listed as committed; nothing listed as committed may be on the leader; a committed transaction
 * the clients did not write may only be one that touched none of their tables (an autoanalyze,
 * say); in synchronous mode no acknowledged write may be listed at all.
 */
import type { Receipt } from '../../../src/domain/discarded.ts';
import type { TestCluster } from './cluster.ts';
import { PROBE_TABLE, WRITER_TABLE } from './writer.ts';

/** A member's receipts (GET /discarded). */
export async function receiptsOf(c: TestCluster, member: string): Promise<Receipt[]> {
  const r = await c.get(member, '/discarded');
  if (r.status !== 200) throw new Error(`GET /discarded on ${member}: ${r.status} ${r.body.slice(0, 200)}`);
  return r.json() as Receipt[];
}

/**
 * The `txid`s of the rows on `member` that `writer` wrote (the writer's `member` column, the
 * probe's `node` column). Transaction ids alone do not name a transaction across a fork: the new
 * leader goes on from the same counter as the old primary, so its own transactions take the ids
 * of the discarded ones. A row written through `writer` with that id does.
 */
export async function txidsOn(c: TestCluster, member: string, writer: string): Promise<Set<number>> {
  const sql = `select txid from ${WRITER_TABLE} where member = '${writer}' union all select txid from ${PROBE_TABLE} where node = '${writer}'`;
  const out = await c.psql(member, sql, 10_000);
  return new Set(
    out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number),
  );
}

/** `tablespace/database/relfilenode` of `tables` on `member`, as receipts name relations. */
export async function relationPaths(c: TestCluster, member: string, tables: string[] = [WRITER_TABLE, PROBE_TABLE]): Promise<Set<string>> {
  const out = await c.psql(
    member,
    `select coalesce(nullif(c.reltablespace, 0), 1663) || '/' || (select oid from pg_database where datname = current_database()) || '/' || pg_relation_filenode(c.oid) from pg_class c where c.oid in (${tables.map((t) => `'${t}'::regclass`).join(', ')})`,
    10_000,
  );
  return new Set(out.split('\n').filter((l) => l.trim() !== ''));
}

/** What the check needs. */
export interface ReceiptCheck {
  receipts: Receipt[];
  /** Transactions the clients saw the member acknowledge: xid → what it was (for messages). */
  acknowledgedOnMember: Map<number, string>;
  /** The txids of the rows written through the member that the leader holds (txidsOn). */
  onLeader: Set<number>;
  /** The relations of the clients' tables (relationPaths): an unknown committed transaction must not touch them. */
  clientRelations: Set<string>;
  /** Synchronous mode: the writes the clients saw acknowledged by the cluster; none may be in a receipt. */
  acknowledgedSync?: Set<number>;
  /**
   * Epoch ms when the member's PostgreSQL was killed: a client write committed in the last moment
   * before it (commit time within 2 s) may have lost its acknowledgement with the connection, so a
   * committed transaction nobody saw acknowledged is accepted there.
   */
  killedAtMs?: number;
}

/** The problems found (empty: the receipts are exact). */
export function receiptProblems(x: ReceiptCheck): string[] {
  const problems: string[] = [];
  const committed = new Map<number, { receipt: Receipt; relations: string[] }>();
  for (const r of x.receipts)
    for (const t of r.transactions) if (t.status === 'committed') committed.set(t.xid, { receipt: r, relations: t.relations });
  for (const [xid, what] of x.acknowledgedOnMember) {
    if (!x.onLeader.has(xid) && !committed.has(xid))
      problems.push(`${what} (xid ${xid}) was acknowledged, is not on the leader, and no receipt lists it`);
  }
  for (const [xid, c] of committed) {
    if (x.onLeader.has(xid)) problems.push(`the receipt of ${c.receipt.at} lists xid ${xid} as discarded, but the leader holds its row`);
    const t = c.receipt.transactions.find((y) => y.xid === xid);
    const inFlight = x.killedAtMs !== undefined && t?.at !== undefined && Math.abs(Date.parse(t.at) - x.killedAtMs) <= 2000;
    if (!x.acknowledgedOnMember.has(xid) && !inFlight && c.relations.some((rel) => x.clientRelations.has(rel))) {
      problems.push(
        `the receipt of ${c.receipt.at} lists xid ${xid}, which wrote the clients' tables (${c.relations.join(' ')}), but no client saw it acknowledged`,
      );
    }
    if (x.acknowledgedSync?.has(xid))
      problems.push(`synchronous mode: the receipt of ${c.receipt.at} lists xid ${xid}, which the cluster acknowledged`);
  }
  return problems;
}
