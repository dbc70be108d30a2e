/** Running and stopping helper processes by PID, and waiting for conditions. */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/** Is a process with this PID alive? */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends `signal` to `pid`, then SIGKILL after `graceMs` if it is still alive; resolves when gone. */
export async function stopPid(pid: number, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(50);
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    while (isAlive(pid)) await sleep(20);
  }
}

/** Promise-based sleep (test support only: machine tests drive clocks instead). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `fn` every `intervalMs` until it returns a truthy value; rejects after `timeoutMs`. */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  timeoutMs: number,
  what = 'condition',
  intervalMs = 100,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/** Runs a command to completion; resolves with stdout, rejects with stderr on non-zero exit. */
export function run(cmd: string, args: string[], opts: SpawnOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`))));
  });
}
