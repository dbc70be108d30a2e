/**
 * Runs one PostgreSQL tool to completion as the PostgreSQL OS user (see os-user.ts), with a clean
 * environment: inherited `PG*` variables are dropped so that only what the caller passes reaches
 * the tool, HOME is the user's home and the working directory is `/` (root's cwd is usually not
 * readable by `postgres`).
 */
import { spawn } from 'node:child_process';
import { pgOsUser } from './os-user.ts';

/** Outcome of a finished tool. */
export interface ToolResult {
  stdout: string;
  stderr: string;
}

/** Error thrown when a tool fails: `code` is 'pg_tool_failed', `exitCode` null on a signal or timeout. */
export class PgToolError extends Error {
  readonly code = 'pg_tool_failed';
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'PgToolError';
  }
}

/** Options of `runAsPg`. */
export interface RunAsPgOptions {
  /** Extra environment (e.g. PGPASSWORD, LC_ALL). */
  env?: Record<string, string>;
  /** Kill the tool (SIGKILL) after this many ms and reject. Default: no limit. */
  timeoutMs?: number;
  /** Told every chunk of output (stdout and stderr) as it comes, e.g. to read a tool's progress. */
  onOutput?: (text: string) => void;
}

/** The environment for PostgreSQL tools: process.env without PG* variables, plus HOME and `extra`. */
export function toolEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PG')) env[k] = v;
  env.HOME = pgOsUser().home;
  return { ...env, ...extra };
}

/**
 * Spawns `cmd args` as the PostgreSQL OS user; resolves with stdout/stderr on exit code 0.
 * @throws PgToolError with the tool's stderr (trimmed) on a non-zero exit, a signal or timeout;
 *         the spawn error (e.g. ENOENT) when the binary is missing.
 */
export function runAsPg(cmd: string, args: string[], opts: RunAsPgOptions = {}): Promise<ToolResult> {
  const user = pgOsUser();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: '/',
      env: toolEnv(opts.env),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(user.switchUser ? { uid: user.uid, gid: user.gid } : {}),
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const tell = (text: string) => {
      try {
        opts.onOutput?.(text);
      } catch {
        // A reader of progress never fails the tool.
      }
    };
    child.stdout.on('data', (d: Buffer) => {
      const text = d.toString();
      stdout += text;
      tell(text);
    });
    child.stderr.on('data', (d: Buffer) => {
      const text = d.toString();
      stderr += text;
      tell(text);
    });
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, opts.timeoutMs);
    child.on('error', (e) => {
      if (timer) clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      if (code === 0 && !timedOut) return resolve({ stdout, stderr });
      const name = cmd.split('/').pop() ?? cmd;
      const why = timedOut ? `timed out after ${opts.timeoutMs} ms` : signal ? `killed by ${signal}` : `exited ${code}`;
      const detail = (stderr.trim() || stdout.trim()).slice(-4000);
      reject(new PgToolError(`${name} ${why}${detail ? `: ${detail}` : ''}`, code, stderr));
    });
  });
}

/**
 * Runs one command line through `/bin/sh -c` as the PostgreSQL OS user (runAsPg's environment and
 * working directory): an operator's command (a replica creation method, a custom bootstrap, a
 * backup). Resolves with its output on exit code 0.
 * @throws PgToolError (`sh exited N: <stderr tail>`) on a non-zero exit, a signal or timeout.
 */
export function runShellAsPg(line: string, opts: RunAsPgOptions = {}): Promise<ToolResult> {
  return runAsPg('/bin/sh', ['-c', line], opts);
}
