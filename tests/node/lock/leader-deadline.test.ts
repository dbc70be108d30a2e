import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import type { Role } from '../../../src/domain/states.ts';
import type { Clock, TimerHandle } from '../../../src/node/clock.ts';
import { LeaderDeadline, type LeaderDeadlineDeps } from '../../../src/node/lock/leader-deadline.ts';

/** A manual clock: `advance(ms)` fires due timers in order. */
function manualClock(start: number): Clock & { advance(ms: number): void; unrefs: number } {
  let now = start;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    unrefs: 0,
    now: () => now,
    setTimeout(fn, ms, opts) {
      const id = ++seq;
      if (opts?.unref) this.unrefs++;
      timers.set(id, { at: now + ms, fn });
      return { id };
    },
    clearTimeout(h: TimerHandle | undefined) {
      if (h) timers.delete(h.id as number);
    },
    advance(ms) {
      const end = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
      }
      now = end;
    },
  };
}

function setup(over: { pause?: boolean } = {}) {
  const clock = manualClock(1_000_000);
  let lastKeepalive = 1_000_000;
  let deadlineFn: (() => number) | undefined;
  let wakes = 0;
  const db: { value: string; context: { role: Role; promoting: boolean } } = {
    value: 'running',
    context: { role: 'primary', promoting: false },
  };
  const lock = { held: true };
  const state = { config: withDefaults({ ttl: 10, loop_wait: 2, retry_timeout: 3, ...(over.pause ? { pause: true } : {}) }) };
  const deps: LeaderDeadlineDeps = {
    clock,
    dcs: { lastKeepaliveMs: () => lastKeepalive, setDeadline: (f: (() => number) | undefined) => void (deadlineFn = f) },
    state,
    lock,
    db: () => ({ getSnapshot: () => db }),
    now: () => clock.now(),
    wake: () => void wakes++,
  };
  return {
    d: new LeaderDeadline(deps),
    state,
    clock,
    db,
    lock,
    deadline: () => deadlineFn?.(),
    wakes: () => wakes,
    renew: (at: number) => (lastKeepalive = at),
  };
}

describe('LeaderDeadline', () => {
  it("moves its timer at every renewal as a ref'd timer (an unref'd one left an empty wake-up per cycle), stopped by stop()", () => {
    const s = setup();
    for (let i = 0; i < 3; i++) {
      s.d.begin();
      s.renew(s.clock.now());
      s.d.end();
      s.clock.advance(2_000);
    }
    expect(s.clock.unrefs).toBe(0);
    s.d.stop();
    s.clock.advance(60_000);
    expect(s.wakes()).toBe(0);
  });

  it('a leading primary gives the DCS client last renewal + ttl − retry_timeout, cleared after the cycle', () => {
    const s = setup();
    s.d.begin();
    expect(s.deadline()).toBe(1_007_000);
    s.renew(1_002_000);
    expect(s.deadline()).toBe(1_009_000); // read at each call: a renewal in the cycle moves it
    s.d.end();
    expect(s.deadline()).toBeUndefined();
  });

  it('wakes the loop when the deadline passes without a renewal, not before', () => {
    const s = setup();
    s.d.begin();
    s.d.end();
    s.clock.advance(6_999);
    expect(s.wakes()).toBe(0);
    expect(s.d.passed()).toBe(false);
    s.clock.advance(1);
    expect(s.wakes()).toBe(1);
    expect(s.d.passed()).toBe(true);
  });

  it('wakes once per deadline: cycles that keep failing after it do not spin', () => {
    const s = setup();
    s.d.begin();
    s.d.end();
    s.clock.advance(7_000);
    expect(s.wakes()).toBe(1);
    for (let i = 0; i < 3; i++) {
      s.d.begin();
      s.d.end();
      s.clock.advance(100);
    }
    expect(s.wakes()).toBe(1);
  });

  it('a renewal before the deadline re-arms the timer instead of waking', () => {
    const s = setup();
    s.d.begin();
    s.d.end();
    s.clock.advance(5_000);
    s.renew(1_005_000);
    s.clock.advance(2_000); // old deadline 1_007_000: re-armed for 1_012_000
    expect(s.wakes()).toBe(0);
    s.clock.advance(5_000);
    expect(s.wakes()).toBe(1);
  });

  it('a failsafe round accepted before the deadline moves it; one after it does not', () => {
    const s = setup();
    s.d.begin();
    s.clock.advance(4_000);
    expect(s.d.failsafeConfirmed(1_003_500)).toBe(true);
    expect(s.d.deadlineMs()).toBe(1_010_500);
    s.clock.advance(7_000);
    expect(s.d.failsafeConfirmed(1_010_000)).toBe(false);
    expect(s.d.deadlineMs()).toBe(1_010_500);
  });

  it('in failsafe mode the DCS calls end 2 s before the deadline, leaving the round time', () => {
    const s = setup();
    s.state.config = { ...s.state.config, failsafe_mode: true };
    s.d.begin();
    expect(s.deadline()).toBe(1_005_000);
    expect(s.d.deadlineMs()).toBe(1_007_000);
    s.d.end();
    s.clock.advance(5_000);
    expect(s.wakes()).toBe(1);
  });

  it('does not apply to a replica, a stopped primary, without the lock, or in pause', () => {
    const a = setup();
    a.db.context.role = 'replica';
    a.d.begin();
    expect(a.deadline()).toBeUndefined();
    const b = setup();
    b.db.value = 'crashed';
    b.d.begin();
    expect(b.deadline()).toBeUndefined();
    const c = setup();
    c.lock.held = false;
    c.d.begin();
    expect(c.deadline()).toBeUndefined();
    const p = setup({ pause: true });
    p.d.begin();
    expect(p.deadline()).toBeUndefined();
    const promoting = setup();
    promoting.db.context = { role: 'replica', promoting: true };
    promoting.d.begin();
    expect(promoting.deadline()).toBe(1_007_000);
  });
});
