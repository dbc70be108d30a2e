/**
 * The facts the HA cycle carries from one cycle to the next (docs/ha.md "The cycle"): since when
 * the leader key has named a ghost, since when there has been no leader key, since when a running
 * replica has not streamed, the newest timeline it replayed into, the divergence verdict and the
 * discard plan, the same-number fork, the start back-off and the system identifier of the local
 * data. The gather step (gather.ts) and the cycle update them; everything else reads them
 * (`CycleFacts`). Every write of these fields is in this file.
 *
 * Time is epoch ms on the node's clock. No I/O.
 */
import type { ClusterView } from '../../domain/cluster.ts';
import type { DiscardPlan } from '../../domain/discarded.ts';
import { timingOf, type DynamicConfig } from '../../domain/dynamic-config.ts';
import { ghostSighting, leaderTimeline, type CycleDecision, type GhostSighting, type SameNumberFork } from '../../domain/ha-cycle.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { DatabaseState } from '../../domain/states.ts';
import type { LocalPosition } from '../../domain/timeline-history.ts';

/** What the rest of the node reads of the trackers (the snapshot, the member key, the admin commands). */
export interface CycleFacts {
  /** Since when this incarnation of the leader key has named a member without a member key (ha-cycle.ts `ghostSighting`). */
  readonly ghostLeader: GhostSighting | undefined;
  /** Epoch ms since when this agent has seen no leader key (synchronous quorum votes settle after it). */
  readonly noLeaderSinceMs: number | undefined;
  /** Epoch ms since when a running replica has not streamed. */
  readonly notStreamingSinceMs: number | undefined;
  /**
   * The newest timeline this running replica has replayed into, as far as its probes showed
   * (pg_stat_wal_receiver.received_tli while streaming): once the receiver is gone the probe only
   * has the last restartpoint's timeline, which may be older. 0 while the database does not run as a replica.
   */
  readonly replicaTimeline: number;
  /** Why the local data diverged from the leader's timeline, while it does. */
  readonly divergedReason: string | undefined;
  /** The local WAL a re-clone of the diverged, stopped data directory would throw away (an operator's POST /reinitialize takes its receipt). */
  readonly discardPlan: DiscardPlan | undefined;
  /** A fork on the leader's own timeline number found while this data directory ran (decideCycle's sameNumberFork); cleared with the data or a new leader timeline. */
  readonly sameNumberFork: SameNumberFork | undefined;
  /** Consecutive failed starts (or clones). */
  readonly startFailures: number;
  /** Epoch ms before which a failed start is not tried again; undefined: no wait. */
  readonly nextStartAtMs: number | undefined;
  /** System identifier of the local data, when known (pg_controldata). */
  readonly sysid: string | undefined;
  /**
   * While PostgreSQL is not running (stopped, crashed, starting, start failed): where the data
   * directory's WAL ended when the agent last read it with PostgreSQL stopped (its WAL end, else
   * the later of the checkpoint and the minimum recovery point: a lower bound), and its timeline.
   * Published as the status document's `local_wal_end` (finding 28, docs/simulation.md).
   */
  readonly stoppedWal: { walBytes: bigint; timeline: number } | undefined;
}

/** The local database as the cycle saw it (what the divergence verdict's lifetime depends on). */
export interface LocalSeen {
  state: DatabaseState;
  role: string;
  hasData: boolean;
  probe: PgStatus | undefined;
}

/** The states in which the last stopped position is still where the data directory's WAL ends (or a lower bound of it). */
const KEEPS_STOPPED_WAL: ReadonlySet<DatabaseState> = new Set<DatabaseState>(['stopped', 'crashed', 'starting', 'start_failed']);

/** CycleFacts as this module writes them. */
type Tracked = { -readonly [K in keyof CycleFacts]: CycleFacts[K] };

/** The facts carried between cycles (CycleFacts), and their one writer. */
export class CycleTrackers {
  private readonly s: Tracked = {
    ghostLeader: undefined,
    noLeaderSinceMs: undefined,
    notStreamingSinceMs: undefined,
    replicaTimeline: 0,
    divergedReason: undefined,
    discardPlan: undefined,
    sameNumberFork: undefined,
    startFailures: 0,
    nextStartAtMs: undefined,
    sysid: undefined,
    stoppedWal: undefined,
  };

  constructor(
    private readonly deps: {
      /** Logs and journals a node notice (`lock.ghost`, `diverged`, `start.backoff`). */
      notice(type: string, text: string): void;
    },
  ) {}

  /** The facts, read-only (the same object every time; its fields change). */
  get facts(): CycleFacts {
    return this.s;
  }

  /** The leader key of `view`, read at `seenMs` (after the keepalive and the lock's renewal): ghost sighting and no-leader-since. `cycleStartMs`: when the cycle began. */
  observeLeader(view: ClusterView, seenMs: number, cycleStartMs: number): void {
    const previous = this.s.ghostLeader;
    this.s.ghostLeader = ghostSighting(previous, view, seenMs);
    if (this.s.ghostLeader && this.s.ghostLeader !== previous)
      this.deps.notice('lock.ghost', `the leader key names '${this.s.ghostLeader.name}', which has no member key`);
    if (view.leader) this.s.noLeaderSinceMs = undefined;
    else this.s.noLeaderSinceMs ??= cycleStartMs;
  }

  /** The system identifier read from pg_controldata (the gather step, or the bootstrap winner's finishBootstrap). */
  noteSystemIdentifier(sysid: string): void {
    this.s.sysid = sysid;
  }

  /**
   * The stopped data directory's position this cycle (`local`: read only while stopped, not
   * busy): kept through `starting` and the other states PostgreSQL runs in without serving yet,
   * dropped once it runs, or its data is gone or being replaced.
   */
  observeStoppedWal(state: DatabaseState, hasData: boolean, local: LocalPosition | undefined): void {
    if (!hasData || !KEEPS_STOPPED_WAL.has(state)) {
      this.s.stoppedWal = undefined;
      return;
    }
    if (!local) return;
    const floor = local.checkpointLsn > local.minRecoveryLsn ? local.checkpointLsn : local.minRecoveryLsn;
    this.s.stoppedWal = { walBytes: local.walEndLsn ?? floor, timeline: local.timeline };
  }

  /** The local probe of this cycle (`state`: the database machine's): not streaming since, replica timeline. */
  observeProbe(state: DatabaseState, probe: PgStatus | undefined, nowMs: number): void {
    if (!probe || !probe.inRecovery || probe.streaming) this.s.notStreamingSinceMs = undefined;
    else this.s.notStreamingSinceMs ??= nowMs;
    if (state !== 'running' || !probe?.inRecovery) this.s.replicaTimeline = 0;
    else this.s.replicaTimeline = Math.max(this.s.replicaTimeline, probe.timeline);
  }

  /**
   * After decideCycle: the divergence verdict stays until the member runs again (re-cloned,
   * rewound, promoted or streaming) or its data is gone: a cycle that returns early (DCS down, a
   * stop in progress) does not clear it. A same-number fork is kept for the data directory it was
   * found in (CycleInput.sameNumberFork) while `view`'s leader timeline is the fork's. Returns
   * true when a failed rewind is to be forgotten (the data directory is gone or runs again).
   */
  afterDecision(decision: CycleDecision, local: LocalSeen, view: ClusterView): boolean {
    const forgetRewindFailure =
      !local.hasData || (local.state === 'running' && (local.role === 'primary' || local.probe?.streaming === true));
    if (decision.sameNumberFork) this.s.sameNumberFork = decision.sameNumberFork;
    if (
      !local.hasData ||
      local.state === 'creating_replica' ||
      (this.s.sameNumberFork && this.s.sameNumberFork.timeline !== leaderTimeline(view))
    ) {
      this.s.sameNumberFork = undefined;
    }
    if (decision.diverged !== undefined) {
      if (decision.diverged !== this.s.divergedReason) this.deps.notice('diverged', decision.diverged);
      this.s.divergedReason = decision.diverged;
      this.s.discardPlan = decision.discard;
      return forgetRewindFailure;
    }
    const runsAgain = local.state === 'running' && (local.role === 'primary' || local.probe?.streaming === true);
    if (this.s.divergedReason !== undefined && (!local.hasData || local.state === 'creating_replica' || runsAgain)) {
      this.s.divergedReason = undefined;
      this.s.discardPlan = undefined;
    }
    return forgetRewindFailure;
  }

  /**
   * Start back-off: after each failed start (or clone: creating_replica → stopped) the next one
   * waits loop_wait × 2^(failures−1), at most max(ttl, 4 × loop_wait), so a start that keeps
   * failing is not retried hundreds of times a second; running again resets it. `prev` and
   * `value`: the database machine's state before and after a transition.
   */
  startOutcome(prev: string, value: string, config: DynamicConfig, nowMs: number): void {
    if (value === 'running') {
      this.resetStartBackoff();
    } else if (
      value === 'start_failed' ||
      value === 'initdb_failed' ||
      value === 'custom_bootstrap_failed' ||
      (prev === 'creating_replica' && value === 'stopped')
    ) {
      this.s.startFailures += 1;
      const { ttlMs, loopWaitMs } = timingOf(config);
      const capMs = Math.max(ttlMs, 4 * loopWaitMs);
      const waitMs = Math.min(loopWaitMs * 2 ** Math.min(this.s.startFailures - 1, 16), capMs);
      this.s.nextStartAtMs = nowMs + waitMs;
      if (this.s.startFailures > 1)
        this.deps.notice(
          'start.backoff',
          `bootstrap, start or clone failed ${this.s.startFailures} times in a row: next attempt in ${Math.round(waitMs / 1000)} s`,
        );
    }
  }

  /** A new leader is a new clone source and upstream: failed starts and clones start over. */
  resetStartBackoff(): void {
    this.s.startFailures = 0;
    this.s.nextStartAtMs = undefined;
  }
}
