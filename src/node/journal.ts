/**
 * The node's journal: every event a machine receives and every transition it makes, appended as
 * JSON lines to a file beside the data directory, bounded in size (one rotated predecessor is
 * kept as `<file>.1`). Recent entries are also kept in memory for GET /events and its live stream.
 *
 * Replaying the `event` entries of one machine through `transition()` from its recorded input
 * rebuilds the same state (see replay.ts); for that, machines keep time as data and error payloads
 * are journaled as `{ message }`.
 */
import { appendFileSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** Term of the node when an entry was written: its timeline and the leader lock holder. */
export interface Term {
  timeline?: number;
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

/** Options of a journal. */
export interface JournalOptions {
  /** File path; undefined keeps the journal in memory only. */
  path?: string;
  /** Rotate when the file exceeds this many bytes. Default 8 MiB. */
  maxBytes?: number;
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

export class Journal {
  private seq = 0;
  private size = 0;
  private readonly recentEntries: JournalEntry[] = [];
  private readonly listeners = new Set<(e: JournalEntry) => void>();
  private readonly maxBytes: number;
  private readonly keep: number;
  private readonly now: () => number;

  constructor(private readonly opts: JournalOptions = {}) {
    this.maxBytes = opts.maxBytes ?? 8 * 1024 * 1024;
    this.keep = opts.keep ?? 2000;
    this.now = opts.now ?? Date.now;
    if (opts.path) {
      mkdirSync(dirname(opts.path), { recursive: true });
      this.size = existsSync(opts.path) ? statSync(opts.path).size : 0;
    }
  }

  /** Path of the file, if any. */
  get path(): string | undefined {
    return this.opts.path;
  }

  /** Appends an entry (synchronously, so the file order is the order of events). */
  append(entry: NewJournalEntry): JournalEntry {
    const full = { ...entry, seq: ++this.seq, time: new Date(this.now()).toISOString() } as JournalEntry;
    if (this.opts.path) {
      const line = JSON.stringify(full) + '\n';
      if (this.size + line.length > this.maxBytes && this.size > 0) {
        renameSync(this.opts.path, this.opts.path + '.1');
        this.size = 0;
      }
      appendFileSync(this.opts.path, line);
      this.size += Buffer.byteLength(line);
    }
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
