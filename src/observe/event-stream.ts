/**
 * GET /events/stream: the journal as Server-Sent Events. On connect, the entries after
 * `Last-Event-ID` (or `?since=`) are replayed oldest first; then every new entry is sent as
 * `event: journal`, `id: <seq>`, `data: <entry JSON>`. A comment line keeps idle connections
 * alive. The journal subscription ends when the client goes away.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Journal, JournalEntry } from '@ha/machines';

/** Options of {@link streamJournal}. */
export interface StreamJournalOptions {
  /** Replay entries with `seq` greater than this first (0: none unless `replayAll`). */
  sinceSeq?: number;
  /** Interval of the `: heartbeat` comment; default 15 000 ms. */
  heartbeatMs?: number;
  /** Upper bound of replayed entries (the journal keeps only recent entries anyway). */
  maxReplay?: number;
}

/** Marker queued by the heartbeat timer. */
const HEARTBEAT = { seq: -1 } as unknown as JournalEntry;

/** Answers `c` with a live SSE stream of `journal`. */
export function streamJournal(c: Context, journal: Journal, opts: StreamJournalOptions = {}): Response {
  const heartbeatMs = opts.heartbeatMs ?? 15_000;
  return streamSSE(c, async (stream) => {
    const queue: JournalEntry[] = [];
    let wake: (() => void) | undefined;
    const poke = (): void => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    // Subscribe before reading the backlog, so nothing appended in between is lost;
    // `lastSent` removes the overlap.
    const unsubscribe = journal.subscribe((e) => {
      queue.push(e);
      poke();
    });
    let closed = false;
    const close = (): void => {
      closed = true;
      poke();
    };
    stream.onAbort(close);
    const signal = c.req.raw.signal;
    if (signal.aborted) closed = true;
    else signal.addEventListener('abort', close, { once: true });
    const heartbeat = setInterval(() => {
      queue.push(HEARTBEAT);
      poke();
    }, heartbeatMs);

    try {
      let lastSent = opts.sinceSeq ?? 0;
      // A client that saw more entries than this journal holds talks to a restarted node
      // (sequence numbers start again at 1): send everything new.
      if (lastSent > (journal.recent(1)[0]?.seq ?? 0)) lastSent = 0;
      if (lastSent > 0) {
        const backlog = journal.recent(opts.maxReplay ?? 10_000, lastSent).reverse();
        queue.unshift(...backlog);
      }
      // Tell the browser how long to wait before reconnecting.
      await stream.write('retry: 2000\n\n');
      while (!closed && !stream.aborted) {
        const next = queue.shift();
        if (next === undefined) {
          await new Promise<void>((r) => (wake = r));
          continue;
        }
        if (next === HEARTBEAT) {
          await stream.write(': heartbeat\n\n');
          continue;
        }
        if (next.seq <= lastSent) continue;
        lastSent = next.seq;
        await stream.writeSSE({ event: 'journal', id: String(next.seq), data: JSON.stringify(next) });
      }
    } finally {
      clearInterval(heartbeat);
      unsubscribe();
      signal.removeEventListener('abort', close);
    }
  });
}
