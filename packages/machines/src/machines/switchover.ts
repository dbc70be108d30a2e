/**
 * The scheduled switchover machine: the life of one switchover plan on the leader, from the DCS
 * `failover` key appearing to its outcome (seed 000 "Scheduled items"; patroni.md §1.8, §3.5).
 *
 * Time is data (stack.md §4): every event carries `now` (epoch ms), the plan's instant is in
 * context, and there is no `after` and no clock read inside. So a persisted snapshot is complete
 * (restore it and the next tick decides), and an event log replayed with `transition()` gives the
 * live actor's state exactly.
 *
 * The machine does no I/O and does not demote anything itself (style habit 4: only the database
 * lifecycle machine touches the postmaster). The node reads the snapshot: while it carries the
 * tag `execute` the node runs the switchover (checks candidates, demotes gracefully) and reports
 * back with `switchover.succeeded` / `switchover.failed`. What must stay true:
 * - a plan never runs before its instant, and a plan more than 1.5 × loop_wait late never runs
 *   (it ends in `failed` with reason `stale`; the node then clears the key);
 * - a second request never replaces the plan being waited for or executed (HTTP answers 409).
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import { decideScheduled, formatScheduledAt } from '../domain/schedule.ts';

/** The plan: who hands over to whom, and when (epoch ms; `now` of the request when immediate). */
export interface SwitchoverPlan {
  /** Name of the leader the switchover starts from (`leader` of the key). */
  leader?: string;
  /** Node to promote (`member` of the key); absent: all healthy members compete. */
  candidate?: string;
  /** Instant of execution, epoch ms. */
  atMs: number;
}

/** Context of the switchover machine. */
export interface SwitchoverContext {
  /** The current or last plan; kept in the outcome states for the report. */
  request?: SwitchoverPlan;
  /** loop_wait in ms: the plan is stale when more than 1.5 × this late. */
  loopWaitMs: number;
  /** Why the last plan ended in `failed` (`stale` or the executor's reason) or `cancelled`. */
  reason?: string;
  /** Leader after a successful switchover. */
  newLeader?: string;
}

/** Input of `createActor(switchoverMachine, { input })`. */
export interface SwitchoverInput {
  /** loop_wait in ms (dynamic config `loop_wait` × 1000). */
  loopWaitMs: number;
}

/** Events. All instants are epoch ms supplied by the caller. */
export type SwitchoverEvent =
  /** The `failover` key appeared (or changed) with a switchover request; no `atMs`: run at once. */
  | { type: 'switchover.requested'; leader?: string; candidate?: string; atMs?: number; now: number }
  /** A cycle of the HA loop (or a timer of the caller) saw the time `now`. */
  | { type: 'clock.tick'; now: number }
  /** DELETE /switchover, or the key was cleared while the plan was waiting. */
  | { type: 'switchover.cancelled'; now: number }
  /** The executor saw another leader take the lock. */
  | { type: 'switchover.succeeded'; newLeader: string; now: number }
  /** The executor gave up (no healthy candidate, leader name mismatch, demote failed …). */
  | { type: 'switchover.failed'; reason: string; now: number }
  /** The node has acted on the outcome (key cleared, result logged): back to idle. */
  | { type: 'switchover.reset'; now: number }
  /** The dynamic config's loop_wait changed. */
  | { type: 'config.loopWaitChanged'; loopWaitMs: number };

/** Reason recorded when a plan is dropped for being too late (patroni.md §3.5). */
export const STALE = 'stale';

type RequestedEvent = Extract<SwitchoverEvent, { type: 'switchover.requested' }>;

/** Decision for the plan a request would create, seen at the request's own `now`. */
function decideRequest(e: RequestedEvent, loopWaitMs: number): 'wait' | 'runNow' | 'stale' {
  return e.atMs === undefined ? 'runNow' : decideScheduled(e.atMs, e.now, loopWaitMs).kind;
}

/** Decision for the plan in context at a tick's `now`. */
function decidePlan(context: SwitchoverContext, event: SwitchoverEvent): 'wait' | 'runNow' | 'stale' {
  if (event.type !== 'clock.tick' || context.request === undefined) return 'wait';
  return decideScheduled(context.request.atMs, event.now, context.loopWaitMs).kind;
}

/** The reaction to a request, shared by `idle` and the three outcome states. */
const ON_REQUESTED = [
  { guard: 'requestDueNow', target: 'executing', actions: 'recordRequest' },
  { guard: 'requestStale', target: 'failed', actions: ['recordRequest', 'markStale'] },
  { target: 'scheduled', actions: 'recordRequest' },
] as const;

/**
 * States: `idle` → `scheduled` → `executing` (tag `execute`) → `done` | `failed`; `scheduled` →
 * `cancelled` | `failed` (stale). The outcome states take a new request directly (the outcome is
 * forgotten) or return to `idle` on `switchover.reset`. See docs/machines.md.
 */
export const switchoverMachine = setup({
  types: {
    context: {} as SwitchoverContext,
    events: {} as SwitchoverEvent,
    input: {} as SwitchoverInput,
    tags: {} as 'execute',
  },
  guards: {
    requestDueNow: ({ context, event }) => event.type === 'switchover.requested' && decideRequest(event, context.loopWaitMs) === 'runNow',
    requestStale: ({ context, event }) => event.type === 'switchover.requested' && decideRequest(event, context.loopWaitMs) === 'stale',
    planDue: ({ context, event }) => decidePlan(context, event) === 'runNow',
    planStale: ({ context, event }) => decidePlan(context, event) === 'stale',
  },
  actions: {
    recordRequest: assign(({ event }) => {
      if (event.type !== 'switchover.requested') return {};
      const plan: SwitchoverPlan = { atMs: event.atMs ?? event.now };
      if (event.leader !== undefined) plan.leader = event.leader;
      if (event.candidate !== undefined) plan.candidate = event.candidate;
      return { request: plan, reason: undefined, newLeader: undefined };
    }),
    markStale: assign({ reason: STALE }),
    markCancelled: assign({ reason: 'cancelled' }),
    recordFailure: assign(({ event }) => (event.type === 'switchover.failed' ? { reason: event.reason } : {})),
    recordSuccess: assign(({ event }) => (event.type === 'switchover.succeeded' ? { newLeader: event.newLeader } : {})),
    forgetPlan: assign({ request: undefined, reason: undefined, newLeader: undefined }),
    setLoopWait: assign(({ context, event }) =>
      event.type === 'config.loopWaitChanged' ? { loopWaitMs: event.loopWaitMs } : { loopWaitMs: context.loopWaitMs },
    ),
  },
}).createMachine({
  id: 'switchover',
  initial: 'idle',
  context: ({ input }) => ({ loopWaitMs: input.loopWaitMs }),
  on: {
    'config.loopWaitChanged': { actions: 'setLoopWait' },
  },
  states: {
    idle: {
      on: { 'switchover.requested': [...ON_REQUESTED] },
    },
    scheduled: {
      // A second request is deliberately not handled here: the first plan stays (HTTP: 409).
      on: {
        'clock.tick': [
          { guard: 'planDue', target: 'executing' },
          { guard: 'planStale', target: 'failed', actions: 'markStale' },
        ],
        'switchover.cancelled': { target: 'cancelled', actions: 'markCancelled' },
      },
    },
    executing: {
      // No `switchover.cancelled` here: once executing, the key disappearing is how the new leader
      // signals success (patroni.md §3.5), so the outcome comes only from the executor.
      tags: ['execute'],
      on: {
        'switchover.succeeded': { target: 'done', actions: 'recordSuccess' },
        'switchover.failed': { target: 'failed', actions: 'recordFailure' },
      },
    },
    done: {
      on: { 'switchover.requested': [...ON_REQUESTED], 'switchover.reset': { target: 'idle', actions: 'forgetPlan' } },
    },
    failed: {
      on: { 'switchover.requested': [...ON_REQUESTED], 'switchover.reset': { target: 'idle', actions: 'forgetPlan' } },
    },
    cancelled: {
      on: { 'switchover.requested': [...ON_REQUESTED], 'switchover.reset': { target: 'idle', actions: 'forgetPlan' } },
    },
  },
});

/** A live or persisted snapshot of the switchover machine (only `value` and `context` are read). */
export type SwitchoverSnapshot = Pick<SnapshotFrom<typeof switchoverMachine>, 'value' | 'context'>;

/** The `scheduled_switchover` object of GET /cluster (seed 000): instant with offset, from, to. */
export interface ScheduledSwitchoverSummary {
  /** ISO 8601 with `+00:00`, e.g. `2026-05-01T10:00:00+00:00`. */
  at: string;
  /** The leader the switchover starts from, when the plan names it. */
  from?: string;
  /** The candidate to promote, when the plan names one. */
  to?: string;
}

/**
 * The plan waiting for its instant, for HTTP; undefined unless the machine is in `scheduled`
 * (an executing or finished plan is no longer "scheduled"). Never throws for a snapshot of this
 * machine.
 */
export function scheduledSwitchoverOf(snapshot: SwitchoverSnapshot): ScheduledSwitchoverSummary | undefined {
  const plan = snapshot.context.request;
  if (snapshot.value !== 'scheduled' || plan === undefined) return undefined;
  const out: ScheduledSwitchoverSummary = { at: formatScheduledAt(plan.atMs) };
  if (plan.leader !== undefined) out.from = plan.leader;
  if (plan.candidate !== undefined) out.to = plan.candidate;
  return out;
}

/**
 * True while a plan is waiting or executing: a new POST /switchover then gets 409 and a new
 * request event would be ignored by the machine.
 */
export function switchoverInProgress(snapshot: SwitchoverSnapshot): boolean {
  return snapshot.value === 'scheduled' || snapshot.value === 'executing';
}
