import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PgStatus } from '../../src/domain/pg-status.ts';
import { LocalWatch } from '../../src/node/local-watch.ts';
import type { PgControl } from '../../src/postgres/types.ts';

function fakePg(o: { pid?: () => number | undefined; probe?: () => Promise<PgStatus>; dataDirProblem?: () => string | undefined }): PgControl {
  return {
    postmasterPid: async () => (o.pid ? o.pid() : 42),
    probe: o.probe ?? (async () => ({ inRecovery: false, timeline: 1 }) as PgStatus),
    ...(o.dataDirProblem ? { dataDirProblem: o.dataDirProblem } : {}),
  } as unknown as PgControl;
}

afterEach(() => vi.useRealTimers());

describe('LocalWatch', () => {
  it('reports a dead postmaster of a running database within one check period, once', async () => {
    vi.useFakeTimers();
    let alive = true;
    const died = vi.fn();
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({ pg: fakePg({ pid: () => (alive ? 42 : undefined) }), database: () => state, probeTimeoutMs: () => 100, onDied: () => { died(); state.value = 'crashed'; } });
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
      pg: fakePg({ probe: async () => { if (fail) throw new Error('down'); return { inRecovery: true, timeline: 3 } as PgStatus; } }),
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
    let reported = { inRecovery: true, timeline: 2, streaming: true } as PgStatus;
    const state = { value: 'running', promoting: false };
    const w = new LocalWatch({ pg: fakePg({ probe: async () => reported }), database: () => state, probeTimeoutMs: () => 100, onDied: () => undefined });
    await w.probeOnce();
    expect(w.probe?.timeline).toBe(2);
    reported = { inRecovery: true, timeline: 1, streaming: false } as PgStatus;
    await w.probeOnce();
    expect(w.probe?.timeline).toBe(2);
    state.value = 'stopped';
    await w.probeOnce();
    state.value = 'running';
    await w.probeOnce();
    expect(w.probe?.timeline).toBe(1);
  });
});
