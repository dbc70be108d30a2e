/**
 * The real fence process (src/watchdog/fence-process.ts) on a dummy "postmaster" (`sleep 1000`):
 * it runs under plain node (bundled, not through tsx), fires at the deadline, is kept quiet by
 * feeds, goes back to idle on disarm and exits on close, is armed within milliseconds once started
 * ahead and started again when it ends, fires as soon as its agent is SIGKILLed (the pipe closes)
 * but just exits when disarmed, and fires at the deadline when its agent is frozen (SIGSTOP).
 * Every process started here is stopped by PID in afterAll.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessFence } from '../../src/watchdog/process-fence.ts';
import { monoNowMs } from '../../src/watchdog/protocol.ts';
import { isAlive, sleep, stopPid, waitFor } from '../support/processes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const started: number[] = [];

afterAll(async () => {
  for (const pid of started.reverse()) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      /* gone */
    }
    await stopPid(pid, 'SIGKILL', 100);
  }
});

function victim(): ChildProcess {
  const c = spawn('sleep', ['1000'], { stdio: 'ignore' });
  if (c.pid) started.push(c.pid);
  return c;
}

/** Resolves with the ms from `fromMs` (Date.now) at which `c` exits. */
function exitTime(c: ChildProcess, fromMs: () => number): Promise<{ ms: number; signal: string | null }> {
  return new Promise((r) => c.once('exit', (_code, signal) => r({ ms: Date.now() - fromMs(), signal })));
}

/** Starts the stand-in agent (support/fence-agent.ts); resolves once its fence is armed (or idle again: `disarm`). */
async function fakeAgent(
  target: number,
  windowMs: number,
  feedEveryMs: number,
  then = '',
): Promise<{ agent: ChildProcess; fencePid: number }> {
  const agent = spawn(
    process.execPath,
    ['--import', 'tsx', resolve(ROOT, 'tests/e2e/support/fence-agent.ts'), String(target), String(windowMs), String(feedEveryMs), then],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NODE_OPTIONS: '' },
    },
  );
  if (agent.pid) started.push(agent.pid);
  let out = '';
  agent.stdout?.on('data', (d) => (out += d));
  const m = await waitFor(
    () => /(?:armed|idle) (\d+)/.exec(out) ?? (out.includes('failed') ? Promise.reject(new Error(out)) : undefined),
    30_000,
    'the fence armed',
    20,
  );
  const fencePid = Number(m[1]);
  started.push(fencePid);
  return { agent, fencePid };
}

describe('fence process', () => {
  it('fires SIGQUIT at the deadline when not fed, then exits with code 3', async () => {
    const v = victim();
    const fence = new ProcessFence();
    const events: string[] = [];
    fence.onEvent((e) => events.push(e.kind));
    // The deadline counts from the call: starting the process (not started ahead here) eats into it.
    const calledAt = Date.now();
    const died = exitTime(v, () => calledAt);
    await fence.arm(v.pid!, 3000, monoNowMs() + 3000);
    const fencePid = fence.pid!;
    started.push(fencePid);
    const { ms, signal } = await died;
    expect(signal).toBe('SIGQUIT');
    expect(ms).toBeGreaterThanOrEqual(2950);
    expect(ms).toBeLessThan(3500);
    await waitFor(() => !isAlive(fencePid), 5000, 'the fence to exit');
    expect(events).toEqual(['fired', 'exited']);
    console.log(`fence: deadline 3000 ms after the arm call, postmaster stand-in gone after ${ms} ms`);
  });

  it('armed on a data directory with no postmaster: stops the one started there after the arming (postmaster.pid, checked against its cwd), never a process a stale file names', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ha-fence-datadir-'));
    try {
      // A stale postmaster.pid naming a process elsewhere (a recycled PID): not signalled.
      const other = victim();
      writeFileSync(join(dataDir, 'postmaster.pid'), `${other.pid}\n${dataDir}\n`);
      const stale = new ProcessFence({ dataDir });
      await stale.arm(undefined, 500, monoNowMs() + 500);
      started.push(stale.pid!);
      const stalePid = stale.pid!;
      await waitFor(() => !isAlive(stalePid), 5000, 'the first fence to fire and exit');
      expect(isAlive(other.pid!)).toBe(true);
      // Armed with nothing running; a "postmaster" started afterwards in the data directory.
      const fence = new ProcessFence({ dataDir });
      await fence.arm(undefined, 1500, monoNowMs() + 1500);
      const fencePid = fence.pid!;
      started.push(fencePid);
      expect(fence.armed).toBe(true);
      const v = spawn('sleep', ['1000'], { stdio: 'ignore', cwd: dataDir });
      if (v.pid) started.push(v.pid);
      writeFileSync(join(dataDir, 'postmaster.pid'), `${v.pid}\n${dataDir}\n`);
      const { signal } = await exitTime(v, () => 0);
      expect(signal).toBe('SIGQUIT');
      await waitFor(() => !isAlive(fencePid), 5000, 'the fence to exit');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('stays quiet while fed, goes back to idle on disarm without touching the process, and exits on close', async () => {
    const v = victim();
    const fence = new ProcessFence();
    await fence.arm(v.pid!, 30_000, monoNowMs() + 30_000);
    fence.feed(600, monoNowMs() + 600);
    const fencePid = fence.pid!;
    started.push(fencePid);
    for (let i = 0; i < 10; i++) {
      await sleep(200);
      fence.feed(600, monoNowMs() + 600);
    }
    expect(isAlive(v.pid!)).toBe(true);
    await fence.disarm();
    expect(fence.armed).toBe(false);
    await sleep(1000);
    expect(isAlive(v.pid!)).toBe(true);
    expect(fence.pid, 'the same process, idle').toBe(fencePid);
    expect(isAlive(fencePid)).toBe(true);
    await fence.close();
    expect(isAlive(fencePid)).toBe(false);
    expect(fence.pid).toBeUndefined();
    expect(isAlive(v.pid!)).toBe(true);
  });

  it('started ahead under plain node: armed in milliseconds, and started again when it ends', async () => {
    const v = victim();
    const fence = new ProcessFence();
    const events: string[] = [];
    fence.onEvent((e) => events.push(e.kind));
    const t0 = performance.now();
    await fence.start();
    const startMs = performance.now() - t0;
    const first = fence.pid!;
    started.push(first);
    const cmdline = readFileSync(`/proc/${first}/cmdline`, 'utf8').split('\0');
    expect(cmdline.join(' ')).not.toContain('tsx');
    expect(cmdline.some((a) => a.endsWith('.mjs'))).toBe(true);
    const t1 = performance.now();
    await fence.arm(v.pid!, 30_000, monoNowMs() + 30_000);
    const armMs = performance.now() - t1;
    expect(fence.pid).toBe(first);
    expect(armMs).toBeLessThan(200);
    await fence.disarm();
    // Killed while idle: noticed, started again, and armable again.
    process.kill(first, 'SIGKILL');
    const second = await waitFor(
      () => (fence.pid !== undefined && fence.pid !== first ? fence.pid : undefined),
      10_000,
      'a new fence process',
      20,
    );
    started.push(second);
    expect(events).toEqual(['exited']);
    await fence.arm(v.pid!, 30_000, monoNowMs() + 30_000);
    expect(fence.armed).toBe(true);
    await fence.close();
    expect(isAlive(second)).toBe(false);
    expect(isAlive(v.pid!)).toBe(true);
    console.log(`fence: started ahead in ${startMs.toFixed(0)} ms, armed in ${armMs.toFixed(2)} ms`);
  });

  it('just exits, touching nothing, when its agent is SIGKILLed while it is disarmed', async () => {
    const v = victim();
    const { agent, fencePid } = await fakeAgent(v.pid!, 60_000, 0, 'disarm');
    expect(isAlive(fencePid)).toBe(true);
    agent.kill('SIGKILL');
    await waitFor(() => !isAlive(fencePid), 5000, 'the fence to exit');
    await sleep(300);
    expect(isAlive(v.pid!)).toBe(true);
  });

  it('fires as soon as its agent is SIGKILLed (the pipe closes), long before the deadline', async () => {
    const v = victim();
    const { agent, fencePid } = await fakeAgent(v.pid!, 60_000, 0);
    let killedAt = 0;
    const died = exitTime(v, () => killedAt);
    killedAt = Date.now();
    agent.kill('SIGKILL');
    const { ms, signal } = await died;
    expect(signal).toBe('SIGQUIT');
    expect(ms).toBeLessThan(1000);
    await waitFor(() => !isAlive(fencePid), 5000, 'the fence to exit');
    console.log(`fence: agent SIGKILL -> postmaster stand-in gone in ${ms} ms`);
  });

  it('fires at the deadline when its agent is frozen (SIGSTOP): the feeds stop', async () => {
    const v = victim();
    const { agent, fencePid } = await fakeAgent(v.pid!, 1500, 300);
    await sleep(1000);
    expect(isAlive(v.pid!)).toBe(true);
    let stoppedAt = 0;
    const died = exitTime(v, () => stoppedAt);
    stoppedAt = Date.now();
    agent.kill('SIGSTOP');
    const { ms, signal } = await died;
    agent.kill('SIGCONT');
    expect(signal).toBe('SIGQUIT');
    // The last feed came at most 300 ms before the freeze: the deadline is 1200–1500 ms after it.
    expect(ms).toBeGreaterThanOrEqual(1000);
    expect(ms).toBeLessThan(2500);
    await waitFor(() => !isAlive(fencePid), 5000, 'the fence to exit');
    agent.kill('SIGKILL');
    console.log(`fence: agent SIGSTOP -> postmaster stand-in gone ${ms} ms later (window 1500 ms, feeds every 300 ms)`);
  });
});
