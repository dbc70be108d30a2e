/**
 * Carries out the actions decideCycle chose, in order: commands to the database machine, the
 * leader lock, and the few DCS writes the cycle owns (bootstrap keys, the failover key, a ghost
 * leader key). The machine owns the postmaster: this module only sends it commands.
 */
import type { ClusterView } from '../../domain/cluster.ts';
import type { CycleAction } from '../../domain/ha-cycle.ts';
import { slotMembers } from '../../domain/upstream.ts';
import { slotNameForMember } from '../../postgres/slots.ts';
import { syncStateOf } from '../../domain/sync-standby.ts';
import { standbyClusterOf } from '../../domain/standby-cluster.ts';
import { walOf } from '../member/member-data.ts';
import type { ConfigApplier } from '../local/config-apply.ts';
import { upstreamOf } from '../replication/replication-source.ts';
import { ReplicaSlots } from '../replication/replica-slots.ts';
import type { NodeCore } from '../node-core.ts';

export class Executor {
  private replicaSlots: ReplicaSlots | undefined;
  /** The stop in progress releases the lock when done (graceful demotion, shutdown). */
  private releaseLockAfterStop = false;
  constructor(
    private readonly core: NodeCore,
    private readonly config: ConfigApplier,
  ) {}

  /** Carries out one action against `view` (the view the decision was made on). DCS failures reject. */
  async execute(a: CycleAction, view: ClusterView): Promise<void> {
    const { core } = this;
    const { dcs, pg, log } = core.deps;
    const st = core.state;
    const db = core.db();
    const at = core.now();
    switch (a.kind) {
      case 'bootstrap': {
        const sc = standbyClusterOf(st.config);
        if (sc) {
          // A standby cluster is not initdb'ed: the race winner clones the remote (docs/ha.md "Standby cluster").
          if (!st.initializedByMe && !(await dcs.initialize('', { create: true }))) return;
          st.initializedByMe = true;
          core.source.cloneFromRemote(sc);
          db.send({ type: 'cmd.clone', reason: `won the bootstrap race of a standby cluster: cloning ${sc.host}:${sc.port}`, at });
          return;
        }
        if (await dcs.initialize('', { create: true })) {
          st.initializedByMe = true;
          if (core.deps.customBootstrapCommand) db.send({ type: 'cmd.customBootstrap', reason: 'won the bootstrap race', at });
          else db.send({ type: 'cmd.bootstrap', reason: 'won the bootstrap race', at });
        }
        return;
      }
      case 'finishBootstrap': {
        const cd = await pg.controlData();
        core.trackers.noteSystemIdentifier(cd.systemIdentifier);
        await dcs.initialize(cd.systemIdentifier, { create: false });
        await dcs.setConfig(core.deps.bootstrapDcs, '0');
        const r = await core.lock.acquire();
        if (r.acquired) {
          await dcs.setHistory([]);
          core.duties.historyWritten(1);
          st.initializedByMe = false;
        }
        core.emitChange();
        return;
      }
      case 'clone': {
        if (!core.source.cloneFromMember(view, a.from)) return;
        db.send({ type: 'cmd.clone', reason: `cloning from ${a.from}`, at });
        return;
      }
      case 'reinitialize': {
        if (!core.source.cloneFromMember(view, view.leader?.name)) return;
        db.send({ type: 'cmd.reinitialize', reason: 'reinitializing from the leader', at });
        return;
      }
      case 'rewind': {
        // pg_rewind from the leader (creating_replica, clone actor with method 'rewind'), then
        // start as its replica: the start configures primary_conninfo for the source's upstream.
        if (!core.source.rewindFrom(view, a.leader)) return;
        st.demoted = false;
        core.rewinds.started(a.leader, a.timeline);
        core.notice('rewind', `running pg_rewind from ${a.leader} (timeline ${a.timeline})`);
        db.send({ type: 'cmd.rewind', reason: `running pg_rewind from ${a.leader}`, at });
        return;
      }
      case 'start': {
        const sc = a.remote ? standbyClusterOf(st.config) : undefined;
        core.source.startAs(view, a.leader, sc);
        st.demoted = false;
        db.send({ type: 'cmd.start', role: a.role, reason: a.role === 'primary' ? 'starting primary after failure' : 'starting as a secondary', at });
        return;
      }
      case 'acquireLock': {
        // The fence is armed before the lock is taken (patroni.md §3.12); required: no fence, no race.
        if (!(await core.fencing.beforeAcquire())) return;
        const r = await core.lock.acquire();
        if (!r.acquired) {
          log.info({ holder: r.holder }, 'following new leader after trying and failing to obtain lock');
          return;
        }
        // In a standby cluster the winner stays a replica: the standby leader (next cycle: followRemote).
        if (db.getSnapshot().context.role !== 'primary' && !standbyClusterOf(st.config)) {
          if (!(await this.prepareSyncForPromotion(view))) return;
          db.send({ type: 'cmd.promote', reason: 'promoted self to leader by acquiring session lock', at });
        }
        if (view.failover && (view.failover.value.leader || view.failover.value.member)) await dcs.setFailover({}).catch(() => undefined);
        core.emitChange();
        return;
      }
      case 'promote':
        if (!(await this.prepareSyncForPromotion(view))) return;
        core.source.leaveRemote();
        db.send({ type: 'cmd.promote', reason: 'I hold the leader lock', at });
        return;
      case 'demote': {
        // A switchover's demotion first runs CHECKPOINT while the primary still takes writes
        // (bounded): the shutdown checkpoint then has little left to write, so writes stop for
        // less time. Demotions forced by the DCS or the lock stop at once.
        if (a.mode === 'graceful') await this.checkpointBeforeStop();
        this.releaseLockAfterStop = a.releaseLock;
        st.demoted = true;
        core.source.stop();
        // Every demotion stops with a shutdown checkpoint (fast), whatever its reason: backends
        // are terminated at once either way, and a clean stop records where the local WAL ends,
        // so the divergence check before following the new leader is exact (docs/ha.md).
        db.send({ type: 'cmd.demote', mode: 'fast', reason: `demoting (${a.mode})`, at });
        return;
      }
      case 'releaseLock':
        await core.lock.release();
        core.emitChange();
        return;
      case 'stop':
        core.source.stop();
        db.send({ type: 'cmd.stop', mode: 'fast', reason: a.reason, at });
        return;
      case 'clearGhostLeader': {
        const key = view.leader;
        if (!key) return;
        const cleared = await dcs.clearLeader({ name: key.name, revision: key.revision });
        core.notice('lock.ghostCleared', cleared ? `deleted the leader key naming '${key.name}', which had no member key` : `the leader key naming '${key.name}' changed before it could be deleted`);
        return;
      }
      case 'follow':
        await this.follow(view, a.upstream ?? a.leader);
        await this.syncCascadeSlots(view);
        return;
      case 'followRemote': {
        const sc = standbyClusterOf(st.config);
        if (!sc || core.source.pointsAtRemote(sc)) return;
        core.source.pointAtRemote(sc);
        await this.config.writeAndReload('replica');
        st.demoted = false;
        log.info({ host: sc.host, port: sc.port }, `standby leader: replicating from ${sc.host}:${sc.port}`);
        return;
      }
      case 'leaderDuties': {
        const probe = core.probe();
        if (!probe) return;
        if (probe.inRecovery) {
          // The standby leader: members' slots and `status` (its WAL position); no sync, no history of its own promotions.
          if (!standbyClusterOf(st.config)) return;
          await core.duties.run(view, { ...probe, flushLsn: walOf(probe), timeline: 1 }, st.config.database.use_slots);
          return;
        }
        await core.duties.run(view, probe, st.config.database.use_slots);
        await core.sync.run(view, probe, () => this.config.writeAndReload('primary'));
        return;
      }
      case 'clearFailover':
        await dcs.setFailover({}, view.failover?.revision ?? view.failoverInvalid?.revision);
        return;
    }
  }

  /**
   * CHECKPOINT before a graceful demotion's fast stop, bounded by min(5 s, ttl / 4) (the lock was
   * renewed at the start of this cycle). A failure or time-out only means a longer shutdown
   * checkpoint: the stop goes on either way.
   */
  private async checkpointBeforeStop(): Promise<void> {
    const { deps, state } = this.core;
    const timeoutMs = Math.max(500, Math.min(5000, (state.config.ttl * 1000) / 4));
    const t0 = this.core.now();
    try {
      await deps.pg.query('CHECKPOINT', timeoutMs);
      deps.log.info({ ms: this.core.now() - t0 }, 'checkpoint before the demotion done');
    } catch (e) {
      deps.log.warn({ err: String(e), ms: this.core.now() - t0 }, 'checkpoint before the demotion failed: stopping anyway');
    }
  }

  /**
   * Synchronous mode: writes the `sync` key naming this member as leader before it promotes
   * (patroni.md §3.8), so no other member is promotable on the former key once this one takes
   * writes. When the key cannot be written the lock is released and nothing is promoted.
   * Returns whether the promotion may go on.
   */
  private async prepareSyncForPromotion(view: ClusterView): Promise<boolean> {
    const { core } = this;
    const key = core.sync.keyBeforePromotion(view);
    if (!key) return true;
    const { dcs, log } = core.deps;
    try {
      let ok = await dcs.setSync(syncStateOf(key), view.sync?.revision ?? '0');
      if (!ok) {
        const fresh = await dcs.refresh();
        ok = await dcs.setSync(syncStateOf(key), fresh.sync?.revision ?? '0');
      }
      if (ok) {
        core.sync.promoting();
        core.notice('sync.key', `wrote the sync key before promoting: leader ${key.leader}, standbys ${key.members.join(', ') || 'none'}`);
        return true;
      }
      log.warn('the sync key changed while writing it before the promotion: releasing the lock');
    } catch (e) {
      log.warn({ err: String(e) }, 'writing the sync key before the promotion failed: releasing the lock');
    }
    await core.lock.release().catch(() => false);
    core.emitChange();
    return false;
  }

  /**
   * Points a running replica at `leader` (the leader, or the `replicatefrom` member it cascades
   * from): rewrites primary_conninfo and reloads (PostgreSQL ≥ 13 applies it without restart).
   */
  private async follow(view: ClusterView, leader: string): Promise<void> {
    const { state: st, source } = this.core;
    if (source.configuredFor === leader) return;
    const up = upstreamOf(view, leader);
    if (!up) return;
    source.streamFrom(up);
    await this.config.writeAndReload('replica');
    source.configured(leader);
    st.demoted = false;
    this.core.deps.log.info({ leader }, `following leader ${leader}`);
  }

  /**
   * On a running replica, with use_slots: a physical slot for each member cascading from this one
   * (`replicatefrom`, src/domain/upstream.ts), and none else (a former primary's member slots go).
   * Failures are logged; the next cycle tries again.
   */
  private async syncCascadeSlots(view: ClusterView): Promise<void> {
    const { state, deps } = this.core;
    if (!state.config.database.use_slots) return;
    // Permanent slots too (src/node/replication/replica-slots.ts), when the PgControl lists slots.
    if (deps.pg.listSlots) {
      this.replicaSlots ??= new ReplicaSlots(this.core);
      await this.replicaSlots.run(view);
      return;
    }
    const names = slotMembers(view, deps.name).map(slotNameForMember);
    await deps.pg.syncSlots(names).catch((e) => deps.log.warn({ err: String(e) }, 'syncing the slots of cascading replicas failed'));
  }

  /** The agent's shutdown stops the database: the stop releases the lock when done when `release` (this agent leads). */
  stopForShutdown(release: boolean): void {
    this.releaseLockAfterStop = release;
  }

  /** The stop in progress (a graceful demotion, the shutdown) has not released the lock yet. */
  get releasesLockAfterStop(): boolean {
    return this.releaseLockAfterStop;
  }

  /** After a stop: a graceful demotion or shutdown publishes the checkpoint and releases the lock. */
  async afterStop(): Promise<void> {
    if (!this.releaseLockAfterStop) return;
    this.releaseLockAfterStop = false;
    await this.releaseLockWithStatus();
  }

  /** Publishes the final checkpoint LSN in `status`, then releases the lock (retried every cycle when it fails). */
  async releaseLockWithStatus(): Promise<void> {
    const { dcs, pg, log } = this.core.deps;
    try {
      const cd = await pg.controlData();
      await dcs.setStatus(this.core.duties.finalStatus(Number(cd.checkpointLsn)));
    } catch (e) {
      log.warn({ err: String(e) }, 'could not publish the final checkpoint');
    }
    const released = await this.core.lock.release();
    if (!released) log.warn('releasing the leader key failed: retried every cycle');
    this.core.emitChange();
  }
}
