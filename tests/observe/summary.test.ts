import { describe, expect, it } from 'vitest';
import { createActor, setup as xsetup } from 'xstate';
import { jsonSafe } from '../../src/observe/summary.ts';
import { parseLimit, parseSince } from '../../src/observe/query.ts';

describe('jsonSafe', () => {
  it('turns bigint into text and drops functions and actor refs', () => {
    const child = createActor(xsetup({}).createMachine({})).start();
    const ctx = {
      lsn: 123n,
      fn: () => 1,
      ref: child,
      nested: { list: [1n, () => 2, 'x'] },
      when: new Date(0),
      err: new Error('boom'),
      u: undefined,
    };
    expect(jsonSafe(ctx)).toEqual({
      lsn: '123',
      nested: { list: ['1', null, 'x'] },
      when: '1970-01-01T00:00:00.000Z',
      err: { message: 'boom' },
    });
    child.stop();
  });

  it('cuts cycles and keeps Map/Set readable', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    expect(jsonSafe(a)).toEqual({ name: 'a', self: '[circular]' });
    expect(jsonSafe({ m: new Map([['k', 1n]]), s: new Set([1, 2]) })).toEqual({ m: { k: '1' }, s: [1, 2] });
    expect(jsonSafe(Number.NaN)).toBe('NaN');
    let deep: unknown = { leaf: 1 };
    for (let i = 0; i < 20; i++) deep = { deep };
    expect(JSON.stringify(jsonSafe(deep))).toContain('"…"');
  });
});

describe('query parameters', () => {
  it('parses limit (1..1000, default 100) and since (>= 0, default 0)', () => {
    expect(parseLimit(undefined)).toEqual({ ok: true, value: 100 });
    expect(parseLimit('')).toEqual({ ok: true, value: 100 });
    expect(parseLimit('1000')).toEqual({ ok: true, value: 1000 });
    expect(parseLimit('1001')).toEqual({ ok: false, error: 'limit must be an integer between 1 and 1000' });
    expect(parseSince('0')).toEqual({ ok: true, value: 0 });
    expect(parseSince('99999999999999999999')).toEqual({ ok: false, error: 'since must be an integer >= 0' });
    expect(parseSince('7', 'Last-Event-ID')).toEqual({ ok: true, value: 7 });
  });
});
