/**
 * The real effects of the database lifecycle machine: PgControl calls wrapped as the named
 * promise actors the machine declares. Only this module (through the machine) starts, stops,
 * promotes or clones PostgreSQL.
 */
import { fromPromise } from 'xstate';
import { databaseMachine, type CloneInput, type StartInput, type StopInput } from '../machines/database.ts';
import { sleepOn, systemClock, type Clock } from './clock.ts';
import type { ConfigureOptions, PgControl, Upstream } from '../postgres/types.ts';

/** What the effects need to know at the moment they run (read through callbacks, never cached). */
export interface EffectContext {
  pg: PgControl;
  /** initdb options (`--key=value` strings). */
  initdbOptions: () => string[];
  /** Custom bootstrap command, when bootstrap.method names one. */
  customBootstrapCommand: () => string | undefined;
  /** Where to clone (or rewind) from (set by the HA loop before cmd.clone / cmd.reinitialize / cmd.rewind). */
  cloneSource: () => Upstream | undefined;
  /** Told how a pg_rewind ended (the node remembers a failure so that it never loops; docs/ha.md "Rewind"). */
  rewound?: (outcome: { ok: true; from: string } | { ok: false; from: string; error: string }) => void;
  /** Configuration for starting with a role (upstream, slot, parameters). */
  configureFor: (role: 'primary' | 'replica') => ConfigureOptions;
  /** Called after a stop completes (the node releases the lock of a graceful demotion here). */
  afterStop: () => Promise<void>;
  /** This member's name (recorded in the promotion marker). */
  memberName: string;
  /** Timeouts, ms. */
  startTimeoutMs: () => number;
  stopTimeoutMs: () => number;
  /** Timers; default real time. */
  clock?: Clock;
}

/** Starts PostgreSQL, retrying while a crashed postmaster's children still hold shared memory. */
async function startWithRetry(pg: PgControl, timeoutMs: number, clock: Clock): Promise<void> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    try {
      await pg.start(Math.max(1000, deadline - clock.now()));
      return;
    } catch (e) {
      if (clock.now() + 200 >= deadline) throw e;
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

/** The database machine with real effects. */
export function databaseMachineWithEffects(ctx: EffectContext) {
  const { pg } = ctx;
  return databaseMachine.provide({
    actors: {
      initdb: fromPromise(async () => {
        await pg.initdb(ctx.initdbOptions());
        await pg.configure(ctx.configureFor('primary'));
        await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock);
        await pg.postBootstrap();
      }),
      customBootstrap: fromPromise(async () => {
        const cmd = ctx.customBootstrapCommand();
        if (!cmd) throw new Error('no custom bootstrap command configured');
        await pg.customBootstrap(cmd);
      }),
      clone: fromPromise(async ({ input }: { input: CloneInput }) => {
        const from = ctx.cloneSource();
        if (input?.method === 'rewind') {
          if (!from) throw new Error('no leader to rewind from');
          try {
            // pg_rewind rewrites the data directory in place: never under a live postmaster.
            await pg.ensureNoPostmaster?.(ctx.stopTimeoutMs());
            await pg.rewind(from);
          } catch (e) {
            ctx.rewound?.({ ok: false, from: from.name, error: e instanceof Error ? e.message : String(e) });
            throw e;
          }
          ctx.rewound?.({ ok: true, from: from.name });
          return;
        }
        if (!from) throw new Error('no member to clone from');
        // Never under a live postmaster: stop the one this node knows of (immediate, by PID if its
        // postmaster.pid is gone); fail when an unknown server holds the port or socket.
        await pg.ensureNoPostmaster?.(ctx.stopTimeoutMs());
        if (await pg.hasData()) await pg.removeData();
        await pg.basebackup(from);
      }),
      start: fromPromise(async ({ input }: { input: StartInput }) => {
        await pg.configure(ctx.configureFor(input.role));
        await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock);
        if (input.role === 'primary' && (await pg.probe(2000)).inRecovery) {
          await pg.promote(ctx.startTimeoutMs());
          await markPromotion(pg, ctx);
        }
      }),
      stop: fromPromise(async ({ input }: { input: StopInput }) => {
        await pg.stop(input.mode, ctx.stopTimeoutMs());
        await ctx.afterStop();
      }),
      restart: fromPromise(async ({ input }: { input: StartInput }) => {
        await pg.stop('fast', ctx.stopTimeoutMs());
        await pg.configure(ctx.configureFor(input.role));
        await startWithRetry(pg, ctx.startTimeoutMs(), ctx.clock ?? systemClock);
      }),
      promote: fromPromise(async () => {
        await pg.promote(ctx.startTimeoutMs());
        await markPromotion(pg, ctx);
      }),
    } as never,
  });
}
