import { describe, expect, it } from 'vitest';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { appFor, config, NOW, streamingReplica } from './fixtures.ts';

const SC = { standby_cluster: { host: '10.1.0.1', port: 5432 } };

async function status(s: NodeSnapshot, path: string): Promise<number> {
  const { app } = appFor(s);
  return (await app.request(path)).status;
}

/** The standby leader: holds the lock, runs as a replica of the remote (role published standby_leader). */
const standbyLeader = (role: NodeSnapshot['role'] = 'standby_leader') =>
  streamingReplica({ name: 'pg-1', role, leaderUntilMs: NOW + 25_000, config: config(SC) });
/** A replica of the standby cluster, following the standby leader. */
const standbyReplica = () => streamingReplica({ config: config(SC) });

describe('health checks in a standby cluster (patroni.md §1.4)', () => {
  it.each([
    ['/standby-leader', 200, 503],
    ['/standby_leader', 200, 503],
    ['/leader', 200, 503],
    ['/primary', 503, 503],
    ['/', 503, 503],
    ['/read-write', 503, 503],
    ['/replica', 503, 200],
    ['/read-only', 200, 200],
    ['/health', 200, 200],
  ])('%s: standby leader %i, replica %i', async (path, leaderCode, replicaCode) => {
    expect(await status(standbyLeader(), path)).toBe(leaderCode);
    expect(await status(standbyReplica(), path)).toBe(replicaCode);
  });

  it('the lock holder answers as the standby leader from its database role too (replica), never as a replica', async () => {
    const s = standbyLeader('replica');
    expect(await status(s, '/standby-leader')).toBe(200);
    expect(await status(s, '/replica')).toBe(503);
    expect(await status(s, '/primary')).toBe(503);
  });

  it('a lock holder still running as primary while standby_cluster is set (demote-cluster under way): /primary 503', async () => {
    const s = standbyLeader('primary');
    expect(await status(s, '/primary')).toBe(503);
    expect(await status(s, '/standby-leader')).toBe(503);
    expect(await status(s, '/leader')).toBe(200);
  });
});
