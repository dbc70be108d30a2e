import { createActor, createMachine } from 'xstate';
import { describe, expect, it } from 'vitest';
import { waitOn } from '../../src/node/clock.ts';
import { SimClock } from '../../src/sim/sim-clock.ts';

const machine = createMachine({ id: 't', initial: 'a', states: { a: { on: { go: 'b' } }, b: {} } });

describe('waitOn (xstate waitFor on the injected clock)', () => {
  it('resolves on the first matching snapshot, the current one included', async () => {
    const clock = new SimClock();
    const actor = createActor(machine).start();
    expect((await waitOn(clock.view(), actor, (s) => s.value === 'a', 1000)).value).toBe('a');
    const p = waitOn(clock.view(), actor, (s) => s.value === 'b', 1000);
    actor.send({ type: 'go' });
    expect((await p).value).toBe('b');
  });

  it('times out on the simulated clock, not on real time', async () => {
    const clock = new SimClock();
    const actor = createActor(machine).start();
    let outcome = 'pending';
    const p = waitOn(clock.view(), actor, (s) => s.value === 'b', 60_000).then(
      () => (outcome = 'resolved'),
      (e: Error) => (outcome = e.message),
    );
    await clock.runUntil(clock.now() + 59_999);
    expect(outcome).toBe('pending');
    await clock.runUntil(clock.now() + 1);
    await p;
    expect(outcome).toBe('timed out after 60000 ms');
  });
});
