/**
 * Running hactl as a process in tests: plainly (`runHactl`, stdin piped) or inside a
 * pseudo-terminal (`runHactlPty`, through util-linux `script -qfec … /dev/null`, package
 * bsdutils) with a scripted dialog: wait for each prompt, type the answer.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const HACTL = [process.execPath, '--import', 'tsx', resolve(ROOT, 'src/cli/hactl.ts')];

/** Result of one hactl run. */
export interface HactlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs hactl with `args`; `input` is written to stdin, which is then closed. */
export function runHactl(args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<HactlResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(HACTL[0]!, [...HACTL.slice(1), ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: '', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`hactl ${args.join(' ')} timed out\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** One step of a terminal dialog: wait until the output shows `expect`, then type `send` and Enter. */
export interface DialogStep {
  expect: RegExp | string;
  send: string;
  /** Runs after the prompt appeared and before the answer is typed (e.g. a concurrent change). */
  before?: () => Promise<void>;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs hactl in a pseudo-terminal and plays `dialog`. Output is what the terminal showed
 * (prompts, echoed answers, stdout and stderr, `\r\n` line ends). Rejects when a prompt does
 * not appear within `stepTimeoutMs` or the run exceeds `timeoutMs`.
 */
export function runHactlPty(
  args: string[],
  dialog: DialogStep[],
  opts: { timeoutMs?: number; stepTimeoutMs?: number } = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const cmd = [...HACTL, ...args].map(shellQuote).join(' ');
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let from = 0;
    let step = 0;
    let busy = false;
    let stepTimer: NodeJS.Timeout | undefined;
    let failed = false;
    const fail = (why: string) => {
      if (failed) return;
      failed = true;
      clearTimeout(stepTimer);
      clearTimeout(total);
      child.kill('SIGKILL');
      reject(new Error(`${why}\n--- terminal:\n${output}`));
    };
    const armStep = () => {
      clearTimeout(stepTimer);
      if (step < dialog.length)
        stepTimer = setTimeout(() => fail(`prompt ${String(dialog[step]!.expect)} did not appear`), opts.stepTimeoutMs ?? 30_000);
    };
    const advance = async () => {
      if (busy || step >= dialog.length) return;
      const s = dialog[step]!;
      const rest = output.slice(from);
      const idx = typeof s.expect === 'string' ? rest.indexOf(s.expect) : rest.search(s.expect);
      if (idx < 0) return;
      busy = true;
      from += idx + 1;
      try {
        await s.before?.();
      } catch (e) {
        fail(`dialog step failed: ${String(e)}`);
        return;
      }
      child.stdin.write(s.send + '\r');
      step++;
      busy = false;
      armStep();
      void advance();
    };
    const total = setTimeout(() => fail(`hactl ${args.join(' ')} timed out`), opts.timeoutMs ?? 120_000);
    child.stdout.on('data', (d) => {
      output += d;
      void advance();
    });
    child.stderr.on('data', (d) => (output += d));
    armStep();
    child.on('close', (code) => {
      clearTimeout(stepTimer);
      clearTimeout(total);
      child.stdin.destroy();
      if (failed) return;
      if (step < dialog.length) return fail(`hactl exited (${code}) before prompt ${String(dialog[step]!.expect)}`);
      resolvePromise({ code, output: output.replace(/\r\n/g, '\n') });
    });
  });
}
