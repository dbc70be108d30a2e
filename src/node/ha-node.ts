/**
 * The node agent: one per member. It composes the node's modules (docs/architecture.md "The
 * node"), each with one job:
 * - HaLoop (ha-loop.ts): the loop and its timing on the injected clock;
 * - HaCycle (cycle.ts): one cycle — gather the facts, decideCycle, carry the actions out;
 * - LeaderLock (leader-lock.ts): the one owner of "do I lead?";
 * - Executor (executor.ts): the actions, as commands to the database machine and DCS writes;
 * - ConfigApplier (config-apply.ts): dynamic and local configuration, PostgreSQL's options;
 * - MemberKey (member-key.ts): this member's key;
 * - AdminCommands (admin.ts): restart, scheduled restart, reinitialize;
 * - SnapshotBuilder (snapshot-builder.ts): what the HTTP API and metrics read;
 * - LocalWatch (local-watch.ts): the probe and the crash watcher between cycles;
 * - ScheduledWork (schedules.ts): the scheduled switchover and restart machines.
 *
 * The database lifecycle machine owns the postmaster: the node only sends it commands.
 * Time, the DCS, PostgreSQL control and peer calls are injected (HaNodeOptions), so the same
 * node runs against real processes and in tests.
 */
import type { Logger } from 'pino';
import type { Actor, AnyStateMachine } from 'xstate';
import { sanitizeDynamicConfig } from '../config/dynamic-sanitize.ts';
import type { Dcs, DcsEvent } from '../dcs/dcs.ts';
import { withDefaults } from '../domain/dynamic-config.ts';
import type { ScheduledRestartData, Tags } from '../domain/member.ts';
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import type { DatabaseState, Role } from '../domain/states.ts';
import { databaseMachine } from '../machines/database.ts';
import { restartMachine } from '../machines/restart.ts';
import { switchoverMachine } from '../machines/switchover.ts';
import type { PgControl } from '../postgres/types.ts';
import type { FenceDevice } from '../watchdog/process-fence.ts';
import { AdminCommands, type AdminOutcome } from './local/admin.ts';
import { systemClock, waitOn, type Clock } from './clock.ts';
import { CallbackRunner, withReloadHook, type CallbackCommands, type CallbackSpawner } from './local/callbacks.ts';
import { ConfigApplier } from './local/config-apply.ts';
import { HaCycle } from './cycle/cycle.ts';
import { CycleGather } from './cycle/gather.ts';
import { CycleTrackers } from './cycle/trackers.ts';
import { RewindRecord } from './local/rewind-record.ts';
import { isBusy } from './local/busy.ts';
import { databaseMachineWithEffects } from './local/effects.ts';
import { Executor } from './cycle/executor.ts';
import { HaLoop } from './cycle/ha-loop.ts';
import type { Journal } from '../journal/journal.ts';
import { startJournaledActor } from '../journal/journaled-actor.ts';
import { LeaderDuties } from './replication/leader-duties.ts';
import { SyncManager } from './replication/sync-manager.ts';
import { Fencing, type WatchdogSettings } from './lock/fencing.ts';
import { LeaderLock } from './lock/leader-lock.ts';
import { LeaderDeadline } from './lock/leader-deadline.ts';
import { Failsafe, type FailsafePost } from './lock/failsafe.ts';
import type { FailsafeAnswer } from '../domain/failsafe.ts';
import { LocalWatch } from './local/local-watch.ts';
import { MemberKey } from './member/member-key.ts';
import { NodeState, type NodeCore, type NodeDeps } from './node-core.ts';
import { fetchStatusDocument } from './cycle/peers.ts';
import { ScheduledWork } from './cycle/schedules.ts';
import { SnapshotBuilder } from './member/snapshot-builder.ts';
import { MemoryReceiptStore, ReceiptKeeper, type ReceiptStore, type ReceiptSummary } from './local/receipts.ts';
import type { Receipt } from '../domain/discarded.ts';
import { ReplicationSource, upstreamOf } from './replication/replication-source.ts';

/** Database states in which a postmaster with the primary role may acknowledge writes (fencing). */
const PRIMARY_UP_STATES: ReadonlySet<string> = new Set(['running', 'starting', 'bootstrap_starting', 'restarting', 'stopping', 'stop_failed', 'restart_failed']);

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

export class HaNode {
  private readonly deps: NodeDeps;
  private readonly core: NodeCore;
  private readonly watch: LocalWatch;
  private readonly config: ConfigApplier;
  private readonly memberKey: MemberKey;
  private readonly executor: Executor;
  private readonly admin: AdminCommands;
  private readonly snapshots: SnapshotBuilder;
  private readonly loop: HaLoop;
  private readonly deadline: LeaderDeadline;
  private readonly failsafe: Failsafe;
  private readonly callbacks: CallbackRunner;
  private readonly receipts: ReceiptKeeper;
  private db: Actor<typeof databaseMachine> | undefined;
  private schedules: ScheduledWork | undefined;
  private unsubscribeDcs: (() => void) | undefined;
  private stopping = false;
  private readonly changeListeners = new Set<(c: NodeChange) => void>();

  constructor(opts: HaNodeOptions) {
    const clock = opts.clock ?? (opts.now ? { ...systemClock, now: opts.now } : systemClock);
    this.callbacks = new CallbackRunner({
      commands: opts.callbacks ?? {},
      scope: opts.scope,
      journal: opts.journal,
      log: opts.log,
      clock,
      ...(opts.spawnCallback ? { spawn: opts.spawnCallback } : {}),
      ...(opts.callbackTimeoutMs !== undefined ? { timeoutMs: opts.callbackTimeoutMs } : {}),
    });
    // on_reload after every reload the node makes (nothing runs while on_reload is not configured).
    const pg = withReloadHook(opts.pg, () => this.callbacks.reloaded());
    this.deps = {
      name: opts.name,
      scope: opts.scope,
      version: opts.version,
      apiUrl: opts.apiUrl,
      connUrl: opts.connUrl,
      dcs: opts.dcs,
      pg,
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
    const state = new NodeState({
      config: sanitizeDynamicConfig(opts.bootstrapDcs, withDefaults(opts.bootstrapDcs)).config,
      tags: opts.tags,
      localParameters: opts.localParameters,
    });
    const now = () => clock.now();
    const fencing: Fencing = new Fencing({
      settings: opts.watchdog ?? { mode: 'off', safety_margin: 5 },
      ...(opts.fence ? { device: opts.fence } : {}),
      config: () => state.config,
      postmasterPid: () => opts.pg.postmasterPid(),
      lockHeld: () => lock.held,
      primaryRunning: () => {
        const s = this.db?.getSnapshot();
        return s !== undefined && s.context.role === 'primary' && PRIMARY_UP_STATES.has(String(s.value));
      },
      notice: (type, text) => this.core.notice(type, text),
      log: opts.log,
      ...(opts.fenceMono ? { mono: opts.fenceMono } : {}),
    });
    const lock: LeaderLock = new LeaderLock({
      dcs: opts.dcs,
      name: opts.name,
      now,
      ttlMs: () => state.config.ttl * 1000,
      leaseId: () => opts.dcs.currentLeaseId(),
      ...(fencing.mode !== 'off' ? { fence: { stamp: () => fencing.stamp(), held: (sent: number) => fencing.renewed(sent) } } : {}),
    });
    const duties = new LeaderDuties({ dcs: opts.dcs, pg: opts.pg, name: opts.name, log: opts.log, now });
    this.watch = new LocalWatch({
      pg: opts.pg,
      database: () => {
        const s = this.db?.getSnapshot();
        return s ? { value: String(s.value), promoting: s.context.promoting, sinceMs: s.context.sinceMs } : undefined;
      },
      probeTimeoutMs: () => Math.min(2000, state.config.retry_timeout * 1000),
      ...(opts.probeEveryMs !== undefined ? { probeEveryMs: opts.probeEveryMs } : {}),
      clock,
      onDied: () => this.db?.send({ type: 'pg.died', reason: 'postmaster is not running', at: now() }),
      // A wiped data directory under a running postmaster: stop it (by its remembered PID, as its
      // postmaster.pid is gone); once stopped with an empty directory the HA loop clones again.
      onDataDirGone: (reason) => {
        opts.log.warn({ reason }, 'data directory gone while PostgreSQL runs: stopping it (immediate)');
        this.db?.send({ type: 'cmd.stop', mode: 'immediate', reason: `data directory gone: ${reason}`, at: now() });
        this.wake();
      },
    });
    const sync = new SyncManager({
      name: opts.name,
      dcs: opts.dcs,
      log: opts.log,
      clock,
      state,
      notice: (type, text) => this.core.notice(type, text),
      probeNow: () => this.watch.probeOnce(),
      probe: () => this.watch.probe,
    });
    const notice = (type: string, text: string) => this.core.notice(type, text);
    this.core = {
      deps: this.deps,
      state,
      lock,
      duties,
      sync,
      fencing,
      source: new ReplicationSource(),
      trackers: new CycleTrackers({ notice }),
      rewinds: new RewindRecord({ notice }),
      db: () => {
        if (!this.db) throw new Error('the node has not started');
        return this.db;
      },
      schedules: () => this.schedules,
      probe: () => this.watch.probe,
      probeNow: () => this.watch.probeOnce(),
      probeStartedAfter: (tMs) => this.watch.probeStartedAfter(tMs),
      now,
      notice: (type, text) => {
        opts.log.warn({ member: opts.name, notice: type }, text);
        opts.journal.append({ machine: 'ha', kind: 'event', event: { type: `ha.${type}`, reason: text, at: now() } });
      },
      emitChange: () => this.emitChange(),
      wake: () => this.wake(),
    };
    this.receipts = new ReceiptKeeper({
      name: opts.name,
      pg: opts.pg,
      store: opts.receiptStore ?? new MemoryReceiptStore(),
      now,
      notice: (type, text) => this.core.notice(type, text),
      leaderUpstream: (leader) => upstreamOf(opts.dcs.view(), leader),
      changed: () => this.emitChange(),
    });
    this.memberKey = new MemberKey(this.core);
    this.config = new ConfigApplier({
      name: opts.name,
      dcs: opts.dcs,
      pg,
      log: opts.log,
      ...(opts.settingsCatalogue ? { settingsCatalogue: opts.settingsCatalogue } : {}),
      state,
      notice,
      wake: () => this.wake(),
      schedules: () => this.schedules,
      sync,
      source: this.core.source,
      rewinds: this.core.rewinds,
      db: () => this.core.db(),
      republish: () => this.memberKey.publish(true),
    });
    this.executor = new Executor(this.core, this.config);
    this.admin = new AdminCommands(this.core, this.memberKey, this.receipts);
    this.deadline = new LeaderDeadline(this.core);
    this.failsafe = new Failsafe(this.core, this.deadline, opts.postFailsafe);
    this.snapshots = new SnapshotBuilder(this.core, this.memberKey, () => this.db !== undefined, this.failsafe, () => this.receipts.summary());
    const core = this.core;
    const gather = new CycleGather({
      name: opts.name,
      now,
      dcs: opts.dcs,
      log: opts.log,
      pg,
      lock,
      mayLead: () => fencing.mayLead(),
      notice,
      state,
      config: this.config,
      sync,
      failsafe: this.failsafe,
      rewinds: core.rewinds,
      source: core.source,
      trackers: core.trackers,
      db: () => core.db(),
      probe: () => this.watch.probe,
      probeNow: () => this.watch.probeOnce(),
      probeStartedAfter: (tMs) => this.watch.probeStartedAfter(tMs),
      fetchStatus: this.deps.fetchStatus,
      schedules: () => this.schedules,
    });
    const cycle = new HaCycle({
      name: opts.name,
      log: opts.log,
      dcs: opts.dcs,
      gather,
      executor: this.executor,
      admin: this.admin,
      memberKey: this.memberKey,
      fencing,
      lock,
      now,
      notice,
      stopped: () => this.loop.isStopped,
      schedules: () => this.schedules,
      failsafe: this.failsafe,
      receipts: this.receipts,
    });
    // One deadline per leader cycle, shared by every DCS call of it (src/node/lock/leader-deadline.ts).
    const deadline = this.deadline;
    this.loop = new HaLoop({
      clock,
      loopWaitMs: () => state.config.loop_wait * 1000,
      cycle: async () => {
        deadline.begin();
        try {
          await cycle.run();
        } finally {
          deadline.end();
        }
      },
      afterCycle: (atMs) => {
        state.lastLoopMs = atMs;
        // The crash watcher's fallback poll, in the cycle's wake-up (local-watch.ts cyclePoll).
        this.watch.cyclePoll();
      },
      log: opts.log,
    });
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
    return this.core.db();
  }

  /** Starts the node: DCS, machine, probe, crash watcher, HA loop. Rejects when the DCS cannot be reached. */
  async start(): Promise<void> {
    const { dcs, pg, journal, clock } = this.deps;
    const { state } = this.core;
    // The receipts an earlier agent kept (shown in /ha and /metrics); never holds the start up.
    void this.receipts.load();
    await dcs.start();
    this.config.adoptStored(dcs.view());
    const machine = databaseMachineWithEffects({
      pg,
      memberName: this.deps.name,
      initdbOptions: () => this.deps.initdbOptions,
      customBootstrapCommand: () => this.deps.customBootstrapCommand,
      cloneSource: () => this.core.source.cloneFrom,
      rewound: (outcome) => this.core.rewinds.ended(outcome),
      configure: (role) => this.config.write(role),
      afterStop: () => this.executor.afterStop(),
      startTimeoutMs: () => this.deps.startTimeoutMs,
      stopTimeoutMs: () => 60_000,
      clock,
      mayLaunchPrimary: () => this.core.fencing.primaryLaunchRefusal(this.core.lock.held, this.core.lock.untilMs, this.core.now()),
    });
    const term = () => ({ timeline: this.watch.probe?.timeline, leader: dcs.view().leader?.name });
    const db = startJournaledActor(machine, { name: 'database', input: { at: clock.now() }, journal, term });
    this.db = db;
    this.callbacks.observe({ value: String(db.getSnapshot().value), role: db.getSnapshot().context.role });
    let prevKey = '';
    let prevValue = '';
    db.subscribe((s) => {
      const key = `${s.value}|${s.context.role}`;
      if (key !== prevKey) {
        prevKey = key;
        this.callbacks.observe({ value: String(s.value), role: s.context.role });
        void this.core.fencing.sync();
        this.core.trackers.startOutcome(prevValue, String(s.value), state.config, this.core.now());
        prevValue = String(s.value);
        this.emitChange();
        this.wake();
      }
    });
    const schedules = new ScheduledWork({ journal, loopWaitMs: state.config.loop_wait * 1000, clock, wake: () => this.wake(), term });
    this.schedules = schedules;
    // A scheduled restart survives an agent restart in this member's key (still there within ttl).
    const mine = dcs.view().members.find((m) => m.name === this.deps.name)?.data.scheduled_restart;
    if (mine) schedules.scheduleRestart(mine, { allowPast: true });
    schedules.observeFailoverKey(dcs.view());
    // A postmaster already running when the agent starts is adopted, not restarted.
    if (await pg.postmasterPid()) {
      const role = (await pg.hasStandbySignal()) ? 'replica' : 'primary';
      db.send({ type: 'pg.found', role, reason: 'postmaster already running at agent start', at: clock.now() });
      await this.watch.probeOnce();
    }
    this.unsubscribeDcs = dcs.subscribe((e) => this.onDcsEvent(e));
    this.watch.start();
    this.loop.start();
  }

  /**
   * Graceful shutdown (SIGTERM/SIGINT): the leader stops PostgreSQL, publishes its final
   * checkpoint LSN in `status` and releases the leader key so a replica takes over at once;
   * a replica stops PostgreSQL; then the lease is revoked. Leaves no process behind.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.watch.stop();
    this.unsubscribeDcs?.();
    await this.loop.stop();
    this.deadline.stop();
    const { dcs, pg, log } = this.deps;
    const { state, lock } = this.core;
    const db = this.db;
    const iLead = lock.held;
    if (db) {
      try {
        await waitOn(this.deps.clock, db, (s) => !isBusy(String(s.value)), 60_000);
        if (state.config.pause === true) {
          log.info('paused: leaving the database running');
        } else if (db.getSnapshot().value !== 'stopped') {
          this.executor.stopForShutdown(iLead);
          db.send({ type: 'cmd.stop', mode: 'fast', reason: 'agent shutting down', at: this.core.now() });
          await waitOn(this.deps.clock, db, (s) => s.value === 'stopped' || s.value === 'stop_failed', 60_000);
        }
        if (iLead && (await pg.postmasterPid()) === undefined && this.executor.releasesLockAfterStop) await this.executor.releaseLockWithStatus();
      } catch (e) {
        log.error({ err: e }, 'error while shutting down');
      }
    }
    // Whatever state the machine was left in (a failed bootstrap, a stop that timed out), the
    // agent's stop leaves no postmaster behind unless paused (the reference leaves it running then).
    if (state.config.pause !== true && (await pg.postmasterPid().catch(() => undefined)) !== undefined) {
      log.warn('a postmaster is still running after the machine stopped: stopping it');
      await pg.stop('fast', 60_000).catch((e) => log.error({ err: String(e) }, 'stopping the leftover postmaster failed'));
      if (iLead && lock.held) await this.executor.releaseLockWithStatus();
    }
    // The fence last: PostgreSQL is stopped now (or left running in pause, unfenced as the reference).
    await this.core.fencing.stop();
    db?.stop();
    this.schedules?.stop();
    await dcs.close().catch((e) => log.warn({ err: e }, 'closing the DCS failed'));
    await pg.close().catch(() => undefined);
  }

  /** Wakes the HA loop now. */
  wake(): void {
    this.loop.wake();
  }

  /** Applies a re-read local configuration (POST /reload): tags and local parameters. */
  applyLocalConfig(tags: Tags, parameters: Record<string, string | number | boolean>): void {
    this.config.applyLocal(tags, parameters);
  }

  /** Replaces the callback programs (POST /reload); calls already running go on. */
  setCallbacks(commands: CallbackCommands): void {
    this.callbacks.setCommands(commands);
  }

  /** Restarts the local database now (POST /restart); resolves when it runs again or failed. */
  restartNow(timeoutMs?: number): Promise<AdminOutcome> {
    return this.admin.restartNow(timeoutMs);
  }

  /** Schedules a restart (kept in the member key); false when one is already scheduled. */
  scheduleRestart(plan: ScheduledRestartData): Promise<boolean> {
    return this.admin.scheduleRestart(plan);
  }

  /** Cancels the scheduled restart; false when none. */
  cancelRestart(): Promise<boolean> {
    return this.admin.cancelRestart();
  }

  /** Wipes the data directory and re-clones from the leader (POST /reinitialize). */
  /** Answers a POST /failsafe from the leader (src/node/lock/failsafe.ts). */
  acceptFailsafe(body: Record<string, unknown>): FailsafeAnswer & { lsn?: string } {
    return this.failsafe.accept(body);
  }

  reinitialize(opts: { force: boolean; fromLeader: boolean }): Promise<AdminOutcome> {
    return this.admin.reinitialize(opts);
  }

  /** The receipts of discarded transactions kept by this member, oldest first (GET /discarded). */
  discarded(): Promise<Receipt[]> {
    return this.receipts.list();
  }

  /** What /ha and /metrics show of them. */
  discardedSummary(): ReceiptSummary {
    return this.receipts.summary();
  }

  /** The snapshot HTTP handlers and metrics read. */
  snapshot(): NodeSnapshot {
    return this.snapshots.snapshot();
  }

  /**
   * Awaited by readers of probe data before `snapshot()`: undefined when the probe is at most 1 s
   * old, else a promise settling once a fresh probe is in (bounded wait). See LocalWatch.fresh.
   */
  freshProbe(): Promise<void> | undefined {
    return this.watch.fresh();
  }

  private onDcsEvent(e: DcsEvent): void {
    const schedules = this.schedules;
    switch (e.type) {
      case 'dcs.leaderChanged':
        schedules?.observeLeader(e.leader);
        // A new leader is a new clone source and upstream: failed starts and clones start over.
        this.core.trackers.resetStartBackoff();
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
      case 'dcs.memberChanged':
        if (!this.deps.dcs.view().leader) this.wake();
        break;
      default:
        break;
    }
  }

  private emitChange(): void {
    const db = this.db;
    if (!db) return;
    const s = db.getSnapshot();
    const c: NodeChange = { name: this.deps.name, state: s.value as DatabaseState, role: s.context.role, leader: this.core.lock.held };
    for (const l of this.changeListeners) l(c);
  }
}
