/**
 * The fence in the simulator (docs/simulation.md "World model", docs/ha.md "Fencing"): one per
 * agent process, a separate process in production (src/watchdog/process-fence.ts around
 * src/watchdog/fence-core.ts). Here the real `FenceCore` runs with simulated operating-system
 * calls:
 * - its clock and timers are the world's `SimClock`, not the agent's `NodeClock`: a slow or frozen
 *   agent event loop does not delay the fence (it is another process);
 * - `/proc/<pid>/stat` is the simulated postmaster's PID and start instant; SIGQUIT stops the
 *   simulated PostgreSQL at once (`SimPg.crash`: backends gone, no more acknowledgements, no
 *   shutdown checkpoint), as an immediate shutdown does;
 * - armed on the data directory as in production (finding 16): its postmaster.pid is
 *   `SimPg.dataDirPostmaster`, which also shows a postmaster still starting up (crashed by the
 *   fence, its start fails);
 * - the pipe: the agent's commands reach the fence the instant the agent's code writes them (the
 *   agent's `Fencing`, src/node/lock/fencing.ts, decides what and when); the fence's answers and events
 *   reach the agent through its `NodeClock` (late with a slow loop, held while frozen, dropped once
 *   it crashed). The agent process crashing closes the pipe: `agentGone`, the fence fires when armed.
 */
import { FenceCore, type FenceOps } from '../watchdog/fence-core.ts';
import type { FenceDevice, FenceEvent } from '../watchdog/process-fence.ts';
import type { FromFence } from '../watchdog/protocol.ts';
import type { NodeClock, SimClock } from './sim-clock.ts';
import type { SimPg } from './sim-pg.ts';

/** A firing, for the run's figures. */
export interface SimFenceFiring {
  node: string;
  atMs: number;
  reason: 'deadline' | 'agent gone';
  lateMs: number;
  stopped: boolean;
}

export class SimFence implements FenceDevice {
  private core: FenceCore | undefined;
  private corePid: number | undefined;
  private armedPid: number | undefined;
  private readonly listeners = new Set<(e: FenceEvent) => void>();
  /** Answers the agent waits for from the current fence process (arm → armed/refused, disarm → disarmed), in order. */
  private waiting: ((m: FromFence) => void)[] = [];
  /** Fence processes started (their simulated PIDs: 40 001, 40 002, …; deterministic). */
  private started = 0;

  constructor(
    private readonly clock: SimClock,
    private readonly view: NodeClock,
    private readonly pg: SimPg,
    private readonly onFired: (f: SimFenceFiring) => void,
  ) {}

  get armed(): boolean {
    return this.armedPid !== undefined && this.core !== undefined;
  }

  get pid(): number | undefined {
    return this.corePid;
  }

  /** The data directory the fence watches (one per simulated member; the name is for messages only). */
  get dataDir(): string {
    return `/sim/${this.pg.name}/data`;
  }

  onEvent(listener: (e: FenceEvent) => void): void {
    this.listeners.add(listener);
  }

  async start(): Promise<void> {
    this.ensure();
  }

  arm(pid: number | undefined, remainingMs: number, deadlineMonoMs: number): Promise<void> {
    const core = this.ensure();
    return new Promise<void>((resolve, reject) => {
      this.waiting.push((m) => {
        if (m.ev === 'armed') {
          this.armedPid = m.pid;
          resolve();
        } else reject(new Error(m.ev === 'refused' ? m.reason : `the fence answered ${m.ev}`));
      });
      const dataDir = this.dataDir;
      core.handle({ op: 'arm', pid: pid ?? 0, ...(dataDir ? { dataDir } : {}), remainingMs, deadlineMonoMs });
    });
  }

  feed(remainingMs: number, deadlineMonoMs: number): void {
    this.core?.handle({ op: 'feed', remainingMs, deadlineMonoMs });
  }

  disarm(): Promise<void> {
    const core = this.core;
    if (!core) {
      this.armedPid = undefined;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(() => {
        this.armedPid = undefined;
        resolve();
      });
      core.handle({ op: 'disarm' });
    });
  }

  async close(): Promise<void> {
    const core = this.core;
    if (!core) return;
    await new Promise<void>((resolve) => {
      this.waiting.push(() => resolve());
      core.handle({ op: 'exit' });
    });
  }

  /** The agent process died: its end of the pipe closed. */
  agentGone(): void {
    this.core?.agentGone();
  }

  /** A fence process (started again after it ended, as ProcessFence does). */
  private ensure(): FenceCore {
    if (this.core) return this.core;
    const pid = 40_000 + ++this.started;
    let core: FenceCore | undefined = undefined;
    const pg = this.pg;
    const clock = this.clock;
    let armedAtFire = false;
    const queue: ((m: FromFence) => void)[] = [];
    const ops: FenceOps = {
      mono: () => clock.now(),
      setTimer: (fn, ms) => clock.schedule(ms, fn),
      clearTimer: (h) => clock.cancel(h as ReturnType<SimClock['schedule']>),
      readStat: (p) => {
        const pm = pg.dataDirPostmaster;
        if (!pm || pm.pid !== p) return undefined;
        // `pid (comm) state ppid` and 17 more fields, then field 22: the start time.
        return `${p} (postgres) S 1 ${Array.from({ length: 17 }, () => '0').join(' ')} ${pm.startedAtMs}`;
      },
      listPids: () => {
        const pm = pg.dataDirPostmaster;
        return pm ? [pm.pid] : [];
      },
      dataDirPostmaster: () => pg.dataDirPostmaster?.pid,
      kill: (p) => {
        const pm = pg.dataDirPostmaster;
        if (!pm || pm.pid !== p) throw new Error('ESRCH');
        pg.crash();
      },
      sleep: (ms) => new Promise((resolve) => clock.schedule(ms, () => resolve())),
      send: (msg) => {
        if (msg.ev === 'fired') {
          armedAtFire = true;
          // A firing that found no postmaster to stop (armed on the data directory with none
          // running: finding 16) stopped nothing: not counted among the firings.
          if (msg.signals.length > 0)
            this.onFired({ node: pg.name, atMs: clock.now(), reason: msg.reason, lateMs: msg.lateMs, stopped: msg.stopped });
        }
        this.view.deliver(() => this.receive(msg, queue));
      },
      exit: (code) => {
        if (this.core !== core) return;
        this.core = undefined;
        this.corePid = undefined;
        const wasArmed = this.armedPid !== undefined;
        this.armedPid = undefined;
        if (code !== 0 || armedAtFire) {
          const e: FenceEvent = { kind: 'exited', code, signal: null, fired: armedAtFire, armed: wasArmed };
          this.view.deliver(() => this.emit(e));
        }
        // Commands the ended process never answered: an arming fails, a disarm or an exit is done.
        this.view.deliver(() => {
          for (const w of queue.splice(0)) w({ ev: 'refused', reason: 'the fence process ended' });
        });
      },
    };
    core = new FenceCore(ops, { killAfterMs: 1000 });
    this.core = core;
    this.corePid = pid;
    this.waiting = queue;
    return core;
  }

  private receive(msg: FromFence, queue: ((m: FromFence) => void)[]): void {
    if (msg.ev === 'fired') {
      this.emit({ kind: 'fired', fired: msg });
      return;
    }
    if (msg.ev === 'armed' || msg.ev === 'refused' || msg.ev === 'disarmed') queue.shift()?.(msg);
  }

  private emit(e: FenceEvent): void {
    for (const l of this.listeners) l(e);
  }
}
