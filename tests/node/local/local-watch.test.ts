import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PgStatus } from '../../../src/domain/pg-status.ts';
import { LocalWatch, type LocalWatchDeps } from '../../../src/node/local/local-watch.ts';
import { pgStatus } from '../fixtures.ts';

/** The PgControl the watch reads. */
type WatchedPg = LocalWatchDeps['pg'];

function fakePg(o: {
  pid?: () => number | undefined;
  probe?: () => Promise<PgStatus>;
  dataDirProblem?: () => string | undefined;
}): WatchedPg {
  return {
    postmasterPid: async () => (o.pid ? o.pid() : 42),
    probe: o.probe ?? (async () => pgStatus()),
    ...(o.dataDirProblem ? { dataDirProblem: o.dataDirProblem } : {}),
  };
}

afterEach(() => vi.useRealTimers());

describe('LocalWatch', () => {
  it('reports a dead postmaster of a running database within one check period, once', async () => {
    vi.useFakeTimers();
    let alive = true;
    const died = vi.fn();
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({ pid: () => (alive ? 42 : undefined) }),
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: () => {
        died();
        state.value = 'crashed';
      },
    });
    w.start();
    await vi.advanceTimersByTimeAsync(300);
    expect(died).not.toHaveBeenCalled();
    alive = false;
    await vi.advanceTimersByTimeAsync(100);
    expect(died).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(died).toHaveBeenCalledTimes(1);
    w.stop();
  });

  it('does not report a death the answer of which arrives after the database was started again (finding 11)', async () => {
    vi.useFakeTimers();
    const died = vi.fn();
    const state = { value: 'running', promoting: false, sinceMs: 1000 };
    // The first check's answer ("no postmaster") is held until the database ran through stop and start.
    let release: (pid: number | undefined) => void = () => {};
    let held = true;
    const pg = {
      postmasterPid: () => (held ? new Promise<number | undefined>((r) => (release = r)) : Promise.resolve(42)),
      probe: async () => pgStatus(),
    } satisfies WatchedPg;
    const w = new LocalWatch({ pg, database: () => state, probeTimeoutMs: () => 100, onDied: died });
    w.start();
    await vi.advanceTimersByTimeAsync(100);
    held = false;
    Object.assign(state, { value: 'running', sinceMs: 1700 }); // demoted, stopped, started again meanwhile
    release(undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(died).not.toHaveBeenCalled();
    // The same run: a death is still reported.
    held = true;
    await vi.advanceTimersByTimeAsync(100);
    release(undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(died).toHaveBeenCalledTimes(1);
    w.stop();
  });

  it('does not watch a database that is not running or is being promoted', async () => {
    vi.useFakeTimers();
    const died = vi.fn();
    let state = { value: 'stopped', promoting: false };
    const w = new LocalWatch({ pg: fakePg({ pid: () => undefined }), database: () => state, probeTimeoutMs: () => 100, onDied: died });
    w.start();
    await vi.advanceTimersByTimeAsync(500);
    state = { value: 'running', promoting: true };
    await vi.advanceTimersByTimeAsync(500);
    expect(died).not.toHaveBeenCalled();
    w.stop();
  });

  it('keeps the latest probe while running and clears it when the probe fails or the database stops', async () => {
    let fail = false;
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({
        probe: async () => {
          if (fail) throw new Error('down');
          return pgStatus({ inRecovery: true, timeline: 3 });
        },
      }),
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: () => {},
    });
    await w.probeOnce();
    expect(w.probe?.timeline).toBe(3);
    fail = true;
    await w.probeOnce();
    expect(w.probe).toBeUndefined();
    fail = false;
    await w.probeOnce();
    state.value = 'stopping';
    await w.probeOnce();
    expect(w.probe).toBeUndefined();
  });

  it('reports a data directory wiped under a running postmaster once, instead of a crash', async () => {
    vi.useFakeTimers();
    let problem: string | undefined;
    let alive = true;
    const gone = vi.fn();
    const died = vi.fn();
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({ pid: () => (alive ? 42 : undefined), dataDirProblem: () => problem }),
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: died,
      onDataDirGone: gone,
    });
    w.start();
    await vi.advanceTimersByTimeAsync(300);
    expect(gone).not.toHaveBeenCalled();
    problem = 'PG_VERSION is missing from data directory /d';
    await vi.advanceTimersByTimeAsync(100);
    expect(gone).toHaveBeenCalledTimes(1);
    expect(gone).toHaveBeenCalledWith('PG_VERSION is missing from data directory /d');
    expect(w.probe).toBeUndefined();
    // Still running (the stop has not been taken yet), postmaster gone too: neither repeated nor a crash.
    alive = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(gone).toHaveBeenCalledTimes(1);
    expect(died).not.toHaveBeenCalled();
    w.stop();
  });

  it('reports a wiped data directory again after the database ran again', async () => {
    vi.useFakeTimers();
    let problem: string | undefined = 'data directory /d is gone';
    const gone = vi.fn();
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({ dataDirProblem: () => problem }),
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: () => {},
      onDataDirGone: (r) => {
        gone(r);
        state.value = 'stopping';
      },
    });
    w.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(gone).toHaveBeenCalledTimes(1);
    state.value = 'stopped';
    problem = undefined;
    await vi.advanceTimersByTimeAsync(300);
    state.value = 'running';
    await vi.advanceTimersByTimeAsync(300);
    expect(gone).toHaveBeenCalledTimes(1);
    problem = 'global/pg_control is missing from data directory /d';
    await vi.advanceTimersByTimeAsync(100);
    expect(gone).toHaveBeenCalledTimes(2);
    w.stop();
  });

  it('does not look at the data directory of a database that is not running or is being promoted', async () => {
    vi.useFakeTimers();
    const gone = vi.fn();
    let state = { value: 'creating_replica', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({ dataDirProblem: () => 'data directory /d is gone' }),
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: () => {},
      onDataDirGone: gone,
    });
    w.start();
    await vi.advanceTimersByTimeAsync(500);
    state = { value: 'running', promoting: true };
    await vi.advanceTimersByTimeAsync(500);
    expect(gone).not.toHaveBeenCalled();
    w.stop();
  });

  it("keeps a replica's newest timeline once its WAL receiver is gone (the probe then has the restartpoint's)", async () => {
    let reported = pgStatus({ inRecovery: true, timeline: 2, streaming: true });
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({ probe: async () => reported }),
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: () => undefined,
    });
    await w.probeOnce();
    expect(w.probe?.timeline).toBe(2);
    reported = pgStatus({ inRecovery: true, timeline: 1, streaming: false });
    await w.probeOnce();
    expect(w.probe?.timeline).toBe(2);
    state.value = 'stopped';
    await w.probeOnce();
    state.value = 'running';
    await w.probeOnce();
    expect(w.probe?.timeline).toBe(1);
  });

  describe('with a watch connection (event-driven crash detection)', () => {
    /** A fake PgControl whose watch connection the test ends by hand. */
    function watchedPg(o: { pid: () => number | undefined; failOpen?: () => boolean }) {
      const opened: { onClosed: () => void; closed: boolean }[] = [];
      const pg = {
        ...fakePg({ pid: o.pid }),
        openWatchConnection: async (onClosed: () => void) => {
          if (o.failOpen?.()) throw new Error('not reachable');
          const c = { onClosed, closed: false };
          opened.push(c);
          return () => {
            c.closed = true;
          };
        },
      } satisfies WatchedPg;
      /** Ends the newest open connection from the server's side. */
      const serverClose = () => {
        const c = opened.filter((x) => !x.closed).at(-1)!;
        c.closed = true;
        c.onClosed();
      };
      return { pg, opened, serverClose };
    }

    it('reports a dead postmaster as soon as the connection ends, without waiting for the poll', async () => {
      vi.useFakeTimers();
      let alive = true;
      const died = vi.fn();
      const state = { value: 'running', promoting: false };
      const f = watchedPg({ pid: () => (alive ? 42 : undefined) });
      const w = new LocalWatch({
        pg: f.pg,
        database: () => state,
        probeTimeoutMs: () => 100,
        onDied: () => {
          died();
          state.value = 'crashed';
        },
      });
      expect(w.eventDriven).toBe(true);
      w.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(f.opened).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(250); // between two polls (1 s)
      alive = false;
      f.serverClose();
      await vi.advanceTimersByTimeAsync(0);
      expect(died).toHaveBeenCalledTimes(1);
      await vi.advanceTimersByTimeAsync(3000);
      expect(died).toHaveBeenCalledTimes(1);
      w.stop();
    });

    it('keeps checking for a moment when the postmaster is still exiting as the connection ends', async () => {
      vi.useFakeTimers();
      let alive = true;
      const died = vi.fn();
      const state = { value: 'running', promoting: false };
      const f = watchedPg({ pid: () => (alive ? 42 : undefined) });
      const w = new LocalWatch({
        pg: f.pg,
        database: () => state,
        probeTimeoutMs: () => 100,
        onDied: () => {
          died();
          state.value = 'crashed';
        },
      });
      w.start();
      await vi.advanceTimersByTimeAsync(100);
      f.serverClose();
      await vi.advanceTimersByTimeAsync(30);
      expect(died).not.toHaveBeenCalled();
      alive = false;
      await vi.advanceTimersByTimeAsync(10);
      expect(died).toHaveBeenCalledTimes(1);
      w.stop();
    });

    it('reopens the connection when it ended but the postmaster lives (terminated backend, crash restart)', async () => {
      vi.useFakeTimers();
      const died = vi.fn();
      const state = { value: 'running', promoting: false };
      const f = watchedPg({ pid: () => 42 });
      const w = new LocalWatch({ pg: f.pg, database: () => state, probeTimeoutMs: () => 100, onDied: died });
      w.start();
      await vi.advanceTimersByTimeAsync(100);
      f.serverClose();
      await vi.advanceTimersByTimeAsync(400);
      expect(died).not.toHaveBeenCalled();
      expect(f.opened).toHaveLength(2);
      expect(f.opened[1]!.closed).toBe(false);
      w.stop();
      expect(f.opened[1]!.closed).toBe(true);
    });

    it('polls once a second as a fallback, and then notices a crash while no connection could be opened', async () => {
      vi.useFakeTimers();
      let alive = true;
      const died = vi.fn();
      const pidCalls = vi.fn();
      const state = { value: 'running', promoting: false };
      const f = watchedPg({ pid: () => (pidCalls(), alive ? 42 : undefined), failOpen: () => true });
      const w = new LocalWatch({
        pg: f.pg,
        database: () => state,
        probeTimeoutMs: () => 100,
        onDied: () => {
          died();
          state.value = 'crashed';
        },
      });
      w.start();
      await vi.advanceTimersByTimeAsync(3000);
      expect(pidCalls).toHaveBeenCalledTimes(3);
      alive = false;
      await vi.advanceTimersByTimeAsync(999);
      expect(died).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1);
      expect(died).toHaveBeenCalledTimes(1);
      w.stop();
    });

    it('closes the connection when the database stops running and ignores its end then', async () => {
      vi.useFakeTimers();
      const died = vi.fn();
      const state = { value: 'running', promoting: false };
      const f = watchedPg({ pid: () => undefined });
      const w = new LocalWatch({ pg: f.pg, database: () => state, probeTimeoutMs: () => 100, onDied: died });
      w.start();
      await vi.advanceTimersByTimeAsync(0);
      state.value = 'stopping';
      f.serverClose();
      await vi.advanceTimersByTimeAsync(1000);
      expect(died).not.toHaveBeenCalled();
      state.value = 'stopped';
      await vi.advanceTimersByTimeAsync(1000);
      expect(f.opened.every((c) => c.closed)).toBe(true);
      w.stop();
    });
  });
});

describe('LocalWatch with a watch connection and a data directory watch', () => {
  /** A fake PgControl with both event sources, each ended by hand. */
  function eventPg(o: { pid: () => number | undefined; problem: () => string | undefined; failDirWatch?: () => boolean }) {
    const conns: { onClosed: () => void; closed: boolean }[] = [];
    const dirs: { onChange: (ended: boolean) => void; closed: boolean }[] = [];
    const pidCalls = vi.fn();
    const pg = {
      ...fakePg({ pid: () => (pidCalls(), o.pid()), dataDirProblem: o.problem }),
      openWatchConnection: async (onClosed: () => void) => {
        const c = { onClosed, closed: false };
        conns.push(c);
        return () => void (c.closed = true);
      },
      watchDataDir: (onChange: (ended: boolean) => void) => {
        if (o.failDirWatch?.()) throw new Error('ENOSPC: inotify watch limit');
        const d = { onChange, closed: false };
        dirs.push(d);
        return () => void (d.closed = true);
      },
    } satisfies WatchedPg;
    return { pg, conns, dirs, pidCalls };
  }

  it('polls every 10 s while both sources are open, every second once one is lost, and reopens it', async () => {
    vi.useFakeTimers();
    const state = { value: 'running', promoting: false };
    const f = eventPg({ pid: () => 42, problem: () => undefined });
    const w = new LocalWatch({
      pg: f.pg,
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: () => undefined,
      onDataDirGone: () => undefined,
    });
    w.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.conns).toHaveLength(1);
    expect(f.dirs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(40_000);
    expect(f.pidCalls).toHaveBeenCalledTimes(4); // at 10, 20, 30, 40 s
    // The directory watch ends (directory renamed, inotify error): polls come every second.
    f.dirs[0]!.closed = true;
    f.dirs[0]!.onChange(true);
    await vi.advanceTimersByTimeAsync(0);
    const after = f.pidCalls.mock.calls.length;
    await vi.advanceTimersByTimeAsync(1000);
    expect(f.pidCalls.mock.calls.length).toBe(after + 1);
    expect(f.dirs).toHaveLength(2); // reopened by that poll
    expect(f.dirs[1]!.closed).toBe(false);
    const n = f.pidCalls.mock.calls.length;
    await vi.advanceTimersByTimeAsync(9999);
    expect(f.pidCalls.mock.calls.length).toBe(n); // back to 10 s
    await vi.advanceTimersByTimeAsync(1);
    expect(f.pidCalls.mock.calls.length).toBe(n + 1);
    w.stop();
    expect(f.conns.every((c) => c.closed) && f.dirs[1]!.closed).toBe(true);
  });

  it('under an HA loop (cyclePoll every 10 s) the timed poll comes every 30 s, and still comes when the cycles stop', async () => {
    vi.useFakeTimers();
    const state = { value: 'running', promoting: false };
    let pid: number | undefined = 42;
    const died = vi.fn();
    const times: number[] = [];
    const t0 = Date.now();
    const f = eventPg({ pid: () => (times.push(Date.now() - t0), pid), problem: () => undefined });
    const w = new LocalWatch({ pg: f.pg, database: () => state, probeTimeoutMs: () => 100, onDied: died, onDataDirGone: () => undefined });
    w.start();
    await vi.advanceTimersByTimeAsync(0);
    let cycles = 0;
    const cycle = async () => {
      await vi.advanceTimersByTimeAsync(cycles === 0 ? 5000 : 10_000);
      w.cyclePoll();
      cycles++;
      await vi.advanceTimersByTimeAsync(0);
    };
    for (let i = 0; i < 7; i++) await cycle(); // up to 65 s
    // Timed polls at 1 s (the event sources were still opening), 11 s, then every 30 s (41 s);
    // the cycle polls at 5, 15 … 65 s.
    expect(times).toEqual([1000, 5000, 11_000, 15_000, 25_000, 35_000, 41_000, 45_000, 55_000, 65_000]);
    // The cycles stop (a long action): the fallback still polls, at 71 s, and notices a crash.
    pid = undefined;
    await vi.advanceTimersByTimeAsync(5999);
    expect(died).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(died).toHaveBeenCalledTimes(1);
    w.stop();
  });

  it('a cycle poll reports a dead postmaster and reopens a lost event source', async () => {
    vi.useFakeTimers();
    const state = { value: 'running', promoting: false };
    let pid: number | undefined = 42;
    const died = vi.fn();
    const f = eventPg({ pid: () => pid, problem: () => undefined });
    const w = new LocalWatch({ pg: f.pg, database: () => state, probeTimeoutMs: () => 100, onDied: died, onDataDirGone: () => undefined });
    w.start();
    await vi.advanceTimersByTimeAsync(0);
    f.dirs[0]!.closed = true;
    f.dirs[0]!.onChange(true);
    await vi.advanceTimersByTimeAsync(0);
    const before = f.pidCalls.mock.calls.length;
    w.cyclePoll();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.pidCalls.mock.calls.length).toBe(before + 1);
    expect(f.dirs).toHaveLength(2);
    pid = undefined;
    w.cyclePoll();
    await vi.advanceTimersByTimeAsync(0);
    expect(died).toHaveBeenCalledTimes(1);
    w.stop();
  });

  it('reports a wiped data directory at the directory event, not at the next poll', async () => {
    vi.useFakeTimers();
    let problem: string | undefined;
    const gone = vi.fn();
    const state = { value: 'running', promoting: false };
    const f = eventPg({ pid: () => 42, problem: () => problem });
    const w = new LocalWatch({ pg: f.pg, database: () => state, probeTimeoutMs: () => 100, onDied: () => undefined, onDataDirGone: gone });
    w.start();
    await vi.advanceTimersByTimeAsync(1200);
    problem = 'PG_VERSION is missing';
    f.dirs[0]!.onChange(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(gone).toHaveBeenCalledWith('PG_VERSION is missing');
    w.stop();
  });

  it('polls every second while the directory cannot be watched', async () => {
    vi.useFakeTimers();
    const state = { value: 'running', promoting: false };
    const f = eventPg({ pid: () => 42, problem: () => undefined, failDirWatch: () => true });
    const w = new LocalWatch({
      pg: f.pg,
      database: () => state,
      probeTimeoutMs: () => 100,
      onDied: () => undefined,
      onDataDirGone: () => undefined,
    });
    w.start();
    await vi.advanceTimersByTimeAsync(5000);
    expect(f.pidCalls).toHaveBeenCalledTimes(5);
    w.stop();
  });
});

describe('LocalWatch probe on demand (probeEveryMs: 0)', () => {
  /** A probe the test settles by hand; counts the probes started. */
  function manualProbe() {
    const pending: { resolve: (p: PgStatus) => void; reject: (e: Error) => void }[] = [];
    let n = 0;
    const probe = () => {
      n++;
      return new Promise<PgStatus>((resolve, reject) => pending.push({ resolve, reject }));
    };
    return {
      probe,
      started: () => n,
      settle: (timeline = 1) => pending.shift()!.resolve(pgStatus({ inRecovery: false, timeline })),
      fail: () => pending.shift()!.reject(new Error('timeout')),
    };
  }
  const running = { value: 'running', promoting: false };

  it('probeStartedAfter: waits out a probe started earlier and starts a new one, or joins one started since', async () => {
    vi.useFakeTimers();
    const m = manualProbe();
    const w = new LocalWatch({
      pg: fakePg({ probe: m.probe }),
      database: () => running,
      probeTimeoutMs: () => 2000,
      onDied: () => {},
      probeEveryMs: 0,
    });
    const early = w.probeOnce(); // in flight since t = 0
    await vi.advanceTimersByTimeAsync(50);
    let done = false;
    const after = w.probeStartedAfter(Date.now()).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(m.started()).toBe(1);
    m.settle(1);
    await early;
    await vi.advanceTimersByTimeAsync(0);
    expect(m.started()).toBe(2); // the early probe does not count: a new one started
    expect(done).toBe(false);
    m.settle(2);
    await after;
    expect(w.probe?.timeline).toBe(2);
    // A probe started after the instant (by any caller) serves it: no third probe.
    const t = Date.now();
    await vi.advanceTimersByTimeAsync(10);
    const reader = w.probeOnce();
    const joined = w.probeStartedAfter(t);
    await vi.advanceTimersByTimeAsync(0);
    expect(m.started()).toBe(3);
    m.settle(3);
    await Promise.all([reader, joined]);
    expect(m.started()).toBe(3);
  });

  it('runs no background probe', async () => {
    vi.useFakeTimers();
    const m = manualProbe();
    const w = new LocalWatch({
      pg: fakePg({ probe: m.probe }),
      database: () => running,
      probeTimeoutMs: () => 2000,
      onDied: () => {},
      probeEveryMs: 0,
    });
    w.start();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(m.started()).toBe(0);
    w.stop();
  });

  it('answers at once while the last probe started at most 1 s ago, else probes once for every concurrent reader', async () => {
    vi.useFakeTimers();
    const m = manualProbe();
    const w = new LocalWatch({
      pg: fakePg({ probe: m.probe }),
      database: () => running,
      probeTimeoutMs: () => 2000,
      onDied: () => {},
      probeEveryMs: 0,
    });
    // No probe yet: the first reader starts one, the others (and the HA cycle's probeNow) share it.
    const a = w.fresh();
    const b = w.fresh();
    const cycle = w.probeOnce();
    expect(a).toBeInstanceOf(Promise);
    expect(b).toBeInstanceOf(Promise);
    expect(m.started()).toBe(1);
    let done = 0;
    void Promise.all([a, b, cycle]).then(() => done++);
    await vi.advanceTimersByTimeAsync(50);
    expect(done).toBe(0);
    m.settle(4);
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(1);
    expect(w.probe?.timeline).toBe(4);
    expect(w.probedAtMs).toBe(Date.now() - 50); // its start
    // Fresh for 1 s from the probe's start (50 ms already gone): synchronous answers, no probe.
    await vi.advanceTimersByTimeAsync(950);
    expect(w.fresh()).toBeUndefined();
    expect(m.started()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const c = w.fresh();
    expect(c).toBeInstanceOf(Promise);
    expect(w.fresh()).toBeInstanceOf(Promise);
    expect(m.started()).toBe(2);
    m.settle(5);
    await c;
    expect(w.probe?.timeline).toBe(5);
    expect(w.fresh()).toBeUndefined();
  });

  it('bounds the wait: readers answer from what is known 1 s after the probe started; a failed probe counts as one', async () => {
    vi.useFakeTimers();
    const m = manualProbe();
    const w = new LocalWatch({
      pg: fakePg({ probe: m.probe }),
      database: () => running,
      probeTimeoutMs: () => 2000,
      onDied: () => {},
      probeEveryMs: 0,
    });
    const first = w.fresh()!;
    m.settle(2);
    await first;
    await vi.advanceTimersByTimeAsync(1500);
    const slow = w.fresh()!; // probe 2 hangs
    let waited = false;
    void slow.then(() => (waited = true));
    await vi.advanceTimersByTimeAsync(600);
    const late = w.fresh()!; // joins probe 2: 400 ms left of its bound
    let lateDone = false;
    void late.then(() => (lateDone = true));
    await vi.advanceTimersByTimeAsync(399);
    expect(waited).toBe(false);
    expect(lateDone).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(waited).toBe(true);
    expect(lateDone).toBe(true);
    expect(w.probe?.timeline).toBe(2); // what is known
    // Past the bound the probe in flight is not waited for.
    expect(w.fresh()).toBeUndefined();
    expect(m.started()).toBe(2);
    // It fails (its timeout): no probe data, and no new probe for 1 s from its start.
    m.fail();
    await vi.advanceTimersByTimeAsync(0);
    expect(w.probe).toBeUndefined();
    expect(w.probedAtMs).toBe(Date.now() - 1000);
    await vi.advanceTimersByTimeAsync(1);
    expect(w.fresh()).toBeInstanceOf(Promise);
    expect(m.started()).toBe(3);
  });

  it('does not probe for readers while the database does not run or once stopped', async () => {
    vi.useFakeTimers();
    const m = manualProbe();
    const state = { value: 'stopped', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({ probe: m.probe }),
      database: () => state,
      probeTimeoutMs: () => 2000,
      onDied: () => {},
      probeEveryMs: 0,
    });
    expect(w.fresh()).toBeUndefined();
    state.value = 'running';
    expect(w.fresh()).toBeInstanceOf(Promise);
    m.settle();
    await vi.advanceTimersByTimeAsync(5000);
    w.stop();
    expect(w.fresh()).toBeUndefined();
    expect(m.started()).toBe(1);
  });

  it('keeps a background probe when asked (the simulator): readers never wait', async () => {
    vi.useFakeTimers();
    let n = 0;
    const w = new LocalWatch({
      pg: fakePg({ probe: async () => pgStatus({ inRecovery: false, timeline: ++n }) }),
      database: () => running,
      probeTimeoutMs: () => 2000,
      onDied: () => {},
    });
    w.start();
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(1000);
      expect(w.fresh()).toBeUndefined();
    }
    expect(n).toBe(5);
    w.stop();
  });
});

describe('LocalWatch probe on demand: a crash releases waiting readers', () => {
  it('readers waiting for a probe answer at once when the postmaster is reported dead', async () => {
    vi.useFakeTimers();
    let alive = true;
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({
      pg: fakePg({ pid: () => (alive ? 42 : undefined), probe: () => new Promise<PgStatus>(() => undefined) }),
      database: () => state,
      probeTimeoutMs: () => 2000,
      onDied: () => (state.value = 'crashed'),
      probeEveryMs: 0,
      checkEveryMs: 100,
    });
    w.start();
    let answered = false;
    void w.fresh()!.then(() => (answered = true));
    await vi.advanceTimersByTimeAsync(50);
    alive = false;
    await vi.advanceTimersByTimeAsync(50); // the next check
    expect(answered).toBe(true);
    expect(w.fresh()).toBeUndefined();
    w.stop();
  });
});
