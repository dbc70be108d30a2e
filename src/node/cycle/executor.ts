/**
 * Carries out the actions decideCycle chose, in order: commands to the database machine, the
 * leader lock, and the few DCS writes the cycle owns (bootstrap keys, the failover key, a ghost
 * leader key). The machine owns the postmaster: this module only sends it commands. Where the
 * member clones and streams from is the replication source's (replication-source.ts); the
 * executor says what it does. It writes NodeState.initializedByMe and NodeState.demoted.
 */
import type { Logger } from 'pino';
import type { Dcs } from '../../dcs/dcs.ts';
import type { ClusterView } from '../../domain/cluster.ts';
import { timingOf } from '../../domain/dynamic-config.ts';
import type { CycleAction } from '../../domain/ha-cycle.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import { remoteText, standbyClusterOf } from '../../domain/standby-cluster.ts';
import { syncStateOf } from '../../domain/sync-standby.ts';
import { slotMembers } from '../../domain/upstream.ts';
import { slotNameForMember } from '../../postgres/slots.ts';
import type { PgControl } from '../../postgres/types.ts';
import type { Fencing } from '../lock/fencing.ts';
import type { LeaderLock } from '../lock/leader-lock.ts';
import type { StopRelease } from '../lock/stop-release.ts';
import type { ConfigApplier } from '../local/config-apply.ts';
import type { RewindRecord } from '../local/rewind-record.ts';
import { walOf } from '../member/member-data.ts';
import type { DatabaseCommands, NodeDeps, NodeState, Notice } from '../node-core.ts';
import type { LeaderDuties } from '../replication/leader-duties.ts';
import type { ReplicaSlots } from '../replication/replica-slots.ts';
import { upstreamOf, type ReplicationSource } from '../replication/replication-source.ts';
import type { SyncManager } from '../replication/sync-manager.ts';
import type { HandoverRefusals } from './handover-refusal.ts';
import type { CycleTrackers } from './trackers.ts';

/** What the executor reads and calls (HaNode wires it). */
export interface ExecutorDeps extends Pick<NodeDeps, 'name' | 'bootstrapDcs' | 'customBootstrapCommand'> {
  dcs: Pick<Dcs, 'initialize' | 'cancelInitialize' | 'setConfig' | 'setHistory' | 'setFailover' | 'clearLeader' | 'setSync' | 'refresh'>;
  pg: Pick<PgControl, 'controlData' | 'query' | 'listSlots' | 'syncSlots'>;
  log: Pick<Logger, 'info' | 'warn'>;
  /** The node's facts: this module is the one writer of initializedByMe and demoted; the configuration it only reads. */
  state: Pick<NodeState, 'initializedByMe' | 'demoted'> & Readonly<Pick<NodeState, 'config'>>;
  lock: Pick<LeaderLock, 'acquire' | 'release' | 'take'>;
  fencing: Pick<Fencing, 'beforeAcquire' | 'afterAcquire'>;
  duties: Pick<LeaderDuties, 'historyWritten' | 'run'>;
  sync: Pick<SyncManager, 'keyBeforePromotion' | 'promoting' | 'run'>;
  source: ReplicationSource;
  rewinds: Pick<RewindRecord, 'started'>;
  trackers: Pick<CycleTrackers, 'noteSystemIdentifier'>;
  release: Pick<StopRelease, 'request'>;
  config: Pick<ConfigApplier, 'writeAndReload'>;
  /** Where a refused handover is recorded (this module is its one writer). */
  refusals: Pick<HandoverRefusals, 'record'>;
  /** A running replica's slots (permanent slots, cascading members), when the PgControl lists slots. */
  replicaSlots: Pick<ReplicaSlots, 'run'>;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseCommands;
  /** The latest probe while the database runs. */
  probe(): PgStatus | undefined;
  /** Epoch ms. */
  now(): number;
  notice: Notice;
  /** Tells observers that state, role or leadership changed. */
  emitChange(): void;
}

/** Carries out decideCycle's actions, one method per action kind. */
export class Executor {
  constructor(private readonly d: ExecutorDeps) {}

  /** Carries out one action against `view` (the view the decision was made on). DCS failures reject. */
  execute(a: CycleAction, view: ClusterView): Promise<void> {
    switch (a.kind) {
      case 'bootstrap':
        return this.bootstrap();
      case 'finishBootstrap':
        return this.finishBootstrap();
      case 'cancelBootstrap':
        return this.cancelBootstrap();
      case 'clone':
        return this.clone(view, a.from, 'cmd.clone', `cloning from ${a.from}`);
      case 'cloneWithoutLeader':
        return this.cloneWithoutLeader();
      case 'reinitialize':
        return this.clone(view, view.leader?.name, 'cmd.reinitialize', 'reinitializing from the leader');
      case 'rewind':
        return this.rewind(view, a.leader, a.timeline);
      case 'start':
        return this.start(view, a);
      case 'acquireLock':
        return this.acquireLock(view);
      case 'takeLeader':
        return this.takeLeader(view, a);
      case 'promote':
        return this.promote(view);
      case 'demote':
        return this.demote(a.mode, a.releaseLock);
      case 'releaseLock':
        return this.releaseLock();
      case 'stop':
        return this.stop(a.reason);
      case 'clearGhostLeader':
        return this.clearGhostLeader(view);
      case 'follow':
        return this.followLeader(view, a.upstream ?? a.leader);
      case 'followRemote':
        return this.followRemote();
      case 'leaderDuties':
        return this.leaderDuties(view);
      case 'clearFailover':
        if (a.refused !== undefined) this.d.refusals.record(a.refused, this.d.now());
        return this.clearFailover(view);
    }
  }

  /** Clears the failover key of `view` (compare-and-set on its revision, or on the invalid key's). */
  private async clearFailover(view: ClusterView): Promise<void> {
    await this.d.dcs.setFailover({}, view.failover?.revision ?? view.failoverInvalid?.revision);
  }

  /** The bootstrap race: initdb (or the custom bootstrap) for its winner; a standby cluster's winner clones the remote. */
  private async bootstrap(): Promise<void> {
    const { dcs, state: st, source } = this.d;
    const db = this.d.db();
    const at = this.d.now();
    const sc = standbyClusterOf(st.config);
    if (sc) {
      // A standby cluster is not initdb'ed: the race winner clones the remote (docs/ha.md "Standby cluster").
      if (!st.initializedByMe && !(await dcs.initialize('', { create: true }))) return;
      st.initializedByMe = true;
      source.cloneFromRemote(sc);
      db.send({ type: 'cmd.clone', reason: `won the bootstrap race of a standby cluster: cloning ${remoteText(sc)}`, at });
      return;
    }
    if (await dcs.initialize('', { create: true })) {
      st.initializedByMe = true;
      if (this.d.customBootstrapCommand) db.send({ type: 'cmd.customBootstrap', reason: 'won the bootstrap race', at });
      else db.send({ type: 'cmd.bootstrap', reason: 'won the bootstrap race', at });
    }
  }

  /**
   * The bootstrap this member won failed: the `initialize` key is given back while still empty
   * (compare-and-delete), so any member may win the race again once the cause is fixed. The
   * failed attempt left nothing of its own behind (the initdb effect removes what it made).
   */
  private async cancelBootstrap(): Promise<void> {
    const { dcs, log, state: st } = this.d;
    const given = await dcs.cancelInitialize();
    st.initializedByMe = false;
    log.warn(
      given
        ? 'removed the initialize key after the failed bootstrap: the race runs again after the start back-off'
        : 'the initialize key was not empty any more: not removed',
    );
    this.d.emitChange();
  }

  /** The bootstrap winner's database runs: the system identifier and the configuration in the DCS, then the lock. */
  private async finishBootstrap(): Promise<void> {
    const { dcs, pg, state: st } = this.d;
    const cd = await pg.controlData();
    this.d.trackers.noteSystemIdentifier(cd.systemIdentifier);
    await dcs.initialize(cd.systemIdentifier, { create: false });
    await dcs.setConfig(this.d.bootstrapDcs, '0');
    const r = await this.d.lock.acquire();
    if (r.acquired) {
      await dcs.setHistory([]);
      this.d.duties.historyWritten(1);
      st.initializedByMe = false;
    }
    this.d.emitChange();
  }

  /** A clone (`cmd.clone`) or re-clone (`cmd.reinitialize`) from `member`; nothing when its address is unknown. */
  private async clone(
    view: ClusterView,
    member: string | undefined,
    type: 'cmd.clone' | 'cmd.reinitialize',
    reason: string,
  ): Promise<void> {
    const db = this.d.db();
    const at = this.d.now();
    if (!this.d.source.cloneFromMember(view, member)) return;
    db.send({ type, reason, at });
  }

  /** No data and no leader: the clone runs this member's no_leader methods (no source). */
  private async cloneWithoutLeader(): Promise<void> {
    this.d.source.cloneWithoutLeader();
    this.d.db().send({ type: 'cmd.clone', reason: 'no leader: creating the replica by a no_leader method', at: this.d.now() });
  }

  /**
   * pg_rewind from the leader (creating_replica, clone actor with method 'rewind'), then start as
   * its replica: the start configures primary_conninfo for the source's upstream.
   */
  private async rewind(view: ClusterView, leader: string, timeline: number): Promise<void> {
    const db = this.d.db();
    const at = this.d.now();
    if (!this.d.source.rewindFrom(view, leader)) return;
    this.d.state.demoted = false;
    this.d.rewinds.started(leader, timeline);
    this.d.notice('rewind', `running pg_rewind from ${leader} (timeline ${timeline})`);
    db.send({ type: 'cmd.rewind', reason: `running pg_rewind from ${leader}`, at });
  }

  /** Starts the database as primary, as a replica of `a.leader`, or as the standby leader (`a.remote`). */
  private async start(view: ClusterView, a: Extract<CycleAction, { kind: 'start' }>): Promise<void> {
    const st = this.d.state;
    const db = this.d.db();
    const at = this.d.now();
    const sc = a.remote ? standbyClusterOf(st.config) : undefined;
    this.d.source.startAs(view, a.leader, sc);
    st.demoted = false;
    db.send({
      type: 'cmd.start',
      role: a.role,
      reason: a.role === 'primary' ? 'starting primary after failure' : 'starting as a secondary',
      at,
    });
  }

  /** The leader race: the lock, the fence (before the race in required mode), then the promotion (not in a standby cluster) and the failover key cleared. */
  private async acquireLock(view: ClusterView): Promise<void> {
    const { dcs, log, state: st } = this.d;
    const db = this.d.db();
    const at = this.d.now();
    // required: the fence is armed before the lock is taken, no fence, no race. automatic: the
    // won lock arms it, and it is armed before the promotion (patroni.md §3.12), so a member that
    // loses the race never arms and disarms it.
    if (!(await this.d.fencing.beforeAcquire())) return;
    const r = await this.d.lock.acquire();
    if (!r.acquired) {
      log.info({ holder: r.holder }, 'following new leader after trying and failing to obtain lock');
      return;
    }
    await this.d.fencing.afterAcquire();
    // In a standby cluster the winner stays a replica: the standby leader (next cycle: followRemote).
    if (db.getSnapshot().context.role !== 'primary' && !standbyClusterOf(st.config)) {
      if (!(await this.prepareSyncForPromotion(view))) return;
      db.send({ type: 'cmd.promote', reason: 'promoted self to leader by acquiring session lock', at });
    }
    if (view.failover && (view.failover.value.leader || view.failover.value.member)) await dcs.setFailover({}).catch(() => undefined);
    this.d.emitChange();
  }

  /**
   * Quorum failover (docs/ha.md "Quorum failover"): the fence of `a.leader` is complete and this
   * member has the furthest WAL: take the leader key (compare-and-set on it and on the `sync` key
   * as the decision read them), then promote as after a won race. A key or fence changed since:
   * nothing happens; the next cycle decides again.
   */
  private async takeLeader(view: ClusterView, a: Extract<CycleAction, { kind: 'takeLeader' }>): Promise<void> {
    const { log } = this.d;
    const db = this.d.db();
    const at = this.d.now();
    if (!(await this.d.fencing.beforeAcquire())) return;
    const taken = await this.d.lock.take({ leader: { name: a.leader, revision: a.leaderRevision }, syncRevision: a.syncRevision });
    if (!taken) {
      log.info({ leader: a.leader }, 'the leader key or the fence changed before the take: deciding again');
      return;
    }
    await this.d.fencing.afterAcquire();
    this.d.notice('quorum.take', `took the leader key from ${a.leader}, fenced by its synchronous standbys: promoting`);
    if (!(await this.prepareSyncForPromotion(view))) return;
    db.send({
      type: 'cmd.promote',
      reason: `promoted self to leader: ${a.leader} fenced by its synchronous standbys (quorum failover)`,
      at,
    });
    this.d.emitChange();
  }

  /** Promotes the running replica that holds the lock (after the sync key, in synchronous mode). */
  private async promote(view: ClusterView): Promise<void> {
    const db = this.d.db();
    const at = this.d.now();
    if (!(await this.prepareSyncForPromotion(view))) return;
    this.d.source.leaveRemote();
    db.send({ type: 'cmd.promote', reason: 'I hold the leader lock', at });
  }

  /**
   * A demotion: a switchover's (`graceful`) first runs CHECKPOINT while the primary still takes
   * writes (bounded): the shutdown checkpoint then has little left to write, so writes stop for
   * less time. Demotions forced by the DCS or the lock stop at once. Every demotion stops with a
   * shutdown checkpoint (fast), whatever its reason: backends are terminated at once either way,
   * and a clean stop records where the local WAL ends, so the divergence check before following
   * the new leader is exact (docs/ha.md).
   */
  private async demote(mode: Extract<CycleAction, { kind: 'demote' }>['mode'], releaseLock: boolean): Promise<void> {
    const db = this.d.db();
    const at = this.d.now();
    if (mode === 'graceful') await this.checkpointBeforeStop();
    this.d.release.request(releaseLock);
    this.d.state.demoted = true;
    this.d.source.stop();
    db.send({ type: 'cmd.demote', mode: 'fast', reason: `demoting (${mode})`, at });
  }

  /** Releases the leader lock. */
  private async releaseLock(): Promise<void> {
    await this.d.lock.release();
    this.d.emitChange();
  }

  /** Stops the local database (a replica whose WAL diverged). */
  private async stop(reason: string): Promise<void> {
    const db = this.d.db();
    const at = this.d.now();
    this.d.source.stop();
    db.send({ type: 'cmd.stop', mode: 'fast', reason, at });
  }

  /** Deletes the leader key of `view` (a ghost: no member key for longer than ttl) with a compare-and-set on its revision. */
  private async clearGhostLeader(view: ClusterView): Promise<void> {
    const key = view.leader;
    if (!key) return;
    const cleared = await this.d.dcs.clearLeader({ name: key.name, revision: key.revision });
    this.d.notice(
      'lock.ghostCleared',
      cleared
        ? `deleted the leader key naming '${key.name}', which had no member key`
        : `the leader key naming '${key.name}' changed before it could be deleted`,
    );
  }

  /** A running replica follows `upstream` (the leader or its `replicatefrom` member) and keeps its slots. */
  private async followLeader(view: ClusterView, upstream: string): Promise<void> {
    await this.follow(view, upstream);
    await this.syncCascadeSlots(view);
  }

  /** The standby leader: primary_conninfo (and slot, recovery settings) pointed at the `standby_cluster` remote. */
  private async followRemote(): Promise<void> {
    const { state: st, source, log } = this.d;
    const sc = standbyClusterOf(st.config);
    if (!sc || source.pointsAtRemote(sc)) return;
    source.pointAtRemote(sc);
    await this.d.config.writeAndReload('replica');
    st.demoted = false;
    log.info({ ...(sc.host !== undefined ? { host: sc.host, port: sc.port } : {}) }, `standby leader: replicating from ${remoteText(sc)}`);
  }

  /** The lock holder's duties: status, slots, history and synchronous replication (a standby leader: status and slots only). */
  private async leaderDuties(view: ClusterView): Promise<void> {
    const st = this.d.state;
    const probe = this.d.probe();
    if (!probe) return;
    if (probe.inRecovery) {
      // The standby leader: members' slots and `status` (its WAL position); no sync, no history of its own promotions.
      if (!standbyClusterOf(st.config)) return;
      await this.d.duties.run(view, { ...probe, flushLsn: walOf(probe), timeline: 1 }, st.config.database.use_slots);
      return;
    }
    await this.d.duties.run(view, probe, st.config.database.use_slots);
    await this.d.sync.run(view, probe, () => this.d.config.writeAndReload('primary'));
  }

  /**
   * CHECKPOINT before a graceful demotion's fast stop, bounded by min(5 s, ttl / 4) (the lock was
   * renewed at the start of this cycle). A failure or time-out only means a longer shutdown
   * checkpoint: the stop goes on either way.
   */
  private async checkpointBeforeStop(): Promise<void> {
    const { pg, log, state } = this.d;
    const timeoutMs = Math.max(500, Math.min(5000, timingOf(state.config).ttlMs / 4));
    const t0 = this.d.now();
    try {
      await pg.query('CHECKPOINT', timeoutMs);
      log.info({ ms: this.d.now() - t0 }, 'checkpoint before the demotion done');
    } catch (e) {
      log.warn({ err: String(e), ms: this.d.now() - t0 }, 'checkpoint before the demotion failed: stopping anyway');
    }
  }

  /**
   * Synchronous mode: writes the `sync` key naming this member as leader before it promotes
   * (patroni.md §3.8), so no other member is promotable on the former key once this one takes
   * writes. When the key cannot be written the lock is released and nothing is promoted.
   * Returns whether the promotion may go on.
   */
  private async prepareSyncForPromotion(view: ClusterView): Promise<boolean> {
    const { sync, dcs, log } = this.d;
    const key = sync.keyBeforePromotion(view);
    if (!key) return true;
    try {
      let ok = await dcs.setSync(syncStateOf(key), view.sync?.revision ?? '0');
      if (!ok) {
        const fresh = await dcs.refresh();
        ok = await dcs.setSync(syncStateOf(key), fresh.sync?.revision ?? '0');
      }
      if (ok) {
        sync.promoting();
        this.d.notice(
          'sync.key',
          `wrote the sync key before promoting: leader ${key.leader}, standbys ${key.members.join(', ') || 'none'}`,
        );
        return true;
      }
      log.warn('the sync key changed while writing it before the promotion: releasing the lock');
    } catch (e) {
      log.warn({ err: String(e) }, 'writing the sync key before the promotion failed: releasing the lock');
    }
    await this.d.lock.release().catch(() => false);
    this.d.emitChange();
    return false;
  }

  /**
   * Points a running replica at `leader` (the leader, or the `replicatefrom` member it cascades
   * from): rewrites primary_conninfo and reloads (PostgreSQL ≥ 13 applies it without restart).
   */
  private async follow(view: ClusterView, leader: string): Promise<void> {
    const { state: st, source } = this.d;
    if (source.configuredFor === leader) return;
    const up = upstreamOf(view, leader);
    if (!up) return;
    source.streamFrom(up);
    await this.d.config.writeAndReload('replica');
    source.configured(leader);
    st.demoted = false;
    this.d.log.info({ leader }, `following leader ${leader}`);
  }

  /**
   * On a running replica, with use_slots: a physical slot for each member cascading from this one
   * (`replicatefrom`, src/domain/upstream.ts), and none else (a former primary's member slots go).
   * Failures are logged; the next cycle tries again.
   */
  private async syncCascadeSlots(view: ClusterView): Promise<void> {
    const { state, pg, log, name } = this.d;
    if (!state.config.database.use_slots) return;
    // Permanent slots too (src/node/replication/replica-slots.ts), when the PgControl lists slots.
    if (pg.listSlots) {
      await this.d.replicaSlots.run(view);
      return;
    }
    const names = slotMembers(view, name).map(slotNameForMember);
    await pg.syncSlots(names).catch((e) => log.warn({ err: String(e) }, 'syncing the slots of cascading replicas failed'));
  }
}
