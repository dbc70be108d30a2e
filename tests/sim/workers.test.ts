/**
 * `ha simulate --workers N` (src/sim/worker-pool.ts, docs/simulation.md "Workers"): standard
 * output does not depend on N, the first failing seed is the lowest one, a bad --workers is
 * refused, and a schedule that throws or a worker that dies fails the run naming the seed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../src/sim/run.ts';
import { SimulationTally } from '../../src/sim/schedule-summary.ts';
import { runInWorkers, ScheduleFailure } from '../../src/sim/worker-pool.ts';
import type { Fault } from '../../src/sim/world.ts';
import type { WorkerScript } from './support/scripted-sim-worker.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPTED = new URL('./support/scripted-sim-worker.ts', import.meta.url);

/** `ha simulate` from the sources; stdout, stderr and exit status. */
function cli(args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/ha.ts', 'simulate', ...args], { cwd: root, encoding: 'utf8' });
  return { stdout: r.stdout, stderr: r.stderr, status: r.status };
}

/** Runs the scripted worker (tests/sim/support) on seeds first…first+count-1; the seeds in delivery order. */
async function scripted(script: WorkerScript, first: number, count: number, workers: number) {
  const seen: number[] = [];
  const tally = new SimulationTally(first);
  await runInWorkers({
    workers,
    firstSeed: first,
    count,
    entry: SCRIPTED,
    data: script,
    onSummary: (seed, s) => {
      seen.push(seed);
      tally.add(seed, s);
    },
  });
  return { seen, tally };
}

describe('ha simulate --workers', () => {
  it('the same standard output for --workers 1, 2 and 3; the worker count on standard error', () => {
    const runs = [1, 2, 3].map((n) => cli(['--schedules', '12', '--steps', '8', '--seed', '5', '--workers', String(n)]));
    for (const r of runs) expect(r.status, r.stderr).toBe(0);
    expect(runs[0]!.stdout.trim().split('\n').at(-1)).toBe('12 schedules, 0 violations');
    expect(runs[1]!.stdout).toBe(runs[0]!.stdout);
    expect(runs[2]!.stdout).toBe(runs[0]!.stdout);
    expect(runs[0]!.stderr).toContain('1 worker (in this process)');
    expect(runs[1]!.stderr).toContain('2 worker threads');
    expect(runs[2]!.stderr).toContain('3 worker threads');
  }, 120_000);

  it.each(['0', '-1', 'abc', '1.5'])('refuses --workers %s (exit 2, naming the option)', (n) => {
    const r = cli(['--schedules', '1', '--workers', n]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--workers: expected an integer >= 1, got '${n}'`);
    expect(r.stdout).toBe('');
  });

  it('a planted bug through 3 workers: the lowest failing seed, the same report as in one process', async () => {
    // Seeds 4…8, n1's DCS partition for 28 steps, a PostgreSQL still writable after its stop
    // (pgBugs.writableAfterStop, plain data: it crosses to the workers): seeds 4–6 break nothing,
    // 7 and 8 break leader-lease (tests/sim/simulate.test.ts plants the same bug).
    const faults: Fault[] = [{ kind: 'dcs-partition', at: 1, node: 'n1', steps: 28 }];
    const run = async (workers: number) => {
      const lines: string[] = [];
      const errs: string[] = [];
      const summary = await simulate({
        schedules: 5,
        seed: 4,
        nodes: 3,
        steps: 30,
        freeze: true,
        faults,
        plant: { pgBugs: { writableAfterStop: true } },
        workers,
        out: (l) => lines.push(l),
        err: (l) => errs.push(l),
      });
      return { lines, errs, summary };
    };
    const one = await run(1);
    const three = await run(3);
    expect(one.summary.firstFailure?.seed).toBe(7);
    expect(three.summary.firstFailure?.seed).toBe(7);
    expect(three.lines).toContain('first failing seed: 7');
    expect(three.summary.byInvariant['leader-lease']).toBeGreaterThanOrEqual(2);
    expect(three.lines).toEqual(one.lines);
    expect(three.errs.join('\n')).toContain('3 worker threads');
    expect(three.summary.exitCode).toBe(1);
  }, 120_000);

  it('summaries are delivered in seed order, and the first failure is the lowest failing seed, whichever worker finishes first', async () => {
    // Seed 11 (failing) answers last; seeds 12 and 14 (failing) long before it.
    const { seen, tally } = await scripted({ delayMs: { 10: 100, 11: 400 }, failing: [11, 12, 14] }, 10, 6, 3);
    expect(seen).toEqual([10, 11, 12, 13, 14, 15]);
    expect(tally.first?.seed).toBe(11);
    expect(tally.violations).toBe(3);
    expect(tally.acked).toBe(10 + 11 + 12 + 13 + 14 + 15);
  });

  it('SimulationTally refuses a seed out of order', () => {
    const t = new SimulationTally(1);
    expect(() =>
      t.add(2, {
        faultCounts: {},
        violations: [],
        faults: [],
        sync: 'off',
        failsafe: false,
        failsafeAccepts: 0,
        acked: 0,
        unacked: 0,
        lost: 0,
        simulatedMs: 0,
        timersFired: 0,
        rewinds: 0,
        receipts: 0,
        receiptTransactions: 0,
        fenceDeadline: 0,
        fenceAgentGone: 0,
      }),
    ).toThrow('seed 2 added out of order (expected 1)');
  });

  it.each([
    ['a schedule that throws', { throwOn: 13 }, /seed 13 failed in worker \d of 2: Error: scripted failure of seed 13/],
    ['a worker that exits', { exitOn: 13 }, /seed 13 failed in worker \d of 2: the worker exited with code 3/],
    [
      'an error thrown outside the schedule',
      { uncaughtOn: 13 },
      /seed 13 failed in worker \d of 2 \(the worker threw outside the schedule\): Error: scripted uncaught error during seed 13/,
    ],
  ] as const)('%s fails the run naming its seed, without waiting for the other workers', async (_, script, message) => {
    const t0 = performance.now();
    // Seed 14 would take a minute: the run must not wait for it.
    const err = await scripted({ ...script, delayMs: { 14: 60_000 } }, 10, 100, 2).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ScheduleFailure);
    expect((err as ScheduleFailure).seed).toBe(13);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).toContain('replay it alone: ha simulate --workers 1 --schedules 1 --seed 13');
    expect(performance.now() - t0).toBeLessThan(15_000);
  });

  it('the command line: a schedule that throws in a worker exits 2 naming its seed', () => {
    // A fault naming a member the cluster does not have: the world throws (parseFaults does not
    // check member names), in every schedule.
    const r = cli([
      '--schedules',
      '2',
      '--steps',
      '4',
      '--seed',
      '9',
      '--workers',
      '2',
      '--faults',
      '[{"kind":"pg-crash","at":1,"node":"n9"}]',
    ]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^ha simulate: seed (9|10) failed in worker [12] of 2: TypeError/m);
    expect(r.stdout).not.toMatch(/^\d+ schedules, \d+ violations$/m);
  }, 60_000);

  it('in one process too: a schedule that throws fails the run naming its seed', async () => {
    const err = await simulate({
      schedules: 3,
      seed: 20,
      nodes: 3,
      steps: 4,
      freeze: false,
      workers: 1,
      plant: {
        wrapDcs: () => {
          throw new Error('planted: no DCS client');
        },
      },
      out: () => undefined,
      err: () => undefined,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ScheduleFailure);
    expect((err as ScheduleFailure).seed).toBe(20);
    expect((err as Error).message).toMatch(/^ha simulate: seed 20 failed in this process: Error: planted: no DCS client/);
  });

  it('a planted wrapDcs (a function) is refused with more than one worker', async () => {
    await expect(
      simulate({
        schedules: 2,
        seed: 1,
        nodes: 3,
        steps: 4,
        freeze: false,
        workers: 2,
        plant: { wrapDcs: (d) => d },
        out: () => undefined,
        err: () => undefined,
      }),
    ).rejects.toThrow('a planted wrapDcs (a function) cannot cross to a worker thread');
  });

  it('SIGTERM ends a run on worker threads at once', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/ha.ts', 'simulate', '--schedules', '100000', '--workers', '2'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The header is printed before the workers start; give them a moment to be running.
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    await new Promise((r) => setTimeout(r, 1500));
    const t0 = performance.now();
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    child.kill('SIGTERM');
    const { code, signal } = await exited;
    expect(signal ?? code).toBe('SIGTERM');
    expect(performance.now() - t0).toBeLessThan(5_000);
  }, 30_000);
});
