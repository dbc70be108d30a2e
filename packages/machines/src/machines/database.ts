/**
 * The database lifecycle machine: the one owner of the postmaster (style.md habit 4).
 *
 * Its states are exactly the 15 database states of seed 000 ("States and transitions"), with the
 * numbers of domain/states.ts. The seed does not show the transitions; they are ours, written
 * down in docs/machines.md and below. Effects are named actors the caller provides
 * (`initdb`, `customBootstrap`, `clone`, `start`, `stop`, `restart`, `promote`); every invoke has
 * onError, so a failed effect is a state, never a crash.
 *
 * pg_rewind has no state of its own (the 15 are fixed): it runs in `creating_replica`, as the
 * `clone` actor with input `{ method: 'rewind' }` — it makes this member's data directory a
 * replica's of the leader, as a base backup does, from the data it already has.
 *
 * Time is data: every command and observation carries `at` (epoch ms); the machine never reads a
 * clock, so replaying a journal of its events through `transition()` rebuilds the same state.
 */
import { assign, setup, spawnChild, fromPromise, type ActorRefFrom, type SnapshotFrom } from 'xstate';
import type { Role } from '../domain/states.ts';

/** Role the database is started with. */
export type StartRole = 'primary' | 'replica';

/**
 * What to do once a stop completes: nothing, start (with a role), clone, or — after a demotion —
 * stay stopped as a replica-to-be, so the HA loop checks the local WAL against the new leader's
 * timeline before it starts following (docs/ha.md "Divergence").
 */
export type AfterStop = { kind: 'none' } | { kind: 'start'; role: StartRole } | { kind: 'clone' } | { kind: 'demoted' };

/** Input of the actors that start PostgreSQL. */
export interface StartInput {
  /** The role to start (or restart) PostgreSQL in. */
  role: StartRole;
}

/** How `creating_replica` makes the replica's data directory: a new base backup, or pg_rewind of the existing one. */
export type ReplicaMethod = 'basebackup' | 'rewind';

/** Input of the clone actor. */
export interface CloneInput {
  /** A new base backup, or pg_rewind of the existing data directory. */
  method: ReplicaMethod;
}

/** Input of the stop actor. */
export interface StopInput {
  /** PostgreSQL's shutdown mode (`pg_ctl stop -m`). */
  mode: 'fast' | 'immediate';
}

/** Context of the database machine. */
export interface DatabaseContext {
  /** Role of the local database (`uninitialized` until it first runs). */
  role: Role;
  /** Role to start with (set by cmd.start / cmd.demote / clone). */
  startRole: StartRole;
  /** Stop mode of the stop in progress. */
  stopMode: 'fast' | 'immediate';
  /** What follows the stop in progress. */
  afterStop: AfterStop;
  /** Reason of the last command or observation (for the journal and logs). */
  reason: string;
  /** Message of the last failed effect, if any. */
  lastError?: string;
  /** Epoch ms of the last state change (from the event's `at`). */
  sinceMs: number;
  /** A promotion is in progress (spawned `promote` actor). */
  promoting: boolean;
  /** How the next (or current) `creating_replica` makes the data directory; `rewind` only after cmd.rewind. */
  replicaMethod: ReplicaMethod;
}

/** Input of the machine. */
export interface DatabaseInput {
  /** Epoch ms when the agent started. */
  at: number;
}

/** The fields every {@link DatabaseEvent} carries. */
export interface DatabaseEventBase {
  /** Why the command was given or the observation made (kept in context, journaled with the transition). */
  reason: string;
  /** Epoch ms of the command or observation: the machine's only clock. */
  at: number;
}

/** Events of the database machine: commands from the HA loop / API, observations of the postmaster. */
export type DatabaseEvent =
  | ({ type: 'cmd.bootstrap' } & DatabaseEventBase)
  | ({ type: 'cmd.customBootstrap' } & DatabaseEventBase)
  | ({ type: 'cmd.clone' } & DatabaseEventBase)
  | ({ type: 'cmd.start'; role: StartRole } & DatabaseEventBase)
  | ({ type: 'cmd.stop'; mode: 'fast' | 'immediate' } & DatabaseEventBase)
  | ({ type: 'cmd.restart' } & DatabaseEventBase)
  | ({ type: 'cmd.promote' } & DatabaseEventBase)
  | ({ type: 'cmd.demote'; mode: 'fast' | 'immediate' } & DatabaseEventBase)
  | ({ type: 'cmd.reinitialize' } & DatabaseEventBase)
  /** Rewind the stopped data directory from the leader (pg_rewind), then start as its replica. */
  | ({ type: 'cmd.rewind' } & DatabaseEventBase)
  /** The postmaster of a running database is gone. */
  | ({ type: 'pg.died' } & DatabaseEventBase)
  /** At agent start: a postmaster is already running with this role. */
  | ({ type: 'pg.found'; role: StartRole } & DatabaseEventBase);

function notProvided(name: string) {
  return fromPromise<unknown, unknown>(async () => {
    throw new Error(`actor '${name}' was not provided`);
  });
}

/** Message of an error event's payload; a journaled error is `{ message }`, so replay gives the same text. */
function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string')
    return (e as { message: string }).message;
  return String(e);
}

/** What a failed bootstrap (initdb or custom) accepts: try again, or clone instead. */
const AFTER_FAILED_BOOTSTRAP = {
  'cmd.bootstrap': { target: 'initdb', actions: 'note' },
  'cmd.customBootstrap': { target: 'custom_bootstrap', actions: 'note' },
  'cmd.clone': { target: 'creating_replica', actions: 'note' },
} as const;

/** What a failed start or restart accepts: start again, stop, clone, reinitialize, or rewind. */
const AFTER_FAILED_START = {
  'cmd.start': { target: 'starting', actions: ['note', 'setStartRole'] },
  'cmd.stop': { target: 'stopping', actions: ['note', 'stopOnly'] },
  'cmd.clone': { target: 'creating_replica', actions: 'note' },
  'cmd.reinitialize': { target: 'stopping', actions: ['note', 'stopThenClone'] },
  'cmd.rewind': { target: 'creating_replica', actions: ['note', 'byRewind'] },
} as const;

/**
 * The machine. Provide the effects with `databaseMachine.provide({ actors: { … } })`:
 * - `initdb`: initialise a new cluster, configure it, start it as primary and run post-bootstrap;
 * - `customBootstrap`: run the configured custom bootstrap command;
 * - `clone` (input CloneInput): create a replica's data directory — `basebackup`: pg_basebackup from
 *   the leader or a clonefrom member into an emptied directory; `rewind`: pg_rewind of the existing
 *   data directory from the leader (after crash recovery when it was not shut down cleanly);
 * - `start` (input StartInput): configure for the role and start; resolve when it accepts connections;
 * - `stop` (input StopInput): stop; resolve when the postmaster is gone;
 * - `restart`: stop (fast) and start with the current role;
 * - `promote`: promote a running standby; resolve when it accepts writes.
 */
export const databaseMachine = setup({
  types: {} as {
    context: DatabaseContext;
    events: DatabaseEvent;
    input: DatabaseInput;
  },
  actors: {
    initdb: notProvided('initdb'),
    customBootstrap: notProvided('customBootstrap'),
    clone: notProvided('clone') as ReturnType<typeof fromPromise<unknown, CloneInput>>,
    start: notProvided('start') as ReturnType<typeof fromPromise<unknown, StartInput>>,
    stop: notProvided('stop') as ReturnType<typeof fromPromise<unknown, StopInput>>,
    restart: notProvided('restart') as ReturnType<typeof fromPromise<unknown, StartInput>>,
    promote: notProvided('promote'),
  },
  guards: {
    afterStopStart: ({ context }) => context.afterStop.kind === 'start',
    afterStopClone: ({ context }) => context.afterStop.kind === 'clone',
    afterStopDemoted: ({ context }) => context.afterStop.kind === 'demoted',
    isReplica: ({ context }) => context.role === 'replica' && !context.promoting,
    isPrimary: ({ context }) => context.role === 'primary',
    isRewind: ({ context }) => context.replicaMethod === 'rewind',
  },
  actions: {
    note: assign(({ event }) => ('reason' in event ? { reason: event.reason, sinceMs: event.at } : {})),
    failed: assign(({ event }) => ({ lastError: errorText((event as { error?: unknown }).error) })),
    clearError: assign({ lastError: undefined }),
    /** cmd.start: remember the role to start with. */
    setStartRole: assign(({ event }) => (event.type === 'cmd.start' ? { startRole: event.role } : {})),
    /** cmd.stop: stop with the event's mode, nothing after. */
    stopOnly: assign(({ event }) => (event.type === 'cmd.stop' ? { stopMode: event.mode, afterStop: { kind: 'none' } as AfterStop } : {})),
    /** cmd.reinitialize from a failed state: stop whatever runs (immediate), then clone. */
    stopThenClone: assign({ stopMode: 'immediate', afterStop: { kind: 'clone' } }),
    /** cmd.rewind: the next creating_replica rewinds the existing data directory. */
    byRewind: assign({ replicaMethod: 'rewind' }),
  },
}).createMachine({
  id: 'database',
  initial: 'stopped',
  context: ({ input }) => ({
    role: 'uninitialized',
    startRole: 'replica',
    stopMode: 'fast',
    afterStop: { kind: 'none' },
    reason: 'agent started',
    sinceMs: input.at,
    promoting: false,
    replicaMethod: 'basebackup',
  }),
  states: {
    initdb: {
      invoke: {
        id: 'initdb',
        src: 'initdb',
        onDone: { target: 'running', actions: [assign({ role: 'primary' }), 'clearError'] },
        onError: { target: 'initdb_failed', actions: 'failed' },
      },
    },
    initdb_failed: {
      on: AFTER_FAILED_BOOTSTRAP,
    },
    custom_bootstrap: {
      invoke: {
        id: 'customBootstrap',
        src: 'customBootstrap',
        onDone: { target: 'bootstrap_starting', actions: 'clearError' },
        onError: { target: 'custom_bootstrap_failed', actions: 'failed' },
      },
    },
    custom_bootstrap_failed: {
      on: AFTER_FAILED_BOOTSTRAP,
    },
    bootstrap_starting: {
      invoke: {
        id: 'start',
        src: 'start',
        input: () => ({ role: 'primary' as const }),
        onDone: { target: 'running', actions: [assign({ role: 'primary' }), 'clearError'] },
        onError: { target: 'start_failed', actions: 'failed' },
      },
    },
    creating_replica: {
      invoke: {
        id: 'clone',
        src: 'clone',
        input: ({ context }) => ({ method: context.replicaMethod }),
        onDone: { target: 'starting', actions: [assign({ startRole: 'replica', replicaMethod: 'basebackup' }), 'clearError'] },
        onError: [
          // A failed rewind leaves the data directory as pg_rewind left it (possibly unusable), stopped:
          // the HA loop remembers the failure and never rewinds again from the same leader timeline
          // (docs/ha.md "Rewind").
          { guard: 'isRewind', target: 'stopped', actions: [assign({ role: 'replica', replicaMethod: 'basebackup' }), 'failed'] },
          // No "clone failed" state among the 15: a failed clone leaves an empty, stopped node that
          // the HA loop retries.
          { target: 'stopped', actions: [assign({ role: 'uninitialized' }), 'failed'] },
        ],
      },
    },
    starting: {
      invoke: {
        id: 'start',
        src: 'start',
        input: ({ context }) => ({ role: context.startRole }),
        onDone: { target: 'running', actions: [assign(({ context }) => ({ role: context.startRole })), 'clearError'] },
        onError: { target: 'start_failed', actions: 'failed' },
      },
    },
    start_failed: {
      on: AFTER_FAILED_START,
    },
    running: {
      on: {
        'cmd.stop': {
          target: 'stopping',
          actions: ['note', assign(({ event }) => ({ stopMode: event.mode, afterStop: { kind: 'none' } as AfterStop }))],
        },
        'cmd.restart': { target: 'restarting', actions: 'note' },
        'cmd.demote': {
          target: 'stopping',
          actions: ['note', assign(({ event }) => ({ stopMode: event.mode, afterStop: { kind: 'demoted' } as AfterStop }))],
        },
        'cmd.reinitialize': {
          target: 'stopping',
          actions: ['note', assign({ stopMode: 'fast', afterStop: { kind: 'clone' } })],
        },
        'cmd.promote': {
          guard: 'isReplica',
          actions: ['note', assign({ promoting: true }), spawnChild('promote', { id: 'promote' })],
        },
        'xstate.done.actor.promote': { actions: [assign({ role: 'primary', promoting: false }), 'clearError'] },
        'xstate.error.actor.promote': { actions: [assign({ promoting: false }), 'failed'] },
        'pg.died': { target: 'crashed', actions: ['note', assign({ promoting: false })] },
      },
    },
    restarting: {
      invoke: {
        id: 'restart',
        src: 'restart',
        input: ({ context }) => ({ role: context.role === 'primary' ? ('primary' as const) : ('replica' as const) }),
        onDone: { target: 'running', actions: 'clearError' },
        onError: { target: 'restart_failed', actions: 'failed' },
      },
    },
    restart_failed: {
      on: AFTER_FAILED_START,
    },
    stopping: {
      invoke: {
        id: 'stop',
        src: 'stop',
        input: ({ context }) => ({ mode: context.stopMode }),
        onDone: [
          {
            guard: 'afterStopStart',
            target: 'starting',
            actions: assign(({ context }) => ({
              startRole: context.afterStop.kind === 'start' ? context.afterStop.role : context.startRole,
              afterStop: { kind: 'none' } as AfterStop,
            })),
          },
          { guard: 'afterStopClone', target: 'creating_replica', actions: assign({ afterStop: { kind: 'none' } }) },
          { guard: 'afterStopDemoted', target: 'stopped', actions: assign({ role: 'replica', afterStop: { kind: 'none' } }) },
          { target: 'stopped' },
        ],
        onError: { target: 'stop_failed', actions: 'failed' },
      },
    },
    stop_failed: {
      on: {
        'cmd.stop': {
          target: 'stopping',
          actions: ['note', assign(({ event }) => ({ stopMode: event.mode, afterStop: { kind: 'none' } as AfterStop }))],
        },
        'cmd.start': { target: 'starting', actions: ['note', assign(({ event }) => ({ startRole: event.role }))] },
        'pg.died': { target: 'crashed', actions: 'note' },
      },
    },
    stopped: {
      on: {
        'cmd.bootstrap': { target: 'initdb', actions: 'note' },
        'cmd.customBootstrap': { target: 'custom_bootstrap', actions: 'note' },
        'cmd.clone': { target: 'creating_replica', actions: 'note' },
        'cmd.reinitialize': { target: 'creating_replica', actions: 'note' },
        'cmd.rewind': { target: 'creating_replica', actions: ['note', 'byRewind'] },
        'cmd.start': { target: 'starting', actions: ['note', assign(({ event }) => ({ startRole: event.role }))] },
        'pg.found': { target: 'running', actions: ['note', assign(({ event }) => ({ role: event.role }))] },
      },
    },
    crashed: {
      on: {
        'cmd.start': { target: 'starting', actions: ['note', assign(({ event }) => ({ startRole: event.role }))] },
        'cmd.clone': { target: 'creating_replica', actions: 'note' },
        'cmd.reinitialize': { target: 'creating_replica', actions: 'note' },
        'cmd.rewind': { target: 'creating_replica', actions: ['note', 'byRewind'] },
        'cmd.stop': {
          target: 'stopping',
          actions: ['note', assign(({ event }) => ({ stopMode: event.mode, afterStop: { kind: 'none' } as AfterStop }))],
        },
      },
    },
  },
});

/** A running database machine actor. */
export type DatabaseActor = ActorRefFrom<typeof databaseMachine>;
/** A snapshot of the database machine. */
export type DatabaseSnapshot = SnapshotFrom<typeof databaseMachine>;

/** States in which an effect is in progress (the HA loop waits for it). */
export const BUSY_STATES = [
  'initdb',
  'custom_bootstrap',
  'bootstrap_starting',
  'creating_replica',
  'starting',
  'restarting',
  'stopping',
] as const;
