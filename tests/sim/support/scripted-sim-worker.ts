/**
 * A worker entry for tests/sim/workers.test.ts: serves the pool's protocol (serveSchedules) with
 * made-up summaries instead of running the world, and misbehaves on the seeds its script names
 * (`workerData.data`, a `WorkerScript`): answers late, breaks an invariant, throws, exits, or
 * throws outside any schedule.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ScheduleSummary } from '../../../src/sim/schedule-summary.ts';
import { serveSchedules, type PoolWorkerData } from '../../../src/sim/worker-pool.ts';

/** What the scripted worker does per seed (absent: answers at once with a clean summary). */
export interface WorkerScript {
  /** Seed → ms to wait before answering. */
  delayMs?: Record<number, number>;
  /** Seeds whose summary carries a single-writer violation. */
  failing?: number[];
  /** The schedule of this seed throws. */
  throwOn?: number;
  /** The worker thread exits (code 3) while running this seed. */
  exitOn?: number;
  /** An error thrown from a timer while this seed runs (outside the schedule's promise). */
  uncaughtOn?: number;
}

const script = (workerData as PoolWorkerData<WorkerScript>).data;

serveSchedules(parentPort!, async (seed): Promise<ScheduleSummary> => {
  await sleep(script.delayMs?.[seed] ?? 0);
  if (seed === script.throwOn) throw new Error(`scripted failure of seed ${seed}`);
  if (seed === script.exitOn) process.exit(3);
  if (seed === script.uncaughtOn) {
    setTimeout(() => {
      throw new Error(`scripted uncaught error during seed ${seed}`);
    }, 0);
    await sleep(60_000);
  }
  const violations = script.failing?.includes(seed)
    ? [{ invariant: 'single-writer' as const, atMs: seed, message: `seed ${seed} broke it` }]
    : [];
  return {
    faultCounts: { heal: 1 },
    violations,
    faults: violations.length > 0 ? [{ kind: 'heal', at: seed }] : [],
    sync: 'off',
    failsafe: seed % 2 === 0,
    failsafeAccepts: 0,
    acked: seed,
    unacked: 0,
    lost: 0,
    simulatedMs: 1000,
    timersFired: 10,
    rewinds: 0,
    receipts: 0,
    receiptTransactions: 0,
    fenceDeadline: 0,
    fenceAgentGone: 0,
  };
});
