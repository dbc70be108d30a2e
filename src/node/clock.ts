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
