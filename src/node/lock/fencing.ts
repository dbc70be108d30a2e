/**
 * Fencing, the agent's side (docs/ha.md "Fencing"; patroni.md §3.12, reliability.md §5.4): a
 * software watchdog that stops the local PostgreSQL when this agent can no longer renew the
 * leader lock in time — crashed (SIGKILL), frozen (SIGSTOP) or with a stalled event loop.
 *
 * The fence itself is a FenceDevice (a separate process in production, started idle with the
 * agent, src/watchdog/process-fence.ts; none in the simulator and in unit tests). This module
 * decides when it is armed, fed and disarmed (disarmed, the process stays, idle):
 * - armed before a promotion: once the leader race is won (automatic mode, as the reference
 *   activates its watchdog after taking the lock and before promoting: a member that loses the
 *   race never arms), or before the race (required mode: a member that cannot arm it does not
 *   race); and whenever this agent holds the lock while a
 *   postmaster runs (adopted key, bootstrap, a primary started after a failure) — or, with a
 *   device that fences a data directory, whenever it holds the lock at all: armed on the data
 *   directory it stops whatever postmaster runs there when it fires, so a primary this agent
 *   starts (or restarts after a crash) is fenced from its first instant (finding 16);
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
import { timingOf, type DynamicConfig } from '../../domain/dynamic-config.ts';
import type { FenceDevice, FenceEvent } from '../../watchdog/process-fence.ts';
import { monoNowMs } from '../../watchdog/protocol.ts';

/** `watchdog.mode`. */
export type WatchdogMode = 'off' | 'automatic' | 'required';

/** The local `watchdog` section. */
export interface WatchdogSettings {
  mode: WatchdogMode;
  /** Seconds before the lease can expire at which the fence fires; −1 = ttl / 2 (the reference's). */
  safety_margin: number;
  /**
   * The operator wrote `safety_margin` (not the default): an adjustment of it is a warning; the
   * default adjusted to the cluster's timing is logged at info.
   */
  safety_margin_set?: boolean;
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
export function effectiveMarginMs(
  safetyMarginSeconds: number,
  ttlMs: number,
  retryTimeoutMs?: number,
): { marginMs: number; adjusted: boolean } {
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

/**
 * A primary is launched only while the lock is valid for the fence's margin plus this, ms: the
 * fence's deadline then comes at least this long after the launch, when the new postmaster has
 * written its postmaster.pid (at once, before it reads its configuration) and the fence armed on
 * the data directory finds it.
 */
export const LAUNCH_SLACK_MS = 1000;

/** What the fence reads and calls (HaNode wires it). */
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
  /** Logs (at warn, or at `level`) and journals `ha.<type>`. */
  notice: (type: string, text: string, level?: 'info') => void;
  log: Logger;
  /** Monotonic ms (default CLOCK_MONOTONIC). */
  mono?: () => number;
}

/** When the fence is armed, fed and disarmed (see the module comment). */
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
   * Before the leader race, `required` only: arms the fence on the running postmaster with the
   * deadline counted from now. False when it could not be armed: the member must not take the
   * lock. In `automatic` mode nothing is armed before the race (a member that loses it would arm
   * and disarm for nothing): the won lock arms it (`renewed`), and `afterAcquire` waits for that
   * before the promotion.
   */
  async beforeAcquire(): Promise<boolean> {
    if (this.mode !== 'required' || this.deps.config().pause === true) return true;
    const stamp = this.stamp();
    const ok = await this.serial(async () => {
      if (this.deps.device?.armed) return true;
      const pid = await this.deps.postmasterPid();
      if (pid === undefined && !this.deps.device?.dataDir) return false;
      return this.armOn(pid, stamp);
    });
    if (!ok && this.mode === 'required') {
      this.deps.notice('watchdog.notArmed', 'not promoting self because the fence (watchdog) could not be armed (watchdog.mode: required)');
      return false;
    }
    return true;
  }

  /**
   * After the leader race was won, before the promotion (patroni.md §3.12: activated before
   * promotion): resolves once the arming the won lock started (`renewed`) is done. An arming that
   * failed was reported by it (automatic mode goes on without a fence).
   */
  async afterAcquire(): Promise<void> {
    if (this.mode === 'off') return;
    await this.sync();
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
      // Armed on the data directory it stays armed whatever runs (below): no postmaster check, the
      // leader's every cycle (issue 13: three /proc and pid file reads fewer per cycle).
      if (d?.armed && d.dataDir) return;
      const pid = await this.deps.postmasterPid();
      if (pid === undefined && !d?.dataDir) {
        if (d?.armed) await this.disarm('no postmaster runs');
        return;
      }
      // Armed on the data directory (d.dataDir), the fence also stops a postmaster started after
      // the arming: it stays armed while no postmaster runs, so none runs unfenced (finding 16).
      if (d?.armed) return;
      if (this.lastStamp === undefined) return;
      // Nothing runs and the deadline passed: there is nothing to stop, and a fence armed now would
      // fire at once and end (started again for the next arming). No primary is launched on such a
      // lock (primaryLaunchRefusal); the next renewal arms it.
      if (pid === undefined && this.deadline(this.lastStamp).remainingMs <= 0) return;
      if (!(await this.armOn(pid, this.lastStamp)) && this.mode === 'required' && !this.failed) {
        this.failed = true;
        this.deps.notice(
          'watchdog.failed',
          'the fence (watchdog) could not be armed while leading and watchdog.mode is required: demoting',
        );
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

  /**
   * How long before the lock's expiry the fence fires (its margin), ms; 0 without a fence. A
   * primary must not be started or promoted after "lock valid until − this": the fence may have
   * fired already (finding 16).
   */
  marginMs(): number {
    if (this.mode === 'off' || !this.deps.device) return 0;
    const cfg = this.deps.config();
    const t = timingOf(cfg);
    return effectiveMarginMs(this.deps.settings.safety_margin, t.ttlMs, t.retryTimeoutMs).marginMs;
  }

  /**
   * Why a postmaster must not be launched (or promoted) as primary now on a lock valid until
   * `lockUntilMs` (agent clock `nowMs`), or undefined when it may: the lock must still be valid
   * for the fence's margin plus `LAUNCH_SLACK_MS`, so the fence, armed on the data directory,
   * fires only after the new postmaster has written its postmaster.pid (finding 16).
   */
  primaryLaunchRefusal(lockHeld: boolean, lockUntilMs: number, nowMs: number): string | undefined {
    if (!lockHeld) return 'this member does not hold the leader lock';
    const needMs = this.marginMs() > 0 ? this.marginMs() + LAUNCH_SLACK_MS : 0;
    const leftMs = lockUntilMs - nowMs;
    if (leftMs > needMs) return undefined;
    return leftMs <= 0
      ? `the leader lock may have expired ${-leftMs} ms ago`
      : `the leader lock is valid for ${leftMs} ms only, not more than the fence's margin and slack (${needMs} ms)`;
  }

  /** The fence deadline of a renewal sent at `stampMono`. */
  private deadline(stampMono: number): { remainingMs: number; deadlineMonoMs: number } {
    const cfg = this.deps.config();
    const { ttlMs, retryTimeoutMs } = timingOf(cfg);
    const { marginMs, adjusted } = effectiveMarginMs(this.deps.settings.safety_margin, ttlMs, retryTimeoutMs);
    const key = `${cfg.ttl}/${cfg.retry_timeout}/${marginMs}`;
    if (key !== this.warnedTiming) {
      this.warnedTiming = key;
      // The default margin fitted to the cluster's timing is no fault of the file: info. A margin
      // the operator wrote and the agent does not use as written is a warning.
      if (adjusted) {
        this.deps.notice(
          'watchdog.adjusted',
          `watchdog.safety_margin ${this.deps.settings.safety_margin} s${this.deps.settings.safety_margin_set === true ? '' : ' (the default)'} with ttl ${cfg.ttl} s and retry_timeout ${cfg.retry_timeout} s: using ${marginMs / 1000} s (at most ttl / 2 and retry_timeout / 2, so the agent's own demotion comes first)`,
          ...(this.deps.settings.safety_margin_set === true ? [] : (['info'] as const)),
        );
      }
    }
    const deadlineMonoMs = stampMono + ttlMs - marginMs;
    return { remainingMs: deadlineMonoMs - this.stamp(), deadlineMonoMs };
  }

  private async armOn(pid: number | undefined, stampMono: number): Promise<boolean> {
    const d = this.deps.device;
    if (!d) {
      if (!this.failed) this.deps.log.warn(`watchdog.mode is ${this.mode} but this agent has no fence: PostgreSQL is not fenced`);
      this.failed = true;
      return false;
    }
    const { remainingMs, deadlineMonoMs } = this.deadline(stampMono);
    const what = [pid !== undefined ? `postmaster ${pid}` : undefined, d.dataDir ? `data directory ${d.dataDir}` : undefined]
      .filter(Boolean)
      .join(' and ');
    try {
      await d.arm(pid, remainingMs, deadlineMonoMs);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      this.deps.notice(
        'watchdog.armFailed',
        `could not arm the fence on ${what}: ${why}${this.mode === 'automatic' ? ' (watchdog.mode automatic: going on without it)' : ''}`,
      );
      this.failed = true;
      return false;
    }
    this.failed = false;
    this.deps.notice(
      'watchdog.armed',
      `fence armed on ${what} (fence process ${d.pid ?? '?'}): fires ${Math.round(remainingMs)} ms from now unless the leader lock is renewed`,
      'info',
    );
    return true;
  }

  private async disarm(why: string): Promise<void> {
    const d = this.deps.device;
    if (!d) return;
    const was = d.armed;
    await d.disarm().catch((e) => this.deps.log.warn({ err: String(e) }, 'disarming the fence failed'));
    if (was) this.deps.notice('watchdog.disarmed', `fence disarmed: ${why}`, 'info');
  }

  private onDeviceEvent(e: FenceEvent): void {
    if (e.kind === 'fired') {
      const f = e.fired;
      if (f.signals.length === 0 && f.stopped) {
        // Armed on the data directory with no postmaster running there (finding 16): nothing to stop.
        this.deps.notice('watchdog.expired', `the fence's deadline passed (${f.reason}) with no postmaster running: nothing to stop`);
        return;
      }
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
