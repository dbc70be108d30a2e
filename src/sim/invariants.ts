/**
 * The simulation's invariants (docs/simulation.md "Invariants"), checked while a schedule runs:
 * - single-writer: at most one PostgreSQL accepts writes at any simulated instant (checked at
 *   every state change of every SimPg, not only between steps);
 * - timeline-monotonic: a node's timeline never goes down while it keeps its data directory, and
 *   the timeline of the writable primary never goes down over the run;
 * - diverged-streaming: a replica never streams from an upstream whose history (ground truth, not
 *   timeline numbers) diverged from its own WAL;
 * - leader-lease: a PostgreSQL accepts writes only while the DCS store (ground truth, read
 *   without expiring anything) holds the leader key in its member's name on a lease that has not
 *   run out, i.e. renewed within ttl (a bootstrap in progress excepted). With quorum failover on
 *   (issue 28) a primary fenced by its synchronous standbys may run on after its key was taken,
 *   so the rule is then judged on primaries that *acknowledge* writes: no primary acknowledges a
 *   commit while another member holds the leader key (or after its own lease ran out);
 * - promotion-lag: at each promotion, the promoted WAL end is within maximum_lag_on_failover of
 *   the leader's last `status.optime` in the store and of the WAL of every member it could reach
 *   (the candidate of an operator's failover, no leader named, excepted; a switchover's candidate
 *   is not: finding 19);
 * - liveness-bootstrap / liveness-primary / liveness-replicas: the cluster bootstraps, and after
 *   every fault healed there is one writable primary and every other member streams from it
 *   within the bounds below (formulas of ttl, loop_wait and retry_timeout).
 * - sync-no-loss: in a run with synchronous mode on, every PostgreSQL that starts accepting
 *   writes (a promotion, a start as primary) and the primary at the end hold every commit
 *   acknowledged so far;
 * - liveness-acknowledge: after every fault healed, within the replica bound, the primary's
 *   commits do not just wait (synchronous_standby_names names standbys that stream).
 * - discarded-receipt: when a rewind or a re-clone throws away a data directory's WAL, the commits
 *   it held that the new lineage does not (ground truth) are exactly those the member's last
 *   receipt for that data directory lists (docs/ha.md "Receipts"), and in synchronous mode none of
 *   them was acknowledged.
 * In asynchronous runs, acknowledged commits lost after a failover are a figure, not a violation.
 */
import { divergencePoint, holdsCommit, uidAt, type Commit, type SimPg, type WalData } from './sim-pg.ts';
import type { Receipt } from '../domain/discarded.ts';

export const INVARIANTS = [
  'single-writer',
  'leader-lease',
  'promotion-lag',
  'timeline-monotonic',
  'diverged-streaming',
  'sync-no-loss',
  'liveness-bootstrap',
  'liveness-primary',
  'liveness-replicas',
  'liveness-acknowledge',
  'discarded-receipt',
] as const;
export type InvariantName = (typeof INVARIANTS)[number];

/** One broken invariant. */
export interface Violation {
  invariant: InvariantName;
  /** Simulated ms since the start of the run. */
  atMs: number;
  message: string;
}

/** Timing of the cluster, seconds. */
export interface Timing {
  ttl: number;
  loop_wait: number;
  retry_timeout: number;
}

/**
 * Upper bound of the simulated effects one recovery may chain (stop ≤ 0.3 s, base backup
 * ≤ 2.5 s, start ≤ 0.6 s, promote ≤ 0.3 s, initdb ≤ 1 s), doubled: seconds.
 */
export const EFFECTS_S = 10;

/** After the last fault healed: a writable primary within ttl + 2·loop_wait + 2·retry_timeout (s). */
export function primaryBoundS(t: Timing): number {
  return t.ttl + 2 * t.loop_wait + 2 * t.retry_timeout;
}

/**
 * After the last fault healed: every other member streams from the primary within the primary
 * bound + 2·loop_wait + max(2·loop_wait, retry_timeout) (the not-streaming grace before the
 * divergence check) + EFFECTS_S (re-clone and start).
 */
export function replicasBoundS(t: Timing): number {
  return primaryBoundS(t) + 2 * t.loop_wait + Math.max(2 * t.loop_wait, t.retry_timeout) + EFFECTS_S;
}

/** From the first start: a bootstrapped cluster (primary + streaming replicas) within the replica bound. */
export function bootstrapBoundS(t: Timing): number {
  return replicasBoundS(t);
}

export class InvariantChecker {
  readonly violations: Violation[] = [];
  private readonly seen = new Set<InvariantName>();
  private readonly timelines = new Map<string, { gen: number; timeline: number }>();
  private maxWritableTimeline = 0;

  constructor(private readonly sinceStart: () => number) {}

  /** Records a violation (the first of each invariant per run is kept with its message). */
  record(invariant: InvariantName, message: string): void {
    if (this.seen.has(invariant)) return;
    this.seen.add(invariant);
    this.violations.push({ invariant, atMs: this.sinceStart(), message });
  }

  /**
   * single-writer (at most one PostgreSQL *acknowledging* writes: a primary whose commits can only
   * wait for synchronous standbys that are not there does not count) and the writable primary's
   * timeline; call at every SimPg change. `writes`: which PostgreSQLs count as writers (with quorum
   * failover on, those that acknowledge: a fenced primary may run on, never acknowledging).
   */
  checkWriters(pgs: readonly SimPg[], writes: (pg: SimPg) => boolean = (pg) => pg.acceptsWrites()): void {
    let writers: SimPg[] | undefined;
    for (const pg of pgs) if (writes(pg)) (writers ??= []).push(pg);
    if (!writers) return;
    if (writers.length > 1 && !this.seen.has('single-writer')) {
      const acking = writers.filter((w) => w.acknowledges());
      if (acking.length > 1) {
        this.record(
          'single-writer',
          `${acking.map((w) => `${w.name} (timeline ${w.timeline})`).join(' and ')} accept and acknowledge writes at the same instant`,
        );
      }
    }
    for (const pg of writers) {
      const tl = pg.timeline;
      if (tl < this.maxWritableTimeline) {
        this.record(
          'timeline-monotonic',
          `${pg.name} accepts writes on timeline ${tl} after a primary accepted writes on timeline ${this.maxWritableTimeline}`,
        );
      }
      if (tl > this.maxWritableTimeline) this.maxWritableTimeline = tl;
    }
  }

  /** timeline-monotonic per node (reset when the data directory is replaced). */
  checkTimelines(pgs: readonly SimPg[]): void {
    for (const pg of pgs) {
      if (!pg.data) continue;
      const prev = this.timelines.get(pg.name);
      const tl = pg.timeline;
      if (prev && prev.gen === pg.dataGen && tl < prev.timeline) {
        this.record('timeline-monotonic', `${pg.name}'s timeline went from ${prev.timeline} down to ${tl} on the same data directory`);
      }
      this.timelines.set(pg.name, { gen: pg.dataGen, timeline: Math.max(tl, prev && prev.gen === pg.dataGen ? prev.timeline : 0) });
    }
  }

  /**
   * sync-no-loss: `pg` (which `event`: starts accepting writes, or is the final primary) holds
   * every commit acknowledged so far (`acked`); `mode`: the run's synchronous mode.
   */
  checkNoLoss(pg: SimPg, acked: readonly Commit[], mode: string, event: string): void {
    if (this.seen.has('sync-no-loss')) return;
    let missing = 0;
    let first: Commit | undefined;
    for (const c of acked) {
      if (holdsCommit(pg.data, c)) continue;
      missing++;
      first ??= c;
    }
    if (!first) return;
    this.record(
      'sync-no-loss',
      `${pg.name} (timeline ${pg.timeline}, WAL to ${pg.data?.lsn ?? 0n}) ${event} without ${missing} of ${acked.length} acknowledged commits (synchronous mode ${mode}); the first: #${first.id} acknowledged on ${first.node} (timeline ${first.timeline}, WAL ${first.start}–${first.end}, written at ${first.atMs})`,
    );
  }

  /** diverged-streaming: `replica` (its WAL before the copy: `before`) streamed from `upstream`. */
  checkStreamed(replica: SimPg, before: SimPg['data'], upstream: SimPg): void {
    if (!before || !upstream.data) return;
    const p = divergencePoint(before, upstream.data);
    if (p !== undefined) {
      this.record(
        'diverged-streaming',
        `${replica.name} (timeline ${before.segments[before.segments.length - 1]!.timeline}, WAL to ${before.lsn}) streams from ${upstream.name} (timeline ${upstream.timeline}) although their histories differ from byte ${p}`,
      );
    }
  }

  /**
   * leader-lease: every PostgreSQL that accepts writes belongs to the member the store's leader
   * key names, on a live lease. `lock` is the store's truth at this instant (holder: the key's
   * value; liveUntilMs: when its lease runs out), undefined without a key; `bootstrapping`: the
   * `initialize` key holds no system identifier yet (the initializer runs PostgreSQL before it
   * takes the lock, as the reference does).
   */
  checkLease(
    pgs: readonly SimPg[],
    nowMs: number,
    lock: { holder: string; liveUntilMs: number } | undefined,
    bootstrapping: boolean,
    agentOf: (name: string) => string,
    failsafeCovers: (name: string) => string | undefined = () => undefined,
    writes: (pg: SimPg) => boolean = (pg) => pg.acceptsWrites(),
  ): void {
    if (bootstrapping || this.seen.has('leader-lease')) return;
    for (const pg of pgs) {
      if (!writes(pg)) continue;
      if (lock && lock.holder === pg.name && lock.liveUntilMs > nowMs) continue;
      // failsafe_mode: no live lease of another member, and every other member of the `failsafe`
      // key accepted this member's POST /failsafe less than ttl ago.
      if ((!lock || lock.holder === pg.name || lock.liveUntilMs <= nowMs) && failsafeCovers(pg.name) !== undefined) continue;
      const why = !lock
        ? 'no leader key in the DCS'
        : lock.holder !== pg.name
          ? `the leader key names ${lock.holder}`
          : `its leader key's lease ran out ${nowMs - lock.liveUntilMs} ms ago (not renewed within ttl)`;
      this.record(
        'leader-lease',
        `${pg.name} (timeline ${pg.timeline}) accepts writes as primary but ${why}; its agent: ${agentOf(pg.name)}`,
      );
    }
  }

  /**
   * promotion-lag: `pg` promotes at WAL end `lsn`. `optime`: the store's `status.optime` (0 when
   * none); `reachable`: WAL ends of the members it could reach (agent answering, network
   * connected, PostgreSQL running); `maxLag`: maximum_lag_on_failover of the cluster config.
   */
  checkPromotion(pg: SimPg, lsn: bigint, optime: bigint, maxLag: bigint, reachable: readonly { name: string; lsn: bigint }[]): void {
    if (optime - lsn > maxLag) {
      this.record(
        'promotion-lag',
        `${pg.name} promoted at WAL ${lsn}, ${optime - lsn} bytes behind the leader's last optime ${optime} (maximum_lag_on_failover ${maxLag})`,
      );
      return;
    }
    for (const r of reachable) {
      if (r.lsn - lsn > maxLag) {
        this.record(
          'promotion-lag',
          `${pg.name} promoted at WAL ${lsn}, ${r.lsn - lsn} bytes behind ${r.name} (WAL ${r.lsn}) which it could reach (maximum_lag_on_failover ${maxLag})`,
        );
        return;
      }
    }
  }

  /**
   * discarded-receipt: `pg`'s data directory `old` was thrown away for `lineage` (the rewound data,
   * or the base backup that replaced it). The commits `old` held that `lineage` does
   * not (by uid, whatever its length) are the discarded ones; `receipt` is the last receipt the
   * member took for this data directory (undefined: none). They must list exactly those commits;
   * in synchronous mode (`acked` given) none of them may be acknowledged.
   */
  checkDiscarded(
    pg: SimPg,
    old: WalData,
    lineage: WalData,
    commits: readonly Commit[],
    receipt: Receipt | undefined,
    acked?: ReadonlySet<number>,
  ): void {
    if (this.seen.has('discarded-receipt')) return;
    const discarded: number[] = [];
    for (const c of commits) {
      if (!holdsCommit(old, c)) continue;
      const kept =
        lineage.sysid === old.sysid && uidAt(lineage.segments, c.start) === c.uid && uidAt(lineage.segments, c.end - 1n) === c.uid;
      if (!kept) discarded.push(c.id);
    }
    const listed = new Set((receipt?.transactions ?? []).map((t) => t.xid));
    const missing = discarded.filter((id) => !listed.has(id));
    const extra = [...listed].filter((id) => !discarded.includes(id));
    if (missing.length > 0 || extra.length > 0) {
      this.record(
        'discarded-receipt',
        `${pg.name}'s data directory (timeline ${old.segments[old.segments.length - 1]!.timeline}, WAL to ${old.lsn}) is discarded with ${discarded.length} commits the new lineage lacks; ` +
          `${receipt ? `its receipt lists ${listed.size}` : 'no receipt was taken'}${missing.length ? `, missing #${missing.slice(0, 5).join(', #')}` : ''}${extra.length ? `, listing #${extra.slice(0, 5).join(', #')} which are kept` : ''}`,
      );
      return;
    }
    const ackedLost = acked ? discarded.filter((id) => acked.has(id)) : [];
    if (ackedLost.length > 0) {
      this.record(
        'discarded-receipt',
        `${pg.name}'s receipt lists acknowledged commits #${ackedLost.slice(0, 5).join(', #')} (synchronous mode)`,
      );
    }
  }
}
