/**
 * The one owner of "where do I clone and stream from" (src/node/replication/replication-source.ts):
 * each step the executor and the admin commands take leaves the stream in the state the agent
 * had with its four former fields (clone source, upstream, configured member, follows remote).
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { remoteKey, REMOTE_UPSTREAM_NAME, type StandbyClusterConfig } from '../../../src/domain/standby-cluster.ts';
import { ReplicationSource, upstreamOf } from '../../../src/node/replication/replication-source.ts';
import { member } from '../fixtures.ts';

const view: ClusterView = {
  leader: { name: 'a', leaseId: '1', revision: '1', createRevision: '1' },
  members: [
    member('a', { role: 'primary', conn_url: 'postgres://10.0.0.1:5432/postgres' }),
    member('b', { conn_url: 'postgres://10.0.0.2:5433/postgres' }),
  ],
};
const sc: StandbyClusterConfig = { host: 'remote.example', port: 6432 };
const A = { host: '10.0.0.1', port: 5432, name: 'a' };
const B = { host: '10.0.0.2', port: 5433, name: 'b' };
const REMOTE = { host: 'remote.example', port: 6432, name: REMOTE_UPSTREAM_NAME };

describe('ReplicationSource', () => {
  it('knows members by their conn_url; unknown members have no upstream', () => {
    expect(upstreamOf(view, 'b')).toEqual(B);
    expect(upstreamOf(view, 'zz')).toBeUndefined();
    expect(upstreamOf(view, undefined)).toBeUndefined();
  });

  it('starts pointing nowhere; a start as a replica of the leader points at it, a start without a leader nowhere', () => {
    const s = new ReplicationSource();
    expect(s.state).toEqual({ kind: 'none' });
    s.startAs(view, 'a', undefined);
    expect(s.state).toEqual({ kind: 'member', upstream: A, configuredFor: 'a' });
    s.startAs(view, undefined, undefined);
    expect(s.state).toEqual({ kind: 'none' });
  });

  it('a follow points at the new upstream first and counts as configured once written', () => {
    const s = new ReplicationSource();
    s.startAs(view, 'a', undefined);
    s.streamFrom(B);
    expect(s.upstream).toEqual(B);
    expect(s.configuredFor).toBe('a');
    s.configured('b');
    expect(s.configuredFor).toBe('b');
  });

  it('the standby leader streams from the remote until a promotion, a rewind or a stop', () => {
    const s = new ReplicationSource();
    s.startAs(view, undefined, sc);
    expect(s.state).toEqual({ kind: 'remote', upstream: REMOTE, configuredFor: remoteKey(sc) });
    expect(s.followsRemote).toBe(true);
    expect(s.pointsAtRemote(sc)).toBe(true);
    expect(s.pointsAtRemote({ ...sc, port: 7000 })).toBe(false);
    s.leaveRemote();
    expect(s.state).toEqual({ kind: 'member', upstream: REMOTE, configuredFor: remoteKey(sc) });
    s.stop();
    expect(s.state).toEqual({ kind: 'none' });
  });

  it('a standby cluster bootstrap clones the remote; a clone or re-clone copies from a member', () => {
    const s = new ReplicationSource();
    s.cloneFromRemote(sc);
    expect(s.cloneFrom).toEqual(REMOTE);
    expect(s.followsRemote).toBe(true);
    expect(s.cloneFromMember(view, 'b')).toEqual(B);
    expect(s.cloneFrom).toEqual(B);
    expect(s.cloneFromMember(view, 'zz')).toBeUndefined();
    expect(s.cloneFrom).toBeUndefined();
  });

  it('a rewind copies from and streams from the leader, and is no longer the standby leader even when the leader is unknown', () => {
    const s = new ReplicationSource();
    s.pointAtRemote(sc);
    expect(s.rewindFrom(view, 'zz')).toBeUndefined();
    expect(s.followsRemote).toBe(false);
    expect(s.rewindFrom(view, 'a')).toEqual(A);
    expect(s.cloneFrom).toEqual(A);
    expect(s.state).toEqual({ kind: 'member', upstream: A, configuredFor: 'a' });
  });

  it("an operator's re-clone copies from the member asked and streams from the leader", () => {
    const s = new ReplicationSource();
    s.reinitializeFrom(view, 'b', 'a');
    expect(s.cloneFrom).toEqual(B);
    expect(s.state).toEqual({ kind: 'member', upstream: A, configuredFor: 'a' });
  });

  it("says which methods the next clone runs: basebackup alone (reinitialize from-leader), a standby bootstrap's list, or the member's (docs/backups.md)", () => {
    const s = new ReplicationSource();
    expect(s.cloneBasebackupOnly).toBe(false);
    expect(s.cloneStandbyMethods).toBeUndefined();
    s.reinitializeFrom(view, 'a', 'a', true);
    expect(s.cloneBasebackupOnly).toBe(true);
    s.cloneFromMember(view, 'b');
    expect(s.cloneBasebackupOnly).toBe(false);
    s.cloneFromRemote(sc);
    expect(s.cloneBasebackupOnly).toBe(false);
    expect(s.cloneStandbyMethods).toEqual(['basebackup']);
    s.reinitializeFrom(view, 'b', 'a');
    expect(s.cloneBasebackupOnly).toBe(false);
    expect(s.cloneStandbyMethods).toBeUndefined();
  });

  it('a standby cluster fed by its archive alone: no clone source, its methods, no upstream; a clone without leader has no source', () => {
    const s = new ReplicationSource();
    s.cloneFromRemote({ port: 5432, restore_command: 'r', create_replica_methods: ['repo'] });
    expect(s.cloneFrom).toBeUndefined();
    expect(s.cloneStandbyMethods).toEqual(['repo']);
    expect(s.followsRemote).toBe(true);
    expect(s.upstream).toBeUndefined();
    s.cloneFromMember(view, 'b');
    s.cloneWithoutLeader();
    expect(s.cloneFrom).toBeUndefined();
    expect(s.cloneStandbyMethods).toBeUndefined();
    expect(s.cloneBasebackupOnly).toBe(false);
  });

  it('quorum failover: a fenced leader is never streamed from (start, follow) until unfenced; other members still are', () => {
    const s = new ReplicationSource();
    s.startAs(view, 'a', undefined);
    expect(s.upstream).toEqual(A);
    s.fence('a');
    expect(s.state).toEqual({ kind: 'none' });
    expect(s.fenced).toBe('a');
    s.startAs(view, 'a', undefined);
    expect(s.upstream).toBeUndefined();
    expect(s.configuredFor).toBeUndefined();
    s.streamFrom(A);
    expect(s.upstream).toBeUndefined();
    s.streamFrom(B);
    expect(s.upstream).toEqual(B);
    s.startAs(view, 'a', undefined);
    s.unfence();
    expect(s.fenced).toBeUndefined();
    expect(s.state).toEqual({ kind: 'none' });
    s.streamFrom(A);
    expect(s.upstream).toEqual(A);
  });

  it('a follow whose write ends after the stream was fenced and unfenced is not taken as configured', () => {
    const s = new ReplicationSource();
    s.fence('a');
    s.streamFrom(A); // blocked: no upstream
    s.unfence();
    s.configured('a'); // the follow's write ends now: it wrote no upstream
    expect(s.configuredFor).toBeUndefined();
    expect(s.state).toEqual({ kind: 'none' });
  });
});
