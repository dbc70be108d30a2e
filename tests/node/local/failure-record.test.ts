import { describe, expect, it } from 'vitest';
import type { DatabaseSnap } from '../../../src/domain/database-failure.ts';
import { FailureRecord } from '../../../src/node/local/failure-record.ts';

const snap = (value: DatabaseSnap['value'], lastError?: string): DatabaseSnap => ({
  value,
  role: 'uninitialized',
  promoting: false,
  replicaMethod: 'basebackup',
  lastError,
});

describe('FailureRecord', () => {
  it('logs each failure at warn with its reason, every time, and keeps it until an attempt starts again', () => {
    const warnings: Array<[unknown, string]> = [];
    const r = new FailureRecord({ log: { warn: ((o: unknown, m: string) => warnings.push([o, m])) as never } });
    r.observe(snap('stopped'), 0);
    r.observe(snap('initdb'), 1);
    r.observe(snap('initdb_failed', 'could not create directory: Permission denied'), 2);
    expect(r.text).toBe('initdb failed: could not create directory: Permission denied');
    expect(r.bootstrapFailure).toBe(r.text);
    expect(r.last).toEqual({ action: 'initdb', reason: 'could not create directory: Permission denied', atMs: 2 });
    r.observe(snap('initdb', 'could not create directory: Permission denied'), 3);
    expect(r.last).toBeUndefined();
    r.observe(snap('initdb_failed', 'could not create directory: Permission denied'), 4);
    expect(warnings.map((w) => w[1])).toEqual([
      'initdb failed: could not create directory: Permission denied',
      'initdb failed: could not create directory: Permission denied',
    ]);
    expect(warnings[0]![0]).toEqual({ action: 'initdb', state: 'initdb_failed' });
  });

  it('a clone failure is no bootstrap failure; running again clears it', () => {
    const r = new FailureRecord({ log: { warn: () => undefined } });
    r.observe(snap('creating_replica'), 0);
    r.observe(snap('stopped', 'pg_basebackup: could not connect'), 1);
    expect(r.text).toBe('clone failed: pg_basebackup: could not connect');
    expect(r.bootstrapFailure).toBeUndefined();
    r.observe(snap('creating_replica', 'pg_basebackup: could not connect'), 2);
    r.observe(snap('starting'), 3);
    r.observe(snap('running'), 4);
    expect(r.text).toBeUndefined();
  });
});
