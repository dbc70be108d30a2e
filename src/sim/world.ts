/**
 * The simulated world (docs/simulation.md): K members, each a real HaNode (src/node/ha-node.ts)
 * with its own InMemoryDcs client on one shared InMemoryStore, a SimPg, an in-memory journal and
 * a silent logger, all on one simulated clock. A schedule of faults drawn from a seeded PRNG is
 * applied step by step; a client writes through whichever PostgreSQL accepts writes; the
 * invariants (invariants.ts) are checked as the run goes.
 *
 * A run: bootstrap (until a primary and streaming replicas), M fault steps, heal everything, then
 * wait for liveness (a writable primary, every other member streaming from it) within the bounds.
 */
import pino from 'pino';
import type { Dcs } from '../dcs/dcs.ts';
import type { StoredKv } from '../dcs/view.ts';
import { DYNAMIC_DEFAULTS } from '../domain/dynamic-config.ts';
import { InMemoryDcs, InMemoryStore } from '../dcs/memory.ts';
import { buildStatusDocument } from '../domain/status-document.ts';
import { HaNode } from '../node/ha-node.ts';
import { Journal, type JournalEntry } from '@ha/machines';
import type { PgControl } from '../postgres/types.ts';
import { bootstrapBoundS, InvariantChecker, primaryBoundS, replicasBoundS, type Timing, type Violation } from './invariants.ts';
import { Prng } from './prng.ts';
import { SimClock, type NodeClock } from './sim-clock.ts';
import { holdsCommit, SimPg, type Commit, type SimPgBugs, type WalData } from './sim-pg.ts';
import { MemoryReceiptStore } from '../node/local/receipts.ts';
import { SimFence, type SimFenceFiring } from './sim-fence.ts';
import type { WatchdogMode } from '../node/lock/fencing.ts';

/** The fault kinds. */
export const FAULT_KINDS = [
  'dcs-partition',
  'net-partition',
  'pg-crash',
  'agent-crash',
  'switchover',
  'freeze',
  'heal',
  'slow-loop',
  'net-delay',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/**
 * Kinds drawn from a second PRNG stream (added later: drawing them from the first would move
 * every earlier schedule of a seed).
 */
const LATER_KINDS: readonly FaultKind[] = ['slow-loop', 'net-delay'];

/** One fault of a schedule: at step `at`, for `steps` steps (then healed). */
export type Fault =
  | { kind: 'dcs-partition'; at: number; node: string; steps: number }
  | { kind: 'net-partition'; at: number; node: string; peer: string; steps: number }
  | { kind: 'pg-crash'; at: number; node: string }
  | { kind: 'agent-crash'; at: number; node: string; steps: number }
  | { kind: 'freeze'; at: number; node: string; steps: number }
  /** An operator asks for a switchover to `node` (the `failover` key, as POST /switchover writes it). */
  | { kind: 'switchover'; at: number; node: string }
  | { kind: 'heal'; at: number }
  /** The agent's event loop runs late: every timer and every completion of its calls `ms` late. */
  | { kind: 'slow-loop'; at: number; node: string; steps: number; ms: number }
  /** Every message to or from the member (DCS answers and watch events, peer calls) takes `ms` more. */
  | { kind: 'net-delay'; at: number; node: string; steps: number; ms: number };

/** Options of one run. */
export interface WorldOptions {
  seed: number;
  /** Members (K). Default 3. */
  nodes?: number;
  /** Fault steps (M). Default 60. */
  steps?: number;
  /** Simulated ms per step. Default 500. */
  stepMs?: number;
  /**
   * Also draw the faults that leave PostgreSQL running without its agent for longer than the
   * lease: agent freeze/thaw and long agent outages (`ha simulate` draws them by default since
   * findings 16 and 17; docs/simulation.md, "Freeze").
   */
  freeze?: boolean;
  /** The schedule to run instead of the drawn one (replay, shrinking). */
  faults?: Fault[];
  /** Fault kinds to draw from (default: all; `freeze` only with `freeze`). */
  faultKinds?: readonly FaultKind[];
  /**
   * The agents' `database` settings about divergence: true → the defaults (nothing set:
   * `use_db_rewind` on, no removal; what a new cluster runs with), false → `use_db_rewind: false,
   * remove_data_directory_on_diverged_timelines: true` (a diverged member is re-cloned). Default:
   * odd seeds the defaults, even seeds re-clone.
   */
  rewind?: boolean;
  /** The `database` section of the agents' dynamic configuration, as given (replaces what `rewind` chooses; regression schedules of older findings). */
  database?: Record<string, unknown>;
  /** Synchronous replication of the run (dynamic configuration). Default: syncModeOf(seed). */
  sync?: SyncModeName;
  /**
   * `failsafe_mode` of the run (dynamic configuration): on, off, or 'draw' (failsafeOf(seed)).
   * Default off until finding 10 (docs/simulation.md) is fixed.
   */
  failsafe?: boolean | 'draw';
  /**
   * Quorum failover (`quorum_failover_window: 2`, issue 28) in the run: on, off, or 'draw'
   * (quorumFailoverOf(seed): only with a strict synchronous mode). Default off.
   */
  quorumFailover?: boolean | 'draw';
  /**
   * `watchdog.mode` of every agent (the fence, src/sim/sim-fence.ts; safety_margin 5 s, the
   * agent's default). Default automatic, as the agent's.
   */
  watchdog?: WatchdogMode;
  /** Planted bugs: wrap each agent's DCS client. */
  wrapDcs?: (dcs: Dcs, name: string) => Dcs;
  /** Planted bugs in the simulated PostgreSQL. */
  pgBugs?: SimPgBugs;
  /** Keep every journal entry (for the JSONL dump of a failing run). */
  keepJournal?: boolean;
  /** Size range of the client's one write per step, bytes. Default DEFAULT_WRITE_BYTES. */
  writeBytes?: readonly [number, number];
}

/**
 * The synchronous modes a run may use: `off` (asynchronous), `true` (`synchronous_mode: true`),
 * `quorum`, and either with `synchronous_mode_strict`.
 */
export const SYNC_MODES = ['off', 'true', 'quorum', 'true+strict', 'quorum+strict'] as const;
export type SyncModeName = (typeof SYNC_MODES)[number];

/**
 * The synchronous mode of a seed: floor(seed / 2) mod 4 → off, true, quorum, strict (strict is
 * `true` when floor(seed / 8) is even, `quorum` when odd). The rewind rule (odd seeds) uses the
 * lowest bit, so every mode runs with and without use_db_rewind.
 */
export function syncModeOf(seed: number): SyncModeName {
  const half = Math.floor(seed / 2);
  switch (((half % 4) + 4) % 4) {
    case 0:
      return 'off';
    case 1:
      return 'true';
    case 2:
      return 'quorum';
    default:
      return ((Math.floor(seed / 8) % 2) + 2) % 2 === 0 ? 'true+strict' : 'quorum+strict';
  }
}

/**
 * `failsafe_mode` of a seed: on when floor(seed / 16) is odd (the bits below choose the rewind
 * rule and the synchronous mode, so failsafe runs in every one of them, with and without).
 */
export function failsafeOf(seed: number): boolean {
  return ((Math.floor(seed / 16) % 2) + 2) % 2 === 1;
}

/**
 * Quorum failover of a seed: on when its synchronous mode is strict and floor(seed / 32) is odd
 * (the lower bits choose the rewind rule, the synchronous mode and failsafe_mode).
 */
export function quorumFailoverOf(seed: number): boolean {
  const mode = syncModeOf(seed);
  return (mode === 'true+strict' || mode === 'quorum+strict') && ((Math.floor(seed / 32) % 2) + 2) % 2 === 1;
}

/** The quorum failover window of the simulated runs that draw the mode, seconds. */
export const SIM_QUORUM_FAILOVER_WINDOW_S = 2;

/** The dynamic configuration of a synchronous mode. */
function syncConfig(mode: SyncModeName): Record<string, unknown> {
  switch (mode) {
    case 'off':
      return {};
    case 'true':
      return { synchronous_mode: true };
    case 'quorum':
      return { synchronous_mode: 'quorum' };
    case 'true+strict':
      return { synchronous_mode: true, synchronous_mode_strict: true };
    case 'quorum+strict':
      return { synchronous_mode: 'quorum', synchronous_mode_strict: true };
  }
}

/** The outcome of one run. */
export interface RunResult {
  seed: number;
  faults: Fault[];
  violations: Violation[];
  /** The run's synchronous mode. */
  sync: SyncModeName;
  /** The run's failsafe_mode. */
  failsafe: boolean;
  /** Rounds of POST /failsafe every listed member accepted (a leader kept running without the DCS). */
  failsafeAccepts?: number;
  acked: number;
  /** Commits written that were never acknowledged (waiting for a synchronous standby when their primary stopped, or at the end). */
  unacked: number;
  lost: number;
  /** Simulated ms from the heal to a writable primary / to every replica streaming (when reached). */
  primaryAfterHealMs?: number;
  replicasAfterHealMs?: number;
  simulatedMs: number;
  timersFired: number;
  /** pg_rewind runs that rewrote a data directory (schedules with use_db_rewind). */
  rewinds?: number;
  /** Receipts of discarded transactions the members took, and the transactions they list. */
  receipts?: number;
  receiptTransactions?: number;
  /** Fence firings (src/sim/sim-fence.ts): on a missed deadline, on an armed agent's crash. */
  fenceFirings?: { deadline: number; agentGone: number };
  /** Simulated ms from the start to the first fault step (the end of the bootstrap). */
  faultsFromMs?: number;
}

/**
 * The client's write per step: 1–64 KiB, so that a replica that stops streaming for about 30
 * steps falls behind by more than maximum_lag_on_failover (1 MiB): the leader race's lag rule
 * and the promotion-lag invariant are reachable by the drawn schedules.
 */
export const DEFAULT_WRITE_BYTES = [1024, 65_536] as const;

export const TIMING: Timing = { ttl: 10, loop_wait: 2, retry_timeout: 3 };
/**
 * The dynamic configuration the agents bootstrap with. With `rewind` (odd seeds by default) the
 * `database` section says nothing about divergence: the agents' defaults (use_db_rewind on, no
 * removal), so liveness is asked of what a new cluster runs with (issue 24). Without it a
 * diverged member is re-cloned instead (`use_db_rewind: false`,
 * `remove_data_directory_on_diverged_timelines: true`).
 */
export function bootstrapDcs(
  rewind: boolean,
  sync: SyncModeName = 'off',
  failsafe = false,
  database?: Record<string, unknown>,
  quorumFailover = false,
): Record<string, unknown> {
  return {
    ttl: TIMING.ttl,
    loop_wait: TIMING.loop_wait,
    retry_timeout: TIMING.retry_timeout,
    ...syncConfig(sync),
    ...(failsafe ? { failsafe_mode: true } : {}),
    ...(quorumFailover ? { quorum_failover_window: SIM_QUORUM_FAILOVER_WINDOW_S } : {}),
    database: database ?? (rewind ? {} : { use_db_rewind: false, remove_data_directory_on_diverged_timelines: true }),
  };
}
const SCOPE = 'sim';
/** The agents' logger: silent, unless HA_SIM_LOG names a pino level (debugging one schedule: the lines carry real time, not simulated). */
const SILENT = pino({ level: process.env['HA_SIM_LOG'] ?? 'silent' }, pino.destination(2));

/**
 * Reads a key of the store and when its lease runs out, WITHOUT expiring anything (every public
 * read of InMemoryStore expires due leases, which would deliver deletes to the agents earlier
 * than their own operations do and so change the run). InMemoryStore has no such read: this
 * reaches its private maps, and throws if they are not there any more.
 */
function peekStore(store: InMemoryStore, key: string): { value: string; liveUntilMs: number } | undefined {
  const s = store as unknown as { kv?: unknown; leases?: unknown };
  if (!(s.kv instanceof Map) || !(s.leases instanceof Map))
    throw new Error('InMemoryStore no longer keeps `kv` and `leases` maps: update peekStore (src/sim/world.ts)');
  const kv = (s.kv as Map<string, StoredKv>).get(key);
  if (!kv) return undefined;
  if (kv.lease === '0') return { value: kv.value, liveUntilMs: Number.POSITIVE_INFINITY };
  const lease = (s.leases as Map<string, { expiresAtMs: number }>).get(kv.lease);
  return { value: kv.value, liveUntilMs: lease ? lease.expiresAtMs : Number.NEGATIVE_INFINITY };
}

function parseJson(text: string | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Member names n1…nK. */
export function memberNames(k: number): string[] {
  return Array.from({ length: k }, (_, i) => `n${i + 1}`);
}

/** The longest agent outage that keeps the lock (the new agent adopts it before the lease runs out), steps. */
function safeOutageSteps(stepMs: number): number {
  return Math.max(1, Math.floor(((TIMING.ttl - TIMING.loop_wait - 2) * 1000) / stepMs));
}

/**
 * Draws the fault schedule of `seed` (its own PRNG stream, so the world's draws do not move it).
 * Without `freeze`, agent outages stay shorter than the lease and never overlap a DCS partition
 * of the same member (the faults `--no-freeze` leaves out: docs/simulation.md
 * "Freeze").
 */
export function drawFaults(
  seed: number,
  opts: { nodes: number; steps: number; stepMs: number; freeze: boolean; kinds?: readonly FaultKind[] },
): Fault[] {
  const rng = new Prng((seed ^ 0x5bd1e995) >>> 0);
  const names = memberNames(opts.nodes);
  const faults: Fault[] = [];
  const kinds = FAULT_KINDS.filter(
    (k) => (k !== 'freeze' || opts.freeze) && (!opts.kinds || opts.kinds.includes(k)) && !LATER_KINDS.includes(k),
  );
  const maxOutage = safeOutageSteps(opts.stepMs);
  const busy = (node: string, from: number, to: number, which: FaultKind[]) =>
    faults.some(
      (f) => which.includes(f.kind) && 'node' in f && f.node === node && from <= f.at + ('steps' in f ? f.steps : 0) + 2 && f.at <= to + 2,
    );
  for (let at = 0; at < opts.steps && kinds.length > 0; at++) {
    if (!rng.chance(0.1)) continue;
    const kind = rng.pick(kinds);
    const node = rng.pick(names);
    const steps = rng.int(2, 30);
    switch (kind) {
      case 'dcs-partition':
        if (!opts.freeze && busy(node, at, at + steps, ['agent-crash'])) continue;
        faults.push({ kind, at, node, steps });
        break;
      case 'net-partition': {
        const others = names.filter((n) => n !== node);
        faults.push({ kind, at, node, peer: rng.pick(others), steps });
        break;
      }
      case 'pg-crash':
        faults.push({ kind, at, node });
        break;
      case 'agent-crash': {
        const s = opts.freeze ? steps : Math.min(steps, maxOutage);
        if (!opts.freeze && busy(node, at, at + s, ['dcs-partition', 'agent-crash'])) continue;
        faults.push({ kind, at, node, steps: s });
        break;
      }
      case 'freeze':
        faults.push({ kind, at, node, steps });
        break;
      case 'switchover':
        faults.push({ kind, at, node });
        break;
      case 'heal':
        faults.push({ kind, at });
        break;
      default:
        break;
    }
  }
  // Slow event loops and message delays: a second stream, 0.04 per step; 100–1500 ms late for
  // 2–30 steps (the lease margin, ttl − loop_wait − retry_timeout = 5 s, covers them; a leader
  // whose loop is too late to demote in time is stopped by its fence: finding 9). Drawn by
  // default (since finding 11 was fixed) and when `kinds` names them. The first stream never moves.
  const later = LATER_KINDS.filter((k) => !opts.kinds || opts.kinds.includes(k));
  if (later.length > 0) {
    const rng2 = new Prng((seed ^ 0x27d4eb2f) >>> 0);
    for (let at = 0; at < opts.steps; at++) {
      if (!rng2.chance(0.04)) continue;
      const kind = rng2.pick(later);
      const node = rng2.pick(names);
      const steps = rng2.int(2, 30);
      const ms = rng2.int(100, 1500);
      if (kind === 'slow-loop' || kind === 'net-delay') faults.push({ kind, at, node, steps, ms });
    }
    faults.sort((a, b) => a.at - b.at);
  }
  return faults;
}

/** One member: its PostgreSQL, and the agent process of the moment. */
interface Member {
  name: string;
  pg: SimPg;
  journal: Journal;
  node: HaNode | undefined;
  view: NodeClock | undefined;
  /** The agent should run (false while crashed). */
  up: boolean;
  incarnation: number;
  /** Slow event loop of its agent (ms late; survives an agent restart only while the fault lasts). */
  lagMs: number;
  /** Extra delay of every message to or from it, ms. */
  delayMs: number;
  /** Simulated ms before which no later watch event may be delivered (keeps watch events in order). */
  watchDueMs: number;
  /** The member's receipts of discarded transactions (a directory beside the data: kept across agent restarts). */
  receipts: MemoryReceiptStore;
  /** How many receipts the member had when its current data directory began (discarded-receipt). */
  receiptsAtDataStart: number;
}

/**
 * Wraps every method of `target` so that its promise settles through the node's clock view.
 * `delay` (network delay faults): the member's extra message delay now, ms; an answer arrives
 * that much later, a watch event too (in order).
 */
function gated<T extends object>(target: T, view: NodeClock, subscribeName?: string, delay?: { clock: SimClock; member: Member }): T {
  return new Proxy(target, {
    get(t, prop) {
      const v = (t as Record<string | symbol, unknown>)[prop];
      if (typeof v !== 'function') return v;
      if (prop === subscribeName) {
        return (listener: (e: unknown) => void) =>
          (v as (l: (e: unknown) => void) => () => void).call(t, (e) => {
            const d = delay?.member.delayMs ?? 0;
            if (!delay || (d === 0 && delay.member.watchDueMs <= delay.clock.now())) {
              view.deliver(() => listener(e));
              return;
            }
            const due = Math.max(delay.clock.now() + d, delay.member.watchDueMs);
            delay.member.watchDueMs = due;
            delay.clock.schedule(due - delay.clock.now(), () => view.deliver(() => listener(e)));
          });
      }
      return (...args: unknown[]) => {
        const r = (v as (...a: unknown[]) => unknown).apply(t, args);
        if (!(r instanceof Promise)) return r;
        const d = delay?.member.delayMs ?? 0;
        if (!delay || d === 0) return view.gate(r);
        const clock = delay.clock;
        return view.gate(
          r.then(
            (x: unknown) => new Promise((res) => clock.schedule(d, () => res(x))),
            (e: unknown) => new Promise((_, rej) => clock.schedule(d, () => rej(e))),
          ),
        );
      };
    },
  });
}

export class World {
  readonly clock = new SimClock();
  readonly store: InMemoryStore;
  readonly rng: Prng;
  readonly members: Member[];
  readonly checker: InvariantChecker;
  readonly faults: Fault[];
  private readonly byName = new Map<string, Member>();
  private readonly pgs: SimPg[];
  private readonly netCut = new Map<string, number>();
  private readonly dcsCut = new Map<string, number>();
  private readonly opts: Required<Pick<WorldOptions, 'nodes' | 'steps' | 'stepMs' | 'freeze'>> & WorldOptions;
  private readonly startMs: number;
  private uid = 0;
  private commitId = 0;
  private writeTurn = 0;
  private faultsFromMs: number | undefined;
  readonly acked: Commit[] = [];
  /** Every commit written (acknowledged or not), in order: what the members' WAL holds (SimPg.readWalRange). */
  readonly commits: Commit[] = [];
  /** Commits written (acknowledged or not). */
  private written = 0;
  readonly syncMode: SyncModeName;
  readonly failsafeMode: boolean;
  /** Quorum failover (quorum_failover_window) on in this run. */
  readonly quorumFailover: boolean;
  /** POST /failsafe accepted: `${target}\u0000${sender}` → simulated ms of the last acceptance (leader-lease judges with it). */
  private readonly failsafeAccepted = new Map<string, number>();
  private failsafeAccepts = 0;
  /** The PostgreSQLs that accepted writes at the last check (sync-no-loss judges each one that starts). */
  private readonly writers = new Set<SimPg>();
  /** Quorum failover runs: the accepting PostgreSQLs that acknowledged since they started accepting (sync-no-loss judges each at its first). */
  private readonly acknowledgers = new Set<SimPg>();
  /** The operator's DCS client (hactl / POST /switchover): no lease, no watch. */
  private readonly operator: InMemoryDcs;
  /** Each member's fence of the current agent process (src/sim/sim-fence.ts). */
  private readonly fences = new Map<string, SimFence | undefined>();
  /** Every firing of a fence. */
  readonly fenceFirings: SimFenceFiring[] = [];

  constructor(options: WorldOptions) {
    this.opts = { nodes: 3, steps: 60, stepMs: 500, freeze: false, ...options };
    const { seed, nodes, steps, stepMs, freeze } = this.opts;
    this.syncMode = options.sync ?? syncModeOf(seed);
    this.failsafeMode = options.failsafe === 'draw' ? failsafeOf(seed) : (options.failsafe ?? false);
    this.quorumFailover = options.quorumFailover === 'draw' ? quorumFailoverOf(seed) : (options.quorumFailover ?? false);
    this.rng = new Prng(seed);
    this.startMs = this.clock.now();
    this.store = new InMemoryStore({ now: () => this.clock.now(), expiryCheckMs: 0 });
    this.operator = new InMemoryDcs({
      store: this.store,
      namespace: '/service/',
      scope: SCOPE,
      name: '~operator',
      ttlSeconds: TIMING.ttl,
      retryTimeoutMs: TIMING.retry_timeout * 1000,
      now: () => this.clock.now(),
    });
    this.checker = new InvariantChecker(() => this.clock.now() - this.startMs);
    this.faults =
      options.faults ?? drawFaults(seed, { nodes, steps, stepMs, freeze, ...(options.faultKinds ? { kinds: options.faultKinds } : {}) });
    const world = {
      clock: this.clock,
      rng: this.rng,
      nextUid: () => ++this.uid,
      nextSysid: () => String(7_000_000_000_000_000_000n + BigInt(this.rng.int(0, 2 ** 30))),
      nextCommitId: () => ++this.commitId,
      peer: (name: string) => this.byName.get(name)?.pg,
      canConnect: (a: string, b: string) => this.connected(a, b),
      standbysOf: (primary: SimPg) => this.standbysOf(primary),
      changed: (pg: SimPg) => {
        this.checker.checkWriters(this.pgs, this.writerTest());
        this.checkLease();
        this.checkNewWriter(pg);
      },
      changing: () => this.checkLease(),
      promoting: (pg: SimPg, lsn: bigint) => this.checkPromotion(pg, lsn),
      commits: () => this.commits,
      discarding: (pg: SimPg, old: WalData, replacement: WalData) => this.checkDiscarded(pg, old, replacement),
      flushStandbys: (primary: SimPg) => {
        for (const pg of this.pgs) if (pg !== primary && pg.streaming && pg.activeUpstream?.name === primary.name) this.ship(pg);
      },
    };
    this.members = memberNames(nodes).map((name) => ({
      name,
      pg: new SimPg(name, world, options.pgBugs),
      journal: new Journal({ now: () => this.clock.now(), keep: options.keepJournal ? 1_000_000 : 50 }),
      node: undefined,
      view: undefined,
      up: false,
      incarnation: 0,
      lagMs: 0,
      delayMs: 0,
      watchDueMs: 0,
      receipts: new MemoryReceiptStore(),
      receiptsAtDataStart: 0,
    }));
    for (const m of this.members) this.byName.set(m.name, m);
    this.pgs = this.members.map((m) => m.pg);
  }

  /** Simulated ms since the start. */
  get elapsedMs(): number {
    return this.clock.now() - this.startMs;
  }

  /** Runs the whole schedule. */
  async run(): Promise<RunResult> {
    const { steps } = this.opts;
    for (const m of this.members) {
      m.up = true;
      this.clock.schedule(this.rng.int(0, 500), () => this.startAgent(m));
    }
    // Bootstrap.
    const bootDeadline = this.clock.now() + bootstrapBoundS(TIMING) * 1000;
    while (!this.converged()) {
      if (this.clock.now() >= bootDeadline) {
        this.checker.record('liveness-bootstrap', `no bootstrapped cluster within ${bootstrapBoundS(TIMING)} s: ${this.describe()}`);
        return this.result();
      }
      await this.step();
    }
    // Faults.
    this.faultsFromMs = this.elapsedMs;
    const ends = new Map<number, (() => void)[]>();
    for (let s = 0; s < steps; s++) {
      for (const f of ends.get(s) ?? []) f();
      for (const f of this.faults) if (f.at === s) this.apply(f, s, ends);
      await this.step();
    }
    // Heal, then liveness.
    this.healAll();
    const healMs = this.clock.now();
    const pBound = healMs + primaryBoundS(TIMING) * 1000;
    const rBound = healMs + replicasBoundS(TIMING) * 1000;
    let primaryAt: number | undefined;
    let replicasAt: number | undefined;
    while (replicasAt === undefined) {
      const primary = this.writablePrimary();
      if (primary && primaryAt === undefined) primaryAt = this.clock.now();
      if (primary && this.converged() && !this.blocked()) replicasAt = this.clock.now();
      if (replicasAt !== undefined) break;
      if (primaryAt === undefined && this.clock.now() >= pBound) {
        this.checker.record(
          'liveness-primary',
          `no writable primary ${primaryBoundS(TIMING)} s after the faults healed: ${this.describe()}`,
        );
        break;
      }
      if (this.clock.now() >= rBound) {
        if (this.converged())
          this.checker.record(
            'liveness-acknowledge',
            `the primary's commits still wait ${replicasBoundS(TIMING)} s after the faults healed, every replica streaming: ${this.describe()}`,
          );
        else
          this.checker.record(
            'liveness-replicas',
            `members not streaming from the primary ${replicasBoundS(TIMING)} s after the faults healed: ${this.describe()}`,
          );
        break;
      }
      await this.step();
    }
    const r = this.result();
    if (primaryAt !== undefined) r.primaryAfterHealMs = primaryAt - healMs;
    if (replicasAt !== undefined) r.replicasAfterHealMs = replicasAt - healMs;
    return r;
  }

  /** Every member's journal, in (member, sequence) order, one JSON object per line. */
  journalJsonl(): string {
    const lines: string[] = [];
    for (const m of this.members) {
      const entries: JournalEntry[] = m.journal.recent(1_000_000).reverse();
      for (const e of entries) lines.push(JSON.stringify({ node: m.name, ...e }));
    }
    return lines.join('\n') + (lines.length ? '\n' : '');
  }

  // ---- steps -----------------------------------------------------------------------------------

  /**
   * One step: run the clock, ship WAL, acknowledge the commits the standbys' flushes release, one
   * client write (acknowledged at once without synchronous standby, else waiting), check the
   * invariants.
   */
  private async step(): Promise<void> {
    await this.clock.runUntil(this.clock.now() + this.opts.stepMs);
    for (const pg of this.pgs) this.ship(pg);
    for (const pg of this.pgs) this.acknowledge(pg);
    const k = this.pgs.length;
    for (let i = 0; i < k; i++) {
      const pg = this.pgs[(this.writeTurn + i) % k]!;
      if (!pg.acceptsWrites()) continue;
      const [lo, hi] = this.opts.writeBytes ?? DEFAULT_WRITE_BYTES;
      const c = pg.write(this.rng.int(lo, hi));
      if (c) {
        this.written++;
        this.commits.push(c);
      }
      this.acknowledge(pg);
      break;
    }
    this.writeTurn++;
    this.checker.checkWriters(this.pgs, this.writerTest());
    this.checkLease();
    this.checker.checkTimelines(this.pgs);
  }

  /** The commits `pg` acknowledges now go to the client's record. */
  private acknowledge(pg: SimPg): void {
    if (pg.waiting.length === 0) return;
    const released = pg.release();
    if (released.length > 0 && this.quorumFailover && this.syncMode !== 'off' && !this.acknowledgers.has(pg)) {
      this.acknowledgers.add(pg);
      this.checker.checkNoLoss(pg, this.acked, this.syncMode, 'acknowledges writes');
    }
    for (const c of released) this.acked.push(c);
  }

  /** The running replicas streaming from `primary` now (connected to it). */
  private standbysOf(primary: SimPg): SimPg[] {
    const out: SimPg[] = [];
    for (const p of this.pgs) {
      if (
        p !== primary &&
        p.streaming &&
        p.run === 'running' &&
        p.role === 'replica' &&
        p.activeUpstream?.name === primary.name &&
        this.connected(p.name, primary.name)
      )
        out.push(p);
    }
    return out;
  }

  /**
   * discarded-receipt, when `pg`'s data directory `old` was thrown away for `replacement` (the
   * rewound data, or the base backup that replaced a removed directory: the lineage the member
   * takes). Checked against the last receipt the member took since `old` began.
   */
  private checkDiscarded(pg: SimPg, old: WalData, replacement: WalData): void {
    const m = this.byName.get(pg.name);
    if (!m) return;
    const fresh = m.receipts.receipts.slice(m.receiptsAtDataStart);
    const receipt = fresh[fresh.length - 1];
    const acked = this.syncMode !== 'off' ? new Set(this.acked.map((c) => c.id)) : undefined;
    this.checker.checkDiscarded(pg, old, replacement, this.commits, receipt, acked);
    m.receiptsAtDataStart = m.receipts.receipts.length;
  }

  /** sync-no-loss, at the instant `pg` starts accepting writes (a promotion, a start as primary). */
  private checkNewWriter(pg: SimPg): void {
    if (!pg.acceptsWrites()) {
      this.writers.delete(pg);
      this.acknowledgers.delete(pg);
      return;
    }
    if (this.writers.has(pg)) return;
    this.writers.add(pg);
    // Quorum failover: judged when it first acknowledges (acknowledge), not when it accepts: a
    // former primary whose key was taken may start again as primary, never acknowledging.
    if (this.syncMode !== 'off' && !this.quorumFailover) this.checker.checkNoLoss(pg, this.acked, this.syncMode, 'accepts writes');
  }

  /**
   * Which PostgreSQLs single-writer, timeline-monotonic and leader-lease judge: with quorum
   * failover on, those that acknowledge (a primary fenced by its synchronous standbys may run on
   * after its key was taken, never acknowledging); otherwise every one that accepts writes.
   */
  private writerTest(): ((pg: SimPg) => boolean) | undefined {
    return this.quorumFailover ? (pg) => pg.acknowledges() : undefined;
  }

  /** leader-lease against the store's truth at this instant. */
  private checkLease(): void {
    const prefix = this.operator.prefix;
    const init = peekStore(this.store, `${prefix}initialize`);
    const key = peekStore(this.store, `${prefix}leader`);
    const now = this.clock.now();
    this.checker.checkLease(
      this.pgs,
      now,
      key && { holder: key.value, liveUntilMs: key.liveUntilMs },
      !init || init.value === '',
      (name) => {
        const m = this.byName.get(name)!;
        if (!m.up || !m.node) return 'down (crashed)';
        const until = m.node.snapshot().leaderUntilMs;
        return `${m.view?.isFrozen ? 'frozen' : 'up'}, ${until > now ? `believes it holds the lock for ${until - now} ms more` : 'does not hold the lock'}`;
      },
      (name) => this.failsafeCovers(name),
      // Quorum failover: a fenced primary may run on without its key, but never acknowledge.
      this.writerTest(),
    );
  }

  /** promotion-lag: `pg` promotes at `lsn`; judged against the store's optime and the members it could reach. */
  private checkPromotion(pg: SimPg, lsn: bigint): void {
    const prefix = this.operator.prefix;
    const failover = parseJson(peekStore(this.store, `${prefix}failover`)?.value);
    // An operator's failover naming this candidate (no leader named): it races without the lag
    // rule, the operator's choice. A switchover's candidate is judged like any member (finding 19).
    if (failover && failover['member'] === pg.name && !failover['leader']) return;
    const config = parseJson(peekStore(this.store, `${prefix}config`)?.value);
    const maxLagRaw = config?.['maximum_lag_on_failover'];
    const maxLag = BigInt(
      typeof maxLagRaw === 'number' && maxLagRaw >= 0 ? Math.trunc(maxLagRaw) : DYNAMIC_DEFAULTS.maximum_lag_on_failover,
    );
    const optimeRaw = parseJson(peekStore(this.store, `${prefix}status`)?.value)?.['optime'];
    const optime = typeof optimeRaw === 'number' ? BigInt(optimeRaw) : 0n;
    const reachable: { name: string; lsn: bigint }[] = [];
    for (const m of this.members) {
      if (m.pg === pg || !m.up || !m.node || m.view?.isFrozen || !this.connected(pg.name, m.name)) continue;
      if (m.pg.run !== 'running' || !m.pg.data) continue;
      reachable.push({ name: m.name, lsn: m.pg.data.lsn });
    }
    this.checker.checkPromotion(pg, lsn, optime, maxLag, reachable);
  }

  /** One step of WAL shipping to `pg`, checked against diverged-streaming. */
  private ship(pg: SimPg): void {
    const before = pg.data;
    const from = pg.ship();
    if (from) this.checker.checkStreamed(pg, before, from);
  }

  /** The one PostgreSQL accepting writes (undefined when none or several). */
  private writablePrimary(): SimPg | undefined {
    const w = this.pgs.filter((p) => p.acceptsWrites());
    return w.length === 1 ? w[0] : undefined;
  }

  /** One writable primary, every other member running as a replica streaming from it. */
  private converged(): boolean {
    const primary = this.writablePrimary();
    if (!primary) return false;
    return this.pgs.every(
      (p) => p === primary || (p.run === 'running' && p.role === 'replica' && p.streaming && p.activeUpstream?.name === primary.name),
    );
  }

  /** Converged, but the primary's commits can only wait (synchronous standbys not in force). */
  private blocked(): boolean {
    const primary = this.writablePrimary();
    return !!primary && !primary.acknowledges();
  }

  private describe(): string {
    return this.members
      .map((m) => {
        const p = m.pg;
        const agent = !m.up ? 'agent down' : m.view?.isFrozen ? 'agent frozen' : 'agent up';
        const state = m.node ? String(m.node.snapshot().state) : '-';
        const sync =
          p.role === 'primary' && p.run === 'running'
            ? ` synchronous_standby_names '${p.syncNames}'${p.waiting.length ? ` (${p.waiting.length} commits waiting)` : ''}`
            : '';
        return `${m.name}: pg ${p.run} ${p.data ? `${p.role} tl ${p.timeline}${sync}${p.streaming ? ` streaming from ${p.activeUpstream?.name}` : ''}` : 'no data'}, ${agent} (${state})`;
      })
      .join('; ');
  }

  private result(): RunResult {
    const primary = this.writablePrimary();
    const lost = primary ? this.acked.filter((c) => !holdsCommit(primary.data, c)).length : 0;
    if (primary && this.syncMode !== 'off')
      this.checker.checkNoLoss(primary, this.acked, this.syncMode, 'is the primary at the end of the run and');
    return {
      seed: this.opts.seed,
      faults: this.faults,
      violations: this.checker.violations,
      sync: this.syncMode,
      failsafe: this.failsafeMode,
      failsafeAccepts: this.failsafeAccepts,
      acked: this.acked.length,
      unacked: this.written - this.acked.length,
      lost,
      simulatedMs: this.elapsedMs,
      timersFired: this.clock.fired,
      rewinds: this.pgs.reduce((n, pg) => n + pg.rewinds, 0),
      receipts: this.members.reduce((n, m) => n + m.receipts.receipts.length, 0),
      receiptTransactions: this.members.reduce((n, m) => n + m.receipts.receipts.reduce((k, r) => k + r.counts.transactions, 0), 0),
      fenceFirings: {
        deadline: this.fenceFirings.filter((f) => f.reason === 'deadline').length,
        agentGone: this.fenceFirings.filter((f) => f.reason === 'agent gone').length,
      },
      ...(this.faultsFromMs !== undefined ? { faultsFromMs: this.faultsFromMs } : {}),
    };
  }

  // ---- faults ----------------------------------------------------------------------------------

  private apply(f: Fault, step: number, ends: Map<number, (() => void)[]>): void {
    const later = (n: number, fn: () => void) => {
      const at = step + n;
      const list = ends.get(at) ?? [];
      list.push(fn);
      ends.set(at, list);
    };
    switch (f.kind) {
      case 'dcs-partition':
        this.cutDcs(f.node, 1);
        later(f.steps, () => this.cutDcs(f.node, -1));
        return;
      case 'net-partition': {
        const key = [f.node, f.peer].sort().join('|');
        this.netCut.set(key, (this.netCut.get(key) ?? 0) + 1);
        later(f.steps, () => this.netCut.set(key, Math.max(0, (this.netCut.get(key) ?? 0) - 1)));
        return;
      }
      case 'pg-crash':
        this.byName.get(f.node)!.pg.crash();
        return;
      case 'agent-crash': {
        const m = this.byName.get(f.node)!;
        if (!m.up) return;
        this.crashAgent(m);
        later(f.steps, () => this.reviveAgent(m));
        return;
      }
      case 'freeze': {
        const m = this.byName.get(f.node)!;
        m.view?.freeze();
        later(f.steps, () => m.view?.thaw());
        return;
      }
      case 'switchover': {
        // POST /switchover: create-only write of {leader, member}; nothing when there is no
        // leader or the candidate leads already.
        const leader = this.store.get(`${this.operator.prefix}leader`)?.value;
        if (!leader || leader === f.node) return;
        const pending = this.store.get(`${this.operator.prefix}failover`);
        if (pending && pending.value !== '{}') return;
        // Synchronous mode: POST /switchover answers 412 for a candidate the sync key does not
        // list (admitHandover, src/domain/switchover-admission.ts).
        if (this.syncMode !== 'off') {
          const key = parseJson(this.store.get(`${this.operator.prefix}sync`)?.value);
          const listed = typeof key?.['sync_standby'] === 'string' ? key['sync_standby'].split(',').map((x) => x.trim()) : [];
          if (!listed.includes(f.node)) return;
        }
        void this.operator.setFailover({ leader, member: f.node }, pending?.modRevision ?? '0').catch(() => undefined);
        return;
      }
      case 'heal':
        this.healAll();
        return;
      case 'slow-loop': {
        const m = this.byName.get(f.node)!;
        m.lagMs = f.ms;
        m.view?.setLag(f.ms);
        later(f.steps, () => {
          m.lagMs = 0;
          m.view?.setLag(0);
        });
        return;
      }
      case 'net-delay': {
        const m = this.byName.get(f.node)!;
        m.delayMs = f.ms;
        later(f.steps, () => (m.delayMs = 0));
        return;
      }
    }
  }

  private cutDcs(name: string, delta: number): void {
    const n = Math.max(0, (this.dcsCut.get(name) ?? 0) + delta);
    this.dcsCut.set(name, n);
    this.store.setReachable(name, n === 0);
  }

  private healAll(): void {
    for (const name of this.dcsCut.keys()) {
      this.dcsCut.set(name, 0);
      this.store.setReachable(name, true);
    }
    this.netCut.clear();
    for (const m of this.members) {
      m.lagMs = 0;
      m.delayMs = 0;
      m.view?.setLag(0);
      m.view?.thaw();
      this.reviveAgent(m);
    }
  }

  private connected(a: string, b: string): boolean {
    return (this.netCut.get(a < b ? `${a}|${b}` : `${b}|${a}`) ?? 0) === 0;
  }

  // ---- agents ----------------------------------------------------------------------------------

  private crashAgent(m: Member): void {
    m.up = false;
    m.incarnation++;
    m.view?.kill();
    m.view = undefined;
    m.node = undefined;
    // The process is gone, its end of the fence's pipe closed: an armed fence fires.
    this.fences.get(m.name)?.agentGone();
    this.fences.delete(m.name);
  }

  private reviveAgent(m: Member): void {
    if (m.up) return;
    m.up = true;
    this.startAgent(m);
  }

  /** Starts a new agent process for `m` (a new DCS client, a new lease); retried every second while the DCS cannot be reached. */
  private startAgent(m: Member): void {
    if (!m.up) return;
    const incarnation = ++m.incarnation;
    const view = this.clock.view();
    const watchdogMode = this.opts.watchdog ?? 'automatic';
    const fence = watchdogMode !== 'off' ? new SimFence(this.clock, view, m.pg, (f) => this.fenceFirings.push(f)) : undefined;
    const raw = new InMemoryDcs({
      store: this.store,
      namespace: '/service/',
      scope: SCOPE,
      name: m.name,
      ttlSeconds: TIMING.ttl,
      retryTimeoutMs: TIMING.retry_timeout * 1000,
      now: () => this.clock.now(),
    });
    view.setLag(m.lagMs);
    const dcs = gated(this.opts.wrapDcs ? this.opts.wrapDcs(raw, m.name) : raw, view, 'subscribe', { clock: this.clock, member: m });
    const pg = gated<PgControl>(m.pg, view);
    const node = new HaNode({
      name: m.name,
      scope: SCOPE,
      version: '0.0.0-sim',
      apiUrl: `http://${m.name}:8008/ha`,
      connUrl: `postgres://${m.name}:5432/postgres`,
      tags: {},
      bootstrapDcs: bootstrapDcs(
        this.opts.rewind ?? this.opts.seed % 2 === 1,
        this.syncMode,
        this.failsafeMode,
        this.opts.database,
        this.quorumFailover,
      ),
      initdbOptions: [],
      localParameters: {},
      dcs,
      pg,
      journal: m.journal,
      // The member's name on every line, as the agent's base logger has it (src/node/agent/agent.ts).
      log: SILENT.child({ member: m.name }),
      clock: view,
      fetchStatus: (url) => this.fetchStatus(m.name, view, url),
      postFailsafe: (url, body, timeoutMs) => this.postFailsafe(m.name, view, url, body, timeoutMs),
      watchdog: { mode: watchdogMode, safety_margin: 5 },
      ...(fence ? { fence, fenceMono: () => this.clock.now() } : {}),
      receiptStore: m.receipts,
    });
    m.view = view;
    m.node = node;
    this.fences.set(m.name, fence);
    node.start().catch(() => {
      if (m.incarnation !== incarnation || !m.up) return;
      view.kill();
      fence?.agentGone();
      m.node = undefined;
      m.view = undefined;
      this.clock.schedule(1000, () => {
        if (m.incarnation === incarnation && m.up) this.startAgent(m);
      });
    });
  }

  /**
   * POST /failsafe from `from`'s agent: over the simulated network (a cut link or a frozen target
   * times out after `timeoutMs`, a crashed agent refuses at once); the target's HaNode answers
   * as its API would (src/http/failsafe-routes.ts).
   */
  private postFailsafe(from: string, view: NodeClock, url: string, body: unknown, timeoutMs: number): Promise<number | undefined> {
    const name = /^http:\/\/([^:/]+)/.exec(url)?.[1] ?? '';
    const target = this.byName.get(name);
    if (!target) return Promise.resolve(undefined);
    if (!this.connected(from, name) || target.view?.isFrozen) {
      return new Promise((resolve) => view.setTimeout(() => resolve(undefined), timeoutMs));
    }
    if (!target.up || !target.node) return Promise.resolve(undefined);
    const d = this.messageDelay(from, name);
    if (d >= timeoutMs) return new Promise((resolve) => view.setTimeout(() => resolve(undefined), timeoutMs));
    if (d > 0) {
      const half = Math.floor(d / 2);
      return new Promise((resolve) =>
        this.clock.schedule(half, () => {
          const status = this.failsafeAnswer(from, name, body);
          this.clock.schedule(d - half, () => resolve(status));
        }),
      );
    }
    return Promise.resolve(this.failsafeAnswer(from, name, body));
  }

  /** The target's answer to a POST /failsafe from `from`, delivered now. */
  private failsafeAnswer(from: string, name: string, body: unknown): number | undefined {
    const target = this.byName.get(name)!;
    if (!target.up || !target.node) return undefined;
    const answer = target.node.acceptFailsafe(typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {});
    if (answer.status === 200) {
      this.failsafeAccepted.set(`${name}\u0000${from}`, this.clock.now());
      this.failsafeAccepts++;
    }
    return answer.status;
  }

  /** Extra round-trip delay of a call between two members (net-delay faults of either), ms. */
  private messageDelay(a: string, b: string): number {
    return (this.byName.get(a)?.delayMs ?? 0) + (this.byName.get(b)?.delayMs ?? 0);
  }

  /**
   * leader-lease's failsafe exemption (failsafe_mode on): `name` writes without a live lease, but
   * every other member the store's `failsafe` key lists accepted its POST /failsafe less than ttl
   * ago (they do not race meanwhile). Returns why, or undefined.
   */
  private failsafeCovers(name: string): string | undefined {
    if (!this.failsafeMode) return undefined;
    const listed = parseJson(peekStore(this.store, `${this.operator.prefix}failsafe`)?.value);
    if (!listed || !(name in listed)) return undefined;
    const now = this.clock.now();
    for (const other of Object.keys(listed)) {
      if (other === name) continue;
      const at = this.failsafeAccepted.get(`${other}\u0000${name}`);
      if (at === undefined || now - at >= TIMING.ttl * 1000) return undefined;
    }
    return 'failsafe';
  }

  /** GET <api_url> from `from`: the target's status document, unless partitioned, frozen or down. */
  private fetchStatus(from: string, view: NodeClock, url: string): Promise<Record<string, unknown> | undefined> {
    const name = /^http:\/\/([^:/]+)/.exec(url)?.[1] ?? '';
    const target = this.byName.get(name);
    if (!target) return Promise.resolve(undefined);
    if (!this.connected(from, name) || target.view?.isFrozen) {
      // Packets dropped / a stopped process: the request times out after 2 s.
      return new Promise((resolve) => view.setTimeout(() => resolve(undefined), 2000));
    }
    if (!target.up || !target.node) return Promise.resolve(undefined);
    const d = this.messageDelay(from, name);
    if (d >= 2000) return new Promise((resolve) => view.setTimeout(() => resolve(undefined), 2000));
    if (d > 0) {
      // The request reaches the target after half the delay; the answer takes the other half.
      const half = Math.floor(d / 2);
      return new Promise((resolve) =>
        this.clock.schedule(half, () => {
          const doc =
            target.up && target.node
              ? (buildStatusDocument(target.node.snapshot(), this.clock.now()) as unknown as Record<string, unknown>)
              : undefined;
          this.clock.schedule(d - half, () => resolve(doc));
        }),
      );
    }
    return Promise.resolve(buildStatusDocument(target.node.snapshot(), this.clock.now()) as unknown as Record<string, unknown>);
  }
}
