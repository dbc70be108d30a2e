/**
 * One HA cycle's decision: cluster view + local status + dynamic config + now → actions.
 * Pure; the node gathers the facts (lease keepalive, lock renewal, peer statuses), calls
 * `decideCycle`, then carries out the actions in order. Rules follow patroni.md §3.2–3.6 and
 * shared/docs/dcs-layout.md; each result carries the one sentence the cycle logs.
 */
import { clusterTimeline, type ClusterView } from './cluster.ts';
import { timingOf, type DynamicConfig } from './dynamic-config.ts';
import { failsafeListed, failsafeRaceVeto } from './failsafe.ts';
import { fencePlace } from './quorum-failover.ts';
import {
  candidateRefusal,
  isEligibleCandidate,
  isHealthiest,
  publishedPositions,
  type CandidateOptions,
  type PeerStatus,
} from './leader-race.ts';
import { mayPromote, type Tags } from './member.ts';
import { decideScheduled } from './schedule.ts';
import type { DatabaseState, Role } from './states.ts';
import { remoteText, standbyClusterOf, type StandbyClusterConfig } from './standby-cluster.ts';
import { syncKeyOf, syncSettings, VOTE_SETTLE_MS, type SyncRaceRule } from './sync-standby.ts';
import { syncAllowed } from './switchover-admission.ts';
import { checkDivergence, type LocalPosition } from './timeline-history.ts';
import { discardedRanges, type DiscardPlan } from './discarded.ts';
import { upstreamMember } from './upstream.ts';

/** Facts the node gathered for this cycle. */
export interface CycleInput {
  name: string;
  /** Epoch ms. */
  nowMs: number;
  config: DynamicConfig;
  view: ClusterView;
  /** The lease keepalive (and lock renewal, when held) reached the DCS this cycle. */
  dcsOk: boolean;
  /**
   * This agent held the leader lock when the cycle began (src/node/lock/leader-lock.ts): acquired or
   * renewed by this process, not released, not lost. The only source of "I lead": a view that
   * names this member without it is stale (a released lock) and is never acted upon.
   */
  holdsLock: boolean;
  /** Result of renewing the lock this cycle, when held ('failed': lost, or the DCS did not answer). */
  lockRenewal?: 'ok' | 'failed';
  db: {
    state: DatabaseState;
    role: Role;
    /** An effect (initdb, clone, start, stop, restart, promote) is in progress. */
    busy: boolean;
  };
  /** The data directory holds a cluster. */
  hasData: boolean;
  /**
   * This member lists a replica creation method with `no_leader` (src/domain/replica-methods.ts
   * hasNoLeaderMethod): with no data and no leader in an initialized cluster, it clones by it.
   */
  noLeaderClone?: boolean;
  /** Local WAL position: primary flush, replica max(received, replayed); bytes. */
  walBytes: bigint;
  timeline: number;
  /** Where the stopped data directory ended (pg_controldata), when not running. */
  local?: LocalPosition;
  /** A running replica's local history of its timeline (`pg_wal/<TLI>.history`), when above 1 and known. */
  localHistory?: LocalPosition['history'];
  /** A running replica's promotion marker, when it records the replica's timeline (a former primary). */
  localPromotedBy?: string;
  /**
   * The database is stopped because this agent demoted it (any mode) and has not started it
   * since: in pause it is started again as a replica (after the divergence check), as the
   * reference restarts what it demoted itself.
   */
  demoted: boolean;
  /**
   * A running replica's WAL receiver: the member its primary_conninfo points at (undefined: none
   * configured yet), whether it streams, and since when (epoch ms) it has not.
   */
  replication?: { upstream: string | undefined; streaming: boolean; notStreamingSinceMs?: number };
  /** Epoch ms before which a failed start is not tried again (start back-off); undefined: no wait. */
  nextStartAtMs?: number;
  /**
   * The leader's timeline and WAL position (flush, bytes) as its status document showed it this
   * cycle: read only for a running replica that has not streamed for notStreamingGraceMs (a WAL
   * on the leader's timeline number that goes past the leader's own is another lineage).
   */
  leaderWal?: { timeline: number; walBytes: bigint };
  /**
   * A fork that timeline numbers cannot show, found while this member ran (sameNumberFork): its
   * WAL went past the leader's on the same timeline number. Kept by the node until the data
   * directory is replaced or the leader's timeline changes; a stopped member on that timeline
   * then counts as diverged (the history files alone would let it start and stall again).
   */
  sameNumberFork?: SameNumberFork;
  /**
   * Epoch ms since when this agent has seen the leader key of the view (this incarnation of it)
   * name a member without a member key (a ghost lock; `ghostSighting`).
   */
  ghostLeaderSinceMs?: number;
  /**
   * Epoch ms since when this agent has seen no leader key (absent: a leader key, or not tracked).
   * In synchronous `quorum` mode the votes of peers count only once the peers' published WAL
   * positions were probed after the former primary stopped (sync-standby.ts VOTE_SETTLE_MS).
   */
  noLeaderSinceMs?: number;
  /** DCS unreachable, failsafe mode: every member the `failsafe` key lists accepted this cycle's POST /failsafe in time (src/node/lock/failsafe.ts). */
  failsafeAccepted?: boolean;
  /** Failsafe mode: the member whose POST /failsafe this member accepted less than ttl ago (it still leads: no race). */
  failsafeLeader?: string;
  /** Failsafe mode: ms left of the first ttl after this agent started (an acceptance before a restart is not remembered: no race meanwhile). */
  failsafeRestartGraceMs?: number;
  /**
   * Failsafe mode: epoch ms until which POST /failsafe calls bind this member, whatever their age:
   * the last call it accepted from another member + ttl and, unless it runs as primary, its
   * agent's start + ttl (calls accepted before a restart are forgotten). Undefined: neither known.
   * The sender may run as primary and have commits acknowledged until then, after its leader key
   * is gone; in mode `quorum` the votes of peers count only VOTE_SETTLE_MS after this instant
   * (finding 20, docs/simulation.md).
   */
  failsafeBoundUntilMs?: number;
  /**
   * The last pg_rewind that failed: from which leader, on which of its timelines, and why. A
   * failed rewind is never tried again against the same leader timeline (docs/ha.md "Rewind");
   * the node forgets it when an operator reinitializes the member or the rewind settings change.
   */
  rewindFailure?: RewindFailure;
  /** This agent won the `initialize` race in this process lifetime. */
  initializedByMe: boolean;
  /**
   * The bootstrap this member won failed (initdb, the custom bootstrap or its first start):
   * `<action> failed: <reason>`. The `initialize` key is then given back (as the reference's
   * cancel_initialization), so the cluster bootstraps once the cause is fixed.
   */
  bootstrapFailed?: string;
  /** System identifier of the local data, when known. */
  sysid?: string;
  tags: Tags;
  /** Statuses of the other members (fetched when there is no leader, or for a switchover). */
  peers: PeerStatus[];
  /**
   * Where the scheduled switchover machine stands (`wait` before the instant, `run` at it,
   * `stale` when dropped); undefined: derive it from the key's `scheduled_at` and now.
   */
  switchoverPhase?: 'wait' | 'run' | 'stale';
}

/** What the node does, in order. */
export type CycleAction =
  | { kind: 'bootstrap' }
  | { kind: 'finishBootstrap' }
  /** The bootstrap this member won failed: delete the `initialize` key it holds (still empty), so the race can run again. */
  | { kind: 'cancelBootstrap' }
  | { kind: 'clone'; from: string }
  /** No data, no leader, an initialized cluster: create the replica by this member's `no_leader` methods (from a repository). */
  | { kind: 'cloneWithoutLeader' }
  /** `remote`: the standby leader of a standby cluster, streaming from `standby_cluster` host:port. */
  | { kind: 'start'; role: 'primary' | 'replica'; leader?: string; remote?: true }
  | { kind: 'reinitialize' }
  | { kind: 'acquireLock' }
  | { kind: 'promote' }
  /** `demote-cluster`: the primary of a cluster that became a standby cluster; it keeps the lock and restarts as the standby leader. */
  | { kind: 'demote'; mode: 'graceful' | 'immediate' | 'offline' | 'demote-cluster'; releaseLock: boolean }
  | { kind: 'releaseLock' }
  /** Point a running replica at `upstream` (a `replicatefrom` member, src/domain/upstream.ts) or else the leader. */
  | { kind: 'follow'; leader: string; upstream?: string }
  /** The standby leader: point primary_conninfo (and slot, recovery settings) at the `standby_cluster` remote. */
  | { kind: 'followRemote' }
  | { kind: 'leaderDuties' }
  /** `refused`: why the leader refused the request (published in its member key for the API's answer). */
  | { kind: 'clearFailover'; refused?: string }
  /** Stop the local database (a replica whose WAL diverged from the leader's timeline). */
  | { kind: 'stop'; reason: string }
  /** Delete a leader key naming a member that has had no member key for longer than ttl. */
  | { kind: 'clearGhostLeader' }
  /**
   * Quorum failover: take the leader key from `leader`, whose fence is complete (compare-and-set
   * on the leader key at `leaderRevision` and the `sync` key at `syncRevision`), then promote.
   */
  | { kind: 'takeLeader'; leader: string; leaderRevision: string; syncRevision: string }
  /** pg_rewind the stopped, diverged data directory from `leader` (on `timeline`), then start as its replica. */
  | { kind: 'rewind'; leader: string; timeline: number };

/** A fork on the leader's own timeline number (CycleInput.sameNumberFork, CycleDecision.sameNumberFork). */
export interface SameNumberFork {
  leader: string;
  timeline: number;
  /** This member's WAL end and the leader's, when it was found, bytes. */
  localEnd: bigint;
  leaderEnd: bigint;
}

/** A failed pg_rewind (CycleInput.rewindFailure). */
export interface RewindFailure {
  leader: string;
  /** The leader's timeline the rewind was decided on. */
  timeline: number;
  reason: string;
}

/** The decision: actions plus the cycle's one sentence. */
export interface CycleDecision {
  actions: CycleAction[];
  message: string;
  /** Set when the local data diverged from the leader's timeline: why (shown in /ha, journal, metric). */
  diverged?: string;
  /**
   * The local WAL a rewind or re-clone of a stopped, diverged data directory throws away
   * (src/domain/discarded.ts discardedRanges): set on the decision that rewinds or re-clones, and
   * on one that keeps the member stopped (an operator's POST /reinitialize would discard it). The
   * node takes its receipt before carrying the actions out (docs/ha.md "Receipts").
   */
  discard?: DiscardPlan;
  /** Set when this decision found a fork on the leader's own timeline number (the node keeps it: CycleInput.sameNumberFork). */
  sameNumberFork?: SameNumberFork;
}

const RUNNING_STATES: DatabaseState[] = ['running'];

function d(message: string, ...actions: CycleAction[]): CycleDecision {
  return { actions, message };
}

/** The member to clone from: a running member tagged `clonefrom` other than me, else the leader. */
export function cloneSource(view: ClusterView, me: string): string | undefined {
  const tagged = view.members.find((m) => m.name !== me && m.data.tags?.clonefrom === true && m.data.state === 'running');
  return tagged?.name ?? view.leader?.name;
}

/**
 * The leader's timeline as far as the view tells: the larger of the history key's (last entry +
 * 1) and the timeline the leader publishes in its member key; 0 when unknown. A leader that
 * promoted but has not written `history` yet shows a timeline its history does not describe,
 * and the divergence check then answers "unknown" (wait), never "ok".
 */
export function leaderTimeline(view: ClusterView): number {
  const fromHistory = clusterTimeline(view);
  const leader = view.leader?.name;
  const published = view.members.find((m) => m.name === leader)?.data.timeline ?? 0;
  return Math.max(fromHistory, published);
}

/**
 * The `history` key when it describes the current leader's lineage: its last entry (the timeline
 * the leader's own timeline forked from) names the current leader as the member that promoted.
 * A history written by an earlier leader (the current one promoted and has not rewritten it yet)
 * is undefined here, so a divergence check answers "unknown" (wait), never "ok" on another
 * lineage that reuses the same timeline numbers.
 */
export function currentHistory(view: ClusterView): ClusterView['history'] {
  const history = view.history;
  const last = history?.[history.length - 1];
  const promotedBy = last?.[4];
  if (last && promotedBy !== undefined && view.leader && promotedBy !== view.leader.name) return undefined;
  return history;
}

/**
 * The leader's member key shows it running as primary: its promotion has finished, so the timeline
 * it publishes is the one it writes on. Before that, a divergence check answers "unknown" (wait).
 */
function leaderIsPrimary(view: ClusterView): boolean {
  const leader = view.leader?.name;
  const m = view.members.find((x) => x.name === leader);
  return m?.data.role === 'primary' && m.data.state === 'running';
}

/**
 * The leader may be followed: running as primary, or in a standby cluster running as the standby
 * leader (or still as primary, while a demote-cluster is under way).
 */
export function leaderReady(view: ClusterView, standby: boolean): boolean {
  if (!standby) return leaderIsPrimary(view);
  const leader = view.leader?.name;
  const m = view.members.find((x) => x.name === leader);
  return (m?.data.role === 'standby_leader' || m?.data.role === 'primary') && m.data.state === 'running';
}

/** Below this long without streaming, a replica following its leader is given time (ms). */
export function notStreamingGraceMs(config: DynamicConfig): number {
  const { loopWaitMs, retryTimeoutMs } = timingOf(config);
  return Math.max(2 * loopWaitMs, retryTimeoutMs);
}

/**
 * One incarnation of the leader key seen naming a member that has no member key (a ghost lock):
 * the key's value (`name`) and mod revision (`revision`, what the delete compares), and since
 * when (`sinceMs`, epoch ms on the agent's clock) this agent has seen exactly that key without
 * the member's key. `decideCycle` reads `sinceMs` as `CycleInput.ghostLeaderSinceMs`.
 */
export interface GhostSighting {
  name: string;
  revision: string;
  sinceMs: number;
}

/**
 * The ghost sighting after a cycle read `view` at `seenMs` (epoch ms: when the view was in hand,
 * after the keepalive and the lock's renewal, not when the cycle began). Undefined when there is
 * no leader key or it names a member; `previous` when it is the same key (same name and mod
 * revision); otherwise a new sighting from `seenMs`.
 *
 * Why: the ghost rule (docs/ha.md "A leader key naming an unknown member") deletes a key that
 * has named a non-member for longer than ttl. A live holder creates the key and publishes its
 * member key only at the end of that cycle, so the count must start no earlier than the key
 * existed: dated by the start of a cycle that stalled (a frozen or late agent), or carried over
 * from an earlier key of the same name, a sighting of a key created a moment ago looked ttl old
 * and the live lock was deleted under its holder's promotion (finding 22, docs/simulation.md).
 */
export function ghostSighting(previous: GhostSighting | undefined, view: ClusterView, seenMs: number): GhostSighting | undefined {
  const key = view.leader;
  if (!key || view.members.some((m) => m.name === key.name)) return undefined;
  if (previous && previous.name === key.name && previous.revision === key.revision) return previous;
  return { name: key.name, revision: key.revision, sinceMs: seenMs };
}

/** What every phase of decideCycle reads besides the input. */
interface CycleContext {
  paused: boolean;
  /** This agent holds the leader lock (CycleInput.holdsLock). */
  iLead: boolean;
  /** The leader: this member when it holds the lock, else the view's leader key. */
  leader: string | undefined;
  /**
   * A standby cluster (docs/ha.md "Standby cluster"): its leader replicates from the remote and
   * is never promoted; its other members follow the standby leader without divergence checks
   * (the remote's timelines are not described by this cluster's history key).
   */
  sc: StandbyClusterConfig | undefined;
  standby: boolean;
}

/**
 * The decision of one HA cycle: the first phase that decides, in the reference's order
 * (patroni.md §3.2): the DCS, an effect in progress, a lock this agent released, an empty data
 * directory, another cluster's data, the bootstrap winner, a ghost leader key, a stopped
 * database, the leader race, the lock holder, a replica.
 */
export function decideCycle(i: CycleInput): CycleDecision {
  const sc = standbyClusterOf(i.config);
  const c: CycleContext = {
    paused: i.config.pause === true,
    iLead: i.holdsLock,
    leader: i.holdsLock ? i.name : i.view.leader?.name,
    sc,
    standby: sc !== undefined,
  };
  return (
    whileDcsDown(i, c) ??
    whileBusy(i, c) ??
    afterFailedBootstrap(i, c) ??
    onReleasedLock(i, c) ??
    withoutData(i, c) ??
    otherSystem(i) ??
    afterBootstrap(i, c) ??
    onGhostLeader(i, c) ??
    asFenced(i, c) ??
    whileStopped(i, c) ??
    (!c.leader ? leaderRace(i, c) : c.iLead ? asLockHolder(i, c) : asReplica(i, c.leader))
  );
}

/** The DCS did not answer this cycle: a running primary demotes, unless failsafe mode keeps it. */
function whileDcsDown(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  if (i.dcsOk) return undefined;
  if (!c.paused && i.db.role === 'primary' && i.db.state === 'running') {
    if (i.failsafeAccepted === true)
      return d('continue to run as a leader because failsafe mode is enabled and all members are accessible');
    return d('demoted self because DCS is not accessible and I was a leader', { kind: 'demote', mode: 'offline', releaseLock: false });
  }
  return d('DCS is not accessible');
}

/** An effect runs: wait, except that a primary whose lock renewal failed demotes at once. */
function whileBusy(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  if (!i.db.busy) return undefined;
  if (c.iLead && i.lockRenewal === 'failed' && i.db.role === 'primary') {
    return d('demoted self because failed to update leader lock in DCS', { kind: 'demote', mode: 'immediate', releaseLock: false });
  }
  return d(`${i.db.state} in progress`);
}

/**
 * The bootstrap this member won failed and nobody leads: the `initialize` key it holds (still
 * empty: no system identifier published) is given back, with the reason in the log; the race
 * runs again after the start back-off, so the cluster bootstraps once the cause is fixed
 * (issue 30, item 1; the reference's cancel_initialization).
 */
function afterFailedBootstrap(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  if (i.bootstrapFailed === undefined || !i.initializedByMe || i.view.initialize !== '' || c.leader || c.sc) return undefined;
  return d(`removing initialize key after failed attempt to bootstrap the cluster: ${i.bootstrapFailed}`, { kind: 'cancelBootstrap' });
}

/**
 * The view names this member, but this agent released or lost that lock: the view is stale
 * (the delete has not reached the cache yet) or the key is not ours. Never lead on it, never
 * follow it: a released lock is won back only through the leader race.
 */
function onReleasedLock(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  if (c.iLead || c.leader !== i.name) return undefined;
  if (i.db.role === 'primary' && i.db.state === 'running') {
    return d('demoting self because I do not hold the leader lock the view shows for me', {
      kind: 'demote',
      mode: 'immediate',
      releaseLock: false,
    });
  }
  return d('the leader key still names me but I released or lost it: waiting for it to clear');
}

/** An empty data directory: release the lock, clone from the leader, win the bootstrap race, or wait. */
function withoutData(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  if (i.hasData) return undefined;
  const { view, name } = i;
  if (c.iLead) return d('released leader key voluntarily as data dir empty and currently leader', { kind: 'releaseLock' });
  if (c.leader) {
    if (i.nextStartAtMs !== undefined && i.nowMs < i.nextStartAtMs) {
      return d(`clone failed: next attempt in ${Math.ceil((i.nextStartAtMs - i.nowMs) / 1000)} s`);
    }
    const from = cloneSource(view, name) ?? c.leader;
    return d(`trying to bootstrap from ${from === c.leader ? 'leader' : 'replica'} '${from}'`, { kind: 'clone', from });
  }
  if (view.initialize === undefined && !c.paused && mayPromote(i.tags)) {
    if (i.nextStartAtMs !== undefined && i.nowMs < i.nextStartAtMs) {
      return d(`bootstrap failed: next attempt in ${Math.ceil((i.nextStartAtMs - i.nowMs) / 1000)} s`);
    }
    if (c.sc) return d(`trying to bootstrap a new standby cluster from ${remoteText(c.sc)}`, { kind: 'bootstrap' });
    return d('trying to bootstrap a new cluster', { kind: 'bootstrap' });
  }
  // This agent won the race of a standby cluster and its clone from the remote failed: clone again.
  if (c.sc && i.initializedByMe && view.initialize === '' && !c.paused) {
    if (i.nextStartAtMs !== undefined && i.nowMs < i.nextStartAtMs) {
      return d(`clone failed: next attempt in ${Math.ceil((i.nextStartAtMs - i.nowMs) / 1000)} s`);
    }
    return d(`trying again to bootstrap the standby cluster from ${remoteText(c.sc)}`, { kind: 'bootstrap' });
  }
  // An initialized cluster (not a bootstrap under way) with no leader: a no_leader method restores
  // from a repository (the reference's "bootstrap (without leader)"); the member then starts as a
  // replica and takes part in the race like any other.
  if (i.noLeaderClone && view.initialize !== undefined && view.initialize !== '' && !c.paused) {
    if (i.nextStartAtMs !== undefined && i.nowMs < i.nextStartAtMs) {
      return d(`clone failed: next attempt in ${Math.ceil((i.nextStartAtMs - i.nowMs) / 1000)} s`);
    }
    return d('no leader: creating the replica by a no_leader method (bootstrap without leader)', { kind: 'cloneWithoutLeader' });
  }
  return d('waiting for leader to bootstrap');
}

/** Data of another cluster (another system identifier): never joins. */
function otherSystem(i: CycleInput): CycleDecision | undefined {
  if (i.sysid && i.view.initialize && i.view.initialize !== i.sysid) {
    return d(`system identifier ${i.sysid} differs from the cluster's ${i.view.initialize}: not joining`);
  }
  return undefined;
}

/** The bootstrap winner's database runs: publish the identifier and the configuration, take the lock. */
function afterBootstrap(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  const { db } = i;
  if (
    i.initializedByMe &&
    !c.leader &&
    db.state === 'running' &&
    (db.role === 'primary' || (c.standby && db.role === 'replica')) &&
    i.view.initialize === ''
  ) {
    return d('initialized a new cluster', { kind: 'finishBootstrap' });
  }
  return undefined;
}

/**
 * A leader key naming a member that has no member key: nobody renews it as a live agent would
 * (the member key shares the holder's lease and is re-published every cycle). After ttl it is
 * deleted with a compare-and-set on its revision, and the race follows (docs/ha.md).
 */
function onGhostLeader(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  const { leader } = c;
  if (c.iLead || !leader || i.view.members.some((m) => m.name === leader)) return undefined;
  const since = i.ghostLeaderSinceMs ?? i.nowMs;
  const waitedMs = i.nowMs - since;
  if (!c.paused && waitedMs >= timingOf(i.config).ttlMs) {
    return d(`leader key names '${leader}', which has had no member key for ${Math.round(waitedMs / 1000)} s: clearing it`, {
      kind: 'clearGhostLeader',
    });
  }
  const demote: CycleAction[] =
    i.db.role === 'primary' && i.db.state === 'running' ? [{ kind: 'demote', mode: 'immediate', releaseLock: false }] : [];
  return d(`leader key names '${leader}', which is not a member: not following it`, ...demote);
}

/** The database does not run: in pause only a demoted member starts; else start as the lock holder or as a replica (after the back-off). */
function whileStopped(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  if (RUNNING_STATES.includes(i.db.state)) return undefined;
  if (c.paused) {
    if (c.iLead) return d('removed leader lock because the database is not running', { kind: 'releaseLock' });
    if (!i.demoted || !c.leader) return d('database is not running: paused, not starting it');
  }
  if (c.iLead) return startAsLockHolder(i, c);
  if (i.nextStartAtMs !== undefined && i.nowMs < i.nextStartAtMs) {
    return d(`start failed: next attempt in ${Math.ceil((i.nextStartAtMs - i.nowMs) / 1000)} s`);
  }
  if (c.leader) return startAsReplica(i, c.leader, c.standby);
  return d('starting as a secondary (no leader)', { kind: 'start', role: 'replica' });
}

/**
 * Quorum failover (docs/ha.md "Quorum failover", src/domain/quorum-failover.ts): this member has
 * fenced the leader (the `sync` key's fence of that leader lists it), so it never streams from
 * that leader again while listed: a database that does not run starts without an upstream, a
 * running one is not pointed at it. Once the fence silences the leader, its taker (the furthest
 * WAL end) takes the leader key from it and promotes; the others wait for the new leader.
 */
function asFenced(i: CycleInput, c: CycleContext): CycleDecision | undefined {
  if (c.iLead || !c.leader || c.paused || c.standby || i.db.role === 'primary') return undefined;
  const place = fencePlace(i.config, i.view, i.name);
  if (!place) return undefined;
  if (!RUNNING_STATES.includes(i.db.state)) {
    if (i.nextStartAtMs !== undefined && i.nowMs < i.nextStartAtMs) {
      return d(`start failed: next attempt in ${Math.ceil((i.nextStartAtMs - i.nowMs) / 1000)} s`);
    }
    return d(`fenced ${place.leader}: starting as a secondary without an upstream`, { kind: 'start', role: 'replica' });
  }
  if (place.incomplete !== undefined) return d(`fenced ${place.leader}, not streaming from it: ${place.incomplete}`);
  if (place.taker === i.name && mayPromote(i.tags)) {
    // maximum_lag_on_failover holds here too (what lies beyond was never acknowledged, but the
    // operator bounds what a failover may discard): else the lease-based failover decides.
    const ahead = takeLag(i);
    if (ahead !== undefined) {
      return d(`the fence silences ${place.leader}, but I am more than maximum_lag_on_failover behind ${ahead}: not taking over`);
    }
    return d(`the fence silences ${place.leader}: taking the leader key from it (quorum failover)`, {
      kind: 'takeLeader',
      leader: place.leader,
      leaderRevision: place.leaderRevision,
      syncRevision: place.syncRevision,
    });
  }
  return d(`the fence silences ${place.leader}: ${place.taker ?? 'nobody'} has the furthest WAL and takes over`);
}

/**
 * The member or position more than maximum_lag_on_failover ahead of this member's WAL (the
 * leader's last optime, a reachable peer), or undefined: a quorum take respects the lag rule.
 */
function takeLag(i: CycleInput): string | undefined {
  const maxLag = BigInt(i.config.maximum_lag_on_failover);
  const optime = BigInt(i.view.status?.optime ?? 0);
  if (optime > 0n && optime - i.walBytes > maxLag) return "the leader's last optime";
  return i.peers.find((p) => p.reachable && p.walBytes !== undefined && p.walBytes - i.walBytes > maxLag)?.name;
}

/** The lock holder's database does not run: start it as primary (or as the standby leader), or give the lock up. */
function startAsLockHolder(i: CycleInput, c: CycleContext): CycleDecision {
  const { db } = i;
  if (i.lockRenewal === 'failed') return d('not starting as primary: failed to update leader lock in DCS');
  if (c.sc) {
    if (db.state === 'start_failed')
      return d('removed leader key after trying and failing to start the standby leader', { kind: 'releaseLock' });
    return d(`starting as the standby leader, replicating from ${remoteText(c.sc)}`, { kind: 'start', role: 'replica', remote: true });
  }
  if (db.state === 'start_failed' && db.role === 'primary') {
    return d('removed leader key after trying and failing to start the database', { kind: 'releaseLock' });
  }
  // A data directory that last ran as a replica (a promotion cut short by a crash) starts as a
  // replica and is promoted by the next cycle, so this leader makes its own timeline instead
  // of writing on one another member made.
  if (i.local && /recovery/.test(i.local.clusterState)) {
    return d('starting as a replica to finish the promotion cut short', { kind: 'start', role: 'replica' });
  }
  return d('starting primary after failure', { kind: 'start', role: 'primary' });
}

/** A stopped member with a leader: start as its replica once its data is known not to have diverged (docs/ha.md "Divergence"). */
function startAsReplica(i: CycleInput, leader: string, standby: boolean): CycleDecision {
  const { view } = i;
  if (!i.local) {
    // A rewind that failed may leave pg_controldata unreadable: still no loop, and still wiped when allowed.
    if (rewindFailedFor(i, leader)) return diverged(i, leader, 'pg_controldata cannot be read after the failed rewind', false);
    return d(`waiting to know where the local WAL ends (pg_controldata) before following ${leader}`);
  }
  if (!leaderReady(view, standby))
    return d(`waiting for leader ${leader} to run as ${standby ? 'standby leader' : 'primary'} before following it`);
  if (!standby) {
    const verdict = checkDivergence(i.local, leaderTimeline(view), currentHistory(view));
    if (verdict.kind === 'diverged') return diverged(i, leader, verdict.reason, false);
    const fork = i.sameNumberFork;
    if (
      verdict.kind === 'ok' &&
      fork &&
      fork.leader === leader &&
      fork.timeline === leaderTimeline(view) &&
      i.local.timeline === fork.timeline
    ) {
      return diverged(i, leader, sameNumberForkText(fork), false);
    }
    if (verdict.kind === 'unknown') {
      if (
        i.local.clusterState === 'in production' &&
        i.local.timeline !== 0 &&
        i.local.timeline < leaderTimeline(view) &&
        !historyPending(view)
      ) {
        return diverged(i, leader, verdict.reason, false);
      }
      return d(`waiting for the timeline history of leader ${leader} before following it: ${verdict.reason}`);
    }
  }
  return d(`starting as a secondary of ${leader}`, { kind: 'start', role: 'replica', leader });
}

/**
 * In pause, with no leader key and no manual failover naming another member: a running primary
 * takes the leader lock when the cluster has no system identifier yet or it is this member's
 * (the reference's rule: patroni 3.0.2 ha.py is_healthiest_node, "in pause leader is the
 * healthiest only when no initialize or sysid matches with initialize"). Without it, a leader
 * whose key expired while no agent ran on it (a takeover or an agent restart in pause slower
 * than ttl, issue 26) stays without a leader key until the cluster is resumed, when the race may
 * elect another member. A standby leader runs in recovery and never takes the lock this way.
 */
function pausedPrimaryRace(i: CycleInput, c: CycleContext): boolean {
  if (c.standby || i.db.role !== 'primary' || i.db.state !== 'running') return false;
  if (i.view.failover?.value.member !== undefined) return false;
  return !i.view.initialize || i.sysid === i.view.initialize;
}

/** The database runs and there is no leader: the leader race (isHealthiest), unless paused or failsafe mode vetoes it. */
function leaderRace(i: CycleInput, c: CycleContext): CycleDecision {
  const { name, view, config, db } = i;
  const failover = view.failover?.value;
  // In pause only the candidate of a manual switchover/failover races (patroni.md §3.6), and a
  // running primary of this cluster's data, which is the healthiest then (pausedPrimaryRace).
  if (c.paused && failover?.member !== name) {
    if (pausedPrimaryRace(i, c)) return d('paused: acquiring the leader lock as the running primary', { kind: 'acquireLock' });
    return d('no leader: paused, no automatic failover');
  }
  const failsafeVeto = failsafeRaceVeto({
    name,
    config,
    view,
    ...(i.failsafeLeader !== undefined ? { acceptedLeader: i.failsafeLeader } : {}),
    ...(i.failsafeRestartGraceMs !== undefined ? { restartGraceMs: i.failsafeRestartGraceMs } : {}),
  });
  if (failsafeVeto) {
    if (db.role === 'primary') return d(`demoting self because ${failsafeVeto}`, { kind: 'demote', mode: 'immediate', releaseLock: false });
    return d(`following no leader: ${failsafeVeto}`);
  }
  const verdict = isHealthiest({
    self: { name, walBytes: i.walBytes, timeline: i.timeline, tags: i.tags },
    peers: i.peers,
    published: publishedPositions(view.members, name),
    leaderOptimeBytes: BigInt(view.status?.optime ?? 0),
    maxLagBytes: config.maximum_lag_on_failover,
    checkTimeline: config.check_timeline,
    clusterTimeline: clusterTimeline(view),
    ...(failover && (failover.member || failover.leader) ? { failover } : {}),
    ...syncRule(i),
    ...(config.failsafe_mode === true ? { failsafeListed: (n: string) => failsafeListed(config, view, n) } : {}),
  });
  if (verdict.healthy) {
    if (c.standby) return d(`acquiring the leader lock as the standby leader: ${verdict.reason}`, { kind: 'acquireLock' });
    return d(`acquiring the leader lock: ${verdict.reason}`, { kind: 'acquireLock' });
  }
  if (db.role === 'primary') return d(`demoting self because ${verdict.reason}`, { kind: 'demote', mode: 'immediate', releaseLock: false });
  return d(`following no leader: ${verdict.reason}`);
}

/** The lock holder's database runs: renewal failed → demote (not in pause); promote a replica; switchover requests; the leader's duties. */
function asLockHolder(i: CycleInput, c: CycleContext): CycleDecision {
  const { view, name } = i;
  if (i.lockRenewal === 'failed') {
    if (c.paused) return d('continue to run as primary after failing to update leader lock in DCS');
    return d('demoted self because failed to update leader lock in DCS', { kind: 'demote', mode: 'immediate', releaseLock: false });
  }
  if (c.sc) return decideStandbyLeader(i, c.sc);
  if (i.db.role !== 'primary') return d('promoted self to leader because I had the session lock', { kind: 'promote' });
  if (view.failoverInvalid) {
    return d(
      `ignoring an invalid failover key (${view.failoverInvalid.reason}): clearing it`,
      { kind: 'clearFailover' },
      { kind: 'leaderDuties' },
    );
  }
  const sw = decideSwitchover(i);
  if (sw) return sw;
  return d(`no action. I am (${name}), the leader with the lock`, { kind: 'leaderDuties' });
}

/** Another member leads and the database runs: a primary demotes; a replica follows the leader (decideFollow). */
function asReplica(i: CycleInput, leader: string): CycleDecision {
  if (i.db.role === 'primary') {
    return d('demoting self because I do not have the lock and I was a leader', { kind: 'demote', mode: 'immediate', releaseLock: false });
  }
  return decideFollow(i, leader);
}

/**
 * The race rule of synchronous mode: present while the mode is on and the `sync` key exists
 * (without a key the primary never acknowledged synchronously: asynchronous rules). In mode
 * `quorum` the peers' votes count from VOTE_SETTLE_MS after the last instant the former primary
 * may have sent WAL, as far as this member knows: when the leader key went (a primary stops
 * before its key goes) and, in failsafe mode, when the POST /failsafe calls binding this member
 * end (a primary on failsafe runs on without its key until its calls stop being accepted:
 * finding 20, docs/simulation.md). Peers are fetched after `nowMs`, the cycle's start. A peer's
 * vote also counts only when its WAL position was read after that instant (`votesReadAfterMs`,
 * finding 30).
 */
function syncRule(i: CycleInput): { sync?: SyncRaceRule } {
  // Synchronous mode is ignored in a standby cluster (patroni.md §3.8).
  if (standbyClusterOf(i.config)) return {};
  const mode = syncSettings(i.config).mode;
  if (mode === 'off' || !i.view.sync) return {};
  const lastWal = [i.noLeaderSinceMs, i.config.failsafe_mode === true ? i.failsafeBoundUntilMs : undefined].filter(
    (t): t is number => t !== undefined,
  );
  const lastWalMs = lastWal.length > 0 ? Math.max(...lastWal) : undefined;
  const settledAtMs = lastWalMs !== undefined ? lastWalMs + VOTE_SETTLE_MS : i.nowMs;
  return {
    sync: {
      mode,
      key: syncKeyOf(i.view.sync.value),
      ...(mode === 'quorum' && i.nowMs < settledAtMs ? { votesSettleInMs: settledAtMs - i.nowMs } : {}),
      ...(mode === 'quorum' && lastWalMs !== undefined ? { votesReadAfterMs: lastWalMs } : {}),
    },
  };
}

/** The history key lags the leader's published timeline (the new leader has not written it yet). */
function historyPending(view: ClusterView): boolean {
  return leaderTimeline(view) > clusterTimeline(view) || currentHistory(view) === undefined;
}

/**
 * A running replica and its leader: follow it, after checking that the local WAL has not gone
 * past the leader's switch point (a member about to point at a new leader, or one that has not
 * streamed for longer than notStreamingGraceMs).
 */
function decideFollow(i: CycleInput, leader: string): CycleDecision {
  const rep = i.replication;
  // A cascading replica streams from its `replicatefrom` member; the divergence checks below still
  // compare against the leader's timeline, which that member replays too.
  const upstream = upstreamMember(i.view, i.name, { tags: i.tags, leader }) ?? leader;
  const follow: CycleAction = upstream === leader ? { kind: 'follow', leader } : { kind: 'follow', leader, upstream };
  const via = upstream === leader ? '' : ` from ${upstream}`;
  const following = rep?.upstream === upstream;
  const stalledMs = rep && !rep.streaming && rep.notStreamingSinceMs !== undefined ? i.nowMs - rep.notStreamingSinceMs : 0;
  const stalled = following && stalledMs >= notStreamingGraceMs(i.config);
  const standby = standbyClusterOf(i.config) !== undefined;
  if (!following && !leaderReady(i.view, standby)) {
    return d(`waiting for leader ${leader} to run as ${standby ? 'standby leader' : 'primary'} before following it`);
  }
  if (!standby && (!following || stalled)) {
    const verdict = checkRunningDivergence(i.walBytes, i.timeline, leaderTimeline(i.view), currentHistory(i.view), {
      ...(i.localHistory ? { history: i.localHistory } : {}),
      ...(i.localPromotedBy ? { promotedBy: i.localPromotedBy } : {}),
    });
    if (verdict.kind === 'diverged') return diverged(i, leader, verdict.reason, true);
    if (verdict.kind === 'unknown' && !following) {
      return d(`waiting for the timeline history of leader ${leader} before following it: ${verdict.reason}`);
    }
  }
  if (stalled && !standby && upstream === leader) {
    const fork = sameNumberFork(i, leader);
    if (fork) {
      const dec = diverged(i, leader, sameNumberForkText(fork), true);
      return { ...dec, sameNumberFork: fork };
    }
  }
  if (stalled) {
    return d(`following a leader (${leader})${via} but not streaming for ${Math.round(stalledMs / 1000)} s`, follow);
  }
  return d(`no action. I am (${i.name}), a secondary, and following a leader (${leader})${via}`, follow);
}

/**
 * The lock holder of a standby cluster, its database running (docs/ha.md "Standby cluster"): a
 * replica streams from the remote and does the leader's duties (status, members' slots); a
 * primary (the cluster was just made a standby cluster: demote-cluster, patroni.md §3.4) stops,
 * keeps the lock and starts again as the standby leader. Never a promotion. A switchover request
 * hands the standby leader role over as on a primary.
 */
function decideStandbyLeader(i: CycleInput, sc: StandbyClusterConfig): CycleDecision {
  if (i.db.role === 'primary') {
    return d(`demoting self to standby leader: standby_cluster replicates from ${remoteText(sc)}`, {
      kind: 'demote',
      mode: 'demote-cluster',
      releaseLock: false,
    });
  }
  if (i.view.failoverInvalid) {
    return d(
      `ignoring an invalid failover key (${i.view.failoverInvalid.reason}): clearing it`,
      { kind: 'clearFailover' },
      { kind: 'followRemote' },
      { kind: 'leaderDuties' },
    );
  }
  const sw = decideSwitchover(i);
  if (sw) return sw.actions.some((a) => a.kind === 'demote') ? sw : { ...sw, actions: [{ kind: 'followRemote' }, ...sw.actions] };
  return d(
    `no action. I am (${i.name}), the standby leader with the lock, replicating from ${remoteText(sc)}`,
    { kind: 'followRemote' },
    { kind: 'leaderDuties' },
  );
}

/**
 * A running replica that does not stream although its timeline is the leader's: when its WAL goes
 * past the leader's own flush position (read this cycle), that WAL was written by another
 * promotion that made a timeline with the same number (history files cannot tell them apart; the
 * leader's walsender refuses "requested starting point … is ahead of the WAL flush position").
 * Undefined otherwise.
 */
function sameNumberFork(i: CycleInput, leader: string): SameNumberFork | undefined {
  const l = i.leaderWal;
  if (!l || l.timeline !== i.timeline || l.timeline !== leaderTimeline(i.view) || i.walBytes <= l.walBytes) return undefined;
  return { leader, timeline: l.timeline, localEnd: i.walBytes, leaderEnd: l.walBytes };
}

function sameNumberForkText(f: SameNumberFork): string {
  return `local WAL (to ${f.localEnd}) goes past the leader's own (${f.leaderEnd}) on the same timeline ${f.timeline}: another promotion made a timeline with this number`;
}

/**
 * Divergence of a running replica: checkDivergence with the end of the WAL it received or
 * replayed as the end of its WAL (which may reach the switch point, not go past it).
 */
function checkRunningDivergence(
  endLsn: bigint,
  timeline: number,
  leaderTl: number,
  history: ClusterView['history'],
  lineage: Pick<LocalPosition, 'history' | 'promotedBy'>,
) {
  if (timeline === 0) return { kind: 'unknown' as const, reason: 'local timeline unknown' };
  return checkDivergence(
    { clusterState: 'in archive recovery', timeline, checkpointLsn: 0n, minRecoveryLsn: endLsn, walEndLsn: endLsn, ...lineage },
    leaderTl,
    history,
  );
}

/**
 * Why pg_rewind cannot repair this diverged data directory, or undefined when it can. pg_rewind
 * needs wal_log_hints or data checksums, and it finds the fork by timeline numbers and switch
 * points only (the history files): on the leader's own timeline number it answers "no rewind
 * required", and a timeline with the leader's number and switch point but made by another
 * member's promotion (the promotion marker tells) looks common to it, so it would rewind from the
 * wrong point. Those fall back to re-clone or stop.
 */
function whyNotRewindable(local: LocalPosition, leaderTl: number, history: ClusterView['history']): string | undefined {
  if (local.rewindable === false) return 'the data directory has neither wal_log_hints = on nor data checksums';
  if (local.timeline === leaderTl) return `the local timeline has the leader's number ${leaderTl}: pg_rewind sees no fork`;
  if (local.promotedBy !== undefined && local.timeline > 1) {
    const made = history?.find((e) => e[0] === local.timeline - 1);
    const mine = local.history?.find((l) => l.timeline === local.timeline - 1);
    if (made && made[4] !== undefined && made[4] !== local.promotedBy && (!mine || BigInt(made[1]) === mine.switchLsn)) {
      return `timeline ${local.timeline} was made here by ${local.promotedBy} and on the leader by ${made[4]} at the same switch point: pg_rewind cannot tell them apart`;
    }
  }
  return undefined;
}

/** The failed rewind of this leader's current timeline, if any (a failure is never retried against it). */
function rewindFailedFor(i: CycleInput, leader: string): RewindFailure | undefined {
  const f = i.rewindFailure;
  return f && f.leader === leader && f.timeline === leaderTimeline(i.view) ? f : undefined;
}

/**
 * What a member whose WAL diverged from the leader's timeline does (docs/ha.md "Divergence",
 * "Rewind"), the reference's order (patroni.md §3.9):
 * 1. `database.use_db_rewind` (default on): a running replica stops first; a stopped data
 *    directory that can be rewound (wal_log_hints or checksums, a fork pg_rewind can see) is
 *    rewound from the leader (running as primary, checked by the callers) and then follows it. A
 *    rewind that failed against this leader timeline is never tried again, and data pg_rewind
 *    cannot repair counts as such a failure: with `remove_data_directory_on_rewind_failure`
 *    (default on) the member is wiped and re-cloned, otherwise it stays stopped, saying why;
 * 2. otherwise (rewind off, or the data cannot be rewound): a running replica stops; a stopped
 *    one is re-cloned when `database.remove_data_directory_on_diverged_timelines` allows it,
 *    otherwise it stays stopped, saying why.
 * A rewind or re-clone acts on a stopped data directory only, so that the receipt of the WAL it
 * throws away is taken first (`discard`).
 * Never runs as a replica serving data the leader does not have.
 */
function diverged(i: CycleInput, leader: string, reason: string, running: boolean): CycleDecision {
  let why = `diverged from leader ${leader}: ${reason}`;
  const db = i.config.database;
  /** The decision, with the WAL its action (or an operator's re-clone) discards. */
  const withPlan = (dec: CycleDecision, action: DiscardPlan['action']): CycleDecision => {
    const plan = running ? undefined : discardPlan(i, leader, action, dec.diverged ?? why);
    return plan ? { ...dec, discard: plan } : dec;
  };
  if (db.use_db_rewind === true) {
    const failed = rewindFailedFor(i, leader);
    if (failed) {
      const after = `${why}; pg_rewind from ${failed.leader} failed: ${failed.reason}`;
      if (running) return { ...d(`stopping: ${after}`, { kind: 'stop', reason: after }), diverged: after };
      // The receipt was taken before the rewind ran: what pg_rewind left is not decoded again.
      if (db.remove_data_directory_on_rewind_failure === true) {
        return { ...d(`reinitializing after a failed rewind: ${after}`, { kind: 'reinitialize' }), diverged: after };
      }
      return {
        ...d(`not starting: ${after}; not retried: reinitialize this member (or set database.remove_data_directory_on_rewind_failure)`),
        diverged: after,
      };
    }
    // pg_rewind works on a stopped data directory: stop, and the next cycle rewinds.
    if (running) return { ...d(`stopping to rewind: ${why}`, { kind: 'stop', reason: why }), diverged: why };
    const cannot = i.local ? whyNotRewindable(i.local, leaderTimeline(i.view), currentHistory(i.view)) : 'pg_controldata cannot be read';
    if (cannot === undefined) {
      return withPlan(
        { ...d(`running pg_rewind from ${leader}: ${why}`, { kind: 'rewind', leader, timeline: leaderTimeline(i.view) }), diverged: why },
        'rewind',
      );
    }
    why = `${why} (cannot rewind: ${cannot})`;
    // Data pg_rewind cannot repair is a rewind that failed before it ran: re-cloned under the same
    // setting (default on), so the defaults heal every divergence (docs/ha.md "Divergence": "Defaults").
    if (db.remove_data_directory_on_rewind_failure === true) {
      return withPlan(
        { ...d(`reinitializing: pg_rewind cannot repair the data: ${why}`, { kind: 'reinitialize' }), diverged: why },
        'reinitialize',
      );
    }
  }
  // A running replica stops first (as for a rewind): the next cycle takes the receipt of the
  // stopped data directory and re-clones it.
  if (running) return { ...d(`stopping: ${why}`, { kind: 'stop', reason: why }), diverged: why };
  if (db.remove_data_directory_on_diverged_timelines === true) {
    return withPlan({ ...d(`reinitializing due to diverged timelines: ${why}`, { kind: 'reinitialize' }), diverged: why }, 'reinitialize');
  }
  return withPlan(
    {
      ...d(`not starting: ${why}; reinitialize this member (or set database.remove_data_directory_on_diverged_timelines)`),
      diverged: why,
    },
    'reinitialize',
  );
}

/**
 * The WAL of the stopped data directory that the leader's history does not hold (discardedRanges
 * on the local lineage: its newest timeline, where its WAL ends, its history and promotion
 * marker, and a same-number fork seen by position while it ran); undefined when nothing is past
 * the fork or pg_controldata could not be read.
 */
function discardPlan(i: CycleInput, leader: string, action: DiscardPlan['action'], reason: string): DiscardPlan | undefined {
  const l = i.local;
  if (!l) return undefined;
  const leaderTl = leaderTimeline(i.view);
  // A fork on the leader's own timeline number seen by position while this data directory ran.
  const fork = i.sameNumberFork;
  const otherLineage = fork !== undefined && fork.leader === leader && fork.timeline === leaderTl && l.timeline === fork.timeline;
  const ranges = discardedRanges(
    {
      timeline: l.timeline,
      ...(l.walEndLsn !== undefined ? { endLsn: l.walEndLsn } : {}),
      ...(l.history ? { history: l.history } : {}),
      ...(l.promotedBy !== undefined ? { promotedBy: l.promotedBy } : {}),
      ...(otherLineage ? { otherLineage } : {}),
    },
    leaderTl,
    currentHistory(i.view) ?? i.view.history ?? [],
  );
  return ranges.length > 0 ? { action, leader, leaderTimeline: leaderTl, reason, ranges } : undefined;
}

/**
 * Why no peer may take over: for a named candidate, its own reason (not a member, candidateRefusal,
 * not in the sync key); else "no healthy members found" (the reference's words).
 */
function handoverRefusal(i: CycleInput, member: string | undefined, opts: CandidateOptions, allowed: string[] | undefined): string {
  if (!member) return 'no healthy members found';
  const p = i.peers.find((x) => x.name === member);
  const why = !p
    ? `${member} is not a member of the cluster`
    : (candidateRefusal(p, opts) ??
      (allowed && !allowed.includes(member)
        ? `${member} is not a synchronous standby (sync key: ${allowed.join(', ') || 'none'})`
        : `${member} is not healthy`));
  return `${opts.failover ? 'failover' : 'switchover'} to ${member} refused: ${why}`;
}

/** The leader's handling of the `failover` key (patroni.md §3.5); undefined when there is nothing to do. */
function decideSwitchover(i: CycleInput): CycleDecision | undefined {
  const req = i.view.failover?.value;
  if (!req || (!req.leader && !req.member)) return undefined;
  const duties: CycleAction = { kind: 'leaderDuties' };
  if (req.leader && req.leader !== i.name) {
    return d('leader name does not match: clearing the failover key', { kind: 'clearFailover' }, duties);
  }
  if (req.member === i.name) return d('I am already the leader: clearing the failover key', { kind: 'clearFailover' }, duties);
  if (req.scheduled_at) {
    const atMs = Date.parse(req.scheduled_at);
    const derived = Number.isNaN(atMs) ? 'stale' : decideScheduled(atMs, i.nowMs, timingOf(i.config).loopWaitMs).kind;
    const timing = i.switchoverPhase === undefined ? derived : i.switchoverPhase === 'run' ? 'runNow' : i.switchoverPhase;
    if (timing === 'wait') return d(`Awaiting switchover at ${req.scheduled_at}`, duties);
    if (timing === 'stale') return d('scheduled switchover is stale: clearing the failover key', { kind: 'clearFailover' }, duties);
  }
  const isFailover = !req.leader;
  const opts = {
    leaderOptimeBytes: i.walBytes,
    maxLagBytes: i.config.maximum_lag_on_failover,
    checkTimeline: i.config.check_timeline,
    clusterTimeline: i.timeline,
    failover: isFailover,
  };
  // Synchronous mode: a switchover goes only to a member of the sync key (patroni.md §3.5; the
  // same rule as the API's and hactl's, src/domain/switchover-admission.ts); an operator's
  // failover may name an asynchronous one.
  const allowed = syncAllowed(i.view, i.config, isFailover ? 'failover' : 'switchover');
  const syncOk = (p: { name: string }) => !allowed || allowed.includes(p.name);
  const candidates = i.peers.filter(
    (p) => (req.member ? p.name === req.member : p.name !== i.name) && isEligibleCandidate(p, opts) && syncOk(p),
  );
  if (candidates.length === 0) {
    const refused = handoverRefusal(i, req.member, opts, allowed);
    return d(`${refused}: clearing the failover key`, { kind: 'clearFailover', refused }, duties);
  }
  // Failsafe mode: a member the `failsafe` key does not list can never win the race (patroni.md
  // §3.7), so handing over to it would leave the cluster without a leader. The key is rewritten
  // from the member keys after this cycle (src/node/lock/failsafe.ts afterCycle): wait for it.
  if (!candidates.some((p) => failsafeListed(i.config, i.view, p.name))) {
    return d(
      `waiting for the failsafe key to list ${candidates.map((p) => p.name).join(', ')} before the ${isFailover ? 'failover' : 'switchover'}`,
      duties,
    );
  }
  return d(`manual ${isFailover ? 'failover' : 'switchover'}: demoting myself`, { kind: 'demote', mode: 'graceful', releaseLock: true });
}
