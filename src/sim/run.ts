/**
 * `ha simulate`: runs N fault schedules from seed S (schedule i uses seed S+i) through the
 * simulated world (world.ts), prints what was injected and what broke, and on a failure the
 * first failing seed, a shrunk schedule and that run's journal (JSONL). docs/simulation.md.
 *
 * Standard output depends only on the options: the same seed gives byte-identical output, whatever
 * the number of workers (`workers`: schedules spread over worker threads, worker-pool.ts, merged
 * in seed order). The one wall-clock figure (schedules per second, with the worker count) goes to
 * standard error.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INVARIANTS, primaryBoundS, replicasBoundS, type InvariantName } from './invariants.ts';
import { FAILING_LISTED, SimulationTally, summarizeSchedule, type FailingSchedule } from './schedule-summary.ts';
import { runInWorkers, ScheduleFailure } from './worker-pool.ts';

export { ScheduleFailure } from './worker-pool.ts';
import {
  FAULT_KINDS,
  SYNC_MODES,
  TIMING,
  World,
  type Fault,
  type FaultKind,
  type RunResult,
  type SyncModeName,
  type WorldOptions,
} from './world.ts';
import type { WatchdogMode } from '../node/lock/fencing.ts';

/** Options of a simulation run. */
export interface SimulateOptions {
  schedules: number;
  seed: number;
  nodes: number;
  steps: number;
  /** Draw freeze/thaw and long agent outages (`ha simulate` does by default since findings 16 and 17; docs/simulation.md "Freeze"). */
  freeze: boolean;
  /** Run this schedule (JSON array of faults) instead of drawing one, for every seed. */
  faults?: Fault[];
  /** Draw only these fault kinds (default all). */
  faultKinds?: readonly FaultKind[];
  /** Where to write the failing run's journal; default `<tmpdir>/ha-simulate-seed-<seed>.journal.jsonl`. */
  journalPath?: string;
  out: (line: string) => void;
  err: (line: string) => void;
  /**
   * Worker threads to run the schedules on (default 1: in this process; never more than
   * `schedules`). Standard output does not depend on it. With more than one, `plant` must be data
   * (`pgBugs`, `writeBytes`): a `wrapDcs` function cannot cross to a worker.
   */
  workers?: number;
  /** Planted bugs (tests). */
  plant?: Pick<WorldOptions, 'wrapDcs' | 'pgBugs' | 'writeBytes'>;
  /** Every schedule in this synchronous mode (default: drawn from each seed, syncModeOf). */
  sync?: SyncModeName;
  /** failsafe_mode of every schedule: on, off, or drawn from each seed (failsafeOf; the default of `simulate`). */
  failsafe?: boolean | 'draw';
  /** Quorum failover in every schedule: on, off, or drawn from each seed (quorumFailoverOf: strict modes only; the default of `simulate`). */
  quorumFailover?: boolean | 'draw';
  /** watchdog.mode of every agent (the simulated fence): automatic (default, as the agent's), required, off. */
  watchdog?: WatchdogMode;
  /** The agents' divergence settings (WorldOptions.rewind): true the defaults, false re-clone; default drawn from each seed (odd: defaults). */
  rewind?: boolean;
  /** The agents' `database` section as given (WorldOptions.database): regression schedules of findings made under another configuration. */
  database?: Record<string, unknown>;
}

/** The summary of a simulation (also what the tests read). */
export interface SimulateSummary {
  schedules: number;
  violations: number;
  byInvariant: Record<InvariantName, number>;
  byFault: Record<string, number>;
  acked: number;
  lost: number;
  /** Schedules per synchronous mode. */
  byMode: Record<SyncModeName, number>;
  /** Schedules with failsafe_mode on. */
  failsafeSchedules: number;
  /** The lowest failing seed: its violations and schedule, the shrunk schedule, the shrunk replay's journal. */
  firstFailure?: FailingSchedule & { shrunk: Fault[]; journalPath: string };
  exitCode: number;
}

/** What one schedule needs of the options. */
export type RunOptions = Pick<
  SimulateOptions,
  | 'nodes'
  | 'steps'
  | 'freeze'
  | 'faults'
  | 'faultKinds'
  | 'plant'
  | 'sync'
  | 'failsafe'
  | 'quorumFailover'
  | 'watchdog'
  | 'rewind'
  | 'database'
>;

/** Runs one schedule. */
export async function runSchedule(seed: number, o: RunOptions, keepJournal = false): Promise<{ result: RunResult; world: World }> {
  const world = new World({
    seed,
    nodes: o.nodes,
    steps: o.steps,
    freeze: o.freeze,
    ...(o.faults ? { faults: o.faults } : {}),
    ...(o.faultKinds ? { faultKinds: o.faultKinds } : {}),
    ...(o.sync ? { sync: o.sync } : {}),
    ...(o.failsafe !== undefined ? { failsafe: o.failsafe } : {}),
    ...(o.quorumFailover !== undefined ? { quorumFailover: o.quorumFailover } : {}),
    ...(o.watchdog !== undefined ? { watchdog: o.watchdog } : {}),
    ...(o.rewind !== undefined ? { rewind: o.rewind } : {}),
    ...(o.database !== undefined ? { database: o.database } : {}),
    ...(o.plant ?? {}),
    keepJournal,
  });
  const result = await world.run();
  return { result, world };
}

/** One line per fault, for humans. */
export function describeFault(f: Fault): string {
  switch (f.kind) {
    case 'dcs-partition':
      return `step ${f.at}: DCS partition of ${f.node} for ${f.steps} steps`;
    case 'net-partition':
      return `step ${f.at}: network partition between ${f.node} and ${f.peer} for ${f.steps} steps`;
    case 'pg-crash':
      return `step ${f.at}: postmaster of ${f.node} crashes`;
    case 'agent-crash':
      return `step ${f.at}: agent of ${f.node} crashes, restarted after ${f.steps} steps`;
    case 'freeze':
      return `step ${f.at}: agent of ${f.node} frozen for ${f.steps} steps`;
    case 'switchover':
      return `step ${f.at}: operator asks for a switchover to ${f.node}`;
    case 'heal':
      return `step ${f.at}: everything heals`;
    case 'slow-loop':
      return `step ${f.at}: event loop of ${f.node}'s agent ${f.ms} ms late for ${f.steps} steps`;
    case 'net-delay':
      return `step ${f.at}: messages to and from ${f.node} ${f.ms} ms late for ${f.steps} steps`;
  }
}

/**
 * Removes faults one at a time while the run still breaks the same invariant; returns the
 * smallest schedule found (greedy, deterministic).
 */
export async function shrink(seed: number, faults: Fault[], invariant: InvariantName, o: RunOptions): Promise<Fault[]> {
  let current = faults;
  const { faults: _drop, ...rest } = o;
  let i = 0;
  while (i < current.length) {
    const candidate = current.filter((_, j) => j !== i);
    const { result } = await runSchedule(seed, { ...rest, faults: candidate });
    if (result.violations.some((v) => v.invariant === invariant)) current = candidate;
    else i++;
  }
  return current;
}

/** The worker thread's entry: `.ts` from the sources (tsx), `.js` from the build. */
const WORKER_ENTRY = new URL(`./sim-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/**
 * Runs schedules `o.seed` … `o.seed + o.schedules - 1` and adds their summaries to `tally` in seed
 * order: in this process with one worker, else on worker threads (worker-pool.ts). Returns the
 * number of workers used. Throws `ScheduleFailure` naming the seed of a schedule that threw or
 * whose worker died; throws when a planted bug cannot cross to a worker (a function).
 */
async function runAll(o: SimulateOptions, tally: SimulationTally): Promise<number> {
  const workers = Math.max(1, Math.min(o.workers ?? 1, o.schedules));
  if (workers === 1) {
    for (let i = 0; i < o.schedules; i++) {
      const seed = o.seed + i;
      let result: RunResult;
      try {
        ({ result } = await runSchedule(seed, o));
      } catch (e) {
        throw new ScheduleFailure(seed, e instanceof Error ? (e.stack ?? e.message) : String(e), 'in this process');
      }
      tally.add(seed, summarizeSchedule(result));
    }
    return 1;
  }
  if (o.plant?.wrapDcs)
    throw new Error('ha simulate: a planted wrapDcs (a function) cannot cross to a worker thread: run it with workers: 1');
  const data: RunOptions = {
    nodes: o.nodes,
    steps: o.steps,
    freeze: o.freeze,
    ...(o.faults ? { faults: o.faults } : {}),
    ...(o.faultKinds ? { faultKinds: o.faultKinds } : {}),
    ...(o.plant ? { plant: o.plant } : {}),
    ...(o.sync ? { sync: o.sync } : {}),
    ...(o.failsafe !== undefined ? { failsafe: o.failsafe } : {}),
    ...(o.quorumFailover !== undefined ? { quorumFailover: o.quorumFailover } : {}),
    ...(o.watchdog !== undefined ? { watchdog: o.watchdog } : {}),
    ...(o.rewind !== undefined ? { rewind: o.rewind } : {}),
    ...(o.database !== undefined ? { database: o.database } : {}),
  };
  await runInWorkers({
    workers,
    firstSeed: o.seed,
    count: o.schedules,
    entry: WORKER_ENTRY,
    data,
    onSummary: (seed, s) => tally.add(seed, s),
  });
  return workers;
}

/**
 * Runs the simulation and prints its report. Returns the summary (exit code 0 when no violation).
 * Standard output does not depend on `workers`. Throws `ScheduleFailure` (the CLI exits 2) when a
 * schedule throws or its worker dies.
 */
export async function simulate(options: SimulateOptions): Promise<SimulateSummary> {
  // failsafe_mode is drawn from each seed unless forced (--failsafe on|off).
  const o: SimulateOptions = { ...options, failsafe: options.failsafe ?? 'draw', quorumFailover: options.quorumFailover ?? 'draw' };
  const { out } = o;
  out(
    `ha simulate: ${o.schedules} schedules, seeds ${o.seed}…${o.seed + o.schedules - 1}, ${o.nodes} nodes, ${o.steps} fault steps of 500 ms${o.faults ? ', given schedule' : ''}${o.faultKinds ? `, fault kinds ${o.faultKinds.join(',')}` : ''}`,
  );
  out(
    `timing: ttl ${TIMING.ttl} s, loop_wait ${TIMING.loop_wait} s, retry_timeout ${TIMING.retry_timeout} s; liveness bounds after the faults heal: writable primary ${primaryBoundS(TIMING)} s, every replica streaming ${replicasBoundS(TIMING)} s`,
  );
  out(
    o.freeze
      ? 'freeze faults: on (agent freeze/thaw and agent outages longer than the lease, the default; --no-freeze leaves them out; docs/simulation.md "Freeze")'
      : 'freeze faults: off (--no-freeze: agent outages stay shorter than the lease; docs/simulation.md "Freeze")',
  );
  const t0 = performance.now();
  const t = new SimulationTally(o.seed);
  const workers = await runAll(o, t);
  const seconds = (performance.now() - t0) / 1000;
  out('faults injected:');
  for (const k of FAULT_KINDS) out(`  ${k.padEnd(20)} ${t.byFault[k]}`);
  out('invariants (violations):');
  for (const k of INVARIANTS) out(`  ${k.padEnd(20)} ${t.byInvariant[k]}`);
  out(`synchronous modes (schedules / acknowledged commits / written, never acknowledged):`);
  for (const m of SYNC_MODES) out(`  ${m.padEnd(20)} ${t.byMode[m]} / ${t.ackedByMode[m]} / ${t.unackedByMode[m]}`);
  out(
    `failsafe_mode (schedules / violations): on ${t.failsafeSchedules} / ${t.violationsByFailsafe[1]}, off ${o.schedules - t.failsafeSchedules} / ${t.violationsByFailsafe[0]}; POST /failsafe accepted ${t.failsafeAccepts} times`,
  );
  out(
    `acknowledged commits: ${t.acked} (${t.unacked} written, never acknowledged); lost after a failover: asynchronous schedules (a figure, not a violation) ${t.lost} in ${t.lostSchedules} schedules; synchronous schedules (sync-no-loss) ${t.syncLost} in ${t.syncLostSchedules} schedules`,
  );
  out(`simulated: ${Math.round(t.simulatedMs / 1000)} s, ${t.timers} timers fired`);
  out(`pg_rewind (the agents' defaults, use_db_rewind on, in odd-seeded schedules): ${t.rewinds} data directories rewound`);
  out(
    `receipts of discarded transactions: ${t.receipts} taken, listing ${t.receiptTransactions} transactions (discarded-receipt checks each against the ground truth)`,
  );
  out(
    `fence (watchdog.mode ${o.watchdog ?? 'automatic'}): ${t.fenceDeadline + t.fenceAgentGone} firings (deadline missed ${t.fenceDeadline}, armed agent crashed ${t.fenceAgentGone})`,
  );
  o.err(
    `${o.schedules} schedules in ${seconds.toFixed(1)} s: ${(o.schedules / Math.max(seconds, 1e-9)).toFixed(1)} schedules/s, ${workers === 1 ? '1 worker (in this process)' : `${workers} worker threads`}`,
  );

  let firstFailure: SimulateSummary['firstFailure'];
  const first = t.first;
  if (first) {
    const v0 = first.violations[0]!;
    out(`first failing seed: ${first.seed}`);
    for (const v of first.violations) out(`  ${v.invariant} at ${(v.atMs / 1000).toFixed(3)} s: ${v.message}`);
    out(`  schedule (${first.faults.length} faults):`);
    for (const f of first.faults) out(`    ${describeFault(f)}`);
    const shrunk = await shrink(first.seed, first.faults, v0.invariant, o);
    const replay = await runSchedule(first.seed, { ...o, faults: shrunk }, true);
    const journalPath = o.journalPath ?? join(tmpdir(), `ha-simulate-seed-${first.seed}.journal.jsonl`);
    writeFileSync(journalPath, replay.world.journalJsonl());
    out(`shrunk schedule (${shrunk.length} faults, still breaks ${v0.invariant}):`);
    for (const f of shrunk) out(`    ${describeFault(f)}`);
    for (const v of replay.result.violations) out(`  ${v.invariant} at ${(v.atMs / 1000).toFixed(3)} s: ${v.message}`);
    out(
      `replay: ha simulate --schedules 1 --seed ${first.seed} --nodes ${o.nodes} --steps ${o.steps}${o.freeze ? '' : ' --no-freeze'}${o.sync ? ` --sync ${o.sync}` : ''}${o.failsafe !== 'draw' ? ` --failsafe ${o.failsafe ? 'on' : 'off'}` : ''}${o.quorumFailover !== 'draw' ? ` --quorum-failover ${o.quorumFailover ? 'on' : 'off'}` : ''}${o.watchdog !== undefined ? ` --watchdog ${o.watchdog}` : ''} --faults '${JSON.stringify(shrunk)}'`,
    );
    out(`journal of the shrunk run (JSONL, every node's entries, field "node"): ${journalPath}`);
    firstFailure = { ...first, shrunk, journalPath };
  }
  if (t.failing.length > 1) {
    out(
      `failing seeds (${t.failing.length}${t.failing.length >= FAILING_LISTED ? ', the first' : ''}): ${t.failing.map((f) => `${f.seed} (${f.invariants.join(', ')})`).join(', ')}`,
    );
  }
  out(`${o.schedules} schedules, ${t.violations} violations`);
  return {
    schedules: o.schedules,
    violations: t.violations,
    byInvariant: t.byInvariant,
    byFault: t.byFault,
    acked: t.acked,
    lost: t.lost + t.syncLost,
    byMode: t.byMode,
    failsafeSchedules: t.failsafeSchedules,
    ...(firstFailure ? { firstFailure } : {}),
    exitCode: t.violations === 0 ? 0 : 1,
  };
}

/** Parses `--kinds` (comma-separated fault kinds). */
export function parseFaultKinds(text: string): FaultKind[] {
  const kinds = text
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  for (const k of kinds)
    if (!FAULT_KINDS.includes(k as FaultKind))
      throw new Error(`--kinds: unknown fault kind '${k}': expected some of ${FAULT_KINDS.join(', ')}`);
  return kinds as FaultKind[];
}

/** Parses `--sync` (one synchronous mode). */
export function parseSyncMode(text: string): SyncModeName {
  if (!SYNC_MODES.includes(text as SyncModeName))
    throw new Error(`--sync: unknown mode '${text}': expected one of ${SYNC_MODES.join(', ')}`);
  return text as SyncModeName;
}

/** Parses `--faults` JSON (an array of faults as printed by a failing run). */
export function parseFaults(text: string): Fault[] {
  const v = JSON.parse(text) as unknown;
  if (!Array.isArray(v)) throw new Error('--faults: expected a JSON array');
  for (const f of v) {
    const kind = (f as { kind?: unknown })?.kind;
    if (typeof f !== 'object' || f === null || !FAULT_KINDS.includes(kind as never) || typeof (f as { at?: unknown }).at !== 'number') {
      throw new Error(`--faults: not a fault: ${JSON.stringify(f)}`);
    }
  }
  return v as Fault[];
}
