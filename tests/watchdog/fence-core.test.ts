/**
 * The fence's logic (src/watchdog/fence-core.ts) on fake operating-system calls and a fake
 * monotonic clock: deadline, feeding, the agent's pipe closing, disarming, escalation to SIGKILL,
 * and never signalling a recycled PID.
 */
import { describe, expect, it } from 'vitest';
import { FenceCore, statFields, type FenceOps } from '../../src/watchdog/fence-core.ts';
import type { FromFence } from '../../src/watchdog/protocol.ts';

/** `/proc/<pid>/stat` text with state, ppid and start time (field 22). */
function stat(pid: number, state: string, ppid: number, start: string): string {
  const rest = [state, String(ppid), ...Array.from({ length: 17 }, () => '0'), start, '0', '0'];
  return `${pid} (postgres) ${rest.join(' ')}`;
}

interface Proc {
  state: string;
  ppid: number;
  start: string;
  /** Signals that end it (default: SIGQUIT and SIGKILL). */
  diesOn?: string[];
}

function world() {
  let now = 1_000;
  const timers: { at: number; fn: () => void; id: number }[] = [];
  let nextId = 1;
  const procs = new Map<number, Proc>();
  const signals: [number, string][] = [];
  const sent: FromFence[] = [];
  let exitCode: number | undefined;
  const ops: FenceOps = {
    mono: () => now,
    setTimer: (fn, ms) => {
      const t = { at: now + ms, fn, id: nextId++ };
      timers.push(t);
      return t.id;
    },
    clearTimer: (h) => {
      const i = timers.findIndex((t) => t.id === h);
      if (i >= 0) timers.splice(i, 1);
    },
    readStat: (pid) => {
      const p = procs.get(pid);
      return p ? stat(pid, p.state, p.ppid, p.start) : undefined;
    },
    listPids: () => [...procs.keys()],
    kill: (pid, sig) => {
      const p = procs.get(pid);
      if (!p) throw Object.assign(new Error('ESRCH'), { code: 'ESRCH' });
      signals.push([pid, sig]);
      if ((p.diesOn ?? ['SIGQUIT', 'SIGKILL']).includes(sig)) {
        procs.delete(pid);
        // Its children go with an immediate shutdown.
        if (sig === 'SIGQUIT') for (const [c, cp] of procs) if (cp.ppid === pid) procs.delete(c);
      }
    },
    sleep: async (ms) => {
      await advance(ms);
    },
    send: (m) => sent.push(m),
    exit: (code) => {
      exitCode = code;
    },
  };
  async function advance(ms: number): Promise<void> {
    const until = now + ms;
    for (;;) {
      timers.sort((a, b) => a.at - b.at);
      const t = timers[0];
      if (!t || t.at > until) break;
      timers.shift();
      now = t.at;
      t.fn();
      await Promise.resolve();
    }
    now = until;
    await Promise.resolve();
  }
  return { ops, procs, signals, sent, advance, exitCode: () => exitCode, now: () => now };
}

/** Lets the fire() promise chain run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe('statFields', () => {
  it('reads state, ppid and start time, whatever the command name holds', () => {
    const text = '4242 (postgres: a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100';
    expect(statFields(text)).toEqual({ state: 'S', ppid: 1, startTime: '987654' });
    expect(statFields('garbage')).toBeUndefined();
  });
});

describe('FenceCore', () => {
  it('fires at the deadline with SIGQUIT when not fed, then exits 3', async () => {
    const w = world();
    w.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    const core = new FenceCore(w.ops, { killAfterMs: 1000 });
    core.handle({ op: 'arm', pid: 100, remainingMs: 5000, deadlineMonoMs: w.now() + 5000 });
    expect(w.sent[0]).toEqual({ ev: 'armed', pid: 100, remainingMs: 5000 });
    await w.advance(4999);
    expect(w.signals).toEqual([]);
    await w.advance(1);
    await settle();
    expect(w.signals).toEqual([[100, 'SIGQUIT']]);
    expect(w.sent.at(-1)).toMatchObject({ ev: 'fired', reason: 'deadline', lateMs: 0, signals: ['SIGQUIT'], stopped: true });
    expect(w.exitCode()).toBe(3);
  });

  it('moves the deadline on every feed, and takes the earlier of received + remaining and the absolute deadline', async () => {
    const w = world();
    w.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    const core = new FenceCore(w.ops);
    core.handle({ op: 'arm', pid: 100, remainingMs: 5000, deadlineMonoMs: w.now() + 5000 });
    for (let i = 0; i < 5; i++) {
      await w.advance(2000);
      core.handle({ op: 'feed', remainingMs: 5000, deadlineMonoMs: w.now() + 5000 });
    }
    expect(w.signals).toEqual([]);
    // A feed that waited 3 s in the pipe: its absolute deadline is 2 s away, not 5 s.
    core.handle({ op: 'feed', remainingMs: 5000, deadlineMonoMs: w.now() + 2000 });
    expect(core.remainingMs()).toBe(2000);
    await w.advance(2000);
    await settle();
    expect(w.signals).toEqual([[100, 'SIGQUIT']]);
  });

  it('fires at once when the agent pipe closes while armed', async () => {
    const w = world();
    w.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    const core = new FenceCore(w.ops);
    core.handle({ op: 'arm', pid: 100, remainingMs: 60_000, deadlineMonoMs: w.now() + 60_000 });
    core.agentGone();
    await settle();
    expect(w.signals).toEqual([[100, 'SIGQUIT']]);
    expect(w.sent.at(-1)).toMatchObject({ ev: 'fired', reason: 'agent gone', stopped: true });
    expect(w.exitCode()).toBe(3);
  });

  it('exits quietly when the pipe closes while not armed, and on exit', async () => {
    const w = world();
    w.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    new FenceCore(w.ops).agentGone();
    expect(w.exitCode()).toBe(0);
    const w2 = world();
    w2.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    const core = new FenceCore(w2.ops);
    core.handle({ op: 'arm', pid: 100, remainingMs: 1000, deadlineMonoMs: w2.now() + 1000 });
    core.handle({ op: 'exit' });
    await w2.advance(5000);
    expect(w2.signals).toEqual([]);
    expect(w2.sent.at(-1)).toEqual({ ev: 'disarmed' });
    expect(w2.exitCode()).toBe(0);
  });

  it('goes back to idle on disarm: no firing, still running, armed again later; the pipe closing then just exits', async () => {
    const w = world();
    w.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    const core = new FenceCore(w.ops);
    core.handle({ op: 'arm', pid: 100, remainingMs: 1000, deadlineMonoMs: w.now() + 1000 });
    core.handle({ op: 'disarm' });
    expect(core.armed).toBe(false);
    await w.advance(5000);
    expect(w.signals).toEqual([]);
    expect(w.sent.at(-1)).toEqual({ ev: 'disarmed' });
    expect(w.exitCode()).toBeUndefined();
    // Armed again (the next leadership): fires at its deadline.
    core.handle({ op: 'arm', pid: 100, remainingMs: 2000, deadlineMonoMs: w.now() + 2000 });
    expect(w.sent.at(-1)).toEqual({ ev: 'armed', pid: 100, remainingMs: 2000 });
    await w.advance(2000);
    await settle();
    expect(w.signals).toEqual([[100, 'SIGQUIT']]);
    expect(w.exitCode()).toBe(3);
    // Disarmed, the pipe closing is no firing.
    const w2 = world();
    w2.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    const idle = new FenceCore(w2.ops);
    idle.handle({ op: 'arm', pid: 100, remainingMs: 60_000, deadlineMonoMs: w2.now() + 60_000 });
    idle.handle({ op: 'disarm' });
    idle.agentGone();
    await settle();
    expect(w2.signals).toEqual([]);
    expect(w2.exitCode()).toBe(0);
  });

  it('escalates to SIGKILL of the postmaster and the children it had when SIGQUIT does not end it', async () => {
    const w = world();
    w.procs.set(100, { state: 'S', ppid: 1, start: '555', diesOn: ['SIGKILL'] });
    w.procs.set(101, { state: 'S', ppid: 100, start: '556', diesOn: ['SIGKILL'] });
    w.procs.set(200, { state: 'S', ppid: 1, start: '557' });
    const core = new FenceCore(w.ops, { killAfterMs: 1000, pollMs: 10 });
    core.handle({ op: 'arm', pid: 100, remainingMs: 100, deadlineMonoMs: w.now() + 100 });
    await w.advance(100);
    await settle();
    expect(w.signals).toEqual([[100, 'SIGQUIT']]);
    await w.advance(1100);
    await settle();
    expect(w.signals).toEqual([
      [100, 'SIGQUIT'],
      [100, 'SIGKILL'],
      [101, 'SIGKILL'],
    ]);
    expect(w.procs.has(200)).toBe(true);
    expect(w.sent.at(-1)).toMatchObject({ ev: 'fired', signals: ['SIGQUIT', 'SIGKILL'], stopped: true });
  });

  it('never signals a recycled PID (another start time), and refuses to arm on a dead one', async () => {
    const w = world();
    const core = new FenceCore(w.ops);
    core.handle({ op: 'arm', pid: 100, remainingMs: 100, deadlineMonoMs: w.now() + 100 });
    expect(w.sent[0]).toMatchObject({ ev: 'refused' });
    w.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    core.handle({ op: 'arm', pid: 100, remainingMs: 100, deadlineMonoMs: w.now() + 100 });
    // The postmaster ended and its PID went to another process.
    w.procs.set(100, { state: 'S', ppid: 1, start: '999' });
    await w.advance(200);
    await settle();
    expect(w.signals).toEqual([]);
    expect(w.sent.at(-1)).toMatchObject({ ev: 'fired', signals: [], stopped: true });
  });
});

describe('FenceCore armed on a data directory (finding 16)', () => {
  function withDataDir() {
    const w = world();
    /** The postmaster.pid of /data, as the fence process reads it (checked against the process's cwd). */
    const dir = { pid: undefined as number | undefined };
    const ops: FenceOps = { ...w.ops, dataDirPostmaster: (d) => (d === '/data' ? dir.pid : undefined) };
    return { ...w, ops, dir };
  }

  it('arms with no postmaster running and stops the one started in the data directory after the arming', async () => {
    const w = withDataDir();
    const core = new FenceCore(w.ops);
    core.handle({ op: 'arm', pid: 0, dataDir: '/data', remainingMs: 5000, deadlineMonoMs: w.now() + 5000 });
    expect(w.sent[0]).toEqual({ ev: 'armed', pid: 0, remainingMs: 5000 });
    expect(core.armed).toBe(true);
    // The agent starts PostgreSQL (a primary after a crash), then freezes: nobody arms on the new PID.
    await w.advance(1000);
    w.procs.set(300, { state: 'S', ppid: 1, start: '777' });
    w.dir.pid = 300;
    await w.advance(4000);
    await settle();
    expect(w.signals).toEqual([[300, 'SIGQUIT']]);
    expect(w.sent.at(-1)).toMatchObject({ ev: 'fired', reason: 'deadline', signals: ['SIGQUIT'], stopped: true });
    expect(w.exitCode()).toBe(3);
  });

  it('stops both the postmaster armed on and the one the data directory names now, and the latter on the pipe closing too', async () => {
    const w = withDataDir();
    w.procs.set(100, { state: 'S', ppid: 1, start: '555' });
    const core = new FenceCore(w.ops);
    core.handle({ op: 'arm', pid: 100, dataDir: '/data', remainingMs: 60_000, deadlineMonoMs: w.now() + 60_000 });
    w.procs.set(300, { state: 'S', ppid: 1, start: '777' });
    w.dir.pid = 300;
    core.agentGone();
    await settle();
    expect(w.signals).toEqual([
      [100, 'SIGQUIT'],
      [300, 'SIGQUIT'],
    ]);
    expect(w.sent.at(-1)).toMatchObject({ ev: 'fired', reason: 'agent gone', stopped: true });
  });

  it('signals nothing when no postmaster runs there at the deadline; refuses an arming with neither a live PID nor a data directory', async () => {
    const w = withDataDir();
    const core = new FenceCore(w.ops);
    core.handle({ op: 'arm', pid: 0, remainingMs: 100, deadlineMonoMs: w.now() + 100 });
    expect(w.sent[0]).toMatchObject({ ev: 'refused' });
    core.handle({ op: 'arm', pid: 100, dataDir: '/data', remainingMs: 100, deadlineMonoMs: w.now() + 100 });
    expect(w.sent[1]).toEqual({ ev: 'armed', pid: 0, remainingMs: 100 });
    // postmaster.pid names a PID whose process is gone.
    w.dir.pid = 400;
    await w.advance(200);
    await settle();
    expect(w.signals).toEqual([]);
    expect(w.sent.at(-1)).toMatchObject({ ev: 'fired', signals: [], stopped: true });
  });
});
