/**
 * The leader cycle's one deadline (docs/ha.md "DCS outage"; the rule is in
 * src/domain/leader-deadline.ts): while this agent holds the lock and its database runs (or is
 * being promoted) as primary, every DCS call of a cycle is bounded by the deadline derived from
 * the last successful renewal (the DCS client takes it: Dcs.setDeadline), and a call after it is
 * not made at all. When the deadline passes, the loop is woken: the next cycle's keepalive fails
 * at once and the primary demotes (or, in failsafe mode, asks every member first).
 *
 * All time is the node's clock (simulated in `ha simulate`).
 */
import { timingOf } from '../../domain/dynamic-config.ts';
import { FAILSAFE_ROUND_RESERVE_MS, leaderDeadlineMs } from '../../domain/leader-deadline.ts';
import type { Dcs } from '../../dcs/dcs.ts';
import type { DynamicConfig } from '../../domain/dynamic-config.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import type { DatabaseView } from '../node-core.ts';
import type { LeaderLock } from './leader-lock.ts';

/** What the deadline reads and calls (HaNode wires it). */
export interface LeaderDeadlineDeps {
  dcs: Pick<Dcs, 'lastKeepaliveMs' | 'setDeadline'>;
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  lock: Pick<LeaderLock, 'held'>;
  /** The effective dynamic configuration (NodeState). */
  state: Readonly<{ config: DynamicConfig }>;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseView;
  /** Epoch ms. */
  now(): number;
  /** Runs the HA cycle now. */
  wake(): void;
}

/** The leader cycle's deadline for DCS calls, and the wake-up when it passes. */
export class LeaderDeadline {
  /** Send time of the last failsafe round every member accepted in time; 0 when none since leading. */
  private failsafeSentMs = 0;
  private timer: TimerHandle | undefined;
  private timerAtMs = 0;
  /** The deadline the loop was last woken for: woken once per deadline, never in a busy loop. */
  private wokeForMs = 0;

  constructor(private readonly d: LeaderDeadlineDeps) {}

  /**
   * This agent holds the lock and its database is a postmaster that may acknowledge writes:
   * running as primary, or running and being promoted.
   */
  leadingPrimary(): boolean {
    const core = this.d;
    if (!core.lock.held) return false;
    let s: { value: unknown; context: { role: string; promoting: boolean } };
    try {
      s = core.db().getSnapshot();
    } catch {
      return false;
    }
    return s.value === 'running' && (s.context.role === 'primary' || s.context.promoting);
  }

  /**
   * True while the deadline applies: leadingPrimary(), not paused (in pause a DCS loss does not
   * demote, so a deadline would only keep the agent from ever reaching the DCS again). Once the
   * primary demoted (or crashed) it no longer applies, so calls go back to the plain bound.
   */
  leading(): boolean {
    return this.d.state.config.pause !== true && this.leadingPrimary();
  }

  /** The deadline now, epoch ms (see src/domain/leader-deadline.ts). */
  deadlineMs(): number {
    const { dcs, state } = this.d;
    return leaderDeadlineMs({
      lastRenewalMs: dcs.lastKeepaliveMs(),
      failsafeSentMs: this.failsafeSentMs,
      ttlMs: timingOf(state.config).ttlMs,
      retryTimeoutMs: timingOf(state.config).retryTimeoutMs,
    });
  }

  /**
   * The deadline of the cycle's DCS calls, epoch ms: the deadline, less FAILSAFE_ROUND_RESERVE_MS
   * in failsafe mode (a DCS that does not answer must leave the failsafe round time to complete
   * before the deadline).
   */
  callDeadlineMs(): number {
    return this.deadlineMs() - (this.d.state.config.failsafe_mode === true ? FAILSAFE_ROUND_RESERVE_MS : 0);
  }

  /** True while leading and the deadline has passed. */
  passed(): boolean {
    return this.leading() && this.d.now() >= this.deadlineMs();
  }

  /** At the start of a cycle: the DCS client takes the deadline while leading. */
  begin(): void {
    if (this.leading()) {
      this.d.dcs.setDeadline(() => this.callDeadlineMs());
      this.arm();
    } else {
      this.reset();
    }
  }

  /** At the end of a cycle: calls outside cycles (API, shutdown) keep their own bound. */
  end(): void {
    this.d.dcs.setDeadline(undefined);
    if (this.leading()) this.arm();
    else this.reset();
  }

  /**
   * A failsafe round every member accepted, sent at `sentMs`, has completed now: it moves the
   * deadline when it completed before the deadline in force (the members accepted while nobody
   * could have taken the lock or passed their previous acceptance). False when too late.
   */
  failsafeConfirmed(sentMs: number): boolean {
    if (this.d.now() >= this.deadlineMs()) return false;
    this.failsafeSentMs = Math.max(this.failsafeSentMs, sentMs);
    this.arm();
    return true;
  }

  /** Stops the timer (agent shutdown). */
  stop(): void {
    this.reset();
  }

  private reset(): void {
    this.failsafeSentMs = 0;
    this.d.dcs.setDeadline(undefined);
    this.d.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAtMs = 0;
  }

  /**
   * A timer at the deadline that wakes the loop if it passes while still leading. Moved at every
   * renewal (twice a cycle), so it is a ref'd timer, stopped by stop(): Node keeps the emptied
   * timer list of an unref'd timer until its old expiry, and an idle leader then woke for nothing
   * once per cycle (issue 13, docs/performance.md "Empty wake-ups").
   */
  private arm(): void {
    const at = this.callDeadlineMs();
    if ((this.timer && this.timerAtMs === at) || at === this.wokeForMs) return;
    const { clock } = this.d;
    clock.clearTimeout(this.timer);
    this.timerAtMs = at;
    this.timer = clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAtMs = 0;
        if (!this.leading()) return;
        const due = this.callDeadlineMs();
        if (this.d.now() < due) return this.arm();
        this.wokeForMs = due;
        this.d.wake();
      },
      Math.max(0, at - this.d.now()),
    );
  }
}
