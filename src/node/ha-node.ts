/**
 * The node agent: one HA loop per member. Every `loop_wait` seconds, and at once on a DCS event
 * about the leader, the config or the failover key, or after a machine transition, it gathers the
 * facts (lease keepalive, lock renewal, local status, peers), asks `decideCycle` what to do, carries
 * the actions out, and publishes the member key. Between cycles a probe refreshes the local
 * status every second and a crash watcher notices a dead postmaster within ~100 ms.
 *
 * The database lifecycle machine owns the postmaster: this class only sends it commands.
 * Safety: a leader whose renewal fails demotes at once; every DCS call is bounded by
 * retry_timeout, so with `loop_wait + 2*retry_timeout <= ttl` the demotion is under way before
 * the lease can expire (dcs-layout.md "Leases and the leader lock").
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { waitFor, type Actor, type AnyStateMachine } from 'xstate';
import { restartMachine } from '../machines/restart.ts';
import { switchoverMachine } from '../machines/switchover.ts';
import { clusterTimeline, type ClusterView } from '../domain/cluster.ts';
import { withDefaults, type DynamicConfig } from '../domain/dynamic-config.ts';
import { sanitizeDynamicConfig } from '../config/dynamic-sanitize.ts';
import { filterParameters, type SettingsCatalogue } from '../domain/pg-parameters.ts';
import { cloneSource, decideCycle, type CycleAction } from '../domain/ha-cycle.ts';
import type { PeerStatus } from '../domain/leader-race.ts';
import { memberHostPort, type MemberData, type ScheduledRestartData, type Tags } from '../domain/member.ts';
import type { PgStatus } from '../domain/pg-status.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import type { DatabaseState, Role } from '../domain/states.ts';
import type { LocalPosition } from '../domain/timeline-history.ts';
import type { Dcs, DcsEvent } from '../dcs/dcs.ts';
import { BUSY_STATES, databaseMachine } from '../machines/database.ts';
import { restartConditionsHold } from '../domain/restart-conditions.ts';
import { slotNameForMember } from '../postgres/slots.ts';
import type { ConfigureOptions, PgControl, Upstream } from '../postgres/types.ts';
import { databaseMachineWithEffects } from './effects.ts';
import { Journal } from './journal.ts';
import { startJournaledActor } from './journaled-actor.ts';
import { fetchPeers, fetchStatusDocument } from './peers.ts';
import { LeaderDuties } from './leader-duties.ts';
import { LeaderLock } from './leader-lock.ts';
import { buildMemberData, effectiveTags, walOf } from './member-data.ts';
import { LocalWatch } from './local-watch.ts';
import { systemClock, type Clock } from './clock.ts';
import { ScheduledWork } from './schedules.ts';

/** Everything a node needs; the composition root (src/cli) builds it from ha.yml. */
export interface HaNodeOptions {
  name: string;
  scope: string;
  /** Agent version (semver). */
  version: string;
  /** `http://<restapi.connect_address>/ha` */
  apiUrl: string;
  /** `postgres://<database.connect_address>/postgres` */
  connUrl: string;
  tags: Tags;
  /** Seed of the dynamic configuration (bootstrap.dcs), written once by the bootstrap winner. */
  bootstrapDcs: Record<string, unknown>;
  /** initdb options as `--key=value` strings. */
  initdbOptions: string[];
  /** Custom bootstrap command (bootstrap.method naming a section with `command`). */
  customBootstrapCommand?: string;
  /** database.parameters of the local file (the dynamic configuration's win). */
  localParameters: Record<string, string | number | boolean>;
  dcs: Dcs;
  pg: PgControl;
  journal: Journal;
  log: Logger;
  /** Clock, epoch ms (default: `clock.now`). */
  now?: () => number;
  /** Time and timers (default real time); every wait of the node goes through it. */
  clock?: Clock;
  /** Member status fetcher (tests may replace it). */
  fetchStatus?: (apiUrl: string) => Promise<Record<string, unknown> | undefined>;
  /** How long a start may take before start_failed, ms. Default 60 000. */
  startTimeoutMs?: number;
  /**
   * The server's settings catalogue (src/postgres/settings-catalogue.ts): parameters it refuses
   * are dropped, with a notice, before postgresql.conf is written, so a bad value that reached the
   * DCS cannot make every later start fail. Undefined: parameters are written as given.
   */
  settingsCatalogue?: SettingsCatalogue;
}

/** A named state change for observers (demo output, tests). */
export interface NodeChange {
  name: string;
  state: DatabaseState;
  role: Role;
  leader: boolean;
}

export class HaNode {
  private readonly now: () => number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private db!: Actor<typeof databaseMachine>;
  private stopped = false;
  private loopDone: Promise<void> | undefined;
  private wakeResolve: (() => void) | undefined;
  private wakePending = false;
  private unsubscribeDcs: (() => void) | undefined;

  /** Facts kept between cycles. */
  private readonly watch: LocalWatch;
  private readonly lock: LeaderLock;
  private lastLoopMs = 0;
  /** Consecutive failed starts, and when the next start may be tried (epoch ms). */
  private startFailures = 0;
  private nextStartAtMs: number | undefined;
  /** Epoch ms since when a running replica has not streamed (undefined: streaming, or not a replica). */
  private notStreamingSinceMs: number | undefined;
  /** Epoch ms since when the leader key has named a member without a member key. */
  private ghostLeader: { name: string; sinceMs: number } | undefined;
  /** Why the local data diverged from the leader's timeline (undefined: it did not, or unknown). */
  private divergedReason: string | undefined;
  private lastConfigProblem = '';
  private lastDroppedParameters = '';
  private initializedByMe = false;
  /** Stopped by this agent's demotion and not started since (decideCycle `demoted`). */
  private demoted = false;
  private releaseLockAfterStop = false;
  private cloneFrom: Upstream | undefined;
  private upstream: Upstream | undefined;
  private configuredUpstream: string | undefined;
  private sysid: string | undefined;
  private config: DynamicConfig;
  private lastMemberJson = '';
  private readonly duties: LeaderDuties;
  private lastMessage = '';
  private schedules!: ScheduledWork;
  private readonly changeListeners = new Set<(c: NodeChange) => void>();
  private snapshotMemo: { inputs: unknown[]; snapshot: NodeSnapshot } | undefined;

  constructor(private opts: HaNodeOptions) {
    this.clock = opts.clock ?? (opts.now ? { ...systemClock, now: opts.now } : systemClock);
    this.now = () => this.clock.now();
    this.log = opts.log;
    this.config = sanitizeDynamicConfig(opts.bootstrapDcs, withDefaults(opts.bootstrapDcs)).config;
    this.duties = new LeaderDuties({ dcs: opts.dcs, pg: opts.pg, name: opts.name, log: opts.log, now: this.now });
    this.lock = new LeaderLock({
      dcs: opts.dcs,
      name: opts.name,
      now: this.now,
      ttlMs: () => this.config.ttl * 1000,
      leaseId: () => opts.dcs.currentLeaseId(),
    });
    this.watch = new LocalWatch({
      pg: opts.pg,
      database: () => {
        const s = this.db?.getSnapshot();
        return s ? { value: String(s.value), promoting: s.context.promoting } : undefined;
      },
      probeTimeoutMs: () => Math.min(2000, this.config.retry_timeout * 1000),
      clock: this.clock,
      onDied: () => this.db.send({ type: 'pg.died', reason: 'postmaster is not running', at: this.now() }),
      // A wiped data directory under a running postmaster: stop it (by its remembered PID, as its
      // postmaster.pid is gone); once stopped with an empty directory the HA loop clones again.
      onDataDirGone: (reason) => {
        this.log.warn({ reason }, 'data directory gone while PostgreSQL runs: stopping it (immediate)');
        this.db.send({ type: 'cmd.stop', mode: 'immediate', reason: `data directory gone: ${reason}`, at: this.now() });
        this.wake();
      },
    });
  }

  /** The latest probe while the database runs. */
  private get lastProbe(): PgStatus | undefined {
    return this.watch.probe;
  }

  get name(): string {
    return this.opts.name;
  }

  /** Subscribes to state/role/leadership changes. */
  onChange(listener: (c: NodeChange) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** The journal of this node. */
  get journal(): Journal {
    return this.opts.journal;
  }

  /** The three machines with live snapshots, for GET /machines and the page (undefined before start). */
  observedMachines(): { name: string; machine: AnyStateMachine; snapshot: () => { value: unknown; context: unknown } | undefined }[] {
    return [
      { name: 'database', machine: databaseMachine, snapshot: () => this.db?.getSnapshot() },
      { name: 'switchover', machine: switchoverMachine, snapshot: () => this.schedules?.switchover.getSnapshot() },
      { name: 'restart', machine: restartMachine, snapshot: () => this.schedules?.restart.getSnapshot() },
    ];
  }

  /** The database machine actor (for /machines and tests). */
  get databaseActor(): Actor<typeof databaseMachine> {
    return this.db;
  }

  /** Starts the node: DCS, machine, probe, crash watcher, HA loop. Rejects when the DCS cannot be reached. */
  async start(): Promise<void> {
    const { dcs, pg } = this.opts;
    await dcs.start();
    const stored = dcs.view().config?.value;
    if (stored) this.config = sanitizeDynamicConfig(stored, this.config).config;
    const machine = databaseMachineWithEffects({
      pg,
      initdbOptions: () => this.opts.initdbOptions,
      customBootstrapCommand: () => this.opts.customBootstrapCommand,
      cloneSource: () => this.cloneFrom,
      configureFor: (role) => this.configureOptions(role),
      afterStop: () => this.afterStop(),
      startTimeoutMs: () => this.opts.startTimeoutMs ?? 60_000,
      stopTimeoutMs: () => 60_000,
      clock: this.clock,
    });
    this.db = startJournaledActor(machine, {
      name: 'database',
      input: { at: this.now() },
      journal: this.opts.journal,
      term: () => ({ timeline: this.lastProbe?.timeline, leader: this.opts.dcs.view().leader?.name }),
    });
    let prevKey = '';
    this.db.subscribe((s) => {
      const key = `${s.value}|${s.context.role}`;
      if (key !== prevKey) {
        prevKey = key;
        this.noteStartOutcome(String(s.value));
        this.emitChange();
        this.wake();
      }
    });
    this.schedules = new ScheduledWork({
      journal: this.opts.journal,
      loopWaitMs: this.config.loop_wait * 1000,
      clock: this.clock,
      wake: () => this.wake(),
      term: () => ({ timeline: this.lastProbe?.timeline, leader: this.opts.dcs.view().leader?.name }),
    });
    // A scheduled restart survives an agent restart in this member's key (still there within ttl).
    const mine = dcs.view().members.find((m) => m.name === this.opts.name)?.data.scheduled_restart;
    if (mine) this.schedules.scheduleRestart(mine, { allowPast: true });
    this.schedules.observeFailoverKey(dcs.view());
    // A postmaster already running when the agent starts is adopted, not restarted.
    if (await pg.postmasterPid()) {
      const role = existsSync(join(pg.dataDir, 'standby.signal')) ? 'replica' : 'primary';
      this.db.send({ type: 'pg.found', role, reason: 'postmaster already running at agent start', at: this.now() });
      await this.watch.probeOnce();
    }
    this.unsubscribeDcs = dcs.subscribe((e) => this.onDcsEvent(e));
    this.watch.start();
    this.loopDone = this.loop();
  }

  /**
   * Graceful shutdown (SIGTERM/SIGINT): the leader stops PostgreSQL, publishes its final
   * checkpoint LSN in `status` and releases the leader key so a replica takes over at once;
   * a replica stops PostgreSQL; then the lease is revoked. Leaves no process behind.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.watch.stop();
    this.unsubscribeDcs?.();
    this.wake();
    await this.loopDone?.catch(() => undefined);
    const { dcs, pg } = this.opts;
    const iLead = this.lock.held;
    try {
      await waitFor(this.db, (s) => !(BUSY_STATES as readonly string[]).includes(s.value as string), { timeout: 60_000 });
      if (this.config.pause === true) {
        this.log.info('paused: leaving the database running');
      } else if (this.db.getSnapshot().value !== 'stopped') {
        this.releaseLockAfterStop = iLead;
        this.db.send({ type: 'cmd.stop', mode: 'fast', reason: 'agent shutting down', at: this.now() });
        await waitFor(this.db, (s) => s.value === 'stopped' || s.value === 'stop_failed', { timeout: 60_000 });
      }
      if (iLead && (await pg.postmasterPid()) === undefined && this.releaseLockAfterStop) await this.releaseLockWithStatus();
    } catch (e) {
      this.log.error({ err: e }, 'error while shutting down');
    }
    // Whatever state the machine was left in (a failed bootstrap, a stop that timed out), the
    // agent's stop leaves no postmaster behind unless paused (the reference leaves it running then).
    if (this.config.pause !== true && (await pg.postmasterPid().catch(() => undefined)) !== undefined) {
      this.log.warn('a postmaster is still running after the machine stopped: stopping it');
      await pg.stop('fast', 60_000).catch((e) => this.log.error({ err: String(e) }, 'stopping the leftover postmaster failed'));
      if (iLead && this.lock.held) await this.releaseLockWithStatus();
    }
    this.db.stop();
    this.schedules.stop();
    await dcs.close().catch((e) => this.log.warn({ err: e }, 'closing the DCS failed'));
    await pg.close().catch(() => undefined);
  }

  /** Wakes the HA loop now. */
  wake(): void {
    this.wakePending = true;
    this.wakeResolve?.();
  }

  private onDcsEvent(e: DcsEvent): void {
    switch (e.type) {
      case 'dcs.leaderChanged':
        this.schedules.observeLeader(e.leader);
        this.wake();
        break;
      case 'dcs.failoverChanged':
        this.schedules.observeFailoverKey(this.opts.dcs.view());
        this.wake();
        break;
      case 'dcs.configChanged':
      case 'dcs.initializeChanged':
        this.wake();
        break;
      case 'dcs.memberChanged':
        if (!this.opts.dcs.view().leader) this.wake();
        break;
      default:
        break;
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      this.wakePending = false;
      try {
        await this.cycle();
      } catch (e) {
        this.log.error({ err: e }, 'HA cycle failed');
      }
      this.lastLoopMs = this.now();
      if (this.stopped) break;
      if (!this.wakePending) {
        await new Promise<void>((resolve) => {
          const t = this.clock.setTimeout(resolve, this.config.loop_wait * 1000);
          this.wakeResolve = () => {
            this.clock.clearTimeout(t);
            resolve();
          };
        });
        this.wakeResolve = undefined;
      }
    }
  }

  /** One HA cycle. */
  private async cycle(): Promise<void> {
    const { dcs, pg, name } = this.opts;
    const nowMs = this.now();
    let dcsOk = true;
    try {
      await dcs.keepalive();
    } catch (e) {
      dcsOk = false;
      this.log.warn({ err: String(e) }, 'lease keepalive failed');
    }
    let view = dcs.view();
    this.applyDynamicConfig(view);
    // The leader lock (leader-lock.ts): renew the incarnation we hold with a compare-and-set, adopt
    // our own key at start, retry a release that did not reach the DCS, and never act on a view
    // that still shows a lock we released or lost.
    let lockRenewal: 'ok' | 'failed' | undefined;
    let holdsLock = false;
    if (dcsOk) {
      if (this.lock.releasePending) await this.lock.retryRelease();
      const reading = this.lock.read(view);
      if (reading === 'mine') {
        holdsLock = true;
        const r = await this.lock.renew();
        lockRenewal = r === 'ok' ? 'ok' : 'failed';
        if (r === 'lost') this.notice('lock.lost', 'lost the leader lock: the key is gone or is not the one this member created');
        view = dcs.view();
      } else if (reading === 'adoptable') {
        try {
          if (await this.lock.adopt(view)) {
            holdsLock = true;
            lockRenewal = 'ok';
            this.notice('lock.adopted', `adopted the leader key (create revision ${view.leader?.createRevision}) that names this member`);
          }
        } catch (e) {
          this.log.warn({ err: String(e) }, 'adopting the leader key failed');
        }
        view = dcs.view();
      } else if (reading === 'stale') {
        try {
          view = await dcs.refresh();
        } catch {
          dcsOk = false;
        }
      }
    }
    this.trackGhostLeader(view, nowMs);

    const snap = this.db.getSnapshot();
    const state = snap.value as DatabaseState;
    const busy = (BUSY_STATES as readonly string[]).includes(state) || snap.context.promoting;
    const hasData = await pg.hasData();
    if (state === 'running') await this.watch.probeOnce();
    const probe = state === 'running' ? this.lastProbe : undefined;
    let local: LocalPosition | undefined;
    if (hasData && !busy && state !== 'running') {
      try {
        const cd = await pg.controlData();
        this.sysid = cd.systemIdentifier;
        local = { clusterState: cd.clusterState, timeline: cd.checkpointTimeline, checkpointLsn: cd.checkpointLsn, minRecoveryLsn: cd.minRecoveryLsn };
      } catch {
        local = undefined;
      }
    }
    this.trackStreaming(probe, nowMs);
    const failover = view.failover?.value;
    const needPeers =
      dcsOk && state === 'running' && !busy && (!view.leader || (view.leader.name === name && !!(failover?.leader || failover?.member)));
    const peers: PeerStatus[] = needPeers ? await fetchPeers(view, name, this.opts.fetchStatus ?? fetchStatusDocument) : [];

    this.schedules.observeFailoverKey(view);
    this.schedules.tick();
    const switchoverPhase = this.schedules.switchoverPhase();
    const decision = decideCycle({
      name,
      nowMs,
      config: this.config,
      view,
      dcsOk,
      holdsLock,
      ...(lockRenewal ? { lockRenewal } : {}),
      db: { state, role: snap.context.role, busy },
      hasData,
      walBytes: walOf(probe),
      timeline: probe?.timeline ?? local?.timeline ?? 0,
      ...(local ? { local } : {}),
      demoted: this.demoted,
      initializedByMe: this.initializedByMe,
      ...(this.sysid ? { sysid: this.sysid } : {}),
      tags: this.opts.tags,
      peers,
      ...(switchoverPhase ? { switchoverPhase } : {}),
      ...(probe?.inRecovery
        ? {
            replication: {
              upstream: this.configuredUpstream,
              streaming: probe.streaming,
              ...(this.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: this.notStreamingSinceMs } : {}),
            },
          }
        : {}),
      ...(this.nextStartAtMs !== undefined ? { nextStartAtMs: this.nextStartAtMs } : {}),
      ...(this.ghostLeader ? { ghostLeaderSinceMs: this.ghostLeader.sinceMs } : {}),
    });
    // The divergence verdict stays until the member runs again (re-cloned, rewound, promoted or
    // streaming) or its data is gone: a cycle that returns early (DCS down, a stop in progress)
    // does not clear it.
    if (decision.diverged !== undefined) {
      if (decision.diverged !== this.divergedReason) this.notice('diverged', decision.diverged);
      this.divergedReason = decision.diverged;
    } else if (this.divergedReason !== undefined && (!hasData || state === 'creating_replica' || (state === 'running' && (snap.context.role === 'primary' || probe?.streaming === true)))) {
      this.divergedReason = undefined;
    }
    for (const action of decision.actions) {
      if (this.stopped) break;
      await this.execute(action, view);
    }
    if (decision.actions.some((a) => a.kind === 'clearFailover')) this.schedules.switchoverFailed(decision.message);
    await this.runDueRestart();
    if (decision.message !== this.lastMessage) {
      this.log.info({ member: name, actions: decision.actions.map((a) => a.kind) }, decision.message);
      this.lastMessage = decision.message;
    }
    if (dcsOk) await this.publishMember().catch((e) => this.log.warn({ err: String(e) }, 'publishing the member key failed'));
  }

  private async execute(a: CycleAction, view: ClusterView): Promise<void> {
    const { dcs, pg, name } = this.opts;
    const at = this.now();
    switch (a.kind) {
      case 'bootstrap': {
        if (await dcs.initialize('', { create: true })) {
          this.initializedByMe = true;
          if (this.opts.customBootstrapCommand) this.db.send({ type: 'cmd.customBootstrap', reason: 'won the bootstrap race', at });
          else this.db.send({ type: 'cmd.bootstrap', reason: 'won the bootstrap race', at });
        }
        return;
      }
      case 'finishBootstrap': {
        const cd = await pg.controlData();
        this.sysid = cd.systemIdentifier;
        await dcs.initialize(cd.systemIdentifier, { create: false });
        await dcs.setConfig(this.opts.bootstrapDcs, '0');
        const r = await this.lock.acquire();
        if (r.acquired) {
          await dcs.setHistory([]);
          this.duties.historyWritten(1);
          this.initializedByMe = false;
        }
        this.emitChange();
        return;
      }
      case 'clone': {
        this.cloneFrom = this.upstreamOf(view, a.from);
        if (!this.cloneFrom) return;
        this.db.send({ type: 'cmd.clone', reason: `cloning from ${a.from}`, at });
        return;
      }
      case 'reinitialize': {
        this.cloneFrom = this.upstreamOf(view, view.leader?.name);
        if (!this.cloneFrom) return;
        this.db.send({ type: 'cmd.reinitialize', reason: 'reinitializing from the leader', at });
        return;
      }
      case 'start': {
        this.upstream = a.leader ? this.upstreamOf(view, a.leader) : undefined;
        this.configuredUpstream = this.upstream?.name;
        this.demoted = false;
        this.db.send({ type: 'cmd.start', role: a.role, reason: a.role === 'primary' ? 'starting primary after failure' : 'starting as a secondary', at });
        return;
      }
      case 'acquireLock': {
        const r = await this.lock.acquire();
        if (!r.acquired) {
          this.log.info({ holder: r.holder }, 'following new leader after trying and failing to obtain lock');
          return;
        }
        if (this.db.getSnapshot().context.role !== 'primary') {
          this.db.send({ type: 'cmd.promote', reason: 'promoted self to leader by acquiring session lock', at });
        }
        if (view.failover && (view.failover.value.leader || view.failover.value.member)) await dcs.setFailover({}).catch(() => undefined);
        this.emitChange();
        return;
      }
      case 'promote':
        this.db.send({ type: 'cmd.promote', reason: 'I hold the leader lock', at });
        return;
      case 'demote': {
        this.releaseLockAfterStop = a.releaseLock;
        this.demoted = true;
        this.upstream = undefined;
        this.configuredUpstream = undefined;
        // Every demotion stops with a shutdown checkpoint (fast), whatever its reason: backends
        // are terminated at once either way, and a clean stop records where the local WAL ends,
        // so the divergence check before following the new leader is exact (docs/ha.md).
        this.db.send({ type: 'cmd.demote', mode: 'fast', reason: `demoting (${a.mode})`, at });
        return;
      }
      case 'releaseLock':
        await this.lock.release();
        this.emitChange();
        return;
      case 'stop':
        this.upstream = undefined;
        this.configuredUpstream = undefined;
        this.db.send({ type: 'cmd.stop', mode: 'fast', reason: a.reason, at });
        return;
      case 'clearGhostLeader': {
        const key = view.leader;
        if (!key) return;
        const cleared = await dcs.clearLeader({ name: key.name, revision: key.revision });
        this.notice('lock.ghostCleared', cleared ? `deleted the leader key naming '${key.name}', which had no member key` : `the leader key naming '${key.name}' changed before it could be deleted`);
        return;
      }
      case 'follow':
        await this.follow(view, a.leader);
        return;
      case 'leaderDuties':
        await this.leaderDuties(view);
        return;
      case 'clearFailover':
        await dcs.setFailover({}, view.failover?.revision ?? view.failoverInvalid?.revision);
        return;
    }
  }

  /** Points a running replica at the leader: rewrites primary_conninfo and reloads (PostgreSQL ≥ 13 applies it without restart). */
  private async follow(view: ClusterView, leader: string): Promise<void> {
    if (this.configuredUpstream === leader) return;
    const up = this.upstreamOf(view, leader);
    if (!up) return;
    this.upstream = up;
    await this.opts.pg.configure(this.configureOptions('replica'));
    await this.opts.pg.reload();
    this.configuredUpstream = leader;
    this.demoted = false;
    this.log.info({ leader }, `following leader ${leader}`);
  }

  /** The leader's per-cycle work (leader-duties.ts). */
  private async leaderDuties(view: ClusterView): Promise<void> {
    const probe = this.lastProbe;
    if (!probe || probe.inRecovery) return;
    await this.duties.run(view, probe, this.config.database.use_slots);
  }

  /** After a stop: a graceful demotion or shutdown publishes the checkpoint and releases the lock. */
  private async afterStop(): Promise<void> {
    if (!this.releaseLockAfterStop) return;
    this.releaseLockAfterStop = false;
    await this.releaseLockWithStatus();
  }

  private async releaseLockWithStatus(): Promise<void> {
    const { dcs, pg } = this.opts;
    try {
      const cd = await pg.controlData();
      await dcs.setStatus({ optime: Number(cd.checkpointLsn) });
    } catch (e) {
      this.log.warn({ err: String(e) }, 'could not publish the final checkpoint');
    }
    const released = await this.lock.release();
    if (!released) this.log.warn('releasing the leader key failed: retried every cycle');
    this.emitChange();
  }

  private upstreamOf(view: ClusterView, member: string | undefined): Upstream | undefined {
    if (!member) return undefined;
    const m = view.members.find((x) => x.name === member);
    const hp = m ? memberHostPort(m.data.conn_url) : undefined;
    return hp ? { host: hp.host, port: hp.port, name: member } : undefined;
  }

  private configureOptions(role: 'primary' | 'replica'): ConfigureOptions {
    const parameters: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(this.opts.localParameters)) parameters[k] = typeof v === 'boolean' ? (v ? 'on' : 'off') : v;
    Object.assign(parameters, this.config.database.parameters);
    const catalogue = this.opts.settingsCatalogue;
    if (catalogue) {
      const { kept, dropped } = filterParameters(parameters, catalogue);
      const text = dropped.join('; ');
      if (text !== this.lastDroppedParameters) {
        this.lastDroppedParameters = text;
        if (text) this.notice('parameters.dropped', `PostgreSQL parameters refused by the server's catalogue, not written: ${text}`);
      }
      return this.configureFor(role, kept);
    }
    return this.configureFor(role, parameters);
  }

  private configureFor(role: 'primary' | 'replica', parameters: Record<string, string | number>): ConfigureOptions {
    return {
      role,
      ...(role === 'replica' && this.upstream ? { upstream: this.upstream } : {}),
      ...(role === 'replica' && this.config.database.use_slots ? { slotName: slotNameForMember(this.opts.name) } : {}),
      parameters,
    };
  }

  /**
   * Applies the dynamic configuration the DCS holds, through the same validation as the API
   * (sanitizeDynamicConfig): garbage keeps the last good config, impossible timing is adjusted
   * as the reference adjusts it; both are logged and journaled once per distinct problem.
   */
  private applyDynamicConfig(view: ClusterView): void {
    if (!view.config) return;
    const prev = this.config;
    const { config: next, problems, adjustments } = sanitizeDynamicConfig(view.config.value, prev);
    const problem = [...problems, ...adjustments].join('; ');
    if (problem !== this.lastConfigProblem) {
      this.lastConfigProblem = problem;
      if (problems.length) this.notice('config.rejected', `dynamic configuration in the DCS is invalid, keeping the last good one: ${problem}`);
      else if (adjustments.length) this.notice('config.adjusted', `dynamic configuration in the DCS adjusted: ${problem}`);
    }
    if (next === prev) return;
    this.config = next;
    if (next.loop_wait !== prev.loop_wait) this.schedules?.setLoopWait(next.loop_wait * 1000);
    if (next.ttl !== prev.ttl) {
      void this.opts.dcs.setTtl(next.ttl).then(
        () => this.publishMember(true),
        (e) => this.log.warn({ err: String(e) }, 'changing the lease TTL failed'),
      );
    }
    if (JSON.stringify(next.database.parameters) !== JSON.stringify(prev.database.parameters) && this.db.getSnapshot().value === 'running') {
      const role = this.db.getSnapshot().context.role === 'primary' ? 'primary' : 'replica';
      void this.opts.pg
        .configure(this.configureOptions(role))
        .then(() => this.opts.pg.reload())
        .catch((e) => this.log.warn({ err: String(e) }, 'applying parameters failed'));
    }
  }

  /** Builds and publishes the member key (when changed, or when forced after a lease change). */
  private async publishMember(force = false): Promise<void> {
    const data = this.memberData();
    const json = JSON.stringify(data);
    const inView = this.opts.dcs.view().members.some((m) => m.name === this.opts.name);
    if (!force && json === this.lastMemberJson && inView) return;
    await this.opts.dcs.touchMember(data);
    this.lastMemberJson = json;
  }

  private memberData(): MemberData {
    const snap = this.db.getSnapshot();
    const scheduled = this.scheduledRestartData();
    return buildMemberData({
      connUrl: this.opts.connUrl,
      apiUrl: this.opts.apiUrl,
      version: this.opts.version,
      state: snap.value as DatabaseState,
      role: snap.context.role,
      ...(snap.value === 'running' && this.lastProbe ? { probe: this.lastProbe } : {}),
      tags: this.opts.tags,
      ...(scheduled ? { scheduledRestart: scheduled } : {}),
      paused: this.config.pause === true,
      ...(this.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: this.notStreamingSinceMs } : {}),
      ...(this.divergedReason ? { diverged: this.divergedReason } : {}),
    });
  }

  /**
   * Applies a re-read local configuration (POST /reload): tags and local parameters. Parameters
   * are written and PostgreSQL reloaded; those needing a restart show as pending_restart.
   */
  applyLocalConfig(tags: Tags, parameters: Record<string, string | number | boolean>): void {
    this.opts.tags = tags;
    this.opts.localParameters = parameters;
    const s = this.db.getSnapshot();
    if (s.value === 'running') {
      void this.opts.pg
        .configure(this.configureOptions(s.context.role === 'primary' ? 'primary' : 'replica'))
        .then(() => this.opts.pg.reload())
        .catch((e) => this.log.warn({ err: String(e) }, 'applying the reloaded configuration failed'));
    }
    this.wake();
  }

  /** Restarts the local database now (POST /restart); resolves when it runs again or failed. */
  async restartNow(timeoutMs?: number): Promise<{ ok: true } | { ok: false; reason: string }> {
    const s = this.db.getSnapshot();
    if (s.value !== 'running') return { ok: false, reason: `${s.value === 'restarting' ? 'restart' : String(s.value)} already in progress` };
    this.db.send({ type: 'cmd.restart', reason: 'restart requested through the API', at: this.now() });
    try {
      const end = await waitFor(this.db, (x) => x.value === 'running' || x.value === 'restart_failed', { timeout: timeoutMs ?? 60_000 });
      return end.value === 'running' ? { ok: true } : { ok: false, reason: 'restart failed' };
    } catch {
      return { ok: false, reason: 'restart failed' };
    }
  }

  /** Schedules a restart (kept in the member key); false when one is already scheduled. */
  async scheduleRestart(plan: ScheduledRestartData): Promise<boolean> {
    if (!this.schedules.scheduleRestart(plan)) return false;
    await this.publishMember().catch(() => undefined);
    return true;
  }

  /** Cancels the scheduled restart; false when none. */
  async cancelRestart(): Promise<boolean> {
    if (!this.schedules.cancelRestart()) return false;
    await this.publishMember().catch(() => undefined);
    return true;
  }

  /** Carries out a scheduled restart whose instant has come, when its conditions hold. */
  private async runDueRestart(): Promise<void> {
    const req = this.schedules.dueRestart();
    if (!req) return;
    const p = this.lastProbe;
    const role = this.db.getSnapshot().context.role;
    const held = restartConditionsHold(req, {
      role: role === 'primary' ? 'primary' : 'replica',
      serverVersion: p?.serverVersion ?? 0,
      pendingRestart: !!p && Object.keys(p.pendingRestart).length > 0,
    });
    const outcome = held.ok ? await this.restartNow(req.timeoutSeconds !== undefined ? req.timeoutSeconds * 1000 : undefined) : held;
    this.log.info({ outcome }, outcome.ok ? 'scheduled restart done' : `scheduled restart not done: ${outcome.reason}`);
    this.schedules.restartFinished(outcome);
    await this.publishMember().catch(() => undefined);
  }

  /** Wipes the data directory and re-clones from the leader (POST /reinitialize). */
  async reinitialize(opts: { force: boolean; fromLeader: boolean }): Promise<{ ok: true } | { ok: false; reason: string }> {
    const view = this.opts.dcs.view();
    if (view.leader?.name === this.opts.name) return { ok: false, reason: 'I am the leader, can not reinitialize' };
    if (!view.leader) return { ok: false, reason: 'Cluster has no leader, can not reinitialize' };
    const s = this.db.getSnapshot();
    if ((BUSY_STATES as readonly string[]).includes(s.value as string) && !opts.force) return { ok: false, reason: `${String(s.value)} already in progress` };
    const from = opts.fromLeader ? view.leader.name : (cloneSource(view, this.opts.name) ?? view.leader.name);
    this.cloneFrom = this.upstreamOf(view, from);
    this.upstream = this.upstreamOf(view, view.leader.name);
    this.configuredUpstream = view.leader.name;
    this.db.send({ type: 'cmd.reinitialize', reason: `reinitialize requested through the API (from ${from})`, at: this.now() });
    return { ok: true };
  }

  /** The snapshot HTTP handlers and metrics read. */
  snapshot(): NodeSnapshot {
    const snap = this.db?.getSnapshot();
    const view = this.opts.dcs.view();
    // The same object is handed out until one of its inputs changes (XState snapshots, probes,
    // DCS views and configs are new objects on every change), so the API can reuse what it
    // rendered for it (src/http/app.ts).
    const inputs = [snap, this.lastProbe, view, this.config, this.opts.tags, this.sysid, this.lock.untilMs, this.opts.dcs.lastSeenMs(), this.lastLoopMs, this.schedules?.restart.getSnapshot(), this.divergedReason, this.notStreamingSinceMs];
    const memo = this.snapshotMemo;
    if (memo && memo.inputs.every((v, i) => v === inputs[i])) return memo.snapshot;
    const running = snap?.value === 'running';
    const scheduled = this.scheduledRestartData();
    const snapshot: NodeSnapshot = {
      name: this.opts.name,
      scope: this.opts.scope,
      version: this.opts.version,
      apiUrl: this.opts.apiUrl,
      connUrl: this.opts.connUrl,
      tags: effectiveTags(this.opts.tags),
      state: (snap?.value ?? 'stopped') as DatabaseState,
      role: snap?.context.role ?? 'uninitialized',
      ...(running && this.lastProbe ? { pg: this.lastProbe } : {}),
      ...(this.sysid ? { sysid: this.sysid } : {}),
      leaderUntilMs: this.lock.untilMs,
      ...(this.divergedReason ? { diverged: this.divergedReason } : {}),
      ...(this.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: this.notStreamingSinceMs } : {}),
      cluster: view,
      dcsLastSeenMs: this.opts.dcs.lastSeenMs(),
      config: this.config,
      lastLoopMs: this.lastLoopMs,
      ...(scheduled ? { scheduledRestart: scheduled } : {}),
    };
    this.snapshotMemo = { inputs, snapshot };
    return snapshot;
  }

  /** The scheduled restart with the postmaster start time it was planned against. */
  private scheduledRestartData(): ScheduledRestartData | undefined {
    const plan = this.schedules?.scheduledRestart();
    if (!plan) return undefined;
    return { ...plan, ...(this.lastProbe ? { postmaster_start_time: this.lastProbe.postmasterStartTime } : {}) };
  }

  /** Logs and journals one node-level notice (machine `ha` in the journal; replay ignores it). */
  private notice(type: string, text: string): void {
    this.log.warn({ member: this.opts.name, notice: type }, text);
    this.opts.journal.append({ machine: 'ha', kind: 'event', event: { type: `ha.${type}`, reason: text, at: this.now() } });
  }

  /**
   * Start back-off: after each failed start the next one waits loop_wait × 2^(failures−1),
   * at most 5 minutes, so a start that keeps failing is not retried hundreds of times a second.
   */
  private noteStartOutcome(state: string): void {
    if (state === 'running') {
      this.startFailures = 0;
      this.nextStartAtMs = undefined;
    } else if (state === 'start_failed') {
      this.startFailures += 1;
      const waitMs = Math.min(this.config.loop_wait * 1000 * 2 ** Math.min(this.startFailures - 1, 16), 300_000);
      this.nextStartAtMs = this.now() + waitMs;
      if (this.startFailures > 1) this.notice('start.backoff', `start failed ${this.startFailures} times in a row: next attempt in ${Math.round(waitMs / 1000)} s`);
    }
  }

  /** Since when a running replica has not streamed. */
  private trackStreaming(probe: PgStatus | undefined, nowMs: number): void {
    if (!probe || !probe.inRecovery || probe.streaming) this.notStreamingSinceMs = undefined;
    else this.notStreamingSinceMs ??= nowMs;
  }

  /** Since when the leader key has named a member without a member key. */
  private trackGhostLeader(view: ClusterView, nowMs: number): void {
    const name = view.leader?.name;
    if (!name || view.members.some((m) => m.name === name)) {
      this.ghostLeader = undefined;
      return;
    }
    if (this.ghostLeader?.name !== name) {
      this.ghostLeader = { name, sinceMs: nowMs };
      this.notice('lock.ghost', `the leader key names '${name}', which has no member key`);
    }
  }

  private emitChange(): void {
    if (!this.db) return;
    const s = this.db.getSnapshot();
    const c: NodeChange = {
      name: this.opts.name,
      state: s.value as DatabaseState,
      role: s.context.role,
      leader: this.lock.held,
    };
    for (const l of this.changeListeners) l(c);
  }
}
