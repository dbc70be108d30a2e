import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  dataDirProblem,
  escalationWindows,
  identifyPostgres,
  isSameProcess,
  parseProcStat,
  parseStatusUid,
  postgresChildren,
  probeHost,
  signalIfSame,
  socketLockPostmaster,
  terminatePostmaster,
  tryConnect,
  type ProcOps,
} from '../../src/postgres/postmaster.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

/** A `/proc/<pid>/stat` line: field 22 (start time) after 17 filler fields. */
function statLine(pid: number, comm: string, state: string, ppid: number, startTime: string): string {
  return `${pid} (${comm}) ${state} ${ppid} ${Array(17).fill('0').join(' ')} ${startTime} 0 0\n`;
}

interface FakeProc {
  comm: string;
  state: string;
  ppid: number;
  startTime: string;
  uid: number;
  /** Signals it survives; any other signal makes it exit after `exitAfterMs`. */
  ignores: Set<string>;
  exitAfterMs: number;
  dyingAt?: number;
}

/** A fake process table with a fake clock: `sleep` advances it. */
class FakeProcs implements ProcOps {
  t = 0;
  readonly procs = new Map<number, FakeProc>();
  readonly sent: [number, string][] = [];

  add(pid: number, p: Partial<FakeProc> = {}): void {
    this.procs.set(pid, { comm: 'postgres', state: 'S', ppid: 1, startTime: '1000', uid: 101, ignores: new Set(), exitAfterMs: 20, ...p });
  }
  private reap(): void {
    for (const [pid, p] of this.procs) if (p.dyingAt !== undefined && this.t >= p.dyingAt) this.procs.delete(pid);
  }
  readStat(pid: number): string | undefined {
    this.reap();
    const p = this.procs.get(pid);
    return p ? statLine(pid, p.comm, p.state, p.ppid, p.startTime) : undefined;
  }
  readUid(pid: number): number | undefined {
    return this.procs.get(pid)?.uid;
  }
  kill(pid: number, signal: NodeJS.Signals | 0): void {
    this.reap();
    const p = this.procs.get(pid);
    if (!p) throw Object.assign(new Error('ESRCH'), { code: 'ESRCH' });
    if (signal === 0) return;
    this.sent.push([pid, signal]);
    if (signal === 'SIGKILL') p.dyingAt = this.t;
    else if (!p.ignores.has(signal)) p.dyingAt = Math.min(p.dyingAt ?? Infinity, this.t + p.exitAfterMs);
  }
  listPids(): number[] {
    this.reap();
    return [...this.procs.keys()];
  }
  async sleep(ms: number): Promise<void> {
    this.t += ms;
  }
  now(): number {
    return this.t;
  }
}

describe('/proc parsing', () => {
  it('reads command, state, parent and start time, also with spaces and parentheses in the command', () => {
    expect(parseProcStat(statLine(42, 'postgres', 'S', 1, '98765'))).toEqual({ comm: 'postgres', state: 'S', ppid: 1, startTime: '98765' });
    expect(parseProcStat(statLine(7, 'a (b) c', 'R', 3, '5'))?.comm).toBe('a (b) c');
    expect(parseProcStat('garbage')).toBeUndefined();
    expect(parseProcStat('1 (x) S 1')).toBeUndefined();
  });
  it('reads the real uid of /proc/<pid>/status', () => {
    expect(parseStatusUid('Name:\tpostgres\nUid:\t101\t101\t101\t101\nGid:\t104\n')).toBe(101);
    expect(parseStatusUid('Name:\tx\n')).toBeUndefined();
  });
});

describe('process identity', () => {
  it('identifies a live postgres process of the PostgreSQL user only', () => {
    const f = new FakeProcs();
    f.add(10);
    f.add(11, { comm: 'bash' });
    f.add(12, { state: 'Z' });
    f.add(13, { uid: 0 });
    expect(identifyPostgres(10, 101, f)).toEqual({ pid: 10, startTime: '1000' });
    expect(identifyPostgres(10, undefined, f)).toEqual({ pid: 10, startTime: '1000' });
    expect(identifyPostgres(11, 101, f)).toBeUndefined();
    expect(identifyPostgres(12, 101, f)).toBeUndefined();
    expect(identifyPostgres(13, 101, f)).toBeUndefined();
    expect(identifyPostgres(99, 101, f)).toBeUndefined();
    expect(identifyPostgres(1, undefined, f)).toBeUndefined();
  });

  it('never signals a recycled PID (same PID, another start time)', () => {
    const f = new FakeProcs();
    f.add(10);
    const id = identifyPostgres(10, 101, f)!;
    f.procs.delete(10);
    f.add(10, { startTime: '2000' });
    expect(isSameProcess(id, f)).toBe(false);
    expect(signalIfSame(id, 'SIGKILL', f)).toBe(false);
    expect(f.sent).toEqual([]);
    expect(f.procs.has(10)).toBe(true);
  });

  it('lists the postgres children of a postmaster', () => {
    const f = new FakeProcs();
    f.add(10);
    f.add(20, { ppid: 10, startTime: '1001' });
    f.add(21, { ppid: 10, comm: 'sh' });
    f.add(22, { ppid: 10, state: 'Z' });
    f.add(30, { ppid: 1 });
    expect(postgresChildren(10, f)).toEqual([{ pid: 20, startTime: '1001' }]);
  });

  it('without /proc, trusts kill(pid, 0)', () => {
    const f = new FakeProcs();
    f.add(10);
    const noProc: ProcOps = {
      ...f,
      readStat: () => null,
      kill: (p, s) => f.kill(p, s),
      listPids: () => [],
      readUid: () => undefined,
      sleep: (ms) => f.sleep(ms),
      now: () => f.now(),
    };
    expect(identifyPostgres(10, 101, noProc)).toEqual({ pid: 10, startTime: '' });
    expect(identifyPostgres(11, 101, noProc)).toBeUndefined();
  });
});

describe('terminatePostmaster', () => {
  const windows = { graceMs: 1000, quitMs: 500, killMs: 500 };

  it('fast: SIGINT and waits for the exit', async () => {
    const f = new FakeProcs();
    f.add(10);
    const id = identifyPostgres(10, 101, f)!;
    expect(await terminatePostmaster(id, { mode: 'fast', ...windows }, f)).toEqual({});
    expect(f.sent).toEqual([[10, 'SIGINT']]);
    expect(f.procs.has(10)).toBe(false);
  });

  it('immediate: SIGQUIT', async () => {
    const f = new FakeProcs();
    f.add(10);
    await terminatePostmaster(identifyPostgres(10, 101, f)!, { mode: 'immediate', ...windows }, f);
    expect(f.sent).toEqual([[10, 'SIGQUIT']]);
  });

  it('already signalled (pg_ctl stop): only waits', async () => {
    const f = new FakeProcs();
    f.add(10);
    const id = identifyPostgres(10, 101, f)!;
    f.kill(10, 'SIGINT');
    f.sent.length = 0;
    await terminatePostmaster(id, { mode: 'fast', signalled: true, ...windows }, f);
    expect(f.sent).toEqual([]);
    expect(f.procs.has(10)).toBe(false);
  });

  it('fast shutdown hanging: SIGQUIT after the grace window', async () => {
    const f = new FakeProcs();
    f.add(10, { ignores: new Set(['SIGINT']) });
    const seen: string[] = [];
    const out = await terminatePostmaster(identifyPostgres(10, 101, f)!, { mode: 'fast', ...windows, onEscalate: (s) => seen.push(s) }, f);
    expect(out).toEqual({ escalatedTo: 'SIGQUIT' });
    expect(f.sent).toEqual([
      [10, 'SIGINT'],
      [10, 'SIGQUIT'],
    ]);
    expect(seen).toEqual(['SIGQUIT']);
    expect(f.t).toBeGreaterThanOrEqual(1000);
    expect(f.t).toBeLessThan(1100);
  });

  it('a postmaster ignoring fast and immediate is killed, with its children', async () => {
    const f = new FakeProcs();
    f.add(10, { ignores: new Set(['SIGINT', 'SIGQUIT']) });
    f.add(20, { ppid: 10, startTime: '1001', ignores: new Set(['SIGINT', 'SIGQUIT']) });
    f.add(30, { ppid: 1, comm: 'bash' });
    const out = await terminatePostmaster(identifyPostgres(10, 101, f)!, { mode: 'fast', ...windows }, f);
    expect(out).toEqual({ escalatedTo: 'SIGKILL' });
    expect(f.sent).toEqual([
      [10, 'SIGINT'],
      [10, 'SIGQUIT'],
      [10, 'SIGKILL'],
      [20, 'SIGKILL'],
    ]);
    expect([...f.procs.keys()]).toEqual([30]);
  });

  it('immediate shutdown hanging: SIGKILL after the grace window', async () => {
    const f = new FakeProcs();
    f.add(10, { ignores: new Set(['SIGQUIT']) });
    const out = await terminatePostmaster(identifyPostgres(10, 101, f)!, { mode: 'immediate', ...windows }, f);
    expect(out).toEqual({ escalatedTo: 'SIGKILL' });
    expect(f.sent).toEqual([
      [10, 'SIGQUIT'],
      [10, 'SIGKILL'],
    ]);
  });

  it('does nothing to a PID that is no longer that postmaster', async () => {
    const f = new FakeProcs();
    f.add(10);
    const id = identifyPostgres(10, 101, f)!;
    f.procs.delete(10);
    f.add(10, { startTime: '5000' });
    expect(await terminatePostmaster(id, { mode: 'fast', ...windows }, f)).toEqual({});
    expect(f.sent).toEqual([]);
    expect(f.procs.has(10)).toBe(true);
  });

  it('rejects when even SIGKILL does not end it', async () => {
    const f = new FakeProcs();
    f.add(10, { ignores: new Set(['SIGINT', 'SIGQUIT']) });
    const id = identifyPostgres(10, 101, f)!;
    const ops: ProcOps = {
      ...f,
      readStat: (p) => f.readStat(p),
      readUid: (p) => f.readUid(p),
      listPids: () => f.listPids(),
      sleep: (ms) => f.sleep(ms),
      now: () => f.now(),
      kill: (p, s) => {
        if (s !== 'SIGKILL') f.kill(p, s);
      },
    };
    await expect(terminatePostmaster(id, { mode: 'immediate', ...windows }, ops)).rejects.toThrow(/still alive after SIGKILL/);
  });

  it('escalation windows fit the stop bound; immediate gets at most 10 s, SIGKILL at least 2 s', () => {
    expect(escalationWindows('fast', 60_000)).toEqual({ graceMs: 50_000, quitMs: 5000, killMs: 5000 });
    expect(escalationWindows('immediate', 60_000)).toEqual({ graceMs: 10_000, quitMs: 0, killMs: 5000 });
    expect(escalationWindows('fast', 2000)).toEqual({ graceMs: 1000, quitMs: 500, killMs: 2000 });
    expect(escalationWindows('fast', -5).graceMs).toBe(0);
  });
});

describe('data directory and socket checks', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await makeTempDir('ha-postmaster-');
  });
  afterEach(async () => {
    await removeTempDir(dir);
  });

  it('names what is missing from a data directory', async () => {
    const data = join(dir, 'data');
    expect(dataDirProblem(data)).toMatch(/data directory .* is gone/);
    await mkdir(join(data, 'global'), { recursive: true });
    expect(dataDirProblem(data)).toMatch(/^PG_VERSION is missing/);
    await writeFile(join(data, 'PG_VERSION'), '15\n');
    expect(dataDirProblem(data)).toMatch(/^global\/pg_control is missing/);
    await writeFile(join(data, 'global', 'pg_control'), '');
    expect(dataDirProblem(data)).toBeUndefined();
    await rm(data, { recursive: true });
    expect(dataDirProblem(data)).toMatch(/is gone/);
  });

  it('finds the postmaster a socket lock file names for this data directory only', async () => {
    const f = new FakeProcs();
    f.add(10);
    const lock = join(dir, '.s.PGSQL.5432.lock');
    expect(socketLockPostmaster(lock, '/srv/data', 101, f)).toBeUndefined();
    await writeFile(lock, '10\n/srv/data\n1700000000\n5432\n/run/sock\n');
    expect(socketLockPostmaster(lock, '/srv/data', 101, f)).toEqual({ pid: 10, startTime: '1000' });
    expect(socketLockPostmaster(lock, '/srv/other', 101, f)).toBeUndefined();
    expect(socketLockPostmaster(lock, '/srv/data', 0, f)).toBeUndefined();
    f.procs.delete(10);
    expect(socketLockPostmaster(lock, '/srv/data', 101, f)).toBeUndefined();
  });

  it('a missing unix socket is not a listener; wildcard hosts are probed on loopback', async () => {
    expect(await tryConnect({ path: join(dir, '.s.PGSQL.5432') }, 500)).toBe('refused');
    expect(probeHost('*')).toBe('127.0.0.1');
    expect(probeHost('0.0.0.0')).toBe('127.0.0.1');
    expect(probeHost('::')).toBe('::1');
    expect(probeHost('10.0.0.5, 127.0.0.1')).toBe('10.0.0.5');
  });
});
