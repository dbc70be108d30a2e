/**
 * The entry of one `ha simulate --workers N` worker thread (worker-pool.ts): runs the schedules
 * the parent hands it with the run options in `workerData.data` (`RunOptions` without functions:
 * a planted bug crosses only as data) and answers with each schedule's summary.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { runSchedule, type RunOptions } from './run.ts';
import { summarizeSchedule } from './schedule-summary.ts';
import { serveSchedules, type PoolWorkerData } from './worker-pool.ts';

const { data: options } = workerData as PoolWorkerData<RunOptions>;
if (!parentPort) throw new Error('sim-worker.ts runs only as a worker thread of ha simulate');
serveSchedules(parentPort, async (seed) => summarizeSchedule((await runSchedule(seed, options)).result));
