/**
 * The journal: every event a machine receives and every transition it makes, kept in memory for
 * GET /events and its live stream, and handed as JSON lines to an optional sink (the agent's is a
 * file beside the data directory with rotation: src/node/agent/journal-file.ts of the agent). No I/O
 * here, so the library stays free of it.
 *
 * Replaying the `event` entries of one machine through `transition()` from its recorded input
 * rebuilds the same state (see replay.ts); for that, machines keep time as data and error payloads
 * are journaled as `{ message }`.
 */

/** Term of the node when an entry was written: its timeline and the leader lock holder. */
export interface Term {
  /** The node's timeline. */
  timeline?: number;
  /** Name of the leader lock holder. */
  leader?: string;
}

/** One journal line. `time` is ISO 8601 (UTC). */
export type JournalEntry =
  | { seq: number; time: string; machine: string; kind: 'start'; input: unknown }
  | { seq: number; time: string; machine: string; kind: 'event'; event: Record<string, unknown> }
  | {
      seq: number;
      time: string;
      machine: string;
      kind: 'transition';
      event: string;
      from: string;
      to: string;
      reason?: string;
      term?: Term;
    };

/** Distributes Omit over the union. */
export type NewJournalEntry = JournalEntry extends infer E ? (E extends JournalEntry ? Omit<E, 'seq' | 'time'> : never) : never;

/**
 * Where journal lines go besides memory (one JSON line per entry, in order). The agent's file
 * with rotation is src/node/agent/journal-file.ts; this module does no I/O.
 */
export interface JournalSink {
  /** Appends one line (with its trailing newline), synchronously so the order is the order of events. */
  write(line: string): void;
  /** Path of the file behind it, if any. */
  readonly path?: string;
}

/** Options of a journal. */
export interface JournalOptions {
  /** Where lines go besides memory; undefined keeps the journal in memory only. */
  sink?: JournalSink;
  /** Entries kept in memory. Default 2000. */
  keep?: number;
  /** Clock, epoch ms. */
  now?: () => number;
}

/** Makes a value JSON-safe: bigint → string, Error → { message }. */
export function toJournalValue(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Error) return { message: v.message };
  if (Array.isArray(v)) return v.map(toJournalValue);
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (typeof x !== 'function') out[k] = toJournalValue(x);
    return out;
  }
  return v;
}

/**
 * The journal of one node (or one embedding): numbered entries kept in memory (the last `keep`),
 * each also handed to the sink as a JSON line when there is one, and to every subscriber.
 * Synchronous throughout, so the order of entries is the order of events.
 */
export class Journal {
  private seq = 0;
  private readonly recentEntries: JournalEntry[] = [];
  private readonly listeners = new Set<(e: JournalEntry) => void>();
  private readonly keep: number;
  private readonly now: () => number;

  /** A journal in memory, with an optional sink; see {@link JournalOptions}. */
  constructor(private readonly opts: JournalOptions = {}) {
    this.keep = opts.keep ?? 2000;
    this.now = opts.now ?? Date.now;
  }

  /** Path of the file, if any. */
  get path(): string | undefined {
    return this.opts.sink?.path;
  }

  /** Appends an entry (synchronously, so the file order is the order of events). */
  append(entry: NewJournalEntry): JournalEntry {
    const full = { ...entry, seq: ++this.seq, time: new Date(this.now()).toISOString() } as JournalEntry;
    this.opts.sink?.write(JSON.stringify(full) + '\n');
    this.recentEntries.push(full);
    if (this.recentEntries.length > this.keep) this.recentEntries.splice(0, this.recentEntries.length - this.keep);
    for (const l of this.listeners) l(full);
    return full;
  }

  /** Recent entries, most recent first; `sinceSeq` excludes entries up to that sequence number. */
  recent(limit = 100, sinceSeq = 0): JournalEntry[] {
    const out: JournalEntry[] = [];
    for (let i = this.recentEntries.length - 1; i >= 0 && out.length < limit; i--) {
      const e = this.recentEntries[i]!;
      if (e.seq <= sinceSeq) break;
      out.push(e);
    }
    return out;
  }

  /** Subscribes to new entries; returns the unsubscribe function. */
  subscribe(listener: (e: JournalEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
