import { describe, expect, it } from 'vitest';
import { createActor, initialTransition, transition } from 'xstate';
import { parseRestartRequest, restartConditionsHold } from '../../src/domain/restart-conditions.ts';
import { restartMachine, restartPlanned, scheduledRestartOf, type RestartEvent, type ScheduledRestartRequest } from '@ha/machines';

const LOOP_WAIT_MS = 10_000;
const AT = Date.UTC(2026, 4, 1, 10, 0, 0);
const T0 = AT - 3_600_000;
const PLAN: ScheduledRestartRequest = { atMs: AT, role: 'replica', restartPending: true };

function started() {
  return createActor(restartMachine, { input: { loopWaitMs: LOOP_WAIT_MS } }).start();
}

function scheduledActor(request: ScheduledRestartRequest = PLAN) {
  const actor = started();
  actor.send({ type: 'restart.scheduled', request, now: T0 });
  return actor;
}

describe('restartMachine', () => {
  it('starts idle with loop_wait from the input', () => {
    const s = started().getSnapshot();
    expect(s.value).toBe('idle');
    expect(s.context).toEqual({ loopWaitMs: LOOP_WAIT_MS });
  });

  it('keeps a future plan in scheduled', () => {
    const s = scheduledActor().getSnapshot();
    expect(s.value).toBe('scheduled');
    expect(s.context.request).toEqual(PLAN);
  });

  it('fires at the instant, not 1 ms before', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT - 1 });
    expect(actor.getSnapshot().value).toBe('scheduled');
    expect(actor.getSnapshot().hasTag('execute')).toBe(false);
    actor.send({ type: 'clock.tick', now: AT });
    expect(actor.getSnapshot().value).toBe('executing');
    expect(actor.getSnapshot().hasTag('execute')).toBe(true);
  });

  it.each([
    ['exactly 1.5 × loop_wait late', AT + 15_000, 'executing', undefined],
    ['1 ms more than 1.5 × loop_wait late', AT + 15_001, 'failed', 'stale'],
  ])('a first tick %s → %s', (_label, now, state, reason) => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now });
    expect(actor.getSnapshot().value).toBe(state);
    expect(actor.getSnapshot().context.reason).toBe(reason);
  });

  it('uses the loop_wait in force at the tick', () => {
    const actor = scheduledActor();
    actor.send({ type: 'config.loopWaitChanged', loopWaitMs: 30_000 });
    actor.send({ type: 'clock.tick', now: AT + 45_000 });
    expect(actor.getSnapshot().value).toBe('executing');
  });

  it('executes a plan due at its own arrival time', () => {
    const actor = started();
    actor.send({ type: 'restart.scheduled', request: { atMs: AT }, now: AT });
    expect(actor.getSnapshot().value).toBe('executing');
  });

  it('ignores a second schedule while one exists (plan unchanged)', () => {
    const actor = scheduledActor();
    actor.send({ type: 'restart.scheduled', request: { atMs: AT + 60_000, role: 'primary' }, now: T0 + 1 });
    expect(actor.getSnapshot().value).toBe('scheduled');
    expect(actor.getSnapshot().context.request).toEqual(PLAN);
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'restart.scheduled', request: { atMs: AT + 60_000 }, now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('executing');
    expect(actor.getSnapshot().context.request).toEqual(PLAN);
  });

  it('is cancelled while scheduled (DELETE /restart) and returns to idle on reset', () => {
    const actor = scheduledActor();
    actor.send({ type: 'restart.cancelled', now: T0 + 5 });
    expect(actor.getSnapshot().value).toBe('cancelled');
    actor.send({ type: 'clock.tick', now: AT });
    expect(actor.getSnapshot().value).toBe('cancelled');
    actor.send({ type: 'restart.reset', now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('idle');
    expect(actor.getSnapshot().context).toEqual({ loopWaitMs: LOOP_WAIT_MS });
  });

  it('ignores a cancel once executing (the plan is consumed)', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'restart.cancelled', now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('executing');
  });

  it('ends in done on success', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'restart.succeeded', now: AT + 8_000 });
    expect(actor.getSnapshot().value).toBe('done');
  });

  it('ends in failed with the executor reason when the conditions do not hold at the instant', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    const req = actor.getSnapshot().context.request;
    expect(req).toBeDefined();
    const check = restartConditionsHold(req ?? PLAN, { role: 'replica', serverVersion: 150010, pendingRestart: false });
    expect(check.ok).toBe(false);
    if (!check.ok) actor.send({ type: 'restart.failed', reason: check.reason, now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('failed');
    expect(actor.getSnapshot().context.reason).toBe('restart conditions are not satisfied');
  });

  it('ignores ticks and outcomes when nothing is planned', () => {
    const actor = started();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'restart.succeeded', now: AT });
    actor.send({ type: 'restart.failed', reason: 'x', now: AT });
    actor.send({ type: 'restart.cancelled', now: AT });
    expect(actor.getSnapshot().value).toBe('idle');
  });

  it('accepts a new plan straight from an outcome state, forgetting the old reason', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT + 15_001 });
    expect(actor.getSnapshot().context.reason).toBe('stale');
    actor.send({ type: 'restart.scheduled', request: { atMs: AT + 600_000 }, now: AT + 20_000 });
    expect(actor.getSnapshot().value).toBe('scheduled');
    expect(actor.getSnapshot().context).toEqual({ loopWaitMs: LOOP_WAIT_MS, request: { atMs: AT + 600_000 } });
  });

  it('executes at the instant after a persisted snapshot is restored', () => {
    const json = JSON.stringify(scheduledActor().getPersistedSnapshot());
    // The types require an input; with a snapshot it is ignored (the persisted context wins).
    const restored = createActor(restartMachine, { snapshot: JSON.parse(json), input: { loopWaitMs: 1 } }).start();
    expect(restored.getSnapshot().value).toBe('scheduled');
    expect(restored.getSnapshot().context).toEqual({ loopWaitMs: LOOP_WAIT_MS, request: PLAN });
    restored.send({ type: 'clock.tick', now: AT - 1 });
    expect(restored.getSnapshot().value).toBe('scheduled');
    restored.send({ type: 'clock.tick', now: AT });
    expect(restored.getSnapshot().value).toBe('executing');
  });

  it('replays an event log with transition() to the live actor state', () => {
    const log: RestartEvent[] = [
      { type: 'restart.scheduled', request: PLAN, now: T0 },
      { type: 'clock.tick', now: AT - 10_000 },
      { type: 'restart.scheduled', request: { atMs: AT + 1 }, now: AT - 5_000 },
      { type: 'restart.cancelled', now: AT - 4_000 },
      { type: 'restart.reset', now: AT - 3_000 },
      { type: 'restart.scheduled', request: { atMs: AT, timeoutSeconds: 30 }, now: AT - 2_000 },
      { type: 'config.loopWaitChanged', loopWaitMs: 2_000 },
      { type: 'clock.tick', now: AT + 3_001 },
      { type: 'restart.scheduled', request: { atMs: AT + 60_000, role: 'primary' }, now: AT + 4_000 },
      { type: 'clock.tick', now: AT + 60_000 },
      { type: 'restart.failed', reason: 'restart failed', now: AT + 61_000 },
    ];
    const live = started();
    let [replayed] = initialTransition(restartMachine, { loopWaitMs: LOOP_WAIT_MS });
    for (const event of log) {
      live.send(event);
      [replayed] = transition(restartMachine, replayed, event);
      expect(replayed.value).toEqual(live.getSnapshot().value);
    }
    expect(replayed.value).toBe('failed');
    expect(replayed.context).toEqual(live.getSnapshot().context);
    expect(replayed.context).toEqual({
      loopWaitMs: 2_000,
      request: { atMs: AT + 60_000, role: 'primary' },
      reason: 'restart failed',
    });
  });
});

describe('scheduledRestartOf', () => {
  it('summarizes a waiting plan in the member-key shape', () => {
    const parsed = parseRestartRequest(
      { schedule: '2026-05-01T12:00:00+02:00', role: 'replica', database_version: '16.4', timeout: '2min', restart_pending: false },
      T0,
    );
    expect(parsed.ok).toBe(true);
    if (!parsed.ok || parsed.value.atMs === undefined) throw new Error('expected a scheduled request');
    const actor = scheduledActor({ ...parsed.value, atMs: parsed.value.atMs });
    expect(scheduledRestartOf(actor.getSnapshot())).toEqual({
      schedule: '2026-05-01T10:00:00+00:00',
      role: 'replica',
      database_version: '16.4',
      timeout: 120,
      restart_pending: false,
    });
  });

  it('reads a persisted snapshot too', () => {
    const persisted = JSON.parse(JSON.stringify(scheduledActor().getPersistedSnapshot()));
    expect(scheduledRestartOf(persisted)).toEqual({
      schedule: '2026-05-01T10:00:00+00:00',
      role: 'replica',
      restart_pending: true,
    });
  });

  it('is undefined when nothing waits', () => {
    expect(scheduledRestartOf(started().getSnapshot())).toBeUndefined();
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    expect(scheduledRestartOf(actor.getSnapshot())).toBeUndefined();
  });
});

describe('restartPlanned', () => {
  it('is true while scheduled or executing, false otherwise', () => {
    const actor = started();
    expect(restartPlanned(actor.getSnapshot())).toBe(false);
    actor.send({ type: 'restart.scheduled', request: PLAN, now: T0 });
    expect(restartPlanned(actor.getSnapshot())).toBe(true);
    actor.send({ type: 'clock.tick', now: AT });
    expect(restartPlanned(actor.getSnapshot())).toBe(true);
    actor.send({ type: 'restart.succeeded', now: AT + 1 });
    expect(restartPlanned(actor.getSnapshot())).toBe(false);
  });
});
