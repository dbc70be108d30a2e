/**
 * The executor's side of pg_rewind (docs/ha.md "Rewind"): the `rewind` action sends cmd.rewind with
 * the leader as source and upstream; the outcome reported by the clone actor is remembered with the
 * leader timeline the rewind was decided on (a failure), or forgets an earlier failure (success).
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import type { DatabaseEvent } from '@ha/machines';
import { Executor } from '../../../src/node/cycle/executor.ts';
import { NodeState } from '../../../src/node/node-core.ts';
import { RewindRecord } from '../../../src/node/local/rewind-record.ts';
import { databaseAt, executorDeps, member } from '../fixtures.ts';

function setup() {
  const sent: DatabaseEvent[] = [];
  const notices: string[] = [];
  const notice = (type: string, text: string) => void notices.push(`${type}: ${text}`);
  const rewinds = new RewindRecord({ notice });
  const deps = executorDeps({
    state: new NodeState({ config: withDefaults({ database: { use_db_rewind: true } }), tags: {}, localParameters: {} }),
    rewinds,
    now: () => 1_000,
    db: () => ({ ...databaseAt('stopped', 'replica'), send: (e: DatabaseEvent) => void sent.push(e) }),
    notice,
  });
  return { executor: new Executor(deps), rewinds, source: deps.source, sent, notices };
}

const view: ClusterView = {
  leader: { name: 'n2', leaseId: '1', revision: '1', createRevision: '1' },
  members: [member('n2', { conn_url: 'postgres://10.0.0.2:5433/postgres', role: 'primary' })],
};

describe('Executor: rewind', () => {
  it('sends cmd.rewind with the leader as source and upstream, and journals ha.rewind', async () => {
    const { executor, rewinds, source, sent, notices } = setup();
    await executor.execute({ kind: 'rewind', leader: 'n2', timeline: 2 }, view);
    expect(sent).toEqual([{ type: 'cmd.rewind', reason: 'running pg_rewind from n2', at: 1_000 }]);
    expect(source.cloneFrom).toEqual({ host: '10.0.0.2', port: 5433, name: 'n2' });
    expect(source.upstream).toEqual({ host: '10.0.0.2', port: 5433, name: 'n2' });
    expect(rewinds.rewinding).toEqual({ leader: 'n2', timeline: 2 });
    expect(notices[0]).toMatch(/^rewind: running pg_rewind from n2/);
  });

  it('a failure is remembered with the leader timeline; a later success forgets it', async () => {
    const { executor, rewinds, notices } = setup();
    await executor.execute({ kind: 'rewind', leader: 'n2', timeline: 2 }, view);
    rewinds.ended({ ok: false, from: 'n2', error: 'pg_rewind exited 1:\n could not connect', untouched: false });
    expect(rewinds.failure).toEqual({ leader: 'n2', timeline: 2, reason: 'pg_rewind exited 1: could not connect' });
    expect(rewinds.rewinding).toBeUndefined();
    expect(notices.at(-1)).toMatch(/^rewind\.failed: .*not retried against timeline 2 of n2/);
    await executor.execute({ kind: 'rewind', leader: 'n2', timeline: 3 }, view);
    rewinds.ended({ ok: true, from: 'n2' });
    expect(rewinds.failure).toBeUndefined();
    expect(notices.at(-1)).toMatch(/^rewind\.done: /);
  });

  it('a failure that left the data directory unchanged is not remembered: the start back-off spaces the next attempt', async () => {
    const { executor, rewinds, notices } = setup();
    await executor.execute({ kind: 'rewind', leader: 'n2', timeline: 2 }, view);
    rewinds.ended({ ok: false, from: 'n2', error: 'pg_rewind exited 1: could not connect to server', untouched: true });
    expect(rewinds.failure).toBeUndefined();
    expect(rewinds.rewinding).toBeUndefined();
    expect(notices.at(-1)).toMatch(/^rewind\.retry: pg_rewind from n2 did not start/);
  });
});
