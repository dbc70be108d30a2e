/**
 * The node's parts and how they are wired (HaNode's composition, docs/architecture.md "The
 * node"): one builder per room — lock/, local/, replication/, member/, cycle/ — each handing every
 * module only the narrow deps it declares. What exists only once the node runs (the database
 * machine, the scheduled machines, the loop) is reached through NodeHooks, set by HaNode.start.
 * No I/O here: this file only builds objects.
 */
import { timingOf } from '../domain/dynamic-config.ts';
import type { PgStatus } from '../domain/pg-status.ts';
import type { FenceDevice } from '../watchdog/process-fence.ts';
import { HaCycle } from './cycle/cycle.ts';
import { Executor } from './cycle/executor.ts';
import { CycleGather } from './cycle/gather.ts';
import { HaLoop } from './cycle/ha-loop.ts';
import { QuorumFenceWatch } from './replication/quorum-fence.ts';
import type { ScheduledWork } from './cycle/schedules.ts';
import { CycleTrackers } from './cycle/trackers.ts';
import { AdminCommands } from './local/admin.ts';
import { CallbackRunner, type CallbackCommands, type CallbackSpawner } from './local/callbacks.ts';
import { ConfigApplier } from './local/config-apply.ts';
import { LocalWatch } from './local/local-watch.ts';
import { MemoryReceiptStore, ReceiptKeeper, type ReceiptStore } from './local/receipts.ts';
import { RewindRecord } from './local/rewind-record.ts';
import { ReplicaCreator } from './local/replica-creation.ts';
import type { ProgressTracker } from './local/progress.ts';
import { FailureRecord } from './local/failure-record.ts';
import { HandoverRefusals } from './cycle/handover-refusal.ts';
import { Failsafe, type FailsafePost } from './lock/failsafe.ts';
import { Fencing, type WatchdogSettings } from './lock/fencing.ts';
import { LeaderDeadline } from './lock/leader-deadline.ts';
import { LeaderLock } from './lock/leader-lock.ts';
import { StopRelease } from './lock/stop-release.ts';
import { MemberKey } from './member/member-key.ts';
import { SnapshotBuilder } from './member/snapshot-builder.ts';
import type { DatabaseActor, NodeDeps, NodeState, Notice } from './node-core.ts';
import { LeaderDuties } from './replication/leader-duties.ts';
import { ReplicaSlots } from './replication/replica-slots.ts';
import { ReplicationSource, upstreamOf } from './replication/replication-source.ts';
import { SyncManager } from './replication/sync-manager.ts';

/** Database states in which a postmaster with the primary role may acknowledge writes (fencing). */
const PRIMARY_UP_STATES: ReadonlySet<string> = new Set([
  'running',
  'starting',
  'bootstrap_starting',
  'restarting',
  'stopping',
  'stop_failed',
  'restart_failed',
]);

/** What the parts reach through the node once it runs (HaNode provides them). */
export interface NodeHooks {
  /** The database machine actor; undefined before the node started. */
  actor(): DatabaseActor | undefined;
  /** The scheduled switchover and restart machines; undefined before the node started. */
  schedules(): ScheduledWork | undefined;
  /** Runs the HA cycle now. */
  wake(): void;
  /** Tells observers that state, role or leadership changed. */
  emitChange(): void;
}

/** The options of the parts beyond NodeDeps (HaNodeOptions passes them on). */
export interface PartsOptions {
  /** The PgControl without the reload hook (the probe, the fence, the leader duties and the receipts use it). */
  rawPg: NodeDeps['pg'];
  watchdog?: WatchdogSettings;
  fence?: FenceDevice;
  fenceMono?: () => number;
  postFailsafe?: FailsafePost;
  receiptStore?: ReceiptStore;
  probeEveryMs?: number;
  callbacks?: CallbackCommands;
  spawnCallback?: CallbackSpawner;
  callbackTimeoutMs?: number;
  /** The progress of long operations, shown in GET /ha (the agent's; the simulator tracks none). */
  progress?: ProgressTracker;
  /** Whether a member's PostgreSQL accepts a TCP connection (quorum failover's watch); absent: not checked. */
  pgAnswers?: (host: string, port: number, timeoutMs: number) => Promise<boolean>;
}

/** What every builder hands on: the injected deps, the node's facts and the node-wide services. */
interface Ctx extends NodeDeps {
  opts: PartsOptions;
  state: NodeState;
  hooks: NodeHooks;
  now(): number;
  notice: Notice;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseActor;
  schedules(): ScheduledWork | undefined;
  wake(): void;
  emitChange(): void;
}

/** Every part of one node. */
export type NodeParts = ReturnType<typeof buildParts>;

/** Builds the parts of one node over `deps` and `state`. */
export function buildParts(deps: NodeDeps, state: NodeState, opts: PartsOptions, hooks: NodeHooks) {
  const now = () => deps.clock.now();
  const ctx: Ctx = {
    ...deps,
    opts,
    state,
    hooks,
    now,
    notice: (type, text, level) => {
      deps.log[level ?? 'warn']({ notice: type }, text);
      deps.journal.append({ machine: 'ha', kind: 'event', event: { type: `ha.${type}`, reason: text, at: now() } });
    },
    db: () => {
      const actor = hooks.actor();
      if (!actor) throw new Error('the node has not started');
      return actor;
    },
    schedules: () => hooks.schedules(),
    wake: () => hooks.wake(),
    emitChange: () => hooks.emitChange(),
  };
  const callbacks = buildCallbacks(ctx);
  const lock = buildLock(ctx);
  const local = buildLocal(ctx);
  const replication = buildReplication(ctx, local.watch);
  const member = buildMember(ctx, { ...lock, ...local, ...replication });
  const cycle = buildCycle(ctx, { ...lock, ...local, ...replication, ...member });
  return { ctx, callbacks, ...lock, ...local, ...replication, ...member, ...cycle };
}

/** database.callbacks (local/callbacks.ts). */
function buildCallbacks(c: Ctx): CallbackRunner {
  return new CallbackRunner({
    commands: c.opts.callbacks ?? {},
    scope: c.scope,
    journal: c.journal,
    log: c.log,
    clock: c.clock,
    ...(c.opts.spawnCallback ? { spawn: c.opts.spawnCallback } : {}),
    ...(c.opts.callbackTimeoutMs !== undefined ? { timeoutMs: c.opts.callbackTimeoutMs } : {}),
  });
}

/** lock/: the fence, the leader lock, the release after a stop. */
function buildLock(c: Ctx) {
  const { state, opts, hooks } = c;
  const fencing: Fencing = new Fencing({
    settings: opts.watchdog ?? { mode: 'off', safety_margin: 5 },
    ...(opts.fence ? { device: opts.fence } : {}),
    config: () => state.config,
    postmasterPid: () => opts.rawPg.postmasterPid(),
    lockHeld: () => lock.held,
    primaryRunning: () => {
      const s = hooks.actor()?.getSnapshot();
      return s !== undefined && s.context.role === 'primary' && PRIMARY_UP_STATES.has(String(s.value));
    },
    notice: c.notice,
    log: c.log,
    ...(opts.fenceMono ? { mono: opts.fenceMono } : {}),
  });
  const lock: LeaderLock = new LeaderLock({
    dcs: c.dcs,
    name: c.name,
    now: c.now,
    ttlMs: () => timingOf(state.config).ttlMs,
    leaseId: () => c.dcs.currentLeaseId(),
    ...(fencing.mode !== 'off' ? { fence: { stamp: () => fencing.stamp(), held: (sent: number) => fencing.renewed(sent) } } : {}),
  });
  const duties = new LeaderDuties({ dcs: c.dcs, pg: opts.rawPg, name: c.name, log: c.log, now: c.now });
  const release = new StopRelease({ ...c, lock, duties });
  return { fencing, lock, duties, release };
}

/** local/: the probe and crash watcher, the rewind record, the failure record, the receipts, the replica creator. */
function buildLocal(c: Ctx) {
  const { state, opts, hooks } = c;
  const watch = new LocalWatch({
    pg: opts.rawPg,
    database: () => {
      const s = hooks.actor()?.getSnapshot();
      return s ? { value: String(s.value), promoting: s.context.promoting, sinceMs: s.context.sinceMs } : undefined;
    },
    probeTimeoutMs: () => Math.min(2000, timingOf(state.config).retryTimeoutMs),
    ...(opts.probeEveryMs !== undefined ? { probeEveryMs: opts.probeEveryMs } : {}),
    clock: c.clock,
    onDied: () => hooks.actor()?.send({ type: 'pg.died', reason: 'postmaster is not running', at: c.now() }),
    // A wiped data directory under a running postmaster: stop it (by its remembered PID, as its
    // postmaster.pid is gone); once stopped with an empty directory the HA loop clones again.
    onDataDirGone: (reason) => {
      c.log.warn({ reason }, 'data directory gone while PostgreSQL runs: stopping it (immediate)');
      hooks.actor()?.send({ type: 'cmd.stop', mode: 'immediate', reason: `data directory gone: ${reason}`, at: c.now() });
      c.wake();
    },
  });
  const rewinds = new RewindRecord(c);
  const failures = new FailureRecord(c);
  const receipts = new ReceiptKeeper({
    name: c.name,
    pg: opts.rawPg,
    store: opts.receiptStore ?? new MemoryReceiptStore(),
    now: c.now,
    notice: c.notice,
    leaderUpstream: (leader) => upstreamOf(c.dcs.view(), leader),
    changed: c.emitChange,
  });
  // The replica creation methods of ha.yml, read at each clone (docs/backups.md "Replica creation").
  const replicas = new ReplicaCreator({
    scope: c.scope,
    pg: c.pg,
    methods: () => state.replicaMethods,
    notice: c.notice,
    now: c.now,
    log: c.log,
    ...(opts.progress ? { progress: opts.progress } : {}),
  });
  return { watch, rewinds, failures, receipts, replicas };
}

/** replication/: synchronous replication, the replication source, the replica's slots. */
function buildReplication(c: Ctx, watch: LocalWatch) {
  const probe = (): PgStatus | undefined => watch.probe;
  const sync = new SyncManager({ ...c, probeNow: () => watch.probeOnce(), probe });
  const source = new ReplicationSource();
  const replicaSlots = new ReplicaSlots({ ...c, source, probe });
  return { sync, source, replicaSlots, probe };
}

/** The parts the later builders use. */
type Built = ReturnType<typeof buildLock> & ReturnType<typeof buildLocal> & ReturnType<typeof buildReplication>;

/** member/ and the configuration: the trackers (read by the member key), the member key, the config applier. */
function buildMember(c: Ctx, b: Built) {
  const trackers = new CycleTrackers(c);
  const refusals = new HandoverRefusals();
  const memberKey: MemberKey = new MemberKey({
    ...c,
    facts: trackers.facts,
    lock: b.lock,
    probe: b.probe,
    failures: b.failures,
    refusals,
    ...(c.opts.progress ? { progress: () => c.opts.progress?.current() } : {}),
  });
  const config = new ConfigApplier({ ...c, sync: b.sync, source: b.source, rewinds: b.rewinds, republish: () => memberKey.publish(true) });
  const deadline = new LeaderDeadline({ ...c, lock: b.lock });
  const failsafe = new Failsafe({
    ...c,
    lock: b.lock,
    fencing: b.fencing,
    deadline,
    probe: b.probe,
    ...(c.opts.postFailsafe ? { post: c.opts.postFailsafe } : {}),
  });
  return { trackers, refusals, memberKey, config, deadline, failsafe };
}

/** cycle/: the executor, the admin commands, the snapshot, the gather step, the cycle and the loop. */
function buildCycle(c: Ctx, b: Built & ReturnType<typeof buildMember>) {
  const { trackers, watch } = b;
  const executor = new Executor({ ...c, ...b });
  const admin = new AdminCommands({
    ...c,
    lock: b.lock,
    memberKey: b.memberKey,
    source: b.source,
    facts: trackers.facts,
    receipts: b.receipts,
    probe: b.probe,
  });
  const snapshots = new SnapshotBuilder({
    ...c,
    ...b,
    facts: trackers.facts,
    started: () => c.hooks.actor() !== undefined,
    probedAtMs: () => watch.probedAtMs,
    discarded: () => b.receipts.summary(),
    ...(c.opts.progress ? { progress: () => c.opts.progress?.current() } : {}),
  });
  const gather = new CycleGather({
    ...c,
    ...b,
    mayLead: () => b.fencing.mayLead(),
    probeNow: () => watch.probeOnce(),
    probeStartedAfter: (tMs) => watch.probeStartedAfter(tMs),
  });
  const cycle = new HaCycle({ ...c, ...b, gather, executor, admin, stopped: () => loop.isStopped });
  const loop: HaLoop = new HaLoop({
    clock: c.clock,
    loopWaitMs: () => timingOf(c.state.config).loopWaitMs,
    // One deadline per leader cycle, shared by every DCS call of it (src/node/lock/leader-deadline.ts).
    cycle: async () => {
      b.deadline.begin();
      try {
        await cycle.run();
      } finally {
        b.deadline.end();
      }
    },
    afterCycle: (atMs) => {
      c.state.lastLoopMs = atMs;
      // The crash watcher's fallback poll, in the cycle's wake-up (local-watch.ts cyclePoll).
      watch.cyclePoll();
    },
    log: c.log,
  });
  const quorumFence = new QuorumFenceWatch({
    name: c.name,
    clock: c.clock,
    dcs: c.dcs,
    config: () => c.state.config,
    holdsLock: () => b.lock.held,
    database: () => {
      const s = c.hooks.actor()?.getSnapshot();
      return s ? { value: String(s.value), role: s.context.role } : undefined;
    },
    freshProbe: async () => {
      await watch.fresh();
      return watch.probe;
    },
    probeAfter: async (tMs) => {
      await watch.probeStartedAfter(tMs);
      return watch.probe;
    },
    fetchStatus: c.fetchStatus,
    ...(c.opts.pgAnswers ? { pgAnswers: c.opts.pgAnswers } : {}),
    stopStreaming: async (leader) => {
      b.source.fence(leader);
      await b.config.writeAndReload('replica');
    },
    unfence: () => b.source.unfence(),
    fenced: () => b.source.fenced,
    wake: c.wake,
    notice: c.notice,
  });
  return { executor, admin, snapshots, gather, cycle, loop, quorumFence };
}
