/**
 * The scheduled restart machine: the life of one POST /restart plan with a `schedule` on this node
 * (seed 000 "Scheduled items"; patroni.md §1.9; timing rule of §3.5 shared with the switchover).
 *
 * Time is data (stack.md §4): every event carries `now` (epoch ms), the instant is in context,
 * no `after`, no clock read inside; a persisted snapshot is complete and a replayed event log gives
 * the live state. No I/O: while the snapshot carries the tag `execute` the node checks
 * `restartConditionsHold` and asks the database lifecycle machine (the one owner of the
 * postmaster) to restart, then reports `restart.succeeded` / `restart.failed`. Conditions that do
 * not hold at the instant are reported as `restart.failed` with reason
 * `restart conditions are not satisfied`. An immediate POST /restart does not go through here.
 * What must stay true: never before the instant, never more than 1.5 × loop_wait late (`failed`,
 * reason `stale`), and a second schedule never replaces the first (HTTP answers 409).
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import { restartConditionsData, type RestartRequest, type ScheduledRestartData } from '../domain/restart-request.ts';
import { decideScheduled, formatScheduledAt } from '../domain/schedule.ts';

/** A restart request with its instant (epoch ms) set. */
export type ScheduledRestartRequest = RestartRequest & { atMs: number };

/** Context of the restart machine. */
export interface RestartContext {
  /** The current or last plan; kept in the outcome states for the report. */
  request?: ScheduledRestartRequest;
  /** loop_wait in ms: the plan is stale when more than 1.5 × this late. */
  loopWaitMs: number;
  /** Why the last plan ended in `failed` (`stale` or the executor's reason) or `cancelled`. */
  reason?: string;
}

/** Input of `createActor(restartMachine, { input })`. */
export interface RestartInput {
  /** loop_wait in ms (dynamic config `loop_wait` × 1000). */
  loopWaitMs: number;
}

/** Events. All instants are epoch ms supplied by the caller. */
export type RestartEvent =
  /** POST /restart with a valid `schedule` (parsed by parseRestartRequest). */
  | { type: 'restart.scheduled'; request: ScheduledRestartRequest; now: number }
  /** A cycle of the HA loop (or a timer of the caller) saw the time `now`. */
  | { type: 'clock.tick'; now: number }
  /** DELETE /restart, or the node saw the postmaster restarted meanwhile. */
  | { type: 'restart.cancelled'; now: number }
  /** The database lifecycle machine reports the restart done. */
  | { type: 'restart.succeeded'; now: number }
  /** Conditions did not hold at the instant, or the restart failed. */
  | { type: 'restart.failed'; reason: string; now: number }
  /** The node has acted on the outcome (member key updated, result logged): back to idle. */
  | { type: 'restart.reset'; now: number }
  /** The dynamic config's loop_wait changed. */
  | { type: 'config.loopWaitChanged'; loopWaitMs: number };

/** Reason recorded when a plan is dropped for being too late (patroni.md §3.5). */
export const STALE = 'stale';

type Decision = 'wait' | 'runNow' | 'stale';

/** Decision for the plan a `restart.scheduled` would create, at the event's own `now`. */
function decideRequest(context: RestartContext, event: RestartEvent): Decision | undefined {
  if (event.type !== 'restart.scheduled') return undefined;
  return decideScheduled(event.request.atMs, event.now, context.loopWaitMs).kind;
}

/** Decision for the plan in context at a tick's `now`. */
function decidePlan(context: RestartContext, event: RestartEvent): Decision | undefined {
  if (event.type !== 'clock.tick' || context.request === undefined) return undefined;
  return decideScheduled(context.request.atMs, event.now, context.loopWaitMs).kind;
}

/** The reaction to a schedule, shared by `idle` and the three outcome states. */
const ON_SCHEDULED = [
  { guard: 'requestDueNow', target: 'executing', actions: 'recordRequest' },
  { guard: 'requestStale', target: 'failed', actions: ['recordRequest', 'markStale'] },
  { target: 'scheduled', actions: 'recordRequest' },
] as const;

/**
 * States: `idle` → `scheduled` → `executing` (tag `execute`) → `done` | `failed`; `scheduled` →
 * `cancelled` | `failed` (stale). The outcome states take a new schedule directly or return to
 * `idle` on `restart.reset`. See docs/machines.md.
 */
export const restartMachine = setup({
  types: {
    context: {} as RestartContext,
    events: {} as RestartEvent,
    input: {} as RestartInput,
    tags: {} as 'execute',
  },
  guards: {
    requestDueNow: ({ context, event }) => decideRequest(context, event) === 'runNow',
    requestStale: ({ context, event }) => decideRequest(context, event) === 'stale',
    planDue: ({ context, event }) => decidePlan(context, event) === 'runNow',
    planStale: ({ context, event }) => decidePlan(context, event) === 'stale',
  },
  actions: {
    recordRequest: assign(({ event }) => (event.type === 'restart.scheduled' ? { request: { ...event.request }, reason: undefined } : {})),
    markStale: assign({ reason: STALE }),
    markCancelled: assign({ reason: 'cancelled' }),
    recordFailure: assign(({ event }) => (event.type === 'restart.failed' ? { reason: event.reason } : {})),
    forgetPlan: assign({ request: undefined, reason: undefined }),
    setLoopWait: assign(({ context, event }) =>
      event.type === 'config.loopWaitChanged' ? { loopWaitMs: event.loopWaitMs } : { loopWaitMs: context.loopWaitMs },
    ),
  },
}).createMachine({
  id: 'restart',
  initial: 'idle',
  context: ({ input }) => ({ loopWaitMs: input.loopWaitMs }),
  on: {
    'config.loopWaitChanged': { actions: 'setLoopWait' },
  },
  states: {
    idle: {
      on: { 'restart.scheduled': [...ON_SCHEDULED] },
    },
    scheduled: {
      // A second schedule is deliberately not handled here: the first plan stays (HTTP: 409).
      on: {
        'clock.tick': [
          { guard: 'planDue', target: 'executing' },
          { guard: 'planStale', target: 'failed', actions: 'markStale' },
        ],
        'restart.cancelled': { target: 'cancelled', actions: 'markCancelled' },
      },
    },
    executing: {
      // No `restart.cancelled` here: as in the reference, the plan is consumed when execution
      // starts (DELETE /restart answers 404); the outcome comes only from the executor.
      tags: ['execute'],
      on: {
        'restart.succeeded': { target: 'done' },
        'restart.failed': { target: 'failed', actions: 'recordFailure' },
      },
    },
    done: {
      on: { 'restart.scheduled': [...ON_SCHEDULED], 'restart.reset': { target: 'idle', actions: 'forgetPlan' } },
    },
    failed: {
      on: { 'restart.scheduled': [...ON_SCHEDULED], 'restart.reset': { target: 'idle', actions: 'forgetPlan' } },
    },
    cancelled: {
      on: { 'restart.scheduled': [...ON_SCHEDULED], 'restart.reset': { target: 'idle', actions: 'forgetPlan' } },
    },
  },
});

/** A live or persisted snapshot of the restart machine (only `value` and `context` are read). */
export type RestartSnapshot = Pick<SnapshotFrom<typeof restartMachine>, 'value' | 'context'>;

/**
 * The `scheduled_restart` object of the status document and member key (ScheduledRestartData
 * without `postmaster_start_time`, which the node adds): `schedule` as
 * ISO 8601 with `+00:00`, plus the given conditions. Undefined unless the machine is in
 * `scheduled`. Never throws for a snapshot of this machine.
 */
export function scheduledRestartOf(snapshot: RestartSnapshot): ScheduledRestartData | undefined {
  const req = snapshot.context.request;
  if (snapshot.value !== 'scheduled' || req === undefined) return undefined;
  return { schedule: formatScheduledAt(req.atMs), ...restartConditionsData(req) };
}

/**
 * True while a plan is waiting or executing: a new POST /restart with `schedule` then gets 409
 * `Another restart is already scheduled`, and the machine would ignore it.
 */
export function restartPlanned(snapshot: RestartSnapshot): boolean {
  return snapshot.value === 'scheduled' || snapshot.value === 'executing';
}
