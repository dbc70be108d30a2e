/**
 * Fencing, the agent's side (docs/ha.md "Fencing"; patroni.md §3.12, reliability.md §5.4): a
 * software watchdog that stops the local PostgreSQL when this agent can no longer renew the
 * leader lock in time — crashed (SIGKILL), frozen (SIGSTOP) or with a stalled event loop.
 *
 * The fence itself is a FenceDevice (a separate process in production, started idle with the
 * agent, src/watchdog/process-fence.ts; none in the simulator and in unit tests). This module
 * decides when it is armed, fed and disarmed (disarmed, the process stays, idle):
 * - armed before a promotion (the leader race) and whenever this agent holds the lock while a
 *   postmaster runs (adopted key, bootstrap, a primary started after a failure);
 * - fed on every successful acquire or renewal with the deadline "send time of that renewal +
 *   ttl − safety_margin", on the monotonic clock (the lease cannot expire before send time + ttl);
 * - kept armed, unfed, after the lock is lost or released while the postmaster still runs as
 *   primary (the demotion in progress; should the agent stall there, the fence still fires);
 * - disarmed once the lock is not held and no primary runs, in pause, and at shutdown.
 *
 * Modes (`watchdog.mode`): off; automatic (default, as the reference): used when it can be armed,
 * a warning otherwise; required: a member that cannot arm it does not take the lock, and a leader
 * whose fence cannot be (re)armed demotes and gives the lock up (`watchdog_failed` in /ha).
 */
import type { Logger } from 'pino';
import type { DynamicConfig } from '../domain/dynamic-config.ts';
import type { FenceDevice, FenceEvent } from '../watchdog/process-fence.ts';
import { monoNowMs } from '../watchdog/protocol.ts';

/** `watchdog.mode`. */
export type WatchdogMode = 'off' | 'automatic' | 'required';

/** The local `watchdog` section. */
export interface WatchdogSettings {
  mode: WatchdogMode;
  /** Seconds before the lease can expire at which the fence fires; −1 = ttl / 2 (the reference's). */
  safety_margin: number;
}

/** Default of the `watchdog` section (the reference's: automatic, 5 s). */
export const DEFAULT_WATCHDOG: WatchdogSettings = { mode: 'automatic', safety_margin: 5 };

/** What /ha and /metrics show. */
export interface FencingStatus {
  mode: WatchdogMode;
  /** The fence is armed on the local postmaster. */
  armed: boolean;
  /** `required` and the fence could not be armed (the reference's `watchdog_failed`). */
  failed: boolean;
}

/**
 * The fence's margin, ms: the setting (ttl / 2 for −1 or for a margin that leaves no time within
 * ttl), at most retry_timeout / 2 when `retryTimeoutMs` is given. The cap keeps the fence behind
 * the agent's own deadline (last keepalive + ttl − retry_timeout, docs/ha.md "DCS outage"): an
 * agent that runs demotes itself first (a fast stop with a shutdown checkpoint), and the fence
 * only stops a PostgreSQL whose agent could not, still at least retry_timeout / 2 before the
 * lease can expire. `adjusted` says the setting was not used as written.
 */
export function effectiveMarginMs(safetyMarginSeconds: number, ttlMs: number, retryTimeoutMs?: number): { marginMs: number; adjusted: boolean } {
  let marginMs = safetyMarginSeconds < 0 ? ttlMs / 2 : safetyMarginSeconds * 1000;
  let adjusted = false;
  if (safetyMarginSeconds >= 0 && marginMs >= ttlMs) {
    marginMs = ttlMs / 2;
    adjusted = true;
  }
  if (retryTimeoutMs !== undefined && marginMs > retryTimeoutMs / 2) {
    marginMs = retryTimeoutMs / 2;
    adjusted = true;
  }
  return { marginMs, adjusted };
}

export interface FencingDeps {
  settings: WatchdogSettings;
  /** The fence; undefined: no fence (the mode is then reported, never armed; `required` fails). */
  device?: FenceDevice;
  /** The effective dynamic configuration (ttl, loop_wait, retry_timeout, pause). */
  config: () => DynamicConfig;
  /** The postmaster now, when one runs. */
  postmasterPid: () => Promise<number | undefined>;
  /** This agent holds the leader lock. */
  lockHeld: () => boolean;
  /** The local database runs (or stops) as a primary: a postmaster that may acknowledge writes. */
  primaryRunning: () => boolean;
  notice: (type: string, text: string) => void;
  log: Logger;
  /** Monotonic ms (default CLOCK_MONOTONIC). */
  mono?: () => number;
}

export class Fencing {
  private lastStamp: number | undefined;
  private failed = false;
  private queue: Promise<unknown> = Promise.resolve();
  private warnedTiming = '';
  private stopped = false;

  constructor(private readonly deps: FencingDeps) {
    deps.device?.onEvent((e) => this.onDeviceEvent(e));
  }

  /** The configured mode. */
  get mode(): WatchdogMode {
    return this.deps.settings.mode;
  }

  /** Monotonic ms: LeaderLock stamps the send time of each acquire or renewal with it. */
  stamp(): number {
    return (this.deps.mono ?? monoNowMs)();
  }

  /** Status for /ha and /metrics. */
  status(): FencingStatus {
    return { mode: this.mode, armed: this.deps.device?.armed ?? false, failed: this.mode === 'required' && this.failed };
  }

  /**
   * False when `required` and the fence is not armed on a running postmaster while this agent
   * holds the lock: the cycle then treats the lock as not renewed (a primary demotes), and gives
   * it up once no postmaster runs.
   */
  mayLead(): boolean {
    return this.mode !== 'required' || !this.failed;
  }

  /**
   * A successful acquire or renewal sent at `stampMono` (from `stamp()`): feeds an armed fence,
   * or arms it (asynchronously) when a postmaster runs.
   */
  renewed(stampMono: number): void {
    if (this.mode === 'off') return;
    this.lastStamp = stampMono;
    const d = this.deps.device;
    if (d?.armed) {
      const { remainingMs, deadlineMonoMs } = this.deadline(stampMono);
      d.feed(remainingMs, deadlineMonoMs);
    } else {
      void this.sync();
    }
  }

  /**
   * Before the leader race (patroni.md §3.12: activated before promotion): arms the fence on the
   * running postmaster with the deadline counted from now. False only when `required` and it
   * could not be armed: the member must not take the lock.
   */
  async beforeAcquire(): Promise<boolean> {
    if (this.mode === 'off' || this.deps.config().pause === true) return true;
    const stamp = this.stamp();
    const ok = await this.serial(async () => {
      if (this.deps.device?.armed) return true;
      const pid = await this.deps.postmasterPid();
      if (pid === undefined) return false;
      return this.armOn(pid, stamp);
    });
    if (!ok && this.mode === 'required') {
      this.deps.notice('watchdog.notArmed', 'not promoting self because the fence (watchdog) could not be armed (watchdog.mode: required)');
      return false;
    }
    return true;
  }

  /**
   * Brings the fence in line with the facts: armed while the lock is held and a postmaster runs;
   * disarmed once the lock is not held and no primary runs, in pause, and when off. Called after
   * every cycle and every database transition.
   */
  sync(): Promise<void> {
    if (this.mode === 'off' || this.stopped) return Promise.resolve();
    return this.serial(async () => {
      const d = this.deps.device;
      const paused = this.deps.config().pause === true;
      const held = this.deps.lockHeld();
      if (paused || (!held && !this.deps.primaryRunning())) {
        if (!held) this.lastStamp = undefined;
        if (!held || paused) this.failed = false;
        if (d?.armed) await this.disarm(paused ? 'paused' : 'this member does not lead');
        return;
      }
      if (!held) return; // lost or released with a primary still running: armed, unfed, until it stops
      const pid = await this.deps.postmasterPid();
      if (pid === undefined) {
        if (d?.armed) await this.disarm('no postmaster runs');
        return;
      }
      if (d?.armed) return;
      if (this.lastStamp === undefined) return;
      if (!(await this.armOn(pid, this.lastStamp)) && this.mode === 'required' && !this.failed) {
        this.failed = true;
        this.deps.notice('watchdog.failed', 'the fence (watchdog) could not be armed while leading and watchdog.mode is required: demoting');
      }
    }).then(
      () => undefined,
      (e: unknown) => this.deps.log.warn({ err: String(e) }, 'fencing: bringing the fence in line failed'),
    );
  }

  /** At shutdown (after PostgreSQL stopped, or left running in pause): disarms for good and ends the fence process. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.serial(async () => {
      const d = this.deps.device;
      if (d?.armed) await this.disarm('agent shutting down');
      await d?.close?.().catch((e: unknown) => this.deps.log.warn({ err: String(e) }, 'ending the fence process failed'));
    });
  }

  /** The fence deadline of a renewal sent at `stampMono`. */
  private deadline(stampMono: number): { remainingMs: number; deadlineMonoMs: number } {
    const cfg = this.deps.config();
    const ttlMs = cfg.ttl * 1000;
    const { marginMs, adjusted } = effectiveMarginMs(this.deps.settings.safety_margin, ttlMs, cfg.retry_timeout * 1000);
    const key = `${cfg.ttl}/${cfg.loop_wait}/${cfg.retry_timeout}/${marginMs}`;
    if (key !== this.warnedTiming) {
      this.warnedTiming = key;
      if (adjusted) {
        this.deps.notice(
          'watchdog.adjusted',
          `watchdog.safety_margin ${this.deps.settings.safety_margin} s with ttl ${cfg.ttl} s and retry_timeout ${cfg.retry_timeout} s: using ${marginMs / 1000} s (at most ttl / 2 and retry_timeout / 2, so the agent's own demotion comes first)`,
        );
      }
      const fenceAfter = ttlMs - marginMs;
      const ownDemotion = (cfg.loop_wait + 2 * cfg.retry_timeout) * 1000;
      if (fenceAfter < ownDemotion) {
        this.deps.log.warn(
          { ttl: cfg.ttl, loop_wait: cfg.loop_wait, retry_timeout: cfg.retry_timeout, safety_margin_ms: marginMs },
          `the fence fires ${fenceAfter / 1000} s after the last renewal, before the agent's own demotion after failed renewals may start (loop_wait + 2 × retry_timeout = ${ownDemotion / 1000} s): a slow DCS can end in an immediate stop instead of a fast demotion`,
        );
      }
    }
    const deadlineMonoMs = stampMono + ttlMs - marginMs;
    return { remainingMs: deadlineMonoMs - this.stamp(), deadlineMonoMs };
  }

  private async armOn(pid: number, stampMono: number): Promise<boolean> {
    const d = this.deps.device;
    if (!d) {
      if (!this.failed) this.deps.log.warn(`watchdog.mode is ${this.mode} but this agent has no fence: PostgreSQL is not fenced`);
      this.failed = true;
      return false;
    }
    const { remainingMs, deadlineMonoMs } = this.deadline(stampMono);
    try {
      await d.arm(pid, remainingMs, deadlineMonoMs);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      this.deps.notice(
        'watchdog.armFailed',
        `could not arm the fence on postmaster ${pid}: ${why}${this.mode === 'automatic' ? ' (watchdog.mode automatic: going on without it)' : ''}`,
      );
      this.failed = true;
      return false;
    }
    this.failed = false;
    this.deps.notice('watchdog.armed', `fence armed on postmaster ${pid} (fence process ${d.pid ?? '?'}): fires ${Math.round(remainingMs)} ms from now unless the leader lock is renewed`);
    return true;
  }

  private async disarm(why: string): Promise<void> {
    const d = this.deps.device;
    if (!d) return;
    const was = d.armed;
    await d.disarm().catch((e) => this.deps.log.warn({ err: String(e) }, 'disarming the fence failed'));
    if (was) this.deps.notice('watchdog.disarmed', `fence disarmed: ${why}`);
  }

  private onDeviceEvent(e: FenceEvent): void {
    if (e.kind === 'fired') {
      const f = e.fired;
      this.deps.notice(
        'watchdog.fired',
        `the fence stopped PostgreSQL (${f.reason}${f.reason === 'deadline' ? `, ${f.lateMs} ms late` : ''}): ${f.signals.join(' then ') || 'no signal needed'}, ${f.stopped ? 'stopped' : 'NOT stopped'} in ${f.tookMs} ms`,
      );
      return;
    }
    if (!e.fired) {
      this.deps.notice(
        'watchdog.exited',
        `the fence process ended unexpectedly (${e.signal ?? `exit code ${e.code}`}): started again${e.armed ? ', re-armed at the next cycle' : ''}`,
      );
    }
  }

  /** Runs `fn` after every earlier fencing operation. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
