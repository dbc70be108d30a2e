/**
 * Callbacks (`database.callbacks`, patroni.md §3.11; docs/callbacks.md): programs run on database
 * events as `<program> [its words…] <action> <role> <scope>`, e.g. `/etc/ha/vip.sh on_role_change
 * primary demo`.
 *
 * When (from the database machine's transitions, observed by HaNode; the machines do no I/O):
 * - `on_start`: PostgreSQL started (a start, a clone's first start, a bootstrap, a running
 *   postmaster adopted at agent start) in the role last announced, or first ever;
 * - `on_role_change`: instead of `on_start` when it started in another role than the last one a
 *   callback announced (a demoted primary starting as a replica), and when a running replica was
 *   promoted;
 * - `on_stop`: PostgreSQL stopped (shutdown, demotion, re-initialization), with the role it had;
 * - `on_restart`: a restart (POST /restart, scheduled) finished;
 * - `on_reload`: PostgreSQL was reloaded (POST /reload, parameters from the DCS, a new upstream).
 *
 * Never blocking: programs are spawned and not awaited. As the reference's CallbackExecutor:
 * `on_reload` has its own lane, every other callback shares one; a new call kills (SIGKILL, the
 * whole process group) a call still running in its lane. A call running longer than the timeout
 * (default 60 s) is killed too. Every start, end, kill and spawn failure is logged and journaled
 * (journal machine `ha`, events `ha.callback.*`).
 *
 * Programs run as the agent's OS user (the reference runs them as the user running Patroni), with
 * the agent's environment, stdin/stdout/stderr ignored, in their own process group.
 */
import { spawn } from 'node:child_process';
import type { Logger } from 'pino';
import type { CallbackName } from '../../config/command-line.ts';
import type { Journal } from '@ha/machines';
import type { PgControl } from '../../postgres/types.ts';
import type { Clock, TimerHandle } from '../clock.ts';

/** The configured programs, as lists of words (absent: not run). */
export type CallbackCommands = Partial<Record<CallbackName, string[]>>;

/** How a callback process ended. */
export interface CallbackExit {
  code: number | null;
  signal: string | null;
  /** Set when the program could not be started (ENOENT, EACCES, …). */
  error?: string;
}

/** A spawned callback process. */
export interface CallbackProcess {
  readonly pid: number | undefined;
  /** Kills it and everything it started (its process group). */
  kill(): void;
  /** Resolves once it ended (never rejects). */
  readonly exited: Promise<CallbackExit>;
}

/** Starts `argv` (program first). Injected: the simulator and unit tests never start processes. */
export type CallbackSpawner = (argv: string[]) => CallbackProcess;

/** The real spawner: a detached child in its own process group, output ignored, not kept alive. */
export const spawnCallbackProcess: CallbackSpawner = (argv) => {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore', detached: true });
  const exited = new Promise<CallbackExit>((resolve) => {
    child.once('error', (e) => resolve({ code: null, signal: null, error: e.message }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  child.unref();
  return {
    pid: child.pid,
    exited,
    kill() {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    },
  };
};

/** A spawner that starts nothing (every call "ends" at once with code 0). */
export const noCallbackSpawner: CallbackSpawner = () => ({ pid: undefined, kill() {}, exited: Promise.resolve({ code: 0, signal: null }) });

/** Default time a callback may run before it is killed. */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 60_000;

/** A database machine state and role, as the node observes them. */
export interface DbPhase {
  value: string;
  role: string;
}

/** States from which reaching `running` is a start (on_start / on_role_change). */
const STARTS = new Set(['starting', 'bootstrap_starting', 'initdb', 'stopped']);

/** The callback a transition of the database machine fires, and with which role; undefined: none. */
export function callbackFor(
  prev: DbPhase,
  next: DbPhase,
  announcedRole: string | undefined,
): { action: CallbackName; role: string } | undefined {
  if (next.value === 'running' && prev.value !== 'running') {
    if (prev.value === 'restarting') return { action: 'on_restart', role: next.role };
    if (!STARTS.has(prev.value)) return undefined;
    const changed = announcedRole !== undefined && announcedRole !== 'uninitialized' && announcedRole !== next.role;
    return { action: changed ? 'on_role_change' : 'on_start', role: next.role };
  }
  if (prev.value === 'running' && next.value === 'running' && prev.role !== next.role) return { action: 'on_role_change', role: next.role };
  if (prev.value === 'stopping' && next.value !== 'stopping' && next.value !== 'stop_failed') return { action: 'on_stop', role: prev.role };
  return undefined;
}

interface Running {
  action: CallbackName;
  proc: CallbackProcess;
  timer: TimerHandle | undefined;
  /** Why it was killed, once it was. */
  killed?: string;
}

/** Options of a {@link CallbackRunner}. */
export interface CallbackRunnerOptions {
  commands: CallbackCommands;
  scope: string;
  journal: Journal;
  log: Logger;
  clock: Clock;
  spawn?: CallbackSpawner;
  timeoutMs?: number;
}

/** Runs the configured callbacks; see the module comment. */
export class CallbackRunner {
  /** Running call per lane: `reload` (on_reload) and `state` (every other callback). */
  private readonly lanes = new Map<'reload' | 'state', Running>();
  /** The role the last callback announced (on_role_change instead of on_start when it differs). */
  private announced: string | undefined;
  private last: DbPhase | undefined;
  private readonly spawnFn: CallbackSpawner;
  private readonly timeoutMs: number;

  constructor(private readonly opts: CallbackRunnerOptions) {
    this.commands = opts.commands;
    this.spawnFn = opts.spawn ?? spawnCallbackProcess;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS;
  }

  private commands: CallbackCommands;

  /** Replaces the programs (a re-read configuration); calls already running go on. */
  setCommands(commands: CallbackCommands): void {
    this.commands = commands;
  }

  /** Feeds one observed state of the database machine (the first one only sets the start point). */
  observe(next: DbPhase): void {
    const prev = this.last;
    this.last = { ...next };
    if (!prev || (prev.value === next.value && prev.role === next.role)) return;
    const cb = callbackFor(prev, next, this.announced);
    if (cb) this.fire(cb.action, cb.role);
  }

  /** PostgreSQL was reloaded: on_reload with the current role. */
  reloaded(): void {
    this.fire('on_reload', this.last?.role ?? 'uninitialized');
  }

  /** Runs `action`'s program, if configured, with `<action> <role> <scope>`; never waits for it. */
  fire(action: CallbackName, role: string): void {
    if (action !== 'on_reload') this.announced = role;
    const words = this.commands[action];
    if (!words) return;
    const { journal, log, clock, scope } = this.opts;
    const lane = action === 'on_reload' ? 'reload' : 'state';
    const previous = this.lanes.get(lane);
    if (previous) this.kill(previous, `superseded by ${action}`);
    const argv = [...words, action, role, scope];
    const command = argv.join(' ');
    const startedMs = clock.now();
    const note = (type: string, level: 'info' | 'warn', text: string, extra: Record<string, unknown> = {}) => {
      log[level]({ callback: action, role, ...extra }, text);
      journal.append({
        machine: 'ha',
        kind: 'event',
        event: { type: `ha.callback.${type}`, action, role, command, ...extra, reason: text, at: clock.now() },
      });
    };
    let proc: CallbackProcess;
    try {
      proc = this.spawnFn(argv);
    } catch (e) {
      note('failed', 'warn', `callback ${action} could not be started: ${(e as Error).message}`);
      return;
    }
    const run: Running = { action, proc, timer: undefined };
    run.timer = clock.setTimeout(() => this.kill(run, `timed out after ${this.timeoutMs / 1000} s`), this.timeoutMs, { unref: true });
    this.lanes.set(lane, run);
    note('started', 'info', `calling ${action} callback: ${command}`, proc.pid !== undefined ? { pid: proc.pid } : {});
    void proc.exited.then((exit) => {
      clock.clearTimeout(run.timer);
      if (this.lanes.get(lane) === run) this.lanes.delete(lane);
      const ms = clock.now() - startedMs;
      if (exit.error !== undefined) note('failed', 'warn', `callback ${action} could not be started: ${exit.error}`);
      else if (run.killed !== undefined) note('killed', 'warn', `callback ${action} killed: ${run.killed}`, { ms });
      else if (exit.code === 0) note('exited', 'info', `callback ${action} finished`, { code: 0, ms });
      else
        note('exited', 'warn', `callback ${action} ended with ${exit.code !== null ? `exit code ${exit.code}` : `signal ${exit.signal}`}`, {
          code: exit.code,
          signal: exit.signal,
          ms,
        });
    });
  }

  /** Kills every call still running (the node stops; nothing waits for them). */
  stopAll(reason = 'the agent is stopping'): void {
    for (const run of this.lanes.values()) this.kill(run, reason);
  }

  private kill(run: Running, why: string): void {
    if (run.killed !== undefined) return;
    run.killed = why;
    this.opts.clock.clearTimeout(run.timer);
    run.proc.kill();
  }
}

/**
 * `pg` with a hook after every successful reload (on_reload): every reload the node makes goes
 * through its PgControl, so the callback cannot be missed by a new caller.
 */
export function withReloadHook<P extends Pick<PgControl, 'reload'>>(pg: P, after: () => void): P {
  return new Proxy(pg, {
    get(target, prop) {
      if (prop === 'reload') {
        return async () => {
          await target.reload();
          after();
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
