/**
 * The agent's side of the fence process (fence-process.ts): started once, idle (disarmed), when
 * the agent starts (`start`), in its own process group (detached, so a signal to the agent's
 * group or the agent's death does not take it along), and started again whenever it ends (it
 * exits after firing; killed, crashed). Arming before the leader race is then one line on an
 * existing pipe. Arms, feeds and disarms it over its stdin. Implements FenceDevice
 * (src/node/lock/fencing.ts drives it; the simulator and unit tests inject none).
 *
 * The process runs under plain `node` (no tsx: it starts in a fraction of the time and memory):
 * from the build output, the compiled fence-process.js next to this module; from the sources,
 * fence-process.ts and what it imports bundled once by esbuild into one .mjs file in a private
 * directory (`fenceCommand`). One source of truth: the TypeScript.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  closeSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseLine, type FromFence, type ToFence } from './protocol.ts';

/** A firing the fence reported. */
export type FenceFired = Extract<FromFence, { ev: 'fired' }>;

/** What happened to a fence on its own (not on the agent's request). */
export type FenceEvent =
  | { kind: 'fired'; fired: FenceFired }
  /** The process ended without being asked to (killed, crashed, or after firing: `fired`); `armed`: it was. */
  | { kind: 'exited'; code: number | null; signal: string | null; fired: boolean; armed: boolean };

/** A fence the agent drives, armed on a postmaster while this member leads. */
export interface FenceDevice {
  /**
   * Starts the fence idle (disarmed) ahead of any arming, and keeps one running (started again
   * when it ends) until `close`. Optional: without it, `arm` starts the fence.
   */
  start?(): Promise<void>;
  /**
   * Arms the fence for postmaster `pid` and, when the device has a `dataDir`, for whichever
   * postmaster runs there when it fires (`pid` undefined: none runs now); starts the fence when
   * none runs. Rejects when it cannot be armed.
   */
  arm(pid: number | undefined, remainingMs: number, deadlineMonoMs: number): Promise<void>;
  /** The data directory the fence also watches when armed (its postmaster.pid at firing time). */
  readonly dataDir?: string | undefined;
  /** Moves the deadline (after a successful renewal). Best effort, synchronous. */
  feed(remainingMs: number, deadlineMonoMs: number): void;
  /** Disarms; the fence stays (idle). Resolves once it is certain not to fire. */
  disarm(): Promise<void>;
  /** Disarms and ends the fence for good (agent shutdown). */
  close?(): Promise<void>;
  /** True while armed (the process acknowledged the arming and is alive). */
  readonly armed: boolean;
  /** PID of the fence process while it runs. */
  readonly pid: number | undefined;
  /** Listens to firings and unexpected exits. */
  onEvent(listener: (e: FenceEvent) => void): void;
}

export interface ProcessFenceOptions {
  /** After SIGQUIT, how long the postmaster may take before SIGKILL, ms (default 1000). */
  killAfterMs?: number;
  /**
   * The data directory: an armed fence also stops the postmaster running there when it fires
   * (started after the arming), and may be armed while none runs.
   */
  dataDir?: string;
  /** File the fence appends its firings to (JSON lines). */
  logFile?: string;
  /** How long starting the process, and each answer of it, may take, ms (default 10 000). */
  startTimeoutMs?: number;
  /** Where problems that do not fail an operation go (the fence could not be bundled, a respawn failed). */
  warn?: (text: string) => void;
}

/** How the fence process is run. */
export interface FenceCommand {
  command: string;
  args: string[];
  /** compiled: dist's fence-process.js; bundled: the sources bundled by esbuild; tsx: the sources through tsx (fallback). */
  kind: 'compiled' | 'bundled' | 'tsx';
  /** Why the sources could not be bundled (kind tsx). */
  bundleError?: string;
}

/** node flags of the fence: a small heap (it holds a few numbers). */
const NODE_FLAGS = ['--max-old-space-size=16'];

let prepared: Promise<FenceCommand> | undefined;

/**
 * The command that runs the fence under plain node: the compiled fence-process.js next to this
 * module (build output), or the sources bundled once per content into
 * `<tmpdir>/ha-fence-<uid>/fence-<hash>.mjs`; through tsx only when esbuild fails. Memoized;
 * prepared again when the bundle was removed since (a /tmp cleaner).
 */
export function fenceCommand(): Promise<FenceCommand> {
  const p = prepared;
  if (p) {
    return p.then((c) => {
      if (c.kind !== 'bundled' || existsSync(c.args.at(-1) ?? '')) return c;
      if (prepared === p) prepared = undefined;
      return fenceCommand();
    });
  }
  const next = prepareFenceCommand();
  prepared = next;
  return next;
}

async function prepareFenceCommand(): Promise<FenceCommand> {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) {
    return { command: process.execPath, args: [...NODE_FLAGS, fileURLToPath(new URL('./fence-process.js', here))], kind: 'compiled' };
  }
  const entry = fileURLToPath(new URL('./fence-process.ts', here));
  try {
    const file = await bundleFence(entry);
    return { command: process.execPath, args: [...NODE_FLAGS, file], kind: 'bundled' };
  } catch (e) {
    const loader = pathToFileURL(createRequire(here).resolve('tsx')).href;
    return {
      command: process.execPath,
      args: [...NODE_FLAGS, '--import', loader, entry],
      kind: 'tsx',
      bundleError: e instanceof Error ? e.message : String(e),
    };
  }
}

/**
 * Bundles `entry` (fence-process.ts and the modules it imports; node builtins stay imports) into
 * one ESM file with the esbuild executable, run once as its own short-lived process (its
 * JavaScript API would leave a service process or worker thread behind in the agent, shared
 * with whatever else in the process uses esbuild). The file is named after its content, in a
 * directory only this user can write.
 */
async function bundleFence(entry: string): Promise<string> {
  const bin = createRequire(import.meta.url).resolve('esbuild/bin/esbuild');
  // bin/esbuild is the native executable once installed, a node script where that was not possible.
  const head = Buffer.alloc(2);
  const fd = openSync(bin, 'r');
  try {
    readSync(fd, head, 0, 2, 0);
  } finally {
    closeSync(fd);
  }
  const [command, pre] = head.toString('latin1') === '#!' ? [process.execPath, [bin]] : [bin, []];
  const args = [
    ...pre,
    entry,
    '--bundle',
    '--platform=node',
    '--format=esm',
    '--target=node20',
    '--legal-comments=none',
    '--log-level=error',
  ];
  const code = await new Promise<string>((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: 30_000, maxBuffer: 4 * 1024 * 1024, env: { ...process.env, NODE_OPTIONS: '' } },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`esbuild: ${String(stderr).trim() || err.message}`));
        else resolve(String(stdout));
      },
    );
  });
  if (!code.includes('FenceCore')) throw new Error('esbuild produced no fence');
  const dir = privateDir();
  const file = join(dir, `fence-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
  let same = false;
  try {
    same = readFileSync(file, 'utf8') === code;
  } catch {
    /* not there yet */
  }
  if (!same) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, code, { mode: 0o600 });
    renameSync(tmp, file);
  }
  return file;
}

/** `<tmpdir>/ha-fence-<uid>`, created 0700; a fresh private one when that is not ours alone. */
function privateDir(): string {
  const uid = process.getuid?.() ?? 0;
  const dir = join(tmpdir(), `ha-fence-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = lstatSync(dir);
  if (st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0) return dir;
  return mkdtempSync(join(tmpdir(), 'ha-fence-'));
}

export class ProcessFence implements FenceDevice {
  private child: ChildProcess | undefined;
  /** The current child said `ready`. */
  private ready = false;
  private starting: Promise<void> | undefined;
  private armedPid: number | undefined;
  private readonly listeners = new Set<(e: FenceEvent) => void>();
  private readonly waiters = new Set<(m: FromFence | undefined) => void>();
  /** Children this side ended or asked to exit: their exit is no event. */
  private readonly expected = new WeakSet<ChildProcess>();
  /** `start` was called: keep one running. */
  private keep = false;
  private closed = false;
  private respawnTimer: NodeJS.Timeout | undefined;
  /** Consecutive short-lived children: the respawn backs off. */
  private quickExits = 0;
  private warnedKind = false;

  constructor(private readonly opts: ProcessFenceOptions = {}) {}

  get armed(): boolean {
    return this.armedPid !== undefined && this.child !== undefined;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  onEvent(listener: (e: FenceEvent) => void): void {
    this.listeners.add(listener);
  }

  start(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the fence is closed'));
    this.keep = true;
    return this.ensure();
  }

  get dataDir(): string | undefined {
    return this.opts.dataDir;
  }

  async arm(pid: number | undefined, remainingMs: number, deadlineMonoMs: number): Promise<void> {
    if (this.closed) throw new Error('the fence is closed');
    const timeoutMs = this.timeoutMs();
    await this.ensure();
    const child = this.child;
    if (!child) throw new Error('the fence process ended before it could be armed');
    const reply = this.next((m) => m.ev === 'armed' || m.ev === 'refused', timeoutMs);
    this.write({ op: 'arm', pid: pid ?? 0, ...(this.opts.dataDir ? { dataDir: this.opts.dataDir } : {}), remainingMs, deadlineMonoMs });
    const m = await reply;
    if (m?.ev === 'armed' && this.child === child) {
      this.armedPid = pid ?? 0;
      return;
    }
    if (m?.ev === 'refused') throw new Error(`fence refused to arm: ${m.reason}`);
    // No answer: it may be armed or not; it must not fire later unannounced. Replaced by a fresh one.
    void this.retire(child);
    throw new Error(`the fence did not answer within ${timeoutMs} ms`);
  }

  feed(remainingMs: number, deadlineMonoMs: number): void {
    if (this.armed) this.write({ op: 'feed', remainingMs, deadlineMonoMs });
  }

  async disarm(): Promise<void> {
    const child = this.child;
    if (!child || this.armedPid === undefined) {
      this.armedPid = undefined;
      return;
    }
    this.armedPid = undefined;
    const reply = this.next((m) => m.ev === 'disarmed', 2000);
    this.write({ op: 'disarm' });
    const m = await reply;
    if (m?.ev === 'disarmed' || this.child !== child) return;
    // No answer within 2 s (frozen?): it must not fire later on a member that no longer leads.
    await this.retire(child);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.keep = false;
    if (this.respawnTimer) clearTimeout(this.respawnTimer);
    this.respawnTimer = undefined;
    await this.starting?.catch(() => undefined);
    const child = this.child;
    this.armedPid = undefined;
    if (!child) return;
    this.expected.add(child);
    const exited = exitOf(child);
    this.write({ op: 'exit' });
    const t = setTimeout(() => kill(child), 2000);
    await exited;
    clearTimeout(t);
  }

  private timeoutMs(): number {
    return this.opts.startTimeoutMs ?? 10_000;
  }

  /** A running, ready child: the current one, the one being started, or a new one. */
  private ensure(): Promise<void> {
    if (this.starting) return this.starting;
    if (this.child && this.ready) return Promise.resolve();
    const p = this.spawnChild().finally(() => {
      if (this.starting === p) this.starting = undefined;
    });
    this.starting = p;
    p.catch(() => this.scheduleRespawn());
    return p;
  }

  private async spawnChild(): Promise<void> {
    const timeoutMs = this.timeoutMs();
    const cmd = await fenceCommand();
    if (cmd.kind === 'tsx' && !this.warnedKind) {
      this.warnedKind = true;
      this.opts.warn?.(
        `the fence process could not be bundled (${cmd.bundleError ?? '?'}): it runs through tsx, slower to start and larger`,
      );
    }
    if (this.closed) throw new Error('the fence is closed');
    const extra = ['--kill-after-ms', String(this.opts.killAfterMs ?? 1000), ...(this.opts.logFile ? ['--log', this.opts.logFile] : [])];
    const child = spawn(cmd.command, [...cmd.args, ...extra], {
      detached: true,
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    this.child = child;
    this.ready = false;
    this.armedPid = undefined;
    const spawnedAt = Date.now();
    let fired = false;
    let ended = false;
    let buf = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        const m = line ? parseLine<FromFence>(line) : undefined;
        if (!m || !('ev' in m)) continue;
        if (m.ev === 'fired') {
          fired = true;
          if (this.child === child) this.armedPid = undefined;
          this.emit({ kind: 'fired', fired: m });
        }
        if (this.child !== child) continue;
        if (m.ev === 'ready') this.ready = true;
        for (const w of [...this.waiters]) w(m);
      }
    });
    child.stdin?.on('error', () => undefined);
    const onEnd = (code: number | null, signal: string | null) => {
      if (ended) return;
      ended = true;
      const armed = this.child === child && this.armedPid !== undefined;
      this.quickExits = Date.now() - spawnedAt < 10_000 ? this.quickExits + 1 : 0;
      this.drop(child);
      if (!this.expected.has(child)) this.emit({ kind: 'exited', code, signal, fired, armed });
      this.scheduleRespawn();
    };
    child.once('exit', onEnd);
    child.on('error', () => onEnd(null, null));
    // The agent's own exit must not wait for the fence (nor for its pipes).
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    const m = await this.next((x) => x.ev === 'ready', timeoutMs);
    if (m?.ev === 'ready' && this.child === child) return;
    void this.retire(child);
    throw new Error(
      m === undefined && ended ? 'the fence process ended at start' : `the fence process did not start within ${timeoutMs} ms`,
    );
  }

  /** Forgets `child` when it is the current one: no longer armed; whoever waits for its answer gets none. */
  private drop(child: ChildProcess): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.ready = false;
    this.armedPid = undefined;
    for (const w of [...this.waiters]) w(undefined);
  }

  /** Ends `child` (SIGKILL; a fresh one follows when kept); resolves once it has exited. */
  private retire(child: ChildProcess): Promise<void> {
    this.expected.add(child);
    this.drop(child);
    const exited = exitOf(child);
    kill(child);
    return exited;
  }

  /** Starts a fresh child after one ended, while `start` holds: at once, backing off up to 30 s after quick exits. */
  private scheduleRespawn(): void {
    if (!this.keep || this.closed || this.respawnTimer || this.child || this.starting) return;
    const delay = this.quickExits <= 1 ? 0 : Math.min(30_000, 250 * 2 ** (this.quickExits - 2));
    this.respawnTimer = setTimeout(() => {
      this.respawnTimer = undefined;
      if (!this.keep || this.closed || this.child) return;
      this.ensure().catch((e: unknown) => {
        this.opts.warn?.(`the fence process could not be started again: ${e instanceof Error ? e.message : String(e)}`);
      });
    }, delay);
    this.respawnTimer.unref();
  }

  /** The next message of the current child matching `match`; undefined on its exit or time-out. */
  private next(match: (m: FromFence) => boolean, timeoutMs: number): Promise<FromFence | undefined> {
    return new Promise((resolve) => {
      const w = (m: FromFence | undefined) => {
        if (m !== undefined && !match(m)) return;
        this.waiters.delete(w);
        clearTimeout(t);
        resolve(m);
      };
      const t = setTimeout(() => w(undefined), timeoutMs);
      this.waiters.add(w);
    });
  }

  private write(msg: ToFence): void {
    try {
      this.child?.stdin?.write(`${JSON.stringify(msg)}\n`);
    } catch {
      /* the fence is gone: its exit event follows */
    }
  }

  private emit(e: FenceEvent): void {
    for (const l of this.listeners) l(e);
  }
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    }
  });
}

function kill(child: ChildProcess): void {
  try {
    child.kill('SIGKILL');
  } catch {
    /* gone */
  }
}

/**
 * Firings the fence appended to `logFile` (one JSON line each) while no agent listened, oldest
 * first; the file is emptied. Unreadable or absent: none.
 */
export function takeFenceLog(logFile: string): FenceFired[] {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  try {
    writeFileSync(logFile, '');
  } catch {
    /* read-only: they are reported again at the next start */
  }
  const out: FenceFired[] = [];
  for (const line of text.split('\n')) {
    const m = line.trim() ? parseLine<FromFence>(line) : undefined;
    if (m && 'ev' in m && m.ev === 'fired') out.push(m);
  }
  return out;
}
