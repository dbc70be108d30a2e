import { afterEach, describe, expect, it, vi } from 'vitest';
import type { JournalEntry } from '@ha/machines';
import { fixture } from './fixture.ts';

let current: ReturnType<typeof fixture> | undefined;
function setup(opts: { heartbeatMs?: number } = {}) {
  current = fixture(opts);
  return current;
}
afterEach(() => current?.stop());

/** Reads an SSE body incrementally: `until(pred)` resolves with all text read once pred holds. */
function sseReader(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  return {
    async until(pred: (text: string) => boolean, timeoutMs = 3000): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      while (!pred(text)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`timed out; read so far:\n${text}`);
        const chunk = await Promise.race([
          reader.read(),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out; read so far:\n${text}`)), left)),
        ]);
        if (chunk.done) throw new Error(`stream ended; read so far:\n${text}`);
        text += decoder.decode(chunk.value, { stream: true });
      }
      return text;
    },
    cancel: () => reader.cancel(),
  };
}

/** The `journal` messages in SSE text, parsed. */
function journalMessages(text: string): { id: string; entry: JournalEntry }[] {
  const out: { id: string; entry: JournalEntry }[] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n');
    if (!lines.includes('event: journal')) continue;
    const id = lines.find((l) => l.startsWith('id: '))?.slice(4) ?? '';
    const data = lines
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6))
      .join('\n');
    out.push({ id, entry: JSON.parse(data) as JournalEntry });
  }
  return out;
}

/** Spies on the journal's subscriptions: how many are open. */
function watchSubscriptions(journal: ReturnType<typeof fixture>['journal']) {
  let open = 0;
  const original = journal.subscribe.bind(journal);
  vi.spyOn(journal, 'subscribe').mockImplementation((listener) => {
    open++;
    const off = original(listener);
    return () => {
      open--;
      return off();
    };
  });
  return { open: () => open };
}

describe('GET /events/stream', () => {
  it('delivers a newly appended journal entry, then unsubscribes when the client goes away', async () => {
    const f = setup();
    const subs = watchSubscriptions(f.journal);
    const res = await f.app.request('/events/stream');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const sse = sseReader(res);
    await sse.until((t) => t.includes('retry: '));
    expect(subs.open()).toBe(1);

    f.advance(1500);
    f.switchover.send({ type: 'switchover.requested', now: f.now() }); // runs at once: executing
    const text = await sse.until((t) => journalMessages(t).some((m) => m.entry.kind === 'transition'));
    const messages = journalMessages(text);
    expect(messages.map((m) => m.id)).toEqual(['4', '5']);
    expect(messages[1]?.entry).toEqual({
      machine: 'switchover',
      kind: 'transition',
      event: 'switchover.requested',
      from: 'idle',
      to: 'executing',
      seq: 5,
      time: '2026-05-01T10:00:01.500Z',
    });
    // Nothing from before the connection was replayed.
    expect(messages.some((m) => m.entry.kind === 'start')).toBe(false);

    await sse.cancel();
    await vi.waitFor(() => expect(subs.open()).toBe(0));
  });

  it('replays entries after Last-Event-ID first, oldest first', async () => {
    const f = setup();
    f.restart.send({ type: 'restart.scheduled', request: { atMs: f.now() }, now: f.now() }); // seq 4, 5
    const res = await f.app.request('/events/stream', { headers: { 'Last-Event-ID': '2' } });
    const sse = sseReader(res);
    const text = await sse.until((t) => journalMessages(t).length >= 3);
    expect(journalMessages(text).map((m) => [m.id, m.entry.machine, m.entry.kind])).toEqual([
      ['3', 'restart', 'start'],
      ['4', 'restart', 'event'],
      ['5', 'restart', 'transition'],
    ]);
    f.restart.send({ type: 'restart.succeeded', now: f.now() });
    const more = await sse.until((t) => journalMessages(t).length >= 5);
    expect(journalMessages(more).map((m) => m.id)).toEqual(['3', '4', '5', '6', '7']);
    await sse.cancel();
  });

  it('replays after ?since= too, and everything new when the id is beyond this journal (node restarted)', async () => {
    const f = setup();
    const res = await f.app.request('/events/stream?since=1');
    const sse = sseReader(res);
    const text = await sse.until((t) => journalMessages(t).length >= 2);
    expect(journalMessages(text).map((m) => m.id)).toEqual(['2', '3']);
    await sse.cancel();

    const later = sseReader(await f.app.request('/events/stream', { headers: { 'Last-Event-ID': '900' } }));
    await later.until((t) => t.includes('retry: '));
    f.switchover.send({ type: 'switchover.requested', now: f.now() });
    const got = await later.until((t) => journalMessages(t).length >= 2);
    expect(journalMessages(got).map((m) => m.id)).toEqual(['4', '5']);
    await later.cancel();
  });

  it('sends a heartbeat comment while idle', async () => {
    const f = setup({ heartbeatMs: 20 });
    const sse = sseReader(await f.app.request('/events/stream'));
    const text = await sse.until((t) => t.includes(': heartbeat\n\n'));
    expect(journalMessages(text)).toEqual([]);
    await sse.cancel();
  });

  it('answers 400 for a bad since or Last-Event-ID', async () => {
    const f = setup();
    const a = await f.app.request('/events/stream?since=abc');
    expect(a.status).toBe(400);
    expect(((await a.json()) as { parameter: string }).parameter).toBe('since');
    const b = await f.app.request('/events/stream', { headers: { 'Last-Event-ID': 'x' } });
    expect(b.status).toBe(400);
    expect(((await b.json()) as { parameter: string }).parameter).toBe('Last-Event-ID');
  });
});
