/**
 * `hactl discarded [CLUSTER] [MEMBER…]`: the receipts of transactions that rewinds and re-clones
 * threw away (docs/ha.md "Receipts"), read from each member's GET /discarded. One row per
 * receipt (pretty, tsv), or the receipts themselves (json, yaml); `--transactions` adds one row
 * per transaction of each receipt. A member that cannot be reached is reported by name and the
 * command exits 1 after the others were printed.
 */
import YAML from 'yaml';
import type { Receipt } from '../domain/discarded.ts';
import { CtlError } from './errors.ts';
import type { ListFormat } from './list.ts';
import { callMember, unreachableText } from './member-api.ts';
import { selectMembers } from './member-actions.ts';
import { readView, type Session } from './session.ts';
import { renderPretty, renderTsv, type Cell } from './table.ts';

const RECEIPT_COLUMNS = [
  'Member',
  'Taken',
  'Action',
  'Leader',
  'TL',
  'Discarded WAL',
  'Transactions',
  'Committed',
  'Aborted',
  'Unfinished',
];
const TX_COLUMNS = ['Member', 'Taken', 'XID', 'Status', 'At', 'Relations', 'First LSN', 'Last LSN', 'Records'];

/** Options of `discarded`. */
export interface DiscardedOptions {
  members: string[];
  format: ListFormat;
  /** One row per transaction instead of one per receipt. */
  transactions: boolean;
}

/** Parses a member's GET /discarded answer: an array of receipts. @throws Error when it is not one. */
export function parseReceipts(text: string): Receipt[] {
  const v = JSON.parse(text) as unknown;
  if (!Array.isArray(v)) throw new Error('GET /discarded did not answer a JSON array');
  return v as Receipt[];
}

function rangesText(r: Receipt): string {
  return r.ranges.map((x) => `tl ${x.timeline} ${x.from}-${x.to ?? 'end'}${x.bytes !== undefined ? ` (${x.bytes} B)` : ''}`).join(', ');
}

/** Rows of the receipt table. */
export function receiptRows(member: string, receipts: readonly Receipt[]): Cell[][] {
  return receipts.map((r) => [
    member,
    r.at,
    r.action,
    r.leader,
    r.leaderTimeline,
    rangesText(r),
    r.counts.transactions,
    r.counts.committed,
    r.counts.aborted,
    r.counts.unfinished,
  ]);
}

/** Rows of the transaction table: relation paths replaced by their names where the receipt resolved them. */
export function transactionRows(member: string, receipts: readonly Receipt[]): Cell[][] {
  const rows: Cell[][] = [];
  for (const r of receipts) {
    for (const t of r.transactions) {
      const rels = t.relations.map((p) => r.relationNames?.[p] ?? p).join(' ');
      rows.push([member, r.at, t.xid, t.status, t.at, rels, t.firstLsn, t.lastLsn, t.records]);
    }
  }
  return rows;
}

/** Runs `discarded`. @throws CtlError when a member could not be read (after printing the others). */
export async function runDiscarded(s: Session, o: DiscardedOptions): Promise<void> {
  const view = await readView(s);
  // `hactl discarded CLUSTER` (one word): the cluster's name, unless a member has it.
  const names = o.members.filter((n) => !(n === s.scope && !view.members.some((m) => m.name === n)));
  const members = selectMembers(view, s.scope, names);
  const all: { member: string; receipts: Receipt[] }[] = [];
  const failed: string[] = [];
  for (const m of members) {
    const r = await callMember(m, 'GET', '/discarded', undefined, 10_000);
    if (!r.reachable) {
      s.io.err(unreachableText(m, r.error));
      failed.push(m.name);
      continue;
    }
    if (r.status !== 200) {
      s.io.err(`member ${m.name}: GET /discarded answered ${r.status} (${r.text.slice(0, 200)})`);
      failed.push(m.name);
      continue;
    }
    try {
      all.push({ member: m.name, receipts: parseReceipts(r.text) });
    } catch (e) {
      s.io.err(`member ${m.name}: ${String(e instanceof Error ? e.message : e)}`);
      failed.push(m.name);
    }
  }
  const columns = o.transactions ? TX_COLUMNS : RECEIPT_COLUMNS;
  const rows = all.flatMap((x) => (o.transactions ? transactionRows(x.member, x.receipts) : receiptRows(x.member, x.receipts)));
  let lines: string[];
  if (o.format === 'pretty')
    lines = rows.length === 0 ? ['No receipts: no member discarded any transaction.'] : renderPretty(columns, rows);
  else if (o.format === 'tsv') lines = renderTsv(columns, rows);
  else {
    const objects = all.flatMap((x) => x.receipts);
    lines = o.format === 'json' ? [JSON.stringify(objects)] : objects.length === 0 ? ['[]'] : YAML.stringify(objects).trimEnd().split('\n');
  }
  for (const l of lines) s.io.out(l);
  if (failed.length > 0) throw new CtlError(`could not read the receipts of member${failed.length > 1 ? 's' : ''} ${failed.join(', ')}`);
}
