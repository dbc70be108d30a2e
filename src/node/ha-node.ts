/**
 * The node agent: one per member. Its parts are built and wired by node-parts.ts, one room at a
 * time (docs/architecture.md "The node"): cycle/ (the loop, the cycle's gather → decideCycle →
 * executor, scheduled work), lock/ (the leader lock, fencing, the leader deadline, failsafe),
 * replication/ (where to clone and stream from, synchronous replication, slots), local/ (the
 * probe and crash watcher, the machine's effects, configuration, admin commands, receipts) and
 * member/ (the member key and the snapshot). HaNode starts and stops them, owns the database
 * machine actor and the scheduled machines, and is what the API and the simulator talk to.
 *
 * The database lifecycle machine owns the postmaster: the node only sends it commands.
 * Time, the DCS, PostgreSQL control and peer calls are injected (HaNodeOptions), so the same
 * node runs against real processes and in tests.
 */
import type { Logger } from 'pino';
import type { Actor, AnyStateMachine } from 'xstate';
import { sanitizeDynamicConfig } from '../config/dynamic-sanitize.ts';
import type { Dcs, DcsEvent } from '../dcs/dcs.ts';
import type { Receipt } from '../domain/discarded.ts';
import { timingOf, withDefaults } from '../domain/dynamic-config.ts';
import type { FailsafeAnswer } from '../domain/failsafe.ts';
import type { ScheduledRestartData, Tags } from '../domain/member.ts';
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import type { DatabaseState, Role } from '../domain/states.ts';
import type { Journal } from '@ha/machines';
import { startJournaledActor } from '@ha/machines';
import { databaseMachine } from '@ha/machines';
import { restartMachine } from '@ha/machines';
import { switchoverMachine } from '@ha/machines';
import type { PgControl } from '../postgres/types.ts';
import type { FenceDevice } from '../watchdog/process-fence.ts';
import { systemClock, waitOn, type Clock } from './clock.ts';
import { fetchStatusDocument } from './cycle/peers.ts';
import { fenceOf, quorumFailoverSettings } from '../domain/quorum-failover.ts';
import { LeaderReadyWatch } from './cycle/leader-ready-watch.ts';
import { ScheduledWork } from './cycle/schedules.ts';
import type { AdminOutcome } from './local/admin.ts';
import { isBusy } from './local/busy.ts';
import { withReloadHook, type CallbackCommands, type CallbackSpawner } from './local/callbacks.ts';
import { databaseMachineWithEffects, type BootstrapPlan } from './local/effects.ts';
import { directoryBytes, ProgressTracker } from './local/progress.ts';
import { BASEBACKUP, type ReplicaMethodsConfig } from '../domain/replica-methods.ts';
import type { ReceiptStore, ReceiptSummary } from './local/receipts.ts';
import type { FailsafePost } from './lock/failsafe.ts';
import type { WatchdogSettings } from './lock/fencing.ts';
import { NodeState, type NodeDeps } from './node-core.ts';
import { buildParts, type NodeParts } from './node-parts.ts';

/** Everything a node needs; the composition root (src/node/agent/agent.ts) builds it from ha.yml. */
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
  /** The custom bootstrap method in full (`no_params`, its other keys as `--key=value`); absent: `customBootstrapCommand` with --scope and --datadir. */
  customBootstrap?: BootstrapPlan;
  /** database.recovery_conf: restore_command, … of every replica (docs/backups.md "The WAL archive"). Default none. */
  recoveryConf?: Record<string, string | number>;
  /** database.create_replica_methods and their sections (docs/backups.md "Replica creation"). Default `[basebackup]`. */
  replicaMethods?: ReplicaMethodsConfig;
  /**
   * Track the progress of clones and rewinds and show it in GET /ha (docs/backups.md "Progress"):
   * the tools' own progress output, else the data directory's size sampled every 5 s. Default off
   * (the simulator); the agent turns it on.
   */
  trackProgress?: boolean;
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
  /**
   * Whether a member's PostgreSQL accepts a TCP connection within `timeoutMs` (quorum failover's
   * watch, src/node/replication/quorum-fence.ts); absent: only the agent's answer is checked.
   */
  pgAnswers?: (host: string, port: number, timeoutMs: number) => Promise<boolean>;
  /** How long a start may take before start_failed, ms. Default 60 000. */
  startTimeoutMs?: number;
  /**
   * The server's settings catalogue (src/postgres/settings-catalogue.ts): parameters it refuses
   * are dropped, with a notice, before postgresql.conf is written, so a bad value that reached the
   * DCS cannot make every later start fail. Undefined: parameters are written as given.
   */
  settingsCatalogue?: SettingsCatalogue;
  /** POST of failsafe mode to a member (default: plain HTTP(S) without credentials; the agent passes its member client). */
  postFailsafe?: FailsafePost;
  /** database.callbacks (src/node/local/callbacks.ts); absent or empty: none run. */
  callbacks?: CallbackCommands;
  /** Starts callback programs (default: real processes); tests inject their own. */
  spawnCallback?: CallbackSpawner;
  /** How long a callback may run before it is killed, ms. Default 60 000. */
  callbackTimeoutMs?: number;
  /**
   * The fence of the local PostgreSQL (docs/ha.md "Fencing"): `watchdog` settings and the fence
   * device (src/watchdog/process-fence.ts; the simulator's is src/sim/sim-fence.ts). Default: none (mode off).
   */
  watchdog?: WatchdogSettings;
  fence?: FenceDevice;
  /** The fence protocol's monotonic ms (default CLOCK_MONOTONIC); the simulator passes its clock. */
  fenceMono?: () => number;
  /**
   * Where receipts of discarded transactions are kept (src/node/local/receipts.ts; docs/ha.md
   * "Receipts"). Default: in memory. The agent keeps them in `<data_dir>/../<name>.discarded/`.
   */
  receiptStore?: ReceiptStore;
  /**
   * Background status probe period, ms (src/node/local/local-watch.ts). Default 1000 (the simulator,
   * whose peers read snapshots directly). 0: probes on demand — every HA cycle, and readers of
   * probe data call `freshProbe()` first (the agent, through its API).
   */
  probeEveryMs?: number;
}

/** A named state change for observers (demo output, tests). */
export interface NodeChange {
  name: string;
  state: DatabaseState;
  role: Role;
  leader: boolean;
}

/** One member's node agent (see the module comment). */
export class HaNode {
  private readonly deps: NodeDeps;
  private readonly state: NodeState;
  private readonly parts: NodeParts;
  private db: Actor<typeof databaseMachine> | undefined;
  private schedules: ScheduledWork | undefined;
  private unsubscribeDcs: (() => void) | undefined;
  private stopping = false;
  /** Wakes the loop when a new leader first runs as primary (the replicas follow it at once). */
  private readonly leaderReady: LeaderReadyWatch;
  private readonly customBootstrap: BootstrapPlan | undefined;
  private readonly progress: ProgressTracker | undefined;
  private readonly changeListeners = new Set<(c: NodeChange) => void>();

  constructor(opts: HaNodeOptions) {
    const clock = opts.clock ?? (opts.now ? { ...systemClock, now: opts.now } : systemClock);
    this.deps = {
      name: opts.name,
      scope: opts.scope,
      version: opts.version,
      apiUrl: opts.apiUrl,
      connUrl: opts.connUrl,
      dcs: opts.dcs,
      // on_reload after every reload the node makes (nothing runs while on_reload is not configured).
      pg: withReloadHook(opts.pg, () => this.parts.callbacks.reloaded()),
      journal: opts.journal,
      log: opts.log,
      clock,
      fetchStatus: opts.fetchStatus ?? fetchStatusDocument,
      bootstrapDcs: opts.bootstrapDcs,
      initdbOptions: opts.initdbOptions,
      ...(opts.customBootstrapCommand ? { customBootstrapCommand: opts.customBootstrapCommand } : {}),
      startTimeoutMs: opts.startTimeoutMs ?? 60_000,
      ...(opts.settingsCatalogue ? { settingsCatalogue: opts.settingsCatalogue } : {}),
    };
    this.leaderReady = new LeaderReadyWatch(opts.name);
    this.state = new NodeState({
      config: sanitizeDynamicConfig(opts.bootstrapDcs, withDefaults(opts.bootstrapDcs)).config,
      tags: opts.tags,
      localParameters: opts.localParameters,
      ...(opts.recoveryConf ? { recoveryConf: opts.recoveryConf } : {}),
      ...(opts.replicaMethods ? { replicaMethods: opts.replicaMethods } : {}),
    });
    this.customBootstrap = opts.customBootstrap;
    this.progress = opts.trackProgress
      ? new ProgressTracker({ now: () => clock.now(), dataBytes: () => directoryBytes(opts.pg.dataDir) })
      : undefined;
    this.parts = buildParts(
      this.deps,
      this.state,
      { ...opts, rawPg: opts.pg, ...(this.progress ? { progress: this.progress } : {}) },
      {
        actor: () => this.db,
        schedules: () => this.schedules,
        wake: () => this.wake(),
        emitChange: () => this.emitChange(),
      },
    );
  }

  get name(): string {
    return this.deps.name;
  }

  /** Subscribes to state/role/leadership changes. */
  onChange(listener: (c: NodeChange) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** The journal of this node. */
  get journal(): Journal {
    return this.deps.journal;
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
    return this.parts.ctx.db();
  }

  /** Starts the node: DCS, machine, probe, crash watcher, HA loop. Rejects when the DCS cannot be reached. */
  /** The database machine with this node's effects (src/node/local/effects.ts). */
  private machineWithEffects() {
    const { pg, clock } = this.deps;
    const p = this.parts;
    return databaseMachineWithEffects({
      pg,
      memberName: this.deps.name,
      initdbOptions: () => this.deps.initdbOptions,
      customBootstrapCommand: () => this.deps.customBootstrapCommand,
      customBootstrap: () => this.customBootstrap,
      ...(this.progress ? { progress: this.progress } : {}),
      cloneSource: () => p.source.cloneFrom,
      // The built-in pg_basebackup alone from a known source (the default list, a reinitialize
      // from-leader, a standby cluster's default bootstrap) keeps the clone's own path; any other
      // list, or no source (only no_leader methods run), goes through the methods in order.
      replicaMethods: () => {
        const standby = p.source.cloneStandbyMethods;
        const list = standby ?? this.state.replicaMethods.list;
        const builtin = p.source.cloneBasebackupOnly || (list.length === 1 && list[0] === BASEBACKUP);
        if (builtin && p.source.cloneFrom !== undefined) return undefined;
        return (from) =>
          p.replicas.create({
            from,
            ...(p.source.cloneBasebackupOnly ? { basebackupOnly: true } : {}),
            ...(standby ? { standbyMethods: [...standby] } : {}),
          });
      },
      rewound: (outcome) => p.rewinds.ended(outcome),
      configure: (role, targeted) => p.config.write(role, targeted),
      afterStop: () => p.release.afterStop(),
      startTimeoutMs: () => this.deps.startTimeoutMs,
      stopTimeoutMs: () => 60_000,
      clock,
      mayLaunchPrimary: () => p.fencing.primaryLaunchRefusal(p.lock.held, p.lock.untilMs, clock.now()),
    });
  }

  async start(): Promise<void> {
    const { dcs, pg, journal, clock } = this.deps;
    const { state } = this;
    const p = this.parts;
    // The receipts an earlier agent kept (shown in /ha and /metrics); never holds the start up.
    void p.receipts.load();
    await dcs.start();
    p.config.adoptStored(dcs.view());
    const machine = this.machineWithEffects();
    const term = () => ({ timeline: p.watch.probe?.timeline, leader: dcs.view().leader?.name });
    const db = startJournaledActor(machine, { name: 'database', input: { at: clock.now() }, journal, term });
    this.db = db;
    p.callbacks.observe({ value: String(db.getSnapshot().value), role: db.getSnapshot().context.role });
    let prevKey = '';
    let prevValue = '';
    db.subscribe((s) => {
      const c = s.context;
      p.failures.observe(
        { value: s.value as DatabaseState, role: c.role, promoting: c.promoting, replicaMethod: c.replicaMethod, lastError: c.lastError },
        clock.now(),
      );
      const key = `${s.value}|${s.context.role}`;
      if (key !== prevKey) {
        prevKey = key;
        p.callbacks.observe({ value: String(s.value), role: s.context.role });
        void p.fencing.sync();
        p.trackers.startOutcome(prevValue, String(s.value), state.config, clock.now());
        prevValue = String(s.value);
        this.emitChange();
        this.wake();
      }
    });
    const schedules = new ScheduledWork({ journal, loopWaitMs: timingOf(state.config).loopWaitMs, clock, wake: () => this.wake(), term });
    this.schedules = schedules;
    // A scheduled restart survives an agent restart in this member's key (still there within ttl).
    const mine = dcs.view().members.find((m) => m.name === this.deps.name)?.data.scheduled_restart;
    if (mine) schedules.scheduleRestart(mine, { allowPast: true });
    schedules.observeFailoverKey(dcs.view());
    // A postmaster already running when the agent starts is adopted, not restarted.
    if (await pg.postmasterPid()) {
      const role = (await pg.hasStandbySignal()) ? 'replica' : 'primary';
      db.send({ type: 'pg.found', role, reason: 'postmaster already running at agent start', at: clock.now() });
      await p.watch.probeOnce();
    }
    this.unsubscribeDcs = dcs.subscribe((e) => this.onDcsEvent(e));
    p.watch.start();
    p.loop.start();
    p.quorumFence.start();
  }

  /**
   * Graceful shutdown (SIGTERM/SIGINT): the leader stops PostgreSQL, publishes its final
   * checkpoint LSN in `status` and releases the leader key so a replica takes over at once;
   * a replica stops PostgreSQL; then the lease is revoked. Leaves no process behind. In pause
   * PostgreSQL is left running and the lease is kept (its keys expire after ttl), as the reference.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const p = this.parts;
    p.watch.stop();
    p.quorumFence.stop();
    this.unsubscribeDcs?.();
    await p.loop.stop();
    p.deadline.stop();
    const { dcs, pg, log } = this.deps;
    const { state } = this;
    const { lock, release } = p;
    const db = this.db;
    const iLead = lock.held;
    if (db) {
      try {
        await waitOn(this.deps.clock, db, (s) => !isBusy(String(s.value)), 60_000);
        if (state.config.pause === true) {
          log.info('paused: leaving the database running');
        } else if (
          db.getSnapshot().value !== 'stopped' &&
          db.getSnapshot().can({ type: 'cmd.stop', mode: 'fast', reason: 'agent shutting down', at: 0 })
        ) {
          // A state that takes no stop (a failed initdb or custom bootstrap) has nothing running
          // that the machine knows of: a leftover postmaster is stopped below.
          release.request(iLead);
          db.send({ type: 'cmd.stop', mode: 'fast', reason: 'agent shutting down', at: this.deps.clock.now() });
          await waitOn(this.deps.clock, db, (s) => s.value === 'stopped' || s.value === 'stop_failed', 60_000);
        }
        if (iLead && (await pg.postmasterPid()) === undefined && release.requested) await release.releaseWithStatus();
      } catch (e) {
        log.error(`error while shutting down: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    // Whatever state the machine was left in (a failed bootstrap, a stop that timed out), the
    // agent's stop leaves no postmaster behind unless paused (the reference leaves it running then).
    if (state.config.pause !== true && (await pg.postmasterPid().catch(() => undefined)) !== undefined) {
      log.warn('a postmaster is still running after the machine stopped: stopping it');
      await pg.stop('fast', 60_000).catch((e) => log.error({ err: String(e) }, 'stopping the leftover postmaster failed'));
      if (iLead && lock.held) await release.releaseWithStatus();
    }
    // The fence last: PostgreSQL is stopped now (or left running in pause, unfenced as the reference).
    await p.fencing.stop();
    db?.stop();
    this.schedules?.stop();
    // In pause with PostgreSQL left running, the lease is kept: the member key and the leader key
    // stay until ttl, as the reference leaves them ("Leader key is not deleted and Postgresql is
    // not stopped due paused state"), and the agent that runs here next, ours or the reference's
    // (a hand back, docs/migration.md), takes the leader key over without a leaderless gap.
    const keepLease = state.config.pause === true && (await pg.postmasterPid().catch(() => undefined)) !== undefined;
    if (keepLease) log.info('paused: leaving the member and leader keys to expire after ttl');
    await dcs.close({ keepLease }).catch((e) => log.warn({ err: e }, 'closing the DCS failed'));
    await pg.close().catch(() => undefined);
  }

  /** Wakes the HA loop now. */
  wake(): void {
    this.parts.loop.wake();
  }

  /** Applies a re-read local configuration (POST /reload): tags, local parameters and, when given, the archive settings. */
  applyLocalConfig(
    tags: Tags,
    parameters: Record<string, string | number | boolean>,
    archive?: { recoveryConf: Record<string, string | number>; replicaMethods: ReplicaMethodsConfig },
  ): void {
    this.parts.config.applyLocal(tags, parameters, archive);
  }

  /** Replaces the callback programs (POST /reload); calls already running go on. */
  setCallbacks(commands: CallbackCommands): void {
    this.parts.callbacks.setCommands(commands);
  }

  /** Restarts the local database now (POST /restart); resolves when it runs again or failed. */
  restartNow(timeoutMs?: number): Promise<AdminOutcome> {
    return this.parts.admin.restartNow(timeoutMs);
  }

  /** Schedules a restart (kept in the member key); false when one is already scheduled. */
  scheduleRestart(plan: ScheduledRestartData): Promise<boolean> {
    return this.parts.admin.scheduleRestart(plan);
  }

  /** Cancels the scheduled restart; false when none. */
  cancelRestart(): Promise<boolean> {
    return this.parts.admin.cancelRestart();
  }

  /** Answers a POST /failsafe from the leader (src/node/lock/failsafe.ts). */
  acceptFailsafe(body: Record<string, unknown>): FailsafeAnswer & { lsn?: string } {
    return this.parts.failsafe.accept(body);
  }

  /** Wipes the data directory and re-clones from the leader (POST /reinitialize). */
  reinitialize(opts: { force: boolean; fromLeader: boolean }): Promise<AdminOutcome> {
    return this.parts.admin.reinitialize(opts);
  }

  /** The receipts of discarded transactions kept by this member, oldest first (GET /discarded). */
  discarded(): Promise<Receipt[]> {
    return this.parts.receipts.list();
  }

  /** What /ha and /metrics show of them. */
  discardedSummary(): ReceiptSummary {
    return this.parts.receipts.summary();
  }

  /** The snapshot HTTP handlers and metrics read. */
  snapshot(): NodeSnapshot {
    return this.parts.snapshots.snapshot();
  }

  /**
   * Awaited by readers of probe data before `snapshot()`: undefined when the probe is at most 1 s
   * old, else a promise settling once a fresh probe is in (bounded wait). See LocalWatch.fresh.
   */
  freshProbe(): Promise<void> | undefined {
    return this.parts.watch.fresh();
  }

  private onDcsEvent(e: DcsEvent): void {
    const schedules = this.schedules;
    switch (e.type) {
      case 'dcs.leaderChanged':
        schedules?.observeLeader(e.leader);
        // A new leader is a new clone source and upstream: failed starts and clones start over.
        this.parts.trackers.resetStartBackoff();
        this.leaderReady.observe(this.deps.dcs.view(), this.state.config);
        this.wake();
        break;
      case 'dcs.failoverChanged':
        schedules?.observeFailoverKey(this.deps.dcs.view());
        this.wake();
        break;
      case 'dcs.configChanged':
      case 'dcs.initializeChanged':
        this.wake();
        break;
      case 'dcs.memberChanged': {
        const view = this.deps.dcs.view();
        // No leader: a member's key may decide the race. A leader that just ran as primary: follow it now.
        if (!view.leader || this.leaderReady.observe(view, this.state.config)) this.wake();
        break;
      }
      case 'dcs.historyChanged':
        // A replica may be waiting for the new timeline's history before it follows the leader.
        this.wake();
        break;
      case 'dcs.syncChanged':
        // Quorum failover: a fence record changed; its taker acts at once (docs/ha.md "Quorum failover").
        if (quorumFailoverSettings(this.state.config) && fenceOf(this.deps.dcs.view().sync?.value.fence)) this.wake();
        break;
      default:
        break;
    }
  }

  private emitChange(): void {
    const db = this.db;
    if (!db) return;
    const s = db.getSnapshot();
    const c: NodeChange = { name: this.deps.name, state: s.value as DatabaseState, role: s.context.role, leader: this.parts.lock.held };
    for (const l of this.changeListeners) l(c);
  }
}
