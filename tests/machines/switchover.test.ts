import { describe, expect, it } from 'vitest';
import { createActor, initialTransition, transition } from 'xstate';
import { scheduledSwitchoverOf, switchoverInProgress, switchoverMachine, type SwitchoverEvent } from '@ha/machines';

const LOOP_WAIT_MS = 10_000;
const AT = Date.UTC(2026, 4, 1, 10, 0, 0);
const T0 = AT - 3_600_000; // the request arrives an hour ahead

function started() {
  return createActor(switchoverMachine, { input: { loopWaitMs: LOOP_WAIT_MS } }).start();
}

function scheduledActor() {
  const actor = started();
  actor.send({ type: 'switchover.requested', leader: 'pg-1', candidate: 'pg-2', atMs: AT, now: T0 });
  return actor;
}

describe('switchoverMachine', () => {
  it('starts idle with loop_wait from the input', () => {
    const s = started().getSnapshot();
    expect(s.value).toBe('idle');
    expect(s.context).toEqual({ loopWaitMs: LOOP_WAIT_MS });
  });

  it('waits for a request with a future instant in scheduled, keeping the plan', () => {
    const s = scheduledActor().getSnapshot();
    expect(s.value).toBe('scheduled');
    expect(s.context.request).toEqual({ leader: 'pg-1', candidate: 'pg-2', atMs: AT });
    expect(s.hasTag('execute')).toBe(false);
  });

  it('fires at the instant, not 1 ms before', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT - 1 });
    expect(actor.getSnapshot().value).toBe('scheduled');
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
    actor.send({ type: 'config.loopWaitChanged', loopWaitMs: 2_000 });
    actor.send({ type: 'clock.tick', now: AT + 3_001 });
    expect(actor.getSnapshot().value).toBe('failed');
    expect(actor.getSnapshot().context).toMatchObject({ loopWaitMs: 2_000, reason: 'stale' });
  });

  it('runs a request without an instant at once, planned at the request time', () => {
    const actor = started();
    actor.send({ type: 'switchover.requested', leader: 'pg-1', now: T0 });
    expect(actor.getSnapshot().value).toBe('executing');
    expect(actor.getSnapshot().context.request).toEqual({ leader: 'pg-1', atMs: T0 });
  });

  it.each([
    ['already due', AT + 5_000, 'executing'],
    ['already stale', AT + 15_001, 'failed'],
  ])('decides a request %s on arrival', (_label, now, state) => {
    const actor = started();
    actor.send({ type: 'switchover.requested', leader: 'pg-1', atMs: AT, now });
    expect(actor.getSnapshot().value).toBe(state);
  });

  it('keeps the first plan when a second request arrives while scheduled', () => {
    const actor = scheduledActor();
    actor.send({ type: 'switchover.requested', leader: 'pg-9', candidate: 'pg-3', atMs: AT + 60_000, now: T0 + 1 });
    const s = actor.getSnapshot();
    expect(s.value).toBe('scheduled');
    expect(s.context.request).toEqual({ leader: 'pg-1', candidate: 'pg-2', atMs: AT });
  });

  it('keeps the plan being executed when a second request arrives', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'switchover.requested', leader: 'pg-9', now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('executing');
    expect(actor.getSnapshot().context.request?.leader).toBe('pg-1');
  });

  it('is cancelled while scheduled and then never fires', () => {
    const actor = scheduledActor();
    actor.send({ type: 'switchover.cancelled', now: T0 + 10 });
    expect(actor.getSnapshot().value).toBe('cancelled');
    expect(actor.getSnapshot().context.reason).toBe('cancelled');
    actor.send({ type: 'clock.tick', now: AT });
    expect(actor.getSnapshot().value).toBe('cancelled');
    actor.send({ type: 'switchover.reset', now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('idle');
    expect(actor.getSnapshot().context).toEqual({ loopWaitMs: LOOP_WAIT_MS });
  });

  it('ignores a cancel while executing (the new leader clears the key on success)', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'switchover.cancelled', now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('executing');
  });

  it('records the new leader on success', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'switchover.succeeded', newLeader: 'pg-2', now: AT + 4_000 });
    expect(actor.getSnapshot().value).toBe('done');
    expect(actor.getSnapshot().context.newLeader).toBe('pg-2');
  });

  it('records the executor reason on failure', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'switchover.failed', reason: 'no healthy members found', now: AT + 1 });
    expect(actor.getSnapshot().value).toBe('failed');
    expect(actor.getSnapshot().context.reason).toBe('no healthy members found');
  });

  it('ignores outcomes and ticks when nothing runs', () => {
    const actor = started();
    actor.send({ type: 'clock.tick', now: AT });
    actor.send({ type: 'switchover.succeeded', newLeader: 'pg-2', now: AT });
    actor.send({ type: 'switchover.failed', reason: 'x', now: AT });
    actor.send({ type: 'switchover.cancelled', now: AT });
    expect(actor.getSnapshot().value).toBe('idle');
  });

  it('accepts a new plan straight from an outcome state, forgetting the old outcome', () => {
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT + 15_001 });
    expect(actor.getSnapshot().value).toBe('failed');
    actor.send({ type: 'switchover.requested', leader: 'pg-1', atMs: AT + 600_000, now: AT + 20_000 });
    const s = actor.getSnapshot();
    expect(s.value).toBe('scheduled');
    expect(s.context.request).toEqual({ leader: 'pg-1', atMs: AT + 600_000 });
    expect(s.context.reason).toBeUndefined();
  });

  it('executes at the instant after a persisted snapshot is restored', () => {
    const json = JSON.stringify(scheduledActor().getPersistedSnapshot());
    // The types require an input; with a snapshot it is ignored (the persisted context wins).
    const restored = createActor(switchoverMachine, { snapshot: JSON.parse(json), input: { loopWaitMs: 1 } }).start();
    expect(restored.getSnapshot().context.loopWaitMs).toBe(LOOP_WAIT_MS);
    expect(restored.getSnapshot().value).toBe('scheduled');
    restored.send({ type: 'clock.tick', now: AT - 1 });
    expect(restored.getSnapshot().value).toBe('scheduled');
    restored.send({ type: 'clock.tick', now: AT });
    expect(restored.getSnapshot().value).toBe('executing');
    expect(restored.getSnapshot().hasTag('execute')).toBe(true);
    expect(restored.getSnapshot().context.request).toEqual({ leader: 'pg-1', candidate: 'pg-2', atMs: AT });
  });

  it('replays an event log with transition() to the live actor state', () => {
    const log: SwitchoverEvent[] = [
      { type: 'clock.tick', now: T0 - 1 },
      { type: 'switchover.requested', leader: 'pg-1', candidate: 'pg-2', atMs: AT, now: T0 },
      { type: 'switchover.requested', leader: 'pg-3', now: T0 + 1 },
      { type: 'config.loopWaitChanged', loopWaitMs: 5_000 },
      { type: 'clock.tick', now: AT - 1 },
      { type: 'clock.tick', now: AT + 2_000 },
      { type: 'switchover.cancelled', now: AT + 2_001 },
      { type: 'switchover.failed', reason: 'leader name does not match', now: AT + 3_000 },
      { type: 'switchover.reset', now: AT + 4_000 },
      { type: 'switchover.requested', leader: 'pg-1', atMs: AT + 60_000, now: AT + 5_000 },
      { type: 'clock.tick', now: AT + 60_000 },
      { type: 'switchover.succeeded', newLeader: 'pg-2', now: AT + 64_000 },
    ];
    const live = started();
    const liveValues: unknown[] = [];
    const input = { loopWaitMs: LOOP_WAIT_MS };
    let [replayed] = initialTransition(switchoverMachine, input);
    const replayedValues: unknown[] = [];
    for (const event of log) {
      live.send(event);
      liveValues.push(live.getSnapshot().value);
      [replayed] = transition(switchoverMachine, replayed, event);
      replayedValues.push(replayed.value);
    }
    expect(replayedValues).toEqual(liveValues);
    expect(replayed.value).toBe('done');
    expect(replayed.context).toEqual(live.getSnapshot().context);
    expect(replayed.context).toEqual({
      loopWaitMs: 5_000,
      request: { leader: 'pg-1', atMs: AT + 60_000 },
      newLeader: 'pg-2',
      reason: undefined,
    });
  });
});

describe('scheduledSwitchoverOf', () => {
  it('summarizes a waiting plan for GET /cluster', () => {
    expect(scheduledSwitchoverOf(scheduledActor().getSnapshot())).toEqual({
      at: '2026-05-01T10:00:00+00:00',
      from: 'pg-1',
      to: 'pg-2',
    });
  });

  it('leaves out an absent candidate', () => {
    const actor = started();
    actor.send({ type: 'switchover.requested', leader: 'pg-1', atMs: AT, now: T0 });
    expect(scheduledSwitchoverOf(actor.getSnapshot())).toEqual({ at: '2026-05-01T10:00:00+00:00', from: 'pg-1' });
  });

  it('reads a persisted snapshot too', () => {
    const persisted = JSON.parse(JSON.stringify(scheduledActor().getPersistedSnapshot()));
    expect(scheduledSwitchoverOf(persisted)?.at).toBe('2026-05-01T10:00:00+00:00');
  });

  it('is undefined when nothing waits', () => {
    expect(scheduledSwitchoverOf(started().getSnapshot())).toBeUndefined();
    const actor = scheduledActor();
    actor.send({ type: 'clock.tick', now: AT });
    expect(scheduledSwitchoverOf(actor.getSnapshot())).toBeUndefined();
  });
});

describe('switchoverInProgress', () => {
  it('is true while scheduled or executing, false otherwise', () => {
    const actor = started();
    expect(switchoverInProgress(actor.getSnapshot())).toBe(false);
    actor.send({ type: 'switchover.requested', leader: 'pg-1', atMs: AT, now: T0 });
    expect(switchoverInProgress(actor.getSnapshot())).toBe(true);
    actor.send({ type: 'clock.tick', now: AT });
    expect(switchoverInProgress(actor.getSnapshot())).toBe(true);
    actor.send({ type: 'switchover.succeeded', newLeader: 'pg-2', now: AT + 1 });
    expect(switchoverInProgress(actor.getSnapshot())).toBe(false);
  });
});
