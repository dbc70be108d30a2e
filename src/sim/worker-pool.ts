/**
 * `ha simulate --workers N` (N > 1): runs a range of schedules on N worker threads and hands
 * their summaries (schedule-summary.ts) back in seed order. docs/simulation.md "Workers".
 *
 * Each worker runs one schedule at a time: the parent posts `{ seed }`, the worker answers with
 * that schedule's summary (never its World) or with the error it threw; the parent then posts the
 * next seed not yet handed out (the faster workers take more). Summaries that arrive early wait
 * until every lower seed has been delivered.
 *
 * Failure: a worker whose schedule throws, that throws outside a schedule, or that exits while a
 * seed is handed to it rejects the whole run with a `ScheduleFailure` naming that seed; the other
 * workers are terminated at once (no hang). The workers are threads of this process, so a signal
 * that ends the process (Ctrl-C, SIGTERM) ends them too.
 *
 * From the TypeScript sources (tsx), a worker's entry is a `.ts` file: a worker thread does not
 * inherit tsx's loader (nor does `--import tsx` in its execArgv register it, on Node 20), so a
 * small bootstrap module registers tsx (`tsx/esm/api`) in the worker before importing the entry.
 * From the build (`npm run build`, dist/) the entry is `.js` and the bootstrap imports it directly.
 */
import { Worker, type MessagePort } from 'node:worker_threads';
import type { ScheduleSummary } from './schedule-summary.ts';

/** Parent → worker: run this seed. */
export interface ScheduleRequest {
  seed: number;
}

/** Worker → parent: the schedule's summary, or the error it threw (its stack, as text). */
export type ScheduleReply = { kind: 'done'; seed: number; summary: ScheduleSummary } | { kind: 'threw'; seed: number; error: string };

/** A schedule that could not be run to its end (it threw, or its worker died): the run has no report. */
export class ScheduleFailure extends Error {
  /** `seed`: the schedule that failed; `detail`: what happened (an error's stack, an exit code). */
  constructor(
    readonly seed: number,
    readonly detail: string,
    where: string,
  ) {
    super(
      `ha simulate: seed ${seed} failed ${where}: ${detail}\nreplay it alone: ha simulate --workers 1 --schedules 1 --seed ${seed} (with the same options)`,
    );
    this.name = 'ScheduleFailure';
  }
}

/** Options of `runInWorkers`. */
export interface WorkerPoolOptions<D> {
  /** Worker threads to start (at most `count`; at least 1). */
  workers: number;
  /** Schedules `firstSeed`, `firstSeed + 1`, … `firstSeed + count - 1`. */
  firstSeed: number;
  count: number;
  /** The worker's entry module (a `.ts` file from the sources, `.js` from the build); it calls `serveSchedules`. */
  entry: URL;
  /** Passed to every worker as `workerData.data` (structured-cloneable: no functions). */
  data: D;
  /** Called once per seed, in seed order. */
  onSummary: (seed: number, summary: ScheduleSummary) => void;
}

/** `workerData` of a pool's worker. */
export interface PoolWorkerData<D> {
  /** tsx's ESM API (file URL) to register before importing `entry`; absent for a `.js` entry. */
  tsx?: string;
  entry: string;
  data: D;
}

/** The worker's first module: registers tsx when the entry is TypeScript, then imports the entry. */
const BOOTSTRAP = [
  "import { workerData } from 'node:worker_threads';",
  'if (workerData.tsx) (await import(workerData.tsx)).register();',
  'await import(workerData.entry);',
].join('\n');

/**
 * Runs the seeds on `workers` worker threads; resolves once every summary has been delivered
 * (in seed order) and the workers are gone. Rejects with `ScheduleFailure` (the lowest seed
 * that was handed to a failing worker) after terminating every worker.
 */
export function runInWorkers<D>(o: WorkerPoolOptions<D>): Promise<void> {
  if (o.count <= 0) return Promise.resolve();
  const n = Math.max(1, Math.min(o.workers, o.count));
  const workerData: PoolWorkerData<D> = {
    ...(o.entry.pathname.endsWith('.ts') ? { tsx: import.meta.resolve('tsx/esm/api') } : {}),
    entry: o.entry.href,
    data: o.data,
  };
  return new Promise<void>((resolve, reject) => {
    const workers: Worker[] = [];
    /** The seed each worker is running (absent: idle, retired). */
    const running = new Map<Worker, number>();
    const early = new Map<number, ScheduleSummary>();
    let nextToHand = o.firstSeed;
    let nextToDeliver = o.firstSeed;
    const end = o.firstSeed + o.count;
    let settled = false;

    const stopAll = () => {
      for (const w of workers) void w.terminate();
    };
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      stopAll();
      reject(e);
    };
    const handOut = (w: Worker) => {
      if (nextToHand < end) {
        const seed = nextToHand++;
        running.set(w, seed);
        w.postMessage({ seed } satisfies ScheduleRequest);
      } else {
        running.delete(w);
        void w.terminate();
      }
    };
    const deliver = () => {
      while (early.has(nextToDeliver)) {
        const summary = early.get(nextToDeliver)!;
        early.delete(nextToDeliver);
        try {
          o.onSummary(nextToDeliver, summary);
        } catch (e) {
          fail(e);
          return;
        }
        nextToDeliver++;
      }
      if (nextToDeliver === end && !settled) {
        settled = true;
        stopAll();
        resolve();
      }
    };

    for (let i = 0; i < n; i++) {
      const w = new Worker(new URL(`data:text/javascript,${encodeURIComponent(BOOTSTRAP)}`), { workerData });
      workers.push(w);
      const where = () => `in worker ${i + 1} of ${n}`;
      w.on('message', (m: ScheduleReply) => {
        if (settled) return;
        if (m.kind === 'threw') {
          fail(new ScheduleFailure(m.seed, m.error, where()));
          return;
        }
        early.set(m.seed, m.summary);
        handOut(w);
        deliver();
      });
      w.on('error', (e: Error) => {
        const seed = running.get(w);
        fail(new ScheduleFailure(seed ?? nextToDeliver, e.stack ?? String(e), `${where()} (the worker threw outside the schedule)`));
      });
      w.on('messageerror', (e: Error) => {
        const seed = running.get(w);
        fail(new ScheduleFailure(seed ?? nextToDeliver, e.stack ?? String(e), `${where()} (a message could not be read)`));
      });
      w.on('exit', (code) => {
        const seed = running.get(w);
        if (seed === undefined || settled) return;
        fail(new ScheduleFailure(seed, `the worker exited with code ${code}`, where()));
      });
      handOut(w);
    }
  });
}

/**
 * The worker's side: answers each `{ seed }` posted on `port` with `run(seed)`'s summary, or
 * with the error it threw. Called by a worker's entry module (sim-worker.ts).
 */
export function serveSchedules(port: MessagePort, run: (seed: number) => Promise<ScheduleSummary>): void {
  port.on('message', ({ seed }: ScheduleRequest) => {
    run(seed).then(
      (summary) => port.postMessage({ kind: 'done', seed, summary } satisfies ScheduleReply),
      (e: unknown) =>
        port.postMessage({ kind: 'threw', seed, error: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies ScheduleReply),
    );
  });
}
