/**
 * The fence's logic (docs/ha.md "Fencing"), with the operating system injected so it can be
 * tested without a postmaster. The process around it is src/watchdog/fence-process.ts.
 *
 * - `arm`: remembers the postmaster (PID and its start time from /proc, so a recycled PID is never
 *   signalled), the data directory when given, and the deadline. Armed on a data directory, the
 *   fence needs no running postmaster: when it fires it also stops whichever postmaster runs in
 *   that directory at that instant (postmaster.pid), so a primary started (or restarted after a
 *   crash) after the arming is fenced too, with no window until the agent arms it on the new PID
 *   (docs/simulation.md finding 16);
 * - `feed`: moves the deadline (a successful leader-lock renewal);
 * - the deadline passes, or the agent's pipe closes while armed: fire — SIGQUIT to the postmaster
 *   (immediate shutdown: every backend exits at once), then, when it is still alive `killAfterMs`
 *   later, SIGKILL to it and to the children it had; then exit;
 * - `disarm`: back to idle without touching anything (the process stays, ready for the next
 *   `arm`: it is started once, idle, when the agent starts);
 * - `exit`, or the pipe closing while not armed: exit without touching anything.
 *
 * No imports beyond the protocol's types: the fence process must start fast and stay small.
 */
import type { FromFence, ToFence } from './protocol.ts';

/** What the fence needs from the operating system. */
export interface FenceOps {
  /** CLOCK_MONOTONIC ms. */
  mono(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
  /** `/proc/<pid>/stat`, undefined when the process is gone. */
  readStat(pid: number): string | undefined;
  /** Every PID of the machine. */
  listPids(): number[];
  /**
   * The postmaster running in `dataDir` now (its postmaster.pid, checked against the process's
   * working directory, so a stale file or a recycled PID is never taken); undefined when none.
   */
  dataDirPostmaster?(dataDir: string): number | undefined;
  /** process.kill; throws when the process does not exist. */
  kill(pid: number, signal: 'SIGQUIT' | 'SIGKILL'): void;
  sleep(ms: number): Promise<void>;
  /** Writes one message to the agent (best effort: the agent may be gone). */
  send(msg: FromFence): void;
  /** Ends the process. */
  exit(code: number): void;
}

/** One process identified by PID and start time. */
interface Target {
  pid: number;
  startTime: string;
}

/** Exit codes of the fence process. */
export const FENCE_EXIT = { disarmed: 0, fired: 3, badUsage: 2 } as const;

/** State letter, parent PID and start time (field 22) of a `/proc/<pid>/stat` line. */
export function statFields(text: string): { state: string; ppid: number; startTime: string } | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const rest = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  const state = rest[0];
  const ppid = Number(rest[1]);
  const startTime = rest[19];
  if (!state || !Number.isInteger(ppid) || !startTime) return undefined;
  return { state, ppid, startTime };
}

export class FenceCore {
  private target: Target | undefined;
  /** The data directory armed on (its postmaster is looked up when the fence fires). */
  private dataDir: string | undefined;
  private deadlineMono = 0;
  private timer: unknown;
  private firing = false;
  private done = false;

  constructor(
    private readonly ops: FenceOps,
    private readonly opts: { killAfterMs: number; pollMs?: number } = { killAfterMs: 1000 },
  ) {}

  /** True while armed (and not fired). */
  get armed(): boolean {
    return this.hasTarget && !this.firing && !this.done;
  }

  /** Armed on a postmaster, a data directory or both (`arm` refuses neither). */
  private get hasTarget(): boolean {
    return this.target !== undefined || this.dataDir !== undefined;
  }

  /** ms until the deadline (negative once passed); undefined when not armed. */
  remainingMs(): number | undefined {
    return this.armed ? this.deadlineMono - this.ops.mono() : undefined;
  }

  /** Handles one message from the agent. */
  handle(msg: ToFence): void {
    if (this.done || this.firing) return;
    switch (msg.op) {
      case 'arm': {
        const dataDir = typeof msg.dataDir === 'string' && msg.dataDir !== '' && this.ops.dataDirPostmaster ? msg.dataDir : undefined;
        const id = msg.pid ? this.identify(msg.pid) : undefined;
        if (!id && dataDir === undefined) {
          this.ops.send({
            ev: 'refused',
            reason: msg.pid ? `no live process ${msg.pid}` : 'neither a postmaster nor a data directory to fence',
          });
          return;
        }
        this.target = id;
        this.dataDir = dataDir;
        this.setDeadline(msg.remainingMs, msg.deadlineMonoMs);
        this.ops.send({ ev: 'armed', pid: id?.pid ?? 0, remainingMs: Math.round(this.deadlineMono - this.ops.mono()) });
        return;
      }
      case 'feed':
        if (this.hasTarget) this.setDeadline(msg.remainingMs, msg.deadlineMonoMs);
        return;
      case 'disarm':
        this.target = undefined;
        this.dataDir = undefined;
        if (this.timer !== undefined) this.ops.clearTimer(this.timer);
        this.timer = undefined;
        this.ops.send({ ev: 'disarmed' });
        return;
      case 'exit':
        this.target = undefined;
        this.dataDir = undefined;
        this.finish({ ev: 'disarmed' }, FENCE_EXIT.disarmed);
        return;
    }
  }

  /** The agent's pipe closed (the agent died): fire when armed, else exit. */
  agentGone(): void {
    if (this.done || this.firing) return;
    if (this.hasTarget) void this.fire('agent gone');
    else this.finish(undefined, FENCE_EXIT.disarmed);
  }

  private setDeadline(remainingMs: number, deadlineMonoMs: number): void {
    const now = this.ops.mono();
    const r = Number.isFinite(remainingMs) ? remainingMs : 0;
    const abs = Number.isFinite(deadlineMonoMs) ? deadlineMonoMs : now + r;
    this.deadlineMono = Math.min(now + r, abs);
    if (this.timer !== undefined) this.ops.clearTimer(this.timer);
    const wait = this.deadlineMono - now;
    if (wait <= 0) {
      this.timer = undefined;
      void this.fire('deadline');
      return;
    }
    this.timer = this.ops.setTimer(() => {
      this.timer = undefined;
      // A timer may run early by a fraction of a ms: check against the clock itself.
      const left = this.deadlineMono - this.ops.mono();
      if (left > 0) this.setDeadline(left, this.deadlineMono);
      else void this.fire('deadline');
    }, Math.ceil(wait));
  }

  private identify(pid: number): Target | undefined {
    if (!Number.isInteger(pid) || pid <= 1) return undefined;
    const text = this.ops.readStat(pid);
    const f = text ? statFields(text) : undefined;
    if (!f || f.state === 'Z' || f.state === 'X' || f.state === 'x') return undefined;
    return { pid, startTime: f.startTime };
  }

  /** True while `t` is still the very process identified at arming (not a zombie, not a recycled PID). */
  private alive(t: Target): boolean {
    const text = this.ops.readStat(t.pid);
    const f = text ? statFields(text) : undefined;
    return f !== undefined && f.startTime === t.startTime && f.state !== 'Z' && f.state !== 'X' && f.state !== 'x';
  }

  private children(of: number): Target[] {
    const out: Target[] = [];
    for (const pid of this.ops.listPids()) {
      const text = this.ops.readStat(pid);
      const f = text ? statFields(text) : undefined;
      if (f && f.ppid === of) out.push({ pid, startTime: f.startTime });
    }
    return out;
  }

  private signal(t: Target, sig: 'SIGQUIT' | 'SIGKILL'): boolean {
    if (!this.alive(t)) return false;
    try {
      this.ops.kill(t.pid, sig);
      return true;
    } catch {
      return false;
    }
  }

  private async waitGone(t: Target, ms: number): Promise<boolean> {
    const until = this.ops.mono() + ms;
    while (this.alive(t)) {
      if (this.ops.mono() >= until) return false;
      await this.ops.sleep(this.opts.pollMs ?? 10);
    }
    return true;
  }

  private async fire(reason: 'deadline' | 'agent gone'): Promise<void> {
    if (this.firing || this.done || !this.hasTarget) return;
    this.firing = true;
    if (this.timer !== undefined) this.ops.clearTimer(this.timer);
    const start = this.ops.mono();
    const lateMs = reason === 'deadline' ? Math.max(0, Math.round(start - this.deadlineMono)) : 0;
    const signals: string[] = [];
    // The postmaster armed on, and whichever runs in the armed data directory now (started after
    // the arming, or restarted after a crash): both, when they differ.
    const targets: Target[] = [];
    if (this.target && this.alive(this.target)) targets.push(this.target);
    if (this.dataDir !== undefined) {
      const pid = this.ops.dataDirPostmaster?.(this.dataDir);
      const id = pid !== undefined ? this.identify(pid) : undefined;
      if (id && !targets.some((t) => t.pid === id.pid)) targets.push(id);
    }
    let stopped = true;
    for (const t of targets) {
      // Its children now: once the postmaster is gone they are re-parented and cannot be found.
      const children = this.children(t.pid);
      if (this.signal(t, 'SIGQUIT')) signals.push('SIGQUIT');
      let gone = await this.waitGone(t, this.opts.killAfterMs);
      if (!gone) {
        if (this.signal(t, 'SIGKILL')) signals.push('SIGKILL');
        for (const c of children) this.signal(c, 'SIGKILL');
        gone = await this.waitGone(t, 1000);
      }
      stopped &&= gone;
    }
    this.finish({ ev: 'fired', reason, lateMs, signals, stopped, tookMs: Math.round(this.ops.mono() - start) }, FENCE_EXIT.fired);
  }

  private finish(msg: FromFence | undefined, code: number): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== undefined) this.ops.clearTimer(this.timer);
    if (msg) this.ops.send(msg);
    this.ops.exit(code);
  }
}
