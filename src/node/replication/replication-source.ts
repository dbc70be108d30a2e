/**
 * Where this member clones and streams from: the one owner of the clone source (what the next
 * clone, re-clone or pg_rewind copies from) and of what primary_conninfo points at (docs/ha.md
 * "Following the leader", "Standby cluster"). The executor and the admin commands say what they
 * do (clone, rewind, start, follow, stop, point at the remote, reinitialize); this module alone
 * records where that leaves the member. Readers: the database machine's clone effect
 * (`cloneFrom`), the PostgreSQL configuration (`upstream`, `followsRemote`), the cycle
 * (`configuredFor`: whom the running replica was configured for) and the replica's slots.
 *
 * The stream side is a union (StreamSource). `configuredFor` trails `upstream` while a follow's
 * configuration write is under way (and after it failed), so the next cycle tries again. No I/O.
 */
import type { ClusterView } from '../../domain/cluster.ts';
import { memberHostPort } from '../../domain/member.ts';
import { remoteKey, remoteUpstream, standbyBootstrapMethods, type StandbyClusterConfig } from '../../domain/standby-cluster.ts';
import type { Upstream } from '../../postgres/types.ts';

/** Host, port and name of `member` from its key's conn_url; undefined when unknown. */
export function upstreamOf(view: ClusterView, member: string | undefined): Upstream | undefined {
  if (!member) return undefined;
  const m = view.members.find((x) => x.name === member);
  const hp = m ? memberHostPort(m.data.conn_url) : undefined;
  return hp ? { host: hp.host, port: hp.port, name: member } : undefined;
}

/**
 * What primary_conninfo points at. `upstream`: what the next configuration write points a
 * replica at; `configuredFor`: the member (or the remote's `remoteKey`) the configuration was
 * last completed for.
 */
export type StreamSource =
  /** Nowhere: a primary, a stopped or demoted member, a replica started without a leader. */
  | { kind: 'none' }
  /** A member of this cluster: the leader, or the `replicatefrom` member it cascades from. */
  | { kind: 'member'; upstream: Upstream | undefined; configuredFor: string | undefined }
  /**
   * The standby leader: the `standby_cluster` remote (its configuration is written from the
   * standby_cluster settings, whatever `upstream` says), until a start, rewind, promotion or stop.
   */
  | { kind: 'remote'; upstream: Upstream | undefined; configuredFor: string | undefined };

/**
 * Which methods the next clone runs: this member's create_replica_methods, pg_basebackup alone
 * (an operator's reinitialize `from-leader`), or a standby cluster's bootstrap list.
 */
type CloneMethods = { kind: 'member' } | { kind: 'basebackup' } | { kind: 'standby'; names: readonly string[] };

/** The one owner of the clone source and of what primary_conninfo points at. */
export class ReplicationSource {
  private stream: StreamSource = { kind: 'none' };
  private clone: Upstream | undefined;
  private methods: CloneMethods = { kind: 'member' };
  /** Quorum failover: the leader this member fenced; never streamed from while set. */
  private fencedFrom: string | undefined;

  /** Where the next clone, re-clone or pg_rewind copies from (the database machine's clone effect reads it). */
  get cloneFrom(): Upstream | undefined {
    return this.clone;
  }

  /**
   * The next clone runs pg_basebackup alone, not this member's create_replica_methods: an
   * operator's reinitialize `from-leader`. docs/backups.md "Replica creation".
   */
  get cloneBasebackupOnly(): boolean {
    return this.methods.kind === 'basebackup';
  }

  /**
   * The methods of a standby cluster's bootstrap (standby_cluster.create_replica_methods, default
   * basebackup), tried instead of this member's list; undefined for any other clone.
   */
  get cloneStandbyMethods(): readonly string[] | undefined {
    return this.methods.kind === 'standby' ? this.methods.names : undefined;
  }

  /** What primary_conninfo points at now. */
  get state(): StreamSource {
    return this.stream;
  }

  /** What the next configuration of a replica points at (undefined: nowhere). */
  get upstream(): Upstream | undefined {
    return this.stream.kind === 'none' ? undefined : this.stream.upstream;
  }

  /** The member (or the remote's key) the running replica was configured for; undefined: none yet. */
  get configuredFor(): string | undefined {
    return this.stream.kind === 'none' ? undefined : this.stream.configuredFor;
  }

  /** The database was started or pointed as the standby leader: it streams from the `standby_cluster` remote. */
  get followsRemote(): boolean {
    return this.stream.kind === 'remote';
  }

  /** True when already pointed at the remote of `sc` (followRemote has nothing to do). */
  pointsAtRemote(sc: StandbyClusterConfig): boolean {
    return this.stream.kind === 'remote' && this.stream.configuredFor === remoteKey(sc);
  }

  /** The next clone copies from `member` (a clone, or the leader for a re-clone); returns its upstream, undefined when `view` does not know it. */
  cloneFromMember(view: ClusterView, member: string | undefined): Upstream | undefined {
    this.cloneBy(upstreamOf(view, member), { kind: 'member' });
    return this.clone;
  }

  /**
   * The bootstrap winner of a standby cluster: clones the remote (basebackup from host:port, or
   * standby_cluster.create_replica_methods; no clone source without a host) and replicates from it.
   */
  cloneFromRemote(sc: StandbyClusterConfig): void {
    this.pointAtRemote(sc);
    this.cloneBy(this.upstream, { kind: 'standby', names: standbyBootstrapMethods(sc) });
  }

  /** A member with no data and no leader to copy from: only its `no_leader` methods can run (docs/backups.md "Replica creation"). */
  cloneWithoutLeader(): void {
    this.cloneBy(undefined, { kind: 'member' });
  }

  /**
   * pg_rewind from `leader`, then start as its replica: the clone source and the stream are the
   * leader's. No longer the standby leader either way; undefined (nothing else changed) when
   * `view` does not know the leader's address.
   */
  rewindFrom(view: ClusterView, leader: string): Upstream | undefined {
    this.leaveRemote();
    const up = upstreamOf(view, leader);
    if (!up) return undefined;
    this.cloneBy(up, { kind: 'member' });
    this.set('member', up, leader);
    return up;
  }

  /** A start: as a replica of `leader` (none: no upstream), or as the standby leader on the remote of `sc`. */
  startAs(view: ClusterView, leader: string | undefined, sc: StandbyClusterConfig | undefined): void {
    const up = leader ? upstreamOf(view, leader) : undefined;
    this.set('member', up, up?.name);
    if (sc) this.pointAtRemote(sc);
  }

  /**
   * The standby leader's remote, or what a standby cluster's bootstrap clones: `standby_cluster`
   * host and port (no upstream for a standby cluster fed by its archive alone).
   */
  pointAtRemote(sc: StandbyClusterConfig): void {
    this.stream = { kind: 'remote', upstream: remoteUpstream(sc), configuredFor: remoteKey(sc) };
  }

  /** A promotion: no longer the standby leader (the stream fields stay as they were). */
  leaveRemote(): void {
    if (this.stream.kind === 'remote') this.set('member', this.stream.upstream, this.stream.configuredFor);
  }

  /** A demotion or a stop: primary_conninfo points nowhere until the next start or follow. */
  stop(): void {
    this.stream = { kind: 'none' };
  }

  /** A follow begins: the next configuration write points at `up` (configuredFor follows once written). */
  streamFrom(up: Upstream): void {
    this.set(this.stream.kind === 'remote' ? 'remote' : 'member', up, this.configuredFor);
  }

  /** A follow's configuration was written for `member`. */
  configured(member: string): void {
    this.set(this.stream.kind === 'remote' ? 'remote' : 'member', this.upstream, member);
  }

  /**
   * An operator's re-clone (POST /reinitialize): copies from `from`, then streams from `leader`;
   * `basebackupOnly` (`from-leader`): by pg_basebackup alone.
   */
  reinitializeFrom(view: ClusterView, from: string, leader: string, basebackupOnly = false): void {
    this.cloneBy(upstreamOf(view, from), basebackupOnly ? { kind: 'basebackup' } : { kind: 'member' });
    this.set(this.stream.kind === 'remote' ? 'remote' : 'member', upstreamOf(view, leader), leader);
  }

  /**
   * Quorum failover (src/node/replication/quorum-fence.ts): this member fenced `leader`. The
   * stream points nowhere, and no later start or follow points it at that member until `unfence`.
   */
  fence(leader: string): void {
    this.fencedFrom = leader;
    this.stream = { kind: 'none' };
  }

  /** The fence was left (the leader answered again before it was complete): the leader may be followed again. */
  unfence(): void {
    this.fencedFrom = undefined;
    // A start or follow made while fenced recorded no upstream: the next follow writes one.
    if (this.stream.kind === 'member' && this.stream.upstream === undefined) this.stream = { kind: 'none' };
  }

  /** The leader this member fenced, or undefined. */
  get fenced(): string | undefined {
    return this.fencedFrom;
  }

  /** The next clone copies from `from` (undefined: no source) by `methods`. */
  private cloneBy(from: Upstream | undefined, methods: CloneMethods): void {
    this.clone = from;
    this.methods = methods;
  }

  /** Sets the stream; a member stream with neither an upstream nor a configured member is none. */
  private set(kind: 'member' | 'remote', upstream: Upstream | undefined, configuredFor: string | undefined): void {
    if (upstream !== undefined && upstream.name === this.fencedFrom) upstream = undefined;
    // A member stream without an upstream is configured for nobody: the next follow writes one
    // (a follow's write that ended after the stream was fenced and unfenced must not count).
    if (kind === 'member' && upstream === undefined) configuredFor = undefined;
    this.stream =
      kind === 'member' && upstream === undefined && configuredFor === undefined ? { kind: 'none' } : { kind, upstream, configuredFor };
  }
}
