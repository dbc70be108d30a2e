/**
 * The agent's clock and timers, injected (issue 11: no real timer in the simulator). Every
 * waiting the node does (the HA loop's sleep, the probe and crash-watch intervals, the instants
 * of scheduled work, start retries) goes through one Clock, so a test or a simulation can run the
 * same code on simulated time.
 */

/** An opaque timer handle. */
export type TimerHandle = { readonly id: unknown };

export interface Clock {
  /** Epoch ms. */
  now(): number;
  /** Calls `fn` once after `ms` (clamped to 0 … 2^31−1, Node's timer range). Does not keep the process alive when `unref`. */
  setTimeout(fn: () => void, ms: number, opts?: { unref?: boolean }): TimerHandle;
  /** Cancels a timer; unknown or fired handles are ignored. */
  clearTimeout(handle: TimerHandle | undefined): void;
}

/** The largest delay Node's timers accept, ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Clamps a delay into Node's timer range. */
export function timerDelay(ms: number): number {
  return Math.min(Math.max(0, Number.isFinite(ms) ? ms : MAX_TIMER_MS), MAX_TIMER_MS);
}

/** Real time: Date.now and Node's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms, opts) {
    const t = setTimeout(fn, timerDelay(ms));
    if (opts?.unref) t.unref();
    return { id: t };
  },
  clearTimeout(handle) {
    if (handle) clearTimeout(handle.id as NodeJS.Timeout);
  },
};

/** Resolves after `ms` on `clock`. */
export function sleepOn(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/** Calls `fn` every `everyMs` on `clock` until the returned function is called. */
export function everyOn(clock: Clock, everyMs: number, fn: () => void): () => void {
  let handle: TimerHandle | undefined;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    fn();
    handle = clock.setTimeout(tick, everyMs);
  };
  handle = clock.setTimeout(tick, everyMs);
  return () => {
    stopped = true;
    clock.clearTimeout(handle);
  };
}

/** What waitOn needs of an actor: its snapshot now and a subscription to the next ones. */
export interface Observed<S> {
  getSnapshot(): S;
  subscribe(next: (s: S) => void): { unsubscribe(): void };
}

/**
 * Resolves with the first snapshot of `actor` (the current one included) that satisfies `pred`;
 * rejects with Error(`timed out after <ms> ms`) after `timeoutMs` on `clock`. Like xstate's
 * waitFor, but its timer is the injected clock's (issue 11: no real timer in the simulator).
 */
export function waitOn<S>(clock: Clock, actor: Observed<S>, pred: (s: S) => boolean, timeoutMs: number): Promise<S> {
  return new Promise<S>((resolve, reject) => {
    const now = actor.getSnapshot();
    if (pred(now)) {
      resolve(now);
      return;
    }
    let done = false;
    const finish = (fn: () => void) => {
      if (done) return;
      done = true;
      clock.clearTimeout(timer);
      sub.unsubscribe();
      fn();
    };
    const timer = clock.setTimeout(() => finish(() => reject(new Error(`timed out after ${timeoutMs} ms`))), timeoutMs);
    const sub = actor.subscribe((s) => {
      if (pred(s)) finish(() => resolve(s));
    });
  });
}
