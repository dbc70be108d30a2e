/**
 * pg_ctl and the postmaster's pid file. All pg_ctl calls run as the PostgreSQL OS user.
 */
import { readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { PgToolError, runAsPg } from './run-as-pg.ts';

/** Where the instance lives. */
export interface PgCtlTarget {
  binDir: string;
  dataDir: string;
  logFile: string;
}

const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * Is `pid` a live process that looks like a PostgreSQL postmaster? kill(pid, 0), then on Linux
 * `/proc/<pid>/stat`: the command must be `postgres`/`postmaster` (a stale pid file may name a
 * reused pid) and the state must not be Z (an exited postmaster not yet reaped still answers kill 0).
 */
export function isPostmasterAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: alive but not ours (only when not root) — still alive.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (e) {
    // No /proc (not Linux): trust kill(0). Process gone between the calls: dead.
    return (e as NodeJS.ErrnoException).code !== 'ENOENT' || !procMounted();
  }
  return isLivePostmasterStat(stat);
}

/** Parses `/proc/<pid>/stat` (`pid (comm) state …`): true for comm postgres/postmaster not in state Z/X. */
export function isLivePostmasterStat(stat: string): boolean {
  const open = stat.indexOf('(');
  const close = stat.lastIndexOf(')');
  if (open < 0 || close < open) return false;
  const comm = stat.slice(open + 1, close);
  const state = stat.slice(close + 2, close + 3);
  return (comm === 'postgres' || comm === 'postmaster') && state !== 'Z' && state !== 'X' && state !== 'x';
}

let procChecked: boolean | undefined;
function procMounted(): boolean {
  if (procChecked === undefined) {
    try {
      readFileSync('/proc/self/stat');
      procChecked = true;
    } catch {
      procChecked = false;
    }
  }
  return procChecked;
}

/**
 * PID of the live postmaster of `dataDir`: first line of postmaster.pid, checked alive. Undefined
 * when there is no pid file, it is malformed, or the process is gone (stale file after a crash).
 * Synchronous and cheap (one small read + kill 0 + /proc/<pid>/stat), for the crash watcher's checks.
 */
export function readPostmasterPid(dataDir: string): number | undefined {
  const pid = postmasterPidFileValue(dataDir);
  return pid !== undefined && isPostmasterAlive(pid) ? pid : undefined;
}

/**
 * The PID `postmaster.pid` names (its first line), alive or not; undefined when the file is
 * missing, unreadable or names no valid PID. Callers check liveness themselves.
 */
export function postmasterPidFileValue(dataDir: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.split('\n', 1)[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Last `maxLines` lines of a log file ('' when unreadable), for error messages. */
export async function tailFile(path: string, maxLines = 20, maxBytes = 8192): Promise<string> {
  try {
    const fh = await open(path, 'r');
    try {
      const { size } = await fh.stat();
      const len = Math.min(size, maxBytes);
      const buf = Buffer.alloc(len);
      await fh.read(buf, 0, len, size - len);
      return buf
        .toString('utf8')
        .split('\n')
        .slice(-maxLines - 1)
        .join('\n')
        .trim();
    } finally {
      await fh.close();
    }
  } catch {
    return '';
  }
}

/**
 * `pg_ctl start -w -t <s> -l <log>`: resolves when pg_ctl saw the server ready.
 * @throws PgToolError with pg_ctl's output and the tail of the server log on failure or timeout.
 */
export async function pgCtlStart(t: PgCtlTarget, timeoutMs: number): Promise<void> {
  try {
    await runAsPg(join(t.binDir, 'pg_ctl'), ['start', '-D', t.dataDir, '-l', t.logFile, '-w', '-t', String(seconds(timeoutMs))], {
      timeoutMs: timeoutMs + 5000,
    });
  } catch (e) {
    const log = await tailFile(t.logFile);
    if (e instanceof PgToolError) throw new PgToolError(`${e.message}${log ? `\nserver log:\n${log}` : ''}`, e.exitCode, e.stderr);
    throw e;
  }
}

/**
 * `pg_ctl stop -m <mode> -W`: sends the shutdown signal and returns without waiting (pg_ctl's own
 * wait polls only every 100 ms; the caller polls the postmaster every few ms instead). Needs
 * postmaster.pid: LocalPostgres.stop signals the postmaster by PID when this fails and escalates
 * when the postmaster outlives its window (postmaster.ts, terminatePostmaster).
 * @throws PgToolError when pg_ctl fails (e.g. no server runs).
 */
export async function pgCtlStop(t: PgCtlTarget, mode: 'fast' | 'immediate', timeoutMs: number): Promise<void> {
  await runAsPg(join(t.binDir, 'pg_ctl'), ['stop', '-D', t.dataDir, '-m', mode, '-W'], {
    timeoutMs: timeoutMs + 5000,
  });
}

/**
 * `pg_ctl start -W`: forks the postmaster and returns without waiting; the caller waits for a
 * connection over the socket (every 20 ms, where pg_ctl -w would poll every 100 ms).
 * @throws PgToolError when pg_ctl fails.
 */
export async function pgCtlStartNoWait(t: PgCtlTarget, timeoutMs: number): Promise<void> {
  await runAsPg(join(t.binDir, 'pg_ctl'), ['start', '-D', t.dataDir, '-l', t.logFile, '-W'], { timeoutMs: timeoutMs + 5000 });
}

/** `pg_ctl promote -w -t <s>`. @throws PgToolError. */
export async function pgCtlPromote(t: PgCtlTarget, timeoutMs: number): Promise<void> {
  await runAsPg(join(t.binDir, 'pg_ctl'), ['promote', '-D', t.dataDir, '-w', '-t', String(seconds(timeoutMs))], {
    timeoutMs: timeoutMs + 5000,
  });
}

/** `pg_ctl reload` (SIGHUP to the postmaster). @throws PgToolError when no server runs. */
export async function pgCtlReload(t: PgCtlTarget): Promise<void> {
  await runAsPg(join(t.binDir, 'pg_ctl'), ['reload', '-D', t.dataDir, '-s'], { timeoutMs: 30_000 });
}

/**
 * Waits until no process is attached to the System V shared memory segment recorded in a stale
 * postmaster.pid (line 7: `<key> <shmid>`), i.e. until every child of a crashed postmaster has
 * exited; a new postmaster refuses to start while one is attached ("pre-existing shared memory
 * block is still in use"). Resolves at once when there is no pid file or no such segment; gives up
 * silently after `timeoutMs` (the start then fails and is retried).
 */
export async function waitForOldSharedMemory(dataDir: string, timeoutMs: number): Promise<void> {
  let shmid: string | undefined;
  try {
    shmid = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[6]?.trim().split(/\s+/)[1];
  } catch {
    return;
  }
  if (!shmid) return;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let attached = 0;
    try {
      const row = readFileSync('/proc/sysvipc/shm', 'utf8')
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .find((f) => f[1] === shmid);
      attached = row ? Number(row[6]) : 0;
    } catch {
      return;
    }
    if (!attached || Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
