/**
 * The postmaster as a process: who it is (PID, start time and owner, from /proc), and stopping it
 * by PID when pg_ctl cannot (postmaster.pid gone with a wiped data directory, pg_ctl failing or
 * timing out). A PID is signalled only while it is still the very process that was identified:
 * a recycled PID has another start time, so it is never killed.
 *
 * Escalation (PostgreSQL's own shutdown signals): SIGINT = fast, SIGQUIT = immediate, then SIGKILL
 * (to the postmaster and to the children it had), waiting for the postmaster to exit after each.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';

/** The fields of `/proc/<pid>/stat` used here. */
export interface ProcStat {
  comm: string;
  /** One letter: R, S, D, Z, T, X, … */
  state: string;
  ppid: number;
  /** Field 22, clock ticks after boot: with the PID, names one process for the machine's uptime. */
  startTime: string;
}

/** Parses `/proc/<pid>/stat` (`pid (comm) state ppid … starttime …`); undefined when malformed. */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const rest = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state); field n is rest[n - 3].
  const state = rest[0];
  const ppid = Number(rest[1]);
  const startTime = rest[19];
  if (!state || !Number.isInteger(ppid) || !startTime) return undefined;
  return { comm: text.slice(open + 1, close), state, ppid, startTime };
}

/** Real uid from `/proc/<pid>/status` (`Uid:\t<real>\t<effective>…`); undefined when absent. */
export function parseStatusUid(text: string): number | undefined {
  const m = /^Uid:\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** A process identified once: the same PID with another start time is another process. */
export interface ProcIdentity {
  pid: number;
  /** `''` when /proc is not available (then only kill(pid, 0) is known). */
  startTime: string;
}

/** What the process functions need from the OS (replaced by fakes in unit tests). */
export interface ProcOps {
  /** `/proc/<pid>/stat`; undefined when the process is gone. `null`: /proc is not available. */
  readStat(pid: number): string | undefined | null;
  /** Real uid of the process; undefined when unknown. */
  readUid(pid: number): number | undefined;
  /** process.kill: throws (ESRCH) when the process does not exist. */
  kill(pid: number, signal: NodeJS.Signals | 0): void;
  /** Every PID on the machine (children are looked up among them). */
  listPids(): number[];
  sleep(ms: number): Promise<void>;
  now(): number;
}

let procAvailable: boolean | undefined;

/** The ProcOps of this machine (Linux /proc; without it, kill(0) only). */
export const realProcOps: ProcOps = {
  readStat(pid) {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      procAvailable ??= existsSync('/proc/self/stat');
      return procAvailable ? undefined : null;
    }
  },
  readUid(pid) {
    try {
      return parseStatusUid(readFileSync(`/proc/${pid}/status`, 'utf8'));
    } catch {
      return undefined;
    }
  },
  kill(pid, signal) {
    process.kill(pid, signal);
  },
  listPids() {
    try {
      return readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .map(Number);
    } catch {
      return [];
    }
  },
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  now: () => Date.now(),
};

const POSTGRES_COMMS = new Set(['postgres', 'postmaster']);
const GONE_STATES = new Set(['Z', 'X', 'x']);

function killZero(pid: number, ops: ProcOps): boolean {
  try {
    ops.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Identifies `pid` as a live PostgreSQL process (command `postgres`, not a zombie), owned by
 * `uid` when given. Undefined when it is none of that.
 */
export function identifyPostgres(pid: number, uid?: number, ops: ProcOps = realProcOps): ProcIdentity | undefined {
  if (!Number.isInteger(pid) || pid <= 1) return undefined;
  const text = ops.readStat(pid);
  if (text === null) return killZero(pid, ops) ? { pid, startTime: '' } : undefined;
  if (text === undefined) return undefined;
  const st = parseProcStat(text);
  if (!st || !POSTGRES_COMMS.has(st.comm) || GONE_STATES.has(st.state)) return undefined;
  if (uid !== undefined) {
    const owner = ops.readUid(pid);
    if (owner !== undefined && owner !== uid) return undefined;
  }
  return { pid, startTime: st.startTime };
}

/** True while `id` is still the same live process (same PID and start time, not a zombie). */
export function isSameProcess(id: ProcIdentity, ops: ProcOps = realProcOps): boolean {
  const text = ops.readStat(id.pid);
  if (text === null) return killZero(id.pid, ops);
  if (text === undefined) return false;
  const st = parseProcStat(text);
  return !!st && st.startTime === id.startTime && !GONE_STATES.has(st.state);
}

/** Sends `signal` to `id` only if it is still the same process; true when sent. */
export function signalIfSame(id: ProcIdentity, signal: NodeJS.Signals, ops: ProcOps = realProcOps): boolean {
  if (!isSameProcess(id, ops)) return false;
  try {
    ops.kill(id.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Live PostgreSQL children of `pid` (the postmaster's backends and auxiliary processes). */
export function postgresChildren(pid: number, ops: ProcOps = realProcOps): ProcIdentity[] {
  const out: ProcIdentity[] = [];
  for (const p of ops.listPids()) {
    if (p === pid) continue;
    const text = ops.readStat(p);
    if (!text) continue;
    const st = parseProcStat(text);
    if (st && st.ppid === pid && POSTGRES_COMMS.has(st.comm) && !GONE_STATES.has(st.state)) out.push({ pid: p, startTime: st.startTime });
  }
  return out;
}

/** Polls until `id` is gone or `ms` have passed; true when gone. */
export async function waitGone(id: ProcIdentity, ms: number, ops: ProcOps = realProcOps): Promise<boolean> {
  const deadline = ops.now() + ms;
  for (;;) {
    if (!isSameProcess(id, ops)) return true;
    if (ops.now() >= deadline) return false;
    await ops.sleep(5);
  }
}

/** The signal of each shutdown mode (PostgreSQL: SIGTERM smart, SIGINT fast, SIGQUIT immediate). */
export const SHUTDOWN_SIGNALS = { fast: 'SIGINT', immediate: 'SIGQUIT' } as const;

/** Options of `terminatePostmaster`. */
export interface TerminateOptions {
  mode: 'fast' | 'immediate';
  /** The mode's signal was already sent (by pg_ctl stop): only wait for it. */
  signalled?: boolean;
  /** How long the mode's shutdown may take before escalating, ms. */
  graceMs: number;
  /** Fast mode: how long SIGQUIT may take before SIGKILL, ms. */
  quitMs: number;
  /** How long to wait after SIGKILL, ms. */
  killMs: number;
  /** Told about each escalation (for logs and error messages). */
  onEscalate?: (signal: 'SIGQUIT' | 'SIGKILL', pid: number) => void;
}

/** What `terminatePostmaster` had to do. */
export interface TerminateOutcome {
  /** The last signal sent, when the mode's own shutdown was not enough. */
  escalatedTo?: 'SIGQUIT' | 'SIGKILL';
}

/**
 * Stops the identified postmaster and resolves once it has exited: the mode's signal (unless
 * already sent), then SIGQUIT (fast mode) and SIGKILL when it outlives its window. With SIGKILL the
 * children it had are killed too (they would otherwise hold its shared memory for a while).
 * Resolves at once when `id` is no longer that process.
 * @throws Error when the process is still there after SIGKILL and `killMs` (uninterruptible sleep).
 */
export async function terminatePostmaster(id: ProcIdentity, o: TerminateOptions, ops: ProcOps = realProcOps): Promise<TerminateOutcome> {
  if (!o.signalled) signalIfSame(id, SHUTDOWN_SIGNALS[o.mode], ops);
  if (await waitGone(id, o.graceMs, ops)) return {};
  let escalatedTo: TerminateOutcome['escalatedTo'];
  if (o.mode === 'fast') {
    o.onEscalate?.('SIGQUIT', id.pid);
    escalatedTo = 'SIGQUIT';
    signalIfSame(id, 'SIGQUIT', ops);
    if (await waitGone(id, o.quitMs, ops)) return { escalatedTo };
  }
  o.onEscalate?.('SIGKILL', id.pid);
  escalatedTo = 'SIGKILL';
  const children = id.startTime ? postgresChildren(id.pid, ops) : [];
  signalIfSame(id, 'SIGKILL', ops);
  for (const c of children) signalIfSame(c, 'SIGKILL', ops);
  if (await waitGone(id, o.killMs, ops)) return { escalatedTo };
  throw new Error(`postmaster ${id.pid} is still alive after SIGKILL`);
}

/**
 * The escalation windows for a stop bounded by `timeoutMs`: the mode's own shutdown gets most of
 * it (immediate at most 10 s: PostgreSQL itself SIGKILLs its children after 5 s), the rest is kept
 * for SIGQUIT and SIGKILL, at least 2 s for SIGKILL.
 */
export function escalationWindows(mode: 'fast' | 'immediate', timeoutMs: number): { graceMs: number; quitMs: number; killMs: number } {
  const t = Math.max(0, timeoutMs);
  const reserve = Math.min(10_000, t / 2);
  const graceMs = mode === 'immediate' ? Math.min(10_000, t - reserve) : t - reserve;
  return { graceMs, quitMs: mode === 'fast' ? reserve / 2 : 0, killMs: Math.max(2000, reserve / 2) };
}

/** Why `dataDir` no longer holds a cluster (itself, PG_VERSION or global/pg_control missing); undefined when it does. */
export function dataDirProblem(dataDir: string): string | undefined {
  if (!existsSync(dataDir)) return `data directory ${dataDir} is gone`;
  for (const f of ['PG_VERSION', join('global', 'pg_control')]) {
    if (!existsSync(join(dataDir, f))) return `${f} is missing from data directory ${dataDir}`;
  }
  return undefined;
}

/**
 * The postmaster a socket lock file (`<socketDir>/.s.PGSQL.<port>.lock`: PID, then data
 * directory) names for `dataDir`, when it is a live PostgreSQL process of `uid`.
 */
export function socketLockPostmaster(
  lockFile: string,
  dataDir: string,
  uid?: number,
  ops: ProcOps = realProcOps,
): ProcIdentity | undefined {
  let lines: string[];
  try {
    lines = readFileSync(lockFile, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  if (lines[1]?.trim() !== dataDir) return undefined;
  return identifyPostgres(Number(lines[0]), uid, ops);
}

/** Outcome of one connection attempt: someone accepted, nobody listens, or no answer in time. */
export type ConnectOutcome = 'accepted' | 'refused' | 'timeout';

/** Tries one connection (TCP `{host, port}` or unix `{path}`) and closes it at once. */
export function tryConnect(target: { host: string; port: number } | { path: string }, timeoutMs = 1000): Promise<ConnectOutcome> {
  return new Promise((resolve) => {
    const s = createConnection(target as never);
    const done = (o: ConnectOutcome) => {
      clearTimeout(t);
      s.destroy();
      resolve(o);
    };
    const t = setTimeout(() => done('timeout'), timeoutMs);
    s.once('connect', () => done('accepted'));
    // ECONNREFUSED, ENOENT (no socket file), ENOTDIR, EADDRNOTAVAIL …: nobody listens there.
    s.once('error', () => done('refused'));
  });
}

/** The address to probe for a `listen_addresses` host: loopback for the wildcards, the first of a list. */
export function probeHost(listenHost: string): string {
  const h = listenHost.split(',')[0]!.trim();
  if (h === '' || h === '*' || h === '0.0.0.0') return '127.0.0.1';
  if (h === '::') return '::1';
  return h;
}

/**
 * What listens on a PostgreSQL instance's port or unix socket, described for an error message;
 * undefined when nothing does. A connection attempt that gets no answer counts as busy.
 */
export async function listenerOf(listen: { host: string; port: number }, socketDir: string, timeoutMs = 1000): Promise<string | undefined> {
  const path = join(socketDir, `.s.PGSQL.${listen.port}`);
  const [sock, tcp] = await Promise.all([
    tryConnect({ path }, timeoutMs),
    tryConnect({ host: probeHost(listen.host), port: listen.port }, timeoutMs),
  ]);
  if (sock !== 'refused') return `unix socket ${path} ${sock === 'accepted' ? 'accepts connections' : 'does not answer'}`;
  if (tcp !== 'refused')
    return `${probeHost(listen.host)}:${listen.port} ${tcp === 'accepted' ? 'accepts connections' : 'does not answer'}`;
  return undefined;
}

/** A data directory would be written while a server runs for it (code `pg_postmaster_running`). */
export class PostmasterRunningError extends Error {
  readonly code = 'pg_postmaster_running';
  constructor(message: string) {
    super(message);
    this.name = 'PostmasterRunningError';
  }
}
