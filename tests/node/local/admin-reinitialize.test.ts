/**
 * AdminCommands.reinitialize (POST /reinitialize) against the real database machine's transitions:
 * a forced reinitialize in a state that has no transition for it (`starting`) is refused with the
 * reason, never answered "started" and dropped (found by bench/backup-bench.ts).
 */
import { databaseMachine } from '@ha/machines';
import { describe, expect, it } from 'vitest';
import { AdminCommands, type AdminDeps } from '../../../src/node/local/admin.ts';

/** AdminCommands on a replica whose database machine is in `value`; records what it sends. */
function adminAt(value: string) {
  const snapshot = databaseMachine.resolveState({
    value,
    context: {
      role: 'replica',
      startRole: 'replica',
      stopMode: 'fast',
      afterStop: { kind: 'none' },
      reason: '',
      sinceMs: 0,
      promoting: false,
      replicaMethod: 'basebackup',
    },
  });
  const sent: string[] = [];
  const reinitialized: string[] = [];
  const deps = {
    name: 'n2',
    dcs: { view: () => ({ members: [], leader: { name: 'n1', leaseId: '1', revision: '5', createRevision: '5' } }) },
    lock: { held: false },
    db: () => ({ getSnapshot: () => snapshot, send: (e: { type: string }) => sent.push(e.type) }),
    now: () => 1000,
    source: { reinitializeFrom: (_v: unknown, from: string) => reinitialized.push(from) },
    facts: { discardPlan: undefined },
  } as unknown as AdminDeps;
  return { admin: new AdminCommands(deps), sent, reinitialized };
}

describe('POST /reinitialize and the database machine', () => {
  it('a running replica: the reinitialize is sent', async () => {
    const { admin, sent, reinitialized } = adminAt('running');
    expect(await admin.reinitialize({ force: false, fromLeader: true })).toEqual({ ok: true });
    expect(sent).toEqual(['cmd.reinitialize']);
    expect(reinitialized).toEqual(['n1']);
  });

  it('forced while starting (no transition for it): refused with the reason, nothing sent or changed', async () => {
    const { admin, sent, reinitialized } = adminAt('starting');
    expect(await admin.reinitialize({ force: true, fromLeader: true })).toEqual({
      ok: false,
      reason: 'starting can not be interrupted by a reinitialize: try again when it ends',
    });
    expect(sent).toEqual([]);
    expect(reinitialized).toEqual([]);
  });

  it('not forced while busy: the busy answer, as before', async () => {
    const { admin, sent } = adminAt('starting');
    expect(await admin.reinitialize({ force: false, fromLeader: false })).toEqual({ ok: false, reason: 'starting already in progress' });
    expect(sent).toEqual([]);
  });
});
