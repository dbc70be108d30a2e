/**
 * The real effects of the database lifecycle machine: PgControl calls wrapped as the named
 * promise actors the machine declares. Only this module (through the machine) starts, stops,
 * promotes or clones PostgreSQL.
 */
import { fromPromise } from 'xstate';
import { databaseMachine, type CloneInput, type StartInput, type StopInput } from '@ha/machines';
import { sleepOn, systemClock, type Clock } from '../clock.ts';
import type { PgControl, Upstream } from '../../postgres/types.ts';
import { isRewindNotStarted } from '../../postgres/rewind-error.ts';
import { targetRecoveryOf, waitForRecoveryEnd, type BootstrapPlan } from './bootstrap-recovery.ts';
import type { ProgressTracker } from './progress.ts';

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
   * The custom bootstrap method in full (its options, recovery settings), when bootstrap.method
   * names one (docs/backups.md "Disaster recovery"); absent: `customBootstrapCommand` run with
   * --scope and --datadir, then a plain start.
   */
  customBootstrap?: () => BootstrapPlan | undefined;
  /**
   * Makes the replica's data directory by the replica creation methods, in order with fallback
   * (src/node/local/replica-creation.ts); absent: pg_basebackup from `cloneSource`.
   */
  createReplica?: () => Promise<void>;
  /** The progress of the clone, rewind or bootstrap under way (/ha, hactl list). */
  progress?: Pick<ProgressTracker, 'begin' | 'phase' | 'output' | 'bytes' | 'end'>;
  /** How long a restore's recovery to its target may take before the start fails, ms. Default 24 h. */
  recoveryTimeoutMs?: () => number;
  /** Where to clone (or rewind) from (set by the HA loop before cmd.clone / cmd.reinitialize / cmd.rewind). */
  cloneSource: () => Upstream | undefined;
  /** Told how a pg_rewind ended (the node remembers a failure so that it never loops; docs/ha.md "Rewind"). */
  rewound?: (outcome: RewindOutcome) => void;
  /**
   * Writes the configuration for starting with a role (upstream, slot, parameters): PgControl.configure
   * with the node's options, serialized with its other writes; `targetRecovery` for the first start
   * after a custom bootstrap that recovers to a target.
   */
  configure: (role: 'primary' | 'replica', opts?: { targetRecovery?: Record<string, string> }) => Promise<void>;
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

/** The first start after a custom bootstrap: its method, and the targeted recovery it asks for. */
interface BootstrapStart {
  method: string;
  /** recovery.signal and these parameters (restore_command, recovery_target*, …); absent: a plain start. */
  parameters?: Record<string, string>;
}

/**
 * The first start after a custom bootstrap (bootstrap_starting; docs/backups.md "Disaster
 * recovery"). As initdb's start, it is not checked against the leader lock: this member won the
 * `initialize` race and the cluster has no leader yet (the lock is taken once it runs). With a
 * targeted recovery: the target written with recovery.signal, PostgreSQL started (it answers once
 * the backup's WAL is replayed), then waited on until it promoted itself at the target
 * (recovery_target_action = promote, or the end of the archive without a target); its promotion
 * marker is written then. Rejects when PostgreSQL exits (e.g. "recovery ended before configured
 * recovery target was reached") or the recovery outlasts `recoveryTimeoutMs`.
 */
async function startAfterBootstrap(pg: PgControl, ctx: EffectContext, first: BootstrapStart): Promise<void> {
  const clock = ctx.clock ?? systemClock;
  if (!first.parameters) {
    await ctx.configure('primary');
    await startWithRetry(pg, ctx.startTimeoutMs(), clock);
    return;
  }
  const timeoutMs = ctx.recoveryTimeoutMs?.() ?? 24 * 3600_000;
  const progress = ctx.progress;
  progress?.begin('bootstrap', first.method, 'replaying WAL to the recovery target');
  try {
    await ctx.configure('primary', { targetRecovery: first.parameters });
    await startWithRetry(pg, Math.max(ctx.startTimeoutMs(), timeoutMs), clock);
    await waitForRecoveryEnd(pg, clock, timeoutMs, progress ? (bytes) => progress.bytes(bytes) : undefined);
  } finally {
    progress?.end();
  }
  await markPromotion(pg, ctx);
}

/** The database machine with real effects. */
export function databaseMachineWithEffects(ctx: EffectContext) {
  const { pg } = ctx;
  /**
   * The first start after a custom bootstrap (bootstrap_starting), with the targeted recovery it
   * asks for, if any: set by the customBootstrap actor, taken by the next start as primary.
   */
  let pendingBootstrap: BootstrapStart | undefined;
  return databaseMachine.provide({
    actors: {
      initdb: fromPromise(async () => {
        await pg.initdb(ctx.initdbOptions());
        await ctx.configure('primary');
        await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock);
        await pg.postBootstrap();
      }),
      customBootstrap: fromPromise(async () => {
        pendingBootstrap = undefined;
        const cmd = ctx.customBootstrapCommand();
        const plan = ctx.customBootstrap?.() ?? (cmd ? { name: 'custom', command: cmd } : undefined);
        if (!plan) throw new Error('no custom bootstrap command configured');
        const progress = ctx.progress;
        progress?.begin('bootstrap', plan.name, 'restoring');
        try {
          await pg.customBootstrap(plan.command, {
            ...(plan.noParams ? { noParams: true } : {}),
            ...(plan.args ? { args: plan.args } : {}),
            ...(progress ? { onOutput: (text: string) => progress.output(text) } : {}),
          });
          const parameters = await targetRecoveryOf(pg, plan);
          pendingBootstrap = { method: plan.name, ...(parameters ? { parameters } : {}) };
        } finally {
          progress?.end();
        }
      }),
      clone: fromPromise(async ({ input }: { input: CloneInput }) => {
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
            ctx.rewound?.({ ok: false, from: from.name, error: e instanceof Error ? e.message : String(e), untouched: isRewindNotStarted(e) });
            throw e;
          } finally {
            progress?.end();
          }
          ctx.rewound?.({ ok: true, from: from.name });
          return;
        }
        if (!from && !ctx.createReplica) throw new Error('no member to clone from');
        // Never under a live postmaster: stop the one this node knows of (immediate, by PID if its
        // postmaster.pid is gone); fail when an unknown server holds the port or socket.
        await pg.ensureNoPostmaster?.(ctx.stopTimeoutMs());
        if (ctx.createReplica) {
          await ctx.createReplica();
          return;
        }
        if (!from) throw new Error('no member to clone from');
        if (await pg.hasData()) await pg.removeData();
        await pg.basebackup(from);
      }),
      start: fromPromise(async ({ input }: { input: StartInput }) => {
        const first = input.role === 'primary' ? pendingBootstrap : undefined;
        if (first) {
          await startAfterBootstrap(pg, ctx, first);
          pendingBootstrap = undefined;
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
        await ctx.configure(input.role);
        await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock, input.role === 'primary' ? ctx : undefined);
      }),
      promote: fromPromise(async () => {
        await promoteMarked(pg, ctx);
      }),
    } as never,
  });
}
