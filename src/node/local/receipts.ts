/**
 * Receipts of discarded transactions (docs/ha.md "Receipts"): right before a rewind or a re-clone
 * throws away WAL this member wrote past the point where the leader's history left its own, the
 * ReceiptKeeper decodes that WAL (PgControl.readWalRange: pg_waldump) into a receipt and keeps it
 * in a ReceiptStore: a directory beside the data directory (`<data_dir>/../<name>.discarded/`,
 * one JSON file per receipt) that a re-clone does not touch. The keeper is the one writer of the
 * receipts and of their summary (shown in /ha, /metrics, GET /discarded and `hactl discarded`).
 */
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildReceipt, ReceiptBuilder, type DiscardPlan, type Receipt } from '../../domain/discarded.ts';
import { formatLsn } from '../../domain/lsn.ts';
import type { PgControl, Upstream } from '../../postgres/types.ts';

/** Where receipts are kept. */
export interface ReceiptStore {
  /** Where the receipts are kept, for people (a directory, or `memory`). */
  readonly location: string;
  /** Keeps one receipt; resolves with where (a file path). Rejects when it cannot be written. */
  write(receipt: Receipt): Promise<string>;
  /** Every receipt kept, oldest first. Unreadable entries are skipped. */
  list(): Promise<Receipt[]>;
}

/**
 * Receipts as JSON files in one directory (created 0700 on the first write), named
 * `<ISO time>-tl<leader timeline>.json`; written to a temporary name and renamed, so a reader
 * never sees half a receipt.
 */
export class FileReceiptStore implements ReceiptStore {
  constructor(readonly location: string) {}

  async write(receipt: Receipt): Promise<string> {
    await mkdir(this.location, { recursive: true, mode: 0o700 });
    const base = `${receipt.at.replace(/[:.]/g, '-')}-tl${receipt.leaderTimeline}`;
    let name = `${base}.json`;
    const existing = new Set(await readdir(this.location).catch(() => [] as string[]));
    for (let n = 2; existing.has(name); n++) name = `${base}-${n}.json`;
    const file = join(this.location, name);
    await writeFile(`${file}.tmp`, `${JSON.stringify(receipt, null, 2)}\n`, { mode: 0o600 });
    await rename(`${file}.tmp`, file);
    return file;
  }

  async list(): Promise<Receipt[]> {
    let names: string[];
    try {
      names = (await readdir(this.location)).filter((n) => n.endsWith('.json')).sort();
    } catch {
      return [];
    }
    const out: Receipt[] = [];
    for (const n of names) {
      try {
        const r = JSON.parse(await readFile(join(this.location, n), 'utf8')) as Receipt;
        if (r && r.version === 1 && Array.isArray(r.ranges)) out.push(r);
      } catch {
        /* not a receipt */
      }
    }
    return out;
  }
}

/** Receipts in memory (the simulator, tests). */
export class MemoryReceiptStore implements ReceiptStore {
  readonly location = 'memory';
  readonly receipts: Receipt[] = [];
  async write(receipt: Receipt): Promise<string> {
    this.receipts.push(receipt);
    return `memory #${this.receipts.length}`;
  }
  async list(): Promise<Receipt[]> {
    return [...this.receipts];
  }
}

/** What /ha and /metrics show of the receipts kept. */
export interface ReceiptSummary {
  /** Receipts kept. */
  receipts: number;
  /** Transactions in them, and how many of those committed (on this member, never on the leader). */
  transactions: number;
  committed: number;
  /** When the last one was taken (ISO 8601). */
  lastAt?: string;
  /** Where they are kept. */
  location: string;
}

/** What the keeper needs of the node. */
export interface ReceiptKeeperDeps {
  name: string;
  pg: Pick<PgControl, 'readWalRange' | 'relationNames'>;
  store: ReceiptStore;
  now: () => number;
  /** Journals and logs one notice (`ha.<type>`). */
  notice: (type: string, text: string) => void;
  /** Where the leader's PostgreSQL is (relation names are resolved there), when known. */
  leaderUpstream: (leader: string) => Upstream | undefined;
  /** Told when the summary changed (the snapshot is rebuilt). */
  changed?: () => void;
}

/** Bound on resolving relation names on the leader (best effort), ms. */
const RELATION_NAMES_TIMEOUT_MS = 10_000;

/** Takes and keeps receipts; keeps their summary. */
export class ReceiptKeeper {
  private summaryValue: ReceiptSummary;
  private lastKey: string | undefined;
  private loaded: Promise<void> | undefined;

  constructor(private readonly deps: ReceiptKeeperDeps) {
    this.summaryValue = { receipts: 0, transactions: 0, committed: 0, location: deps.store.location };
  }

  /** Reads the receipts already kept (an agent restarted), once; later calls share it. */
  load(): Promise<void> {
    this.loaded ??= this.deps.store.list().then(
      (all) => {
        for (const r of all) this.count(r);
        const last = all[all.length - 1];
        if (last) this.lastKey = keyOf(last.leaderTimeline, last.ranges);
        this.deps.changed?.();
      },
      () => undefined,
    );
    return this.loaded;
  }

  /** The receipts kept so far. */
  summary(): ReceiptSummary {
    return this.summaryValue;
  }

  /** Every receipt kept, oldest first (GET /discarded). */
  list(): Promise<Receipt[]> {
    return this.deps.store.list();
  }

  /**
   * Decodes the WAL `plan` discards and keeps its receipt, before the rewind or re-clone runs. A
   * plan identical to the last receipt's (the same ranges against the same leader timeline: a
   * rewind tried again) is not taken twice. A WAL that cannot be read whole still gives a receipt
   * of what was read, with the error; a receipt that cannot be written is logged. Never rejects:
   * the discard goes on either way (the member must heal), and what it threw away is said.
   */
  async take(plan: DiscardPlan): Promise<Receipt | undefined> {
    await this.load();
    if (plan.ranges.length === 0) return undefined;
    const key = keyOf(
      plan.leaderTimeline,
      plan.ranges.map((r) => ({
        timeline: r.timeline,
        from: formatLsn(r.fromLsn),
        ...(r.toLsn !== undefined ? { to: formatLsn(r.toLsn) } : {}),
      })),
    );
    if (key === this.lastKey) return undefined;
    const { pg, notice, name } = this.deps;
    const builder = new ReceiptBuilder();
    let error: string | undefined;
    for (const r of plan.ranges) {
      try {
        await pg.readWalRange(r.timeline, r.fromLsn, r.toLsn, (rec) => builder.add(rec));
      } catch (e) {
        error = `reading timeline ${r.timeline} from ${formatLsn(r.fromLsn)}: ${String(e instanceof Error ? e.message : e).slice(0, 300)}`;
        break;
      }
    }
    const relationNames = await this.relationNames(plan.leader, builder);
    const receipt = buildReceipt(name, this.deps.now(), plan, builder, {
      ...(relationNames ? { relationNames } : {}),
      ...(error ? { error } : {}),
    });
    let where: string;
    try {
      where = await this.deps.store.write(receipt);
    } catch (e) {
      notice('discarded.unkept', `could not keep the receipt of the WAL the ${plan.action} discards: ${String(e)}; ${describe(receipt)}`);
      return receipt;
    }
    this.lastKey = key;
    this.count(receipt);
    notice('discarded', `${describe(receipt)}; receipt: ${where}`);
    this.deps.changed?.();
    return receipt;
  }

  private count(r: Receipt): void {
    const s = this.summaryValue;
    this.summaryValue = {
      receipts: s.receipts + 1,
      transactions: s.transactions + r.counts.transactions,
      committed: s.committed + r.counts.committed,
      lastAt: r.at,
      location: s.location,
    };
  }

  private async relationNames(leader: string, builder: ReceiptBuilder): Promise<Record<string, string> | undefined> {
    const { pg } = this.deps;
    const up = this.deps.leaderUpstream(leader);
    if (!pg.relationNames || !up) return undefined;
    const paths = [...new Set(builder.transactions().flatMap((t) => t.relations))];
    if (paths.length === 0) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), RELATION_NAMES_TIMEOUT_MS);
    });
    try {
      return await Promise.race([pg.relationNames(up, paths).catch(() => undefined), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function keyOf(leaderTimeline: number, ranges: readonly { timeline: number; from: string; to?: string }[]): string {
  return `${leaderTimeline}|${ranges.map((r) => `${r.timeline}:${r.from}-${r.to ?? 'end'}`).join(',')}`;
}

/** One sentence of a receipt for the log and the journal. */
export function describe(r: Receipt): string {
  const c = r.counts;
  const where = r.ranges.map((x) => `timeline ${x.timeline} ${x.from}–${x.to ?? 'end'}`).join(', ');
  const bytes = r.ranges.every((x) => x.bytes !== undefined) ? `${r.ranges.reduce((n, x) => n + (x.bytes ?? 0), 0)} bytes of WAL` : 'WAL';
  return (
    `the ${r.action} from ${r.leader} discards ${bytes} (${where}): ${c.transactions} transactions, ` +
    `${c.committed} committed, ${c.aborted} aborted, ${c.unfinished} unfinished${c.prepared ? `, ${c.prepared} prepared` : ''}${r.error ? ` (read in part: ${r.error})` : ''}`
  );
}
