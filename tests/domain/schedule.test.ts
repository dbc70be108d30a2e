import { describe, expect, it } from 'vitest';
import { decideScheduled, formatScheduledAt, parseScheduledAt, UNPARSEABLE_SCHEDULE_MESSAGE } from '../../src/domain/schedule.ts';

const AT = Date.UTC(2026, 4, 1, 10, 0, 0); // 2026-05-01T10:00:00Z
const LOOP_WAIT_MS = 10_000;

describe('decideScheduled', () => {
  it.each([
    ['long before the instant', AT - 60_000, 'wait'],
    ['1 ms before the instant', AT - 1, 'wait'],
    ['at the instant', AT, 'runNow'],
    ['1 ms after the instant', AT + 1, 'runNow'],
    ['exactly 1.5 × loop_wait late', AT + 15_000, 'runNow'],
    ['1 ms more than 1.5 × loop_wait late', AT + 15_001, 'stale'],
    ['an hour late', AT + 3_600_000, 'stale'],
  ])('%s → %s', (_label, nowMs, kind) => {
    expect(decideScheduled(AT, nowMs, LOOP_WAIT_MS)).toEqual({ kind });
  });

  it('scales the stale edge with loop_wait (fractional 1.5 × 3 ms = 4.5 ms)', () => {
    expect(decideScheduled(AT, AT + 4, 3)).toEqual({ kind: 'runNow' });
    expect(decideScheduled(AT, AT + 5, 3)).toEqual({ kind: 'stale' });
  });
});

describe('parseScheduledAt', () => {
  const NOW = AT - 3_600_000; // one hour before the instant

  it.each([
    ['2026-05-01T10:00:00Z', AT],
    ['2026-05-01T10:00:00z', AT],
    ['2026-05-01t10:00:00Z', AT],
    ['2026-05-01T10:00Z', AT],
    ['2026-05-01 10:00:00Z', AT],
    ['2026-05-01T12:00:00+02:00', AT],
    ['2026-05-01T12:00:00+0200', AT],
    ['2026-05-01T08:30:00-01:30', AT],
    ['2026-05-01T10:00:00.250Z', AT + 250],
    ['2026-05-01T10:00:00.2509999+00:00', AT + 250],
    ['2026-05-01T10:00:00,5Z', AT + 500],
    ['  2026-05-01T10:00:00Z  ', AT],
    ['2028-02-29T00:00:00Z', Date.UTC(2028, 1, 29)],
  ])('reads %j as %d', (text, atMs) => {
    expect(parseScheduledAt(text, NOW)).toEqual({ ok: true, atMs });
  });

  it.each([
    ['2026-05-01T10:00:00', 400],
    ['2026-05-01 10:00', 400],
    ['2026-05-01', 400],
    ['2026-05-01T10:00:00+2', 422],
    ['2026-05-01T10:00:00 +02:00', 422],
    ['2026-05-01Z', 422],
    ['tomorrow at noon', 422],
    ['', 422],
    ['2026-13-01T10:00:00Z', 422],
    ['2026-02-29T10:00:00Z', 422],
    ['2026-04-31T10:00:00Z', 422],
    ['2026-05-01T24:00:00Z', 422],
    ['2026-05-01T10:60:00Z', 422],
    ['2026-05-01T10:00:60Z', 422],
    ['2026-05-01T10:00:00+24:00', 422],
    ['2026-05-01T10:00:00+02:60', 422],
    ['1777629600', 422],
  ])('rejects %j with %d', (text, status) => {
    const r = parseScheduledAt(text, NOW);
    expect(r).toMatchObject({ ok: false, status });
  });

  it('answers the exact reference messages for a switchover', () => {
    expect(parseScheduledAt('2026-05-01T10:00:00', NOW)).toEqual({
      ok: false,
      status: 400,
      message: 'Timezone information is mandatory for the scheduled switchover',
    });
    expect(parseScheduledAt('next week', NOW)).toEqual({
      ok: false,
      status: 422,
      message: 'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601',
    });
    expect(parseScheduledAt('2026-05-01T10:00:00Z', AT + 1)).toEqual({
      ok: false,
      status: 422,
      message: 'Cannot schedule switchover in the past',
    });
  });

  it('uses the word restart in the restart messages', () => {
    expect(parseScheduledAt('2026-05-01T10:00:00', NOW, 'restart')).toEqual({
      ok: false,
      status: 400,
      message: 'Timezone information is mandatory for the scheduled restart',
    });
    expect(parseScheduledAt('2026-05-01T10:00:00Z', AT + 1, 'restart')).toEqual({
      ok: false,
      status: 422,
      message: 'Cannot schedule restart in the past',
    });
  });

  it.each([
    ['1 ms in the past', AT + 1, false],
    ['exactly now', AT, true],
    ['1 ms in the future', AT - 1, true],
  ])('an instant %s is accepted: %s', (_label, nowMs, ok) => {
    expect(parseScheduledAt('2026-05-01T10:00:00Z', nowMs).ok).toBe(ok);
  });

  it('checks the offset before the past: a naive past timestamp answers 400', () => {
    expect(parseScheduledAt('2000-01-01T00:00:00', NOW)).toMatchObject({ status: 400 });
  });

  it.each([[42], [null], [undefined], [{ at: '2026-05-01T10:00:00Z' }]])('answers 422 unparseable for the non-string %j', (value) => {
    expect(parseScheduledAt(value, NOW)).toEqual({
      ok: false,
      status: 422,
      message: UNPARSEABLE_SCHEDULE_MESSAGE,
    });
  });
});

describe('formatScheduledAt', () => {
  it.each([
    [AT, '2026-05-01T10:00:00+00:00'],
    [AT + 250, '2026-05-01T10:00:00.250+00:00'],
  ])('renders %d as %s', (atMs, text) => {
    expect(formatScheduledAt(atMs)).toBe(text);
  });

  it('round-trips through parseScheduledAt', () => {
    expect(parseScheduledAt(formatScheduledAt(AT + 7), 0)).toEqual({ ok: true, atMs: AT + 7 });
  });

  it('throws RangeError for NaN', () => {
    expect(() => formatScheduledAt(Number.NaN)).toThrow(RangeError);
  });
});
