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

/** Is `pid` a live process that looks like a PostgreSQL postmaster (`/proc/<pid>/comm` when available)? */
export function isPostmasterAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: alive but not ours (only when not root) — still alive.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    return comm === 'postgres' || comm === 'postmaster';
  } catch (e) {
    // No /proc (not Linux): trust kill(0). Process gone between the calls: dead.
    return (e as NodeJS.ErrnoException).code !== 'ENOENT' || !existsProc();
  }
}

let procMounted: boolean | undefined;
function existsProc(): boolean {
  if (procMounted === undefined) {
    try {
      readFileSync('/proc/self/comm');
      procMounted = true;
    } catch {
      procMounted = false;
    }
  }
  return procMounted;
}

/**
 * PID of the live postmaster of `dataDir`: first line of postmaster.pid, checked alive. Undefined
 * when there is no pid file, it is malformed, or the process is gone (stale file after a crash).
 * Synchronous and cheap (one small read + kill 0 + /proc/<pid>/comm) for a ~100 ms crash watcher.
 */
export function readPostmasterPid(dataDir: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.split('\n', 1)[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return isPostmasterAlive(pid) ? pid : undefined;
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
      return buf.toString('utf8').split('\n').slice(-maxLines - 1).join('\n').trim();
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
 * `pg_ctl stop -m <mode> -w -t <s>`.
 * @throws PgToolError when pg_ctl fails or the server did not stop in time.
 */
export async function pgCtlStop(t: PgCtlTarget, mode: 'fast' | 'immediate', timeoutMs: number): Promise<void> {
  await runAsPg(join(t.binDir, 'pg_ctl'), ['stop', '-D', t.dataDir, '-m', mode, '-w', '-t', String(seconds(timeoutMs))], {
    timeoutMs: timeoutMs + 5000,
  });
}

/** `pg_ctl promote -w -t <s>`. @throws PgToolError. */
export async function pgCtlPromote(t: PgCtlTarget, timeoutMs: number): Promise<void> {
  await runAsPg(join(t.binDir, 'pg_ctl'), ['promote', '-D', t.dataDir, '-w', '-t', String(seconds(timeoutMs))], { timeoutMs: timeoutMs + 5000 });
}

/** `pg_ctl reload` (SIGHUP to the postmaster). @throws PgToolError when no server runs. */
export async function pgCtlReload(t: PgCtlTarget): Promise<void> {
  await runAsPg(join(t.binDir, 'pg_ctl'), ['reload', '-D', t.dataDir, '-s'], { timeoutMs: 30_000 });
}
