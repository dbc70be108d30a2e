/**
 * The real effects of the database lifecycle machine: PgControl calls wrapped as the named
 * promise actors the machine declares. Only this module (through the machine) starts, stops,
 * promotes or clones PostgreSQL.
 */
import { fromPromise } from 'xstate';
import { databaseMachine, type CloneInput, type StartInput, type StopInput } from '@ha/machines';
import { sleepOn, systemClock, type Clock } from '../clock.ts';
import type { PgControl, TargetedRecovery, Upstream } from '../../postgres/types.ts';
import { isRewindNotStarted } from '../../postgres/rewind-error.ts';
import type { ProgressTracker } from './progress.ts';

/**
 * A custom bootstrap method as it runs (bootstrap.<method>): `command` with `--scope=` and
 * `--datadir=` unless `noParams`, then `args` as `--<key>=<value>` (patroni.md §3.10).
 */
export interface BootstrapPlan {
  name: string;
  command: string;
  noParams?: boolean;
  args?: Record<string, string | number | boolean>;
  /**
   * The targeted recovery of the first start after the command (a restore to a point in time):
   * the method's `recovery_conf` as parameters (recovery_target_action promote by default) and
   * `keep_existing_recovery_conf`. Absent: the restored data starts as a primary at once, the
   * tool's recovery settings removed.
   */
  recovery?: TargetedRecovery;
}

/**
 * How a pg_rewind ended. `untouched`: it failed before it changed the data directory (the leader
 * could not be reached, …): the data is as it was, and the rewind may be tried again.
 */
export type RewindOutcome = { ok: true; from: string } | { ok: false; from: string; error: string; untouched: boolean };

/** What the effects need to know at the moment they run (read through callbacks, never cached). */
export interface EffectContext {
  pg: PgControl;
  /** initdb options (`--key=value` strings). */
  initdbOptions: () => string[];
  /** Custom bootstrap command, when bootstrap.method names one. */
  customBootstrapCommand: () => string | undefined;
  /**
   * The custom bootstrap method in full (its `no_params` and other keys), when bootstrap.method
   * names one; absent: `customBootstrapCommand` run with --scope and --datadir.
   */
  customBootstrap?: () => BootstrapPlan | undefined;
  /**
   * How the next clone makes the data directory (docs/backups.md "Replica creation"): a function
   * that runs the member's replica creation methods in order with fallback
   * (src/node/local/replica-creation.ts), given the clone source (undefined: none); or undefined
   * (also when absent) for the built-in pg_basebackup from `cloneSource` alone, as before methods
   * existed (the default `create_replica_methods: [basebackup]`, a reinitialize `from-leader`).
   */
  replicaMethods?: () => ((from: Upstream | undefined) => Promise<void>) | undefined;
  /** The progress of the clone, rewind or bootstrap under way (/ha, hactl list). */
  progress?: Pick<ProgressTracker, 'begin' | 'phase' | 'output' | 'bytes' | 'end'>;
  /** Where to clone (or rewind) from (set by the HA loop before cmd.clone / cmd.reinitialize / cmd.rewind). */
  cloneSource: () => Upstream | undefined;
  /** Told how a pg_rewind ended (the node remembers a failure so that it never loops; docs/ha.md "Rewind"). */
  rewound?: (outcome: RewindOutcome) => void;
  /** Writes the configuration for starting with a role (upstream, slot, parameters): PgControl.configure with the node's options, serialized with its other writes. */
  configure: (role: 'primary' | 'replica', targeted?: TargetedRecovery) => Promise<void>;
  /** Called after a stop completes (the node releases the lock of a graceful demotion here). */
  afterStop: () => Promise<void>;
  /** This member's name (recorded in the promotion marker). */
  memberName: string;
  /** Timeouts, ms. */
  startTimeoutMs: () => number;
  stopTimeoutMs: () => number;
  /** Timers; default real time. */
  clock?: Clock;
  /**
   * Why a primary must not be launched now (the leader lock is no longer valid for the fence's
   * margin), or undefined when it may. Asked right before each launch of a postmaster as primary
   * and before promoting one that came up in recovery (finding 16): an earlier check can be
   * seconds old by then (the agent stalled or was stopped between the cycle's decision and the
   * launch, or a start was retried after the fence stopped the first attempt).
   */
  mayLaunchPrimary?: () => string | undefined;
}

/** A start as primary refused at the launch by `mayLaunchPrimary`: never retried. */
export class PrimaryLaunchRefused extends Error {}

/** Throws PrimaryLaunchRefused when `ctx.mayLaunchPrimary` says no. */
function checkPrimaryLaunch(ctx: EffectContext): void {
  const why = ctx.mayLaunchPrimary?.();
  if (why !== undefined) throw new PrimaryLaunchRefused(`not starting PostgreSQL as primary: ${why}`);
}

/**
 * Starts PostgreSQL, retrying while a crashed postmaster's children still hold shared memory. As
 * primary (`ctx` given), each launch is checked by `ctx.mayLaunchPrimary` first, without retry
 * once refused.
 */
async function startWithRetry(pg: PgControl, timeoutMs: number, clock: Clock, ctx?: EffectContext): Promise<void> {
  const deadline = clock.now() + timeoutMs;
  const opts = ctx?.mayLaunchPrimary ? { beforeLaunch: () => checkPrimaryLaunch(ctx) } : undefined;
  for (;;) {
    try {
      await pg.start(Math.max(1000, deadline - clock.now()), opts);
      return;
    } catch (e) {
      if (e instanceof PrimaryLaunchRefused || clock.now() + 200 >= deadline) throw e;
      await sleepOn(clock, 200);
    }
  }
}

/**
 * Records in the data directory that this member's promotion made its current timeline
 * (PromotionMarker). The promotion already happened: a marker that cannot be written only loses
 * the extra divergence check, so failures are swallowed.
 */
async function markPromotion(pg: PgControl, ctx: EffectContext): Promise<void> {
  const clock = ctx.clock ?? systemClock;
  try {
    const s = await pg.probe(2000);
    if (!s.inRecovery && s.timeline > 1) await pg.writePromotion({ timeline: s.timeline, member: ctx.memberName, atMs: clock.now() });
  } catch {
    // The marker only adds a divergence check; the promotion stands without it.
  }
}

/**
 * Promotes, with the promotion marker written first (finding 17): the marker names this member for
 * the timeline the promotion will make (one above the newest this data directory knows, as
 * PostgreSQL picks it), so a promotion that took effect but whose agent stalled or was fenced
 * before `markPromotion` still leaves its marker: that "timeline N" is told apart from another
 * member's "timeline N" forked at the same switch point. The launch check runs last, with no
 * await between it and the promotion.
 */
async function promoteMarked(pg: PgControl, ctx: EffectContext): Promise<void> {
  const clock = ctx.clock ?? systemClock;
  // Refused already: no marker for a promotion that will not happen.
  checkPrimaryLaunch(ctx);
  try {
    const s = await pg.probe(2000);
    if (s.inRecovery && s.timeline >= 1) {
      let newest = s.timeline;
      for (let i = 0; i < 16; i++) {
        const ok = await pg.readTimelineHistory(newest + 1).then(
          () => true,
          () => false,
        );
        if (!ok) break;
        newest++;
      }
      await pg.writePromotion({ timeline: newest + 1, member: ctx.memberName, atMs: clock.now() });
    }
  } catch {
    // Best effort, as markPromotion: the marker only adds a divergence check.
  }
  checkPrimaryLaunch(ctx);
  await pg.promote(ctx.startTimeoutMs());
  await markPromotion(pg, ctx);
}

/**
 * Removes a promotion marker whose promotion never happened (finding 27): the marker is written
 * before the promotion (promoteMarked), so a promotion that failed (the postmaster stopped or
 * fenced first, the agent gone before `pg_ctl promote`) leaves a marker naming a timeline this data
 * directory never made. Left in place, it would name this member for that timeline once the data
 * follows another leader's promotion to the same number, and the divergence check would discard a
 * data directory that holds the leader's own WAL. Called only while no postmaster runs on the data
 * directory: no promotion can be under way then (PostgreSQL removes a leftover promote signal file
 * when the postmaster starts), and a promotion that did happen wrote `pg_wal/<TLI>.history` of its
 * timeline before its first WAL on it (PostgreSQL docs "Timelines"); the marker is stale exactly
 * when that file is absent. Failures are swallowed: the marker only adds a divergence check.
 */
async function dropStalePromotion(pg: PgControl): Promise<void> {
  try {
    if ((await pg.postmasterPid()) !== undefined) return;
    const marker = await pg.readPromotion();
    if (!marker || marker.timeline <= 1) return;
    const made = await pg.readTimelineHistory(marker.timeline).then(
      () => true,
      () => false,
    );
    if (!made) await pg.removePromotion();
  } catch {
    // Best effort: a marker left in place only keeps its divergence check.
  }
}

/**
 * A new cluster is made whole or not at all: after initdb, a failed configuration, start or
 * post-bootstrap stops the postmaster of this data directory (immediate; never another server's)
 * and empties the directory, so the next attempt, here or on another member once the `initialize`
 * key is given back, starts from nothing (issue 30, item 1). The directory held only what this
 * initdb made: initdb itself refuses a directory that is not empty.
 */
async function undoInitdb(pg: PgControl, ctx: EffectContext): Promise<void> {
  if ((await pg.postmasterPid()) !== undefined) await pg.stop('immediate', ctx.stopTimeoutMs());
  await pg.removeData();
}

/** initdb, then configure, start and post-bootstrap; any failure after initdb undoes it (undoInitdb). */
async function initdbWhole(pg: PgControl, ctx: EffectContext): Promise<void> {
  await pg.initdb(ctx.initdbOptions());
  try {
    await ctx.configure('primary');
    await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock);
    await pg.postBootstrap();
  } catch (e) {
    await undoInitdb(pg, ctx).catch(() => undefined);
    throw e;
  }
}

/**
 * After the first start of a custom bootstrap's targeted recovery: waits until PostgreSQL has
 * replayed to the target and left recovery (recovery_target_action promote), polling every
 * second, as long as it takes (the reference waits for the end of recovery too). Replay paused
 * (a restore tool's recovery_target_action pause, kept by keep_existing_recovery_conf) is ended by
 * a promotion. @throws when the postmaster stops meanwhile (e.g. "recovery ended before
 * configured recovery target was reached": the start after the bootstrap failed).
 */
async function awaitEndOfRecovery(pg: PgControl, ctx: EffectContext): Promise<void> {
  const clock = ctx.clock ?? systemClock;
  for (;;) {
    let st: Awaited<ReturnType<PgControl['probe']>> | undefined;
    try {
      st = await pg.probe(2000);
    } catch (e) {
      if ((await pg.postmasterPid()) === undefined)
        throw new Error(`PostgreSQL stopped during the recovery after the custom bootstrap: ${String(e)}`);
    }
    if (st && !st.inRecovery) return;
    if (st?.replayPaused) {
      // The bootstrap's own promotion (no leader lock exists yet: no launch check, no marker).
      await pg.promote(ctx.startTimeoutMs());
      return;
    }
    await sleepOn(clock, 1000);
  }
}

/** A custom bootstrap's command (the configured method, or `customBootstrapCommand`), its progress shown; returns the plan it ran. */
async function runCustomBootstrap(pg: PgControl, ctx: EffectContext): Promise<BootstrapPlan> {
  const cmd = ctx.customBootstrapCommand();
  const plan: BootstrapPlan | undefined = ctx.customBootstrap?.() ?? (cmd ? { name: 'custom', command: cmd } : undefined);
  if (!plan) throw new Error('no custom bootstrap command configured');
  const progress = ctx.progress;
  progress?.begin('bootstrap', plan.name, 'restoring');
  try {
    await pg.customBootstrap(plan.command, {
      ...(plan.noParams ? { noParams: true } : {}),
      ...(plan.args ? { args: plan.args } : {}),
      ...(progress ? { onOutput: (text: string) => progress.output(text) } : {}),
    });
  } finally {
    progress?.end();
  }
  return plan;
}

/**
 * The start that follows a custom bootstrap (bootstrap_starting), as primary, without the launch
 * check (see `start`): with `targeted`, recovery to the target, the end of recovery awaited, the
 * configuration rewritten without the target and one restart; without it, a restored backup the
 * tool left in recovery is promoted (no leader lock yet: no marker).
 */
async function startAfterBootstrap(pg: PgControl, ctx: EffectContext, targeted: TargetedRecovery | undefined): Promise<void> {
  const clock = ctx.clock ?? systemClock;
  await ctx.configure('primary', targeted);
  await startWithRetry(pg, ctx.startTimeoutMs(), clock);
  if (targeted) {
    await awaitEndOfRecovery(pg, ctx);
    // Without the target: a later start (or demotion) must never recover to it again. The
    // targets are postmaster settings: restarted (fast) rather than left pending a restart.
    await ctx.configure('primary');
    await pg.stop('fast', ctx.stopTimeoutMs());
    await startWithRetry(pg, ctx.startTimeoutMs(), clock);
    return;
  }
  if ((await pg.probe(2000)).inRecovery) await pg.promote(ctx.startTimeoutMs());
}

/**
 * The clone effect (creating_replica): pg_rewind from the leader when the machine asks for a
 * rewind (the outcome told to `ctx.rewound`); else the replica creation methods, or pg_basebackup
 * from the clone source into an emptied data directory; never under a live postmaster.
 */
async function cloneDatabase(pg: PgControl, ctx: EffectContext, input: CloneInput): Promise<void> {
  const from = ctx.cloneSource();
  const progress = ctx.progress;
  if (input?.method === 'rewind') {
    if (!from) throw new Error('no leader to rewind from');
    try {
      // pg_rewind rewrites the data directory in place: never under a live postmaster.
      await pg.ensureNoPostmaster?.(ctx.stopTimeoutMs());
      progress?.begin('rewind', 'pg_rewind', `rewinding from ${from.name}`);
      await pg.rewind(from, progress ? { onOutput: (text) => progress.output(text) } : {});
    } catch (e) {
      ctx.rewound?.({
        ok: false,
        from: from.name,
        error: e instanceof Error ? e.message : String(e),
        untouched: isRewindNotStarted(e),
      });
      throw e;
    } finally {
      progress?.end();
    }
    ctx.rewound?.({ ok: true, from: from.name });
    return;
  }
  const methods = ctx.replicaMethods?.();
  if (!from && !methods) throw new Error('no member to clone from');
  // Never under a live postmaster: stop the one this node knows of (immediate, by PID if its
  // postmaster.pid is gone); fail when an unknown server holds the port or socket.
  await pg.ensureNoPostmaster?.(ctx.stopTimeoutMs());
  if (methods) {
    await methods(from);
    return;
  }
  if (!from) throw new Error('no member to clone from');
  if (await pg.hasData()) await pg.removeData();
  if (!progress) {
    await pg.basebackup(from);
    return;
  }
  progress.begin('clone', 'basebackup', `copying from ${from.name}`);
  try {
    await pg.basebackup(from, { onOutput: (text) => progress.output(text) });
  } finally {
    progress.end();
  }
}

/** The database machine with real effects. */
export function databaseMachineWithEffects(ctx: EffectContext) {
  const { pg } = ctx;
  /**
   * Set by a custom bootstrap that succeeded, taken by the next start: that start is the
   * bootstrap's own (see `start`), with the method's targeted recovery when it has one.
   */
  let pendingBootstrap: { recovery?: TargetedRecovery } | undefined;
  return databaseMachine.provide({
    actors: {
      initdb: fromPromise(() => initdbWhole(pg, ctx)),
      customBootstrap: fromPromise(async () => {
        pendingBootstrap = undefined;
        const plan = await runCustomBootstrap(pg, ctx);
        // The next start (bootstrap_starting's, as primary) is the bootstrap's own, and recovers to
        // the target first when the method has one.
        pendingBootstrap = plan.recovery ? { recovery: plan.recovery } : {};
      }),
      clone: fromPromise(({ input }: { input: CloneInput }) => cloneDatabase(pg, ctx, input)),
      start: fromPromise(async ({ input }: { input: StartInput }) => {
        await dropStalePromotion(pg);
        // The start that follows a custom bootstrap (bootstrap_starting) is the bootstrap's own: like
        // initdb's, it runs under the `initialize` key this member won, before any leader lock
        // exists, so the primary launch check (which needs the lock) does not apply; its targeted
        // recovery applies to it alone.
        const bootstrap = input.role === 'primary' && pendingBootstrap !== undefined;
        const targeted = bootstrap ? pendingBootstrap?.recovery : undefined;
        pendingBootstrap = undefined;
        if (bootstrap) {
          await startAfterBootstrap(pg, ctx, targeted);
          return;
        }
        await ctx.configure(input.role);
        await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock, input.role === 'primary' ? ctx : undefined);
        if (input.role === 'primary' && (await pg.probe(2000)).inRecovery) await promoteMarked(pg, ctx);
      }),
      stop: fromPromise(async ({ input }: { input: StopInput }) => {
        await pg.stop(input.mode, ctx.stopTimeoutMs());
        await ctx.afterStop();
      }),
      restart: fromPromise(async ({ input }: { input: StartInput }) => {
        await pg.stop('fast', ctx.stopTimeoutMs());
        await dropStalePromotion(pg);
        await ctx.configure(input.role);
        await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock, input.role === 'primary' ? ctx : undefined);
      }),
      promote: fromPromise(async () => {
        await promoteMarked(pg, ctx);
      }),
    } as never,
  });
}
