import { describe, expect, it } from 'vitest';
import {
  parseRestartRequest,
  restartConditionsData,
  restartConditionsHold,
  serverVersionNum,
  type RestartNodeFacts,
} from '../../src/domain/restart-conditions.ts';

const NOW = Date.UTC(2026, 4, 1, 9, 0, 0);
const AT = Date.UTC(2026, 4, 1, 10, 0, 0);

describe('parseRestartRequest', () => {
  it.each([[undefined], [null], [{}]])('treats %j as an empty request', (body) => {
    expect(parseRestartRequest(body, NOW)).toEqual({ ok: true, value: {} });
  });

  it('reads every key', () => {
    const body = {
      restart_pending: true,
      role: 'replica',
      database_version: '15.18',
      timeout: '1min',
      schedule: '2026-05-01T12:00:00+02:00',
    };
    expect(parseRestartRequest(body, NOW)).toEqual({
      ok: true,
      value: {
        restartPending: true,
        role: 'replica',
        databaseVersion: 150018,
        databaseVersionText: '15.18',
        timeoutSeconds: 60,
        atMs: AT,
      },
    });
  });

  it.each([['primary'], ['standby_leader'], ['replica']])('accepts role %s', (role) => {
    expect(parseRestartRequest({ role }, NOW)).toEqual({ ok: true, value: { role } });
  });

  it.each([['master'], ['leader'], [''], [1], [null]])('rejects role %j', (role) => {
    expect(parseRestartRequest({ role }, NOW)).toEqual({
      ok: false,
      status: 400,
      message: 'database role should be either primary, standby_leader, or replica',
    });
  });

  it.each([
    [30, 30],
    [0.5, 0.5],
    ['30', 30],
    ['30s', 30],
    ['30 s', 30],
    ['1min', 60],
    ['2h', 7200],
    ['1d', 86_400],
    ['500ms', 0.5],
    ['1.5min', 90],
  ])('reads timeout %j as %d seconds', (timeout, seconds) => {
    expect(parseRestartRequest({ timeout }, NOW)).toEqual({ ok: true, value: { timeoutSeconds: seconds } });
  });

  it.each([[0], [-5], ['0s'], ['-5s'], ['5 weeks'], ['abc'], [''], [true], [null], [Number.POSITIVE_INFINITY]])(
    'rejects timeout %j',
    (timeout) => {
      expect(parseRestartRequest({ timeout }, NOW)).toEqual({
        ok: false,
        status: 400,
        message: 'Timeout should be a positive number of seconds',
      });
    },
  );

  it.each([['10'], ['a.b.c'], ['15.1.2.3'], ['15.'], [15.2], ['15.100']])('rejects database_version %j', (v) => {
    expect(parseRestartRequest({ database_version: v }, NOW)).toEqual({
      ok: false,
      status: 400,
      message: `Invalid database version format: X.Y or X.Y.Z is accepted: ${String(v)}`,
    });
  });

  it.each([['yes'], [1], [null]])('rejects restart_pending %j', (v) => {
    expect(parseRestartRequest({ restart_pending: v }, NOW)).toMatchObject({ ok: false, status: 400 });
  });

  it('rejects an unknown key naming it', () => {
    expect(parseRestartRequest({ postgres_version: '15.1' }, NOW)).toEqual({
      ok: false,
      status: 400,
      message: 'Unknown filter for the scheduled restart: postgres_version',
    });
  });

  it('reports the first failing key in body order', () => {
    expect(parseRestartRequest({ timeout: 0, role: 'x' }, NOW)).toMatchObject({
      message: 'Timeout should be a positive number of seconds',
    });
    expect(parseRestartRequest({ role: 'x', timeout: 0 }, NOW)).toMatchObject({
      message: 'database role should be either primary, standby_leader, or replica',
    });
  });

  it('answers the schedule errors with the word restart', () => {
    expect(parseRestartRequest({ schedule: '2026-05-01T10:00:00' }, NOW)).toEqual({
      ok: false,
      status: 400,
      message: 'Timezone information is mandatory for the scheduled restart',
    });
    expect(parseRestartRequest({ schedule: '2026-05-01T08:00:00Z' }, NOW)).toEqual({
      ok: false,
      status: 422,
      message: 'Cannot schedule restart in the past',
    });
    expect(parseRestartRequest({ schedule: 'soon' }, NOW)).toMatchObject({ ok: false, status: 422 });
  });

  it.each([['text'], [[1, 2]], [42]])('rejects the non-object body %j', (body) => {
    expect(parseRestartRequest(body, NOW)).toMatchObject({ ok: false, status: 400 });
  });
});

describe('serverVersionNum', () => {
  it.each([
    ['15.18', 150018],
    ['10.1', 100001],
    ['16.0', 160000],
    ['9.6.24', 90624],
    ['9.6', 90600],
    ['9.5.3', 90503],
    ['15.0.18', 150018],
  ])('%s → %d', (text, num) => {
    expect(serverVersionNum(text)).toBe(num);
  });
});

describe('restartConditionsHold', () => {
  const node: RestartNodeFacts = { role: 'replica', serverVersion: 150010, pendingRestart: false };
  const refused = { ok: false, reason: 'restart conditions are not satisfied' };

  it('holds with no conditions', () => {
    expect(restartConditionsHold({}, node)).toEqual({ ok: true });
  });

  it.each([
    ['role equal', { role: 'replica' as const }, true],
    ['role different', { role: 'primary' as const }, false],
    ['requested version greater', { databaseVersion: 150011 }, true],
    ['requested version equal', { databaseVersion: 150010 }, false],
    ['requested version lower', { databaseVersion: 140020 }, false],
    ['restart_pending false', { restartPending: false }, true],
    ['restart_pending true but nothing pending', { restartPending: true }, false],
    ['all hold but one', { role: 'replica' as const, databaseVersion: 160000, restartPending: true }, false],
  ])('%s → %s', (_label, req, ok) => {
    expect(restartConditionsHold(req, node)).toEqual(ok ? { ok: true } : refused);
  });

  it('restart_pending true holds when a restart is pending', () => {
    expect(restartConditionsHold({ restartPending: true }, { ...node, pendingRestart: true })).toEqual({ ok: true });
  });

  it('schedule and timeout are not conditions', () => {
    expect(restartConditionsHold({ atMs: AT, timeoutSeconds: 1 }, node)).toEqual({ ok: true });
  });
});

describe('restartConditionsData', () => {
  it('renders the conditions in the member-key shape, leaving absent ones out', () => {
    expect(restartConditionsData({ role: 'primary', databaseVersion: 150018, databaseVersionText: '15.18', timeoutSeconds: 30 })).toEqual({
      role: 'primary',
      database_version: '15.18',
      timeout: 30,
    });
    expect(restartConditionsData({ restartPending: false, atMs: AT })).toEqual({ restart_pending: false });
  });
});
