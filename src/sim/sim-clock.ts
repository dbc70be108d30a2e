/**
 * Simulated time for the deterministic simulation (issue 11, docs/simulation.md).
 *
 * - `SimClock`: virtual epoch ms and one timer queue ordered by (due time, sequence number).
 *   `runUntil(t)` fires due timers one at a time; after each it lets every pending promise
 *   continuation run (one `setImmediate` turn: Node drains the whole microtask queue, however
 *   deep the chains, before it runs a macrotask). No real timer decides any order: the sim has no
 *   real I/O, so that turn only flushes continuations.
 * - `NodeClock`: one node's view of the clock (implements the agent's `Clock`). It can be
 *   frozen (its timers and deliveries are held until thawed: the "freeze" fault, a stopped
 *   process) or killed (everything dropped: the agent process crashed).
 */
import type { Clock, TimerHandle } from '../node/clock.ts';
import { timerDelay } from '../node/clock.ts';

/** One queued timer. */
interface SimTimer {
  due: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** The simulation's start instant: 2026-01-01T00:00:00Z. */
export const SIM_EPOCH_MS = Date.UTC(2026, 0, 1);

/** Lets every pending promise continuation run (see module comment). */
export function flushContinuations(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class SimClock {
  private t: number;
  private seq = 0;
  private readonly heap: SimTimer[] = [];
  /** Timers fired since creation (figures). */
  fired = 0;

  constructor(startMs = SIM_EPOCH_MS) {
    this.t = startMs;
  }

  now(): number {
    return this.t;
  }

  /** Queues `fn` at now + ms. */
  schedule(ms: number, fn: () => void): SimTimer {
    const timer: SimTimer = { due: this.t + timerDelay(ms), seq: ++this.seq, fn, cancelled: false };
    this.push(timer);
    return timer;
  }

  /** Cancels a queued timer (no-op when fired or unknown). */
  cancel(timer: SimTimer | undefined): void {
    if (timer) timer.cancelled = true;
  }

  /** Timers still queued (cancelled ones included until they reach the head). */
  get queued(): number {
    return this.heap.length;
  }

  /**
   * Fires every timer due at or before `untilMs`, one at a time in (due, seq) order, each
   * followed by a flush of promise continuations; then sets the time to `untilMs`.
   */
  async runUntil(untilMs: number): Promise<void> {
    await flushContinuations();
    for (;;) {
      const top = this.heap[0];
      if (!top || top.due > untilMs) break;
      this.pop();
      if (top.cancelled) continue;
      if (top.due > this.t) this.t = top.due;
      this.fired++;
      top.fn();
      await flushContinuations();
    }
    if (untilMs > this.t) this.t = untilMs;
  }

  /** A node's view of this clock. */
  view(): NodeClock {
    return new NodeClock(this);
  }

  // ---- binary heap on (due, seq) ---------------------------------------------------------------

  private less(a: SimTimer, b: SimTimer): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  private push(x: SimTimer): void {
    const h = this.heap;
    h.push(x);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}

/** A handle of NodeClock: the underlying timer, or a held callback. */
interface NodeTimer {
  fn: () => void;
  timer: SimTimer | undefined;
  cancelled: boolean;
}

/**
 * One node's clock: the agent's timers and the completions of its calls (DCS, PostgreSQL, peer
 * requests) go through it, so a frozen node runs no code until thawed and a killed one never again.
 */
export class NodeClock implements Clock {
  private frozen = false;
  private dead = false;
  private held: NodeTimer[] = [];
  /** A slow event loop: every timer and every delivery runs this many ms late (0: on time). */
  private lagMs = 0;
  /**
   * Simulated ms until which the completions already queued behind a slow loop run (0: none).
   * An event loop runs ready callbacks in order: a completion that is ready later never runs
   * before one that was ready earlier, even once the loop is no longer late (finding 11: without
   * this, a postmaster check answered under the slow loop ran after a start that completed once
   * the lag had ended, and reported the new postmaster dead).
   */
  private backlogUntilMs = 0;

  constructor(private readonly clock: SimClock) {}

  now(): number {
    return this.clock.now();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const nt: NodeTimer = { fn, timer: undefined, cancelled: false };
    if (this.dead) return { id: nt };
    // A timer that falls due while the backlog still drains runs after it.
    const delay = Math.max(timerDelay(ms) + this.lagMs, this.backlogUntilMs - this.clock.now());
    nt.timer = this.clock.schedule(delay, () => this.fire(nt));
    return { id: nt };
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    const nt = handle?.id as NodeTimer | undefined;
    if (!nt) return;
    nt.cancelled = true;
    this.clock.cancel(nt.timer);
  }

  /** Runs `fn` now, or when thawed; never once killed. For completions of calls the node made. */
  deliver(fn: () => void): void {
    if (this.dead) return;
    if (this.frozen) this.held.push({ fn, timer: undefined, cancelled: false });
    else if (this.lagMs > 0 || this.backlogUntilMs > this.clock.now()) {
      // In order: after every completion queued before it (same instant: by sequence number).
      const now = this.clock.now();
      const at = Math.max(now + this.lagMs, this.backlogUntilMs);
      this.backlogUntilMs = at;
      const nt: NodeTimer = { fn, timer: undefined, cancelled: false };
      nt.timer = this.clock.schedule(at - now, () => this.fire(nt));
    } else fn();
  }

  /** Slow event loop: from now on timers and deliveries run `ms` late (0 ends it). */
  setLag(ms: number): void {
    this.lagMs = Math.max(0, ms);
  }

  /** A promise that settles like `p`, but through `deliver`. */
  gate<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      p.then(
        (v) => this.deliver(() => resolve(v)),
        (e: unknown) => this.deliver(() => reject(e)),
      );
    });
  }

  get isFrozen(): boolean {
    return this.frozen;
  }

  get isDead(): boolean {
    return this.dead;
  }

  /** Holds every timer and delivery from now on. */
  freeze(): void {
    this.frozen = true;
  }

  /** Releases what was held, in order, each as its own timer at the current instant. */
  thaw(): void {
    if (!this.frozen) return;
    this.frozen = false;
    const held = this.held;
    this.held = [];
    for (const nt of held) if (!nt.cancelled) nt.timer = this.clock.schedule(0, () => this.fire(nt));
  }

  /** The process is gone: nothing of it runs again. */
  kill(): void {
    this.dead = true;
    this.held = [];
  }

  private fire(nt: NodeTimer): void {
    if (nt.cancelled || this.dead) return;
    if (this.frozen) {
      this.held.push(nt);
      return;
    }
    nt.fn();
  }
}
