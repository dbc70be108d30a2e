import { afterEach, describe, expect, it } from 'vitest';
import type { JournalEntry } from '@ha/machines';
import { fixture } from './fixture.ts';

let current: ReturnType<typeof fixture> | undefined;
function setup() {
  current = fixture();
  return current;
}
afterEach(() => current?.stop());

async function events(f: ReturnType<typeof fixture>, query = ''): Promise<JournalEntry[]> {
  const res = await f.app.request(`/events${query}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: JournalEntry[] }).events;
}

describe('GET /events', () => {
  it('returns the journal, most recent first', async () => {
    const f = setup();
    f.restart.send({ type: 'restart.scheduled', request: { atMs: f.now() + 60_000 }, now: f.now() });
    const all = await events(f);
    // 3 starts, then the restart machine's event and transition.
    expect(all.map((e) => e.seq)).toEqual([5, 4, 3, 2, 1]);
    expect(all[0]).toMatchObject({ machine: 'restart', kind: 'transition', from: 'idle', to: 'scheduled', event: 'restart.scheduled' });
    expect(all[1]).toMatchObject({ machine: 'restart', kind: 'event' });
    expect(all[4]).toMatchObject({ machine: 'database', kind: 'start', time: '2026-05-01T10:00:00.000Z' });
  });

  it('filters with ?since= and bounds with ?limit=', async () => {
    const f = setup();
    f.restart.send({ type: 'restart.scheduled', request: { atMs: f.now() + 60_000 }, now: f.now() });
    expect((await events(f, '?since=3')).map((e) => e.seq)).toEqual([5, 4]);
    expect((await events(f, '?since=5')).map((e) => e.seq)).toEqual([]);
    expect((await events(f, '?limit=2')).map((e) => e.seq)).toEqual([5, 4]);
    expect((await events(f, '?since=1&limit=1')).map((e) => e.seq)).toEqual([5]);
    expect((await events(f, '?limit=1000')).length).toBe(5);
  });

  it('defaults to 100 entries', async () => {
    const f = setup();
    for (let i = 0; i < 70; i++) {
      f.switchover.send({ type: 'clock.tick', now: f.now() }); // journaled, no transition
      f.switchover.send({ type: 'config.loopWaitChanged', loopWaitMs: 10_000 + i });
    }
    const got = await events(f);
    expect(got).toHaveLength(100);
    expect(got[0]?.seq).toBe(143);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['since=x', 'since'],
    ['since=-3', 'since'],
  ])('answers 400 naming the parameter for ?%s', async (query, parameter) => {
    const f = setup();
    const res = await f.app.request(`/events?${query}`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; parameter: string };
    expect(body.parameter).toBe(parameter);
    expect(body.error).toMatch(new RegExp(`^${parameter} must be an integer`));
  });
});
