/**
 * What `ha simulate`'s report needs of one schedule (`ScheduleSummary`: counts, and the violations
 * and faults of a failing schedule), and the running sums over schedules taken in seed order
 * (`SimulationTally`). A worker (worker-pool.ts) sends a schedule's summary back instead of its
 * World; the in-process run (`--workers 1`) goes through the same two steps, so the report is
 * the same whichever ran the schedules. docs/simulation.md "Workers".
 */
import { FAULT_KINDS, SYNC_MODES, type Fault, type RunResult, type SyncModeName } from './world.ts';
import { INVARIANTS, type InvariantName, type Violation } from './invariants.ts';

/**
 * One schedule's figures, plain data (structured-cloneable: it crosses from a worker thread).
 * `faults` is the drawn schedule only when the schedule broke an invariant (the report prints it
 * and the parent shrinks it); empty otherwise.
 */
export interface ScheduleSummary {
  /** Faults injected, per kind (kinds with none left out). */
  faultCounts: Partial<Record<string, number>>;
  /** Broken invariants, in the order the run found them. */
  violations: Violation[];
  /** The schedule's faults when `violations` is not empty, else []. */
  faults: Fault[];
  sync: SyncModeName;
  failsafe: boolean;
  /** Rounds of POST /failsafe every listed member accepted. */
  failsafeAccepts: number;
  /** Acknowledged commits. */
  acked: number;
  /** Commits written, never acknowledged. */
  unacked: number;
  /** Acknowledged commits lost after a failover. */
  lost: number;
  /** Simulated ms of the run. */
  simulatedMs: number;
  timersFired: number;
  /** pg_rewind runs that rewrote a data directory. */
  rewinds: number;
  /** Receipts of discarded transactions taken, and the transactions they list. */
  receipts: number;
  receiptTransactions: number;
  /** Fence firings on a missed deadline / on an armed agent's crash. */
  fenceDeadline: number;
  fenceAgentGone: number;
}

/** The summary of one schedule's result (drops the world and the ground truth the report does not print). */
export function summarizeSchedule(result: RunResult): ScheduleSummary {
  const faultCounts: Partial<Record<string, number>> = {};
  for (const f of result.faults) faultCounts[f.kind] = (faultCounts[f.kind] ?? 0) + 1;
  return {
    faultCounts,
    violations: result.violations.map((v) => ({ ...v })),
    faults: result.violations.length > 0 ? result.faults : [],
    sync: result.sync,
    failsafe: result.failsafe,
    failsafeAccepts: result.failsafeAccepts ?? 0,
    acked: result.acked,
    unacked: result.unacked,
    lost: result.lost,
    simulatedMs: result.simulatedMs,
    timersFired: result.timersFired,
    rewinds: result.rewinds ?? 0,
    receipts: result.receipts ?? 0,
    receiptTransactions: result.receiptTransactions ?? 0,
    fenceDeadline: result.fenceFirings?.deadline ?? 0,
    fenceAgentGone: result.fenceFirings?.agentGone ?? 0,
  };
}

/** How many failing seeds the report lists (each replayable with `--schedules 1 --seed S`). */
export const FAILING_LISTED = 50;

/** The lowest failing seed of a run: its violations and schedule (what the report prints and shrinks). */
export interface FailingSchedule {
  seed: number;
  violations: Violation[];
  faults: Fault[];
}

/**
 * Sums over schedules, added in seed order (`add` refuses any other order, so that "the first
 * failing seed" is the lowest one whoever ran the schedules). Counts are schedules, commits,
 * faults, firings; `simulatedMs` is milliseconds.
 */
export class SimulationTally {
  schedules = 0;
  violations = 0;
  readonly byInvariant = Object.fromEntries(INVARIANTS.map((k) => [k, 0])) as Record<InvariantName, number>;
  readonly byFault: Record<string, number> = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0]));
  acked = 0;
  unacked = 0;
  /** Lost after a failover in asynchronous schedules (a figure, not a violation), and in how many schedules. */
  lost = 0;
  lostSchedules = 0;
  /** Lost in synchronous schedules (the sync-no-loss invariant), and in how many schedules. */
  syncLost = 0;
  syncLostSchedules = 0;
  readonly byMode = Object.fromEntries(SYNC_MODES.map((m) => [m, 0])) as Record<SyncModeName, number>;
  readonly ackedByMode = Object.fromEntries(SYNC_MODES.map((m) => [m, 0])) as Record<SyncModeName, number>;
  readonly unackedByMode = Object.fromEntries(SYNC_MODES.map((m) => [m, 0])) as Record<SyncModeName, number>;
  failsafeSchedules = 0;
  failsafeAccepts = 0;
  /** Violations in schedules with failsafe_mode off [0] and on [1]. */
  readonly violationsByFailsafe: [number, number] = [0, 0];
  simulatedMs = 0;
  timers = 0;
  rewinds = 0;
  receipts = 0;
  receiptTransactions = 0;
  fenceDeadline = 0;
  fenceAgentGone = 0;
  /** The lowest failing seed added. */
  first: FailingSchedule | undefined;
  /** Every failing seed with the invariants it broke, in seed order (the first FAILING_LISTED kept). */
  readonly failing: { seed: number; invariants: string[] }[] = [];
  private nextSeed: number;

  /** `firstSeed`: the seed the first `add` must carry (schedule i is seed firstSeed + i). */
  constructor(firstSeed: number) {
    this.nextSeed = firstSeed;
  }

  /** Adds schedule `seed`'s summary. Throws when `seed` is not the one after the last added. */
  add(seed: number, s: ScheduleSummary): void {
    if (seed !== this.nextSeed) throw new Error(`simulation tally: seed ${seed} added out of order (expected ${this.nextSeed})`);
    this.nextSeed++;
    this.schedules++;
    for (const [kind, n] of Object.entries(s.faultCounts)) this.byFault[kind] = (this.byFault[kind] ?? 0) + (n ?? 0);
    for (const v of s.violations) this.byInvariant[v.invariant]++;
    this.violations += s.violations.length;
    this.acked += s.acked;
    this.unacked += s.unacked;
    this.byMode[s.sync]++;
    if (s.failsafe) this.failsafeSchedules++;
    this.failsafeAccepts += s.failsafeAccepts;
    this.violationsByFailsafe[s.failsafe ? 1 : 0] += s.violations.length;
    this.ackedByMode[s.sync] += s.acked;
    this.unackedByMode[s.sync] += s.unacked;
    if (s.sync === 'off') {
      this.lost += s.lost;
      if (s.lost > 0) this.lostSchedules++;
    } else {
      this.syncLost += s.lost;
      if (s.lost > 0) this.syncLostSchedules++;
    }
    this.simulatedMs += s.simulatedMs;
    this.timers += s.timersFired;
    this.rewinds += s.rewinds;
    this.receipts += s.receipts;
    this.receiptTransactions += s.receiptTransactions;
    this.fenceDeadline += s.fenceDeadline;
    this.fenceAgentGone += s.fenceAgentGone;
    if (s.violations.length > 0 && !this.first) this.first = { seed, violations: s.violations, faults: s.faults };
    if (s.violations.length > 0 && this.failing.length < FAILING_LISTED)
      this.failing.push({ seed, invariants: s.violations.map((v) => v.invariant) });
  }
}
