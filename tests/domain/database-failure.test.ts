import { describe, expect, it } from 'vitest';
import { failedAction, failureStands, failureText, type DatabaseSnap } from '../../src/domain/database-failure.ts';

const snap = (value: DatabaseSnap['value'], over: Partial<DatabaseSnap> = {}): DatabaseSnap => ({
  value,
  role: 'uninitialized',
  promoting: false,
  replicaMethod: 'basebackup',
  lastError: undefined,
  ...over,
});

describe('failedAction', () => {
  it.each([
    ['initdb', 'initdb_failed', 'initdb'],
    ['custom_bootstrap', 'custom_bootstrap_failed', 'custom bootstrap'],
    ['bootstrap_starting', 'start_failed', 'start after custom bootstrap'],
    ['starting', 'start_failed', 'start'],
    ['restarting', 'restart_failed', 'restart'],
    ['stopping', 'stop_failed', 'stop'],
    ['creating_replica', 'stopped', 'clone'],
  ] as const)('%s → %s: %s', (from, to, action) => {
    expect(failedAction(snap(from), snap(to, { lastError: 'boom' }))).toBe(action);
    // No error recorded: not a failure (a clone's success goes to starting, a stop's to stopped).
    expect(failedAction(snap(from), snap(to))).toBeUndefined();
  });

  it('a failed rewind is named pg_rewind; a failed promotion leaves the role replica', () => {
    expect(failedAction(snap('creating_replica', { replicaMethod: 'rewind' }), snap('stopped', { lastError: 'x' }))).toBe('pg_rewind');
    const promoting = snap('running', { role: 'replica', promoting: true });
    expect(failedAction(promoting, snap('running', { role: 'replica', lastError: 'pg_ctl promote failed' }))).toBe('promote');
    expect(failedAction(promoting, snap('running', { role: 'primary' }))).toBeUndefined();
  });

  it('other transitions are not failures', () => {
    expect(failedAction(snap('running', { lastError: 'old' }), snap('stopping', { lastError: 'old' }))).toBeUndefined();
    expect(failedAction(snap('stopped'), snap('initdb'))).toBeUndefined();
  });
});

describe('failureStands', () => {
  it('while the machine is in a failed state, stopped or running with the error still its last', () => {
    expect(failureStands(snap('initdb'), snap('initdb_failed', { lastError: 'x' }))).toBe(true);
    expect(failureStands(snap('initdb_failed'), snap('initdb', { lastError: 'x' }))).toBe(false);
    expect(failureStands(snap('starting'), snap('running'))).toBe(false);
    expect(failureStands(snap('stopping'), snap('stopped', { lastError: 'x' }))).toBe(false);
    expect(failureStands(snap('creating_replica'), snap('stopped', { lastError: 'x' }))).toBe(true);
  });
  it('text', () => expect(failureText('clone', 'no route')).toBe('clone failed: no route'));
});
