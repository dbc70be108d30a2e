/**
 * One HA cycle's decision: cluster view + local status + dynamic config + now → actions.
 * Pure; the node gathers the facts (lease keepalive, lock renewal, peer statuses), calls
 * `decideCycle`, then carries out the actions in order. Rules follow patroni.md §3.2–3.6 and
 * shared/docs/dcs-layout.md; each result carries the one sentence the cycle logs.
 */
import { clusterTimeline, type ClusterView } from './cluster.ts';
import type { DynamicConfig } from './dynamic-config.ts';
import { isEligibleCandidate, isHealthiest, type PeerStatus } from './leader-race.ts';
import { mayPromote, type Tags } from './member.ts';
import { decideScheduled } from './schedule.ts';
import type { DatabaseState, Role } from './states.ts';
import { checkDivergence, type LocalPosition } from './timeline-history.ts';

/** Facts the node gathered for this cycle. */
export interface CycleInput {
  name: string;
  /** Epoch ms. */
  nowMs: number;
  config: DynamicConfig;
  view: ClusterView;
  /** The lease keepalive (and lock renewal, when held) reached the DCS this cycle. */
  dcsOk: boolean;
  /** Result of renewing the lock this cycle, when the view says this member holds it. */
  lockRenewal?: 'ok' | 'failed';
  db: {
    state: DatabaseState;
    role: Role;
    /** An effect (initdb, clone, start, stop, restart, promote) is in progress. */
    busy: boolean;
  };
  /** The data directory holds a cluster. */
  hasData: boolean;
  /** Local WAL position: primary flush, replica max(received, replayed); bytes. */
  walBytes: bigint;
  timeline: number;
  /** Where the stopped data directory ended (pg_controldata), when not running. */
  local?: LocalPosition;
  /** The last stop of this node was a graceful demotion (its shutdown checkpoint reached a replica). */
  gracefulDemotion: boolean;
  /** This agent won the `initialize` race in this process lifetime. */
  initializedByMe: boolean;
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
  | { kind: 'clone'; from: string }
  | { kind: 'start'; role: 'primary' | 'replica'; leader?: string }
  | { kind: 'reinitialize' }
  | { kind: 'acquireLock' }
  | { kind: 'promote' }
  | { kind: 'demote'; mode: 'graceful' | 'immediate' | 'offline'; releaseLock: boolean }
  | { kind: 'releaseLock' }
  | { kind: 'follow'; leader: string }
  | { kind: 'leaderDuties' }
  | { kind: 'clearFailover' };

/** The decision: actions plus the cycle's one sentence. */
export interface CycleDecision {
  actions: CycleAction[];
  message: string;
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

/** The decision of one HA cycle. */
export function decideCycle(i: CycleInput): CycleDecision {
  const { name, view, config, db } = i;
  const paused = config.pause === true;
  const leader = view.leader?.name;
  const iLead = leader === name;

  if (!i.dcsOk) {
    if (!paused && db.role === 'primary' && db.state === 'running') {
      return d('demoted self because DCS is not accessible and I was a leader', { kind: 'demote', mode: 'offline', releaseLock: false });
    }
    return d('DCS is not accessible');
  }

  if (db.busy) {
    if (iLead && i.lockRenewal === 'failed' && db.role === 'primary') {
      return d('demoted self because failed to update leader lock in DCS', { kind: 'demote', mode: 'immediate', releaseLock: false });
    }
    return d(`${db.state} in progress`);
  }

  if (!i.hasData) {
    if (iLead) return d('released leader key voluntarily as data dir empty and currently leader', { kind: 'releaseLock' });
    if (leader) {
      const from = cloneSource(view, name) ?? leader;
      return d(`trying to bootstrap from ${from === leader ? 'leader' : 'replica'} '${from}'`, { kind: 'clone', from });
    }
    if (view.initialize === undefined && !paused && mayPromote(i.tags)) {
      return d('trying to bootstrap a new cluster', { kind: 'bootstrap' });
    }
    return d('waiting for leader to bootstrap');
  }

  if (i.sysid && view.initialize && view.initialize !== i.sysid) {
    return d(`system identifier ${i.sysid} differs from the cluster's ${view.initialize}: not joining`);
  }

  // The bootstrap winner's database runs: publish the identifier and the configuration, take the lock.
  if (i.initializedByMe && !leader && db.state === 'running' && db.role === 'primary' && view.initialize === '') {
    return d('initialized a new cluster', { kind: 'finishBootstrap' });
  }

  if (!RUNNING_STATES.includes(db.state)) {
    if (paused) {
      if (iLead) return d('removed leader lock because the database is not running', { kind: 'releaseLock' });
      return d('database is not running: paused, not starting it');
    }
    if (iLead) {
      if (db.state === 'start_failed' && db.role === 'primary') {
        return d('removed leader key after trying and failing to start the database', { kind: 'releaseLock' });
      }
      return d('starting primary after failure', { kind: 'start', role: 'primary' });
    }
    if (leader) {
      if (i.gracefulDemotion) return d(`starting as a secondary of ${leader}`, { kind: 'start', role: 'replica', leader });
      if (i.local) {
        const verdict = checkDivergence(i.local, clusterTimeline(view), view.history);
        if (verdict.kind === 'diverged') return d(`reinitializing: ${verdict.reason}`, { kind: 'reinitialize' });
        if (verdict.kind === 'unknown' && i.local.timeline !== 0 && i.local.clusterState === 'in production') {
          return d(`reinitializing: ${verdict.reason}`, { kind: 'reinitialize' });
        }
      }
      return d(`starting as a secondary of ${leader}`, { kind: 'start', role: 'replica', leader });
    }
    return d('starting as a secondary (no leader)', { kind: 'start', role: 'replica' });
  }

  // The database runs.
  if (!leader) {
    const failover = view.failover?.value;
    // In pause only the candidate of a manual switchover/failover races (patroni.md §3.6).
    if (paused && failover?.member !== name) return d('no leader: paused, no automatic failover');
    const verdict = isHealthiest({
      self: { name, walBytes: i.walBytes, timeline: i.timeline, tags: i.tags },
      peers: i.peers,
      leaderOptimeBytes: BigInt(view.status?.optime ?? 0),
      maxLagBytes: config.maximum_lag_on_failover,
      checkTimeline: config.check_timeline,
      clusterTimeline: clusterTimeline(view),
      ...(failover && (failover.member || failover.leader) ? { failover } : {}),
    });
    if (verdict.healthy) {
      return d(`acquiring the leader lock: ${verdict.reason}`, { kind: 'acquireLock' });
    }
    if (db.role === 'primary') {
      return d(`demoting self because ${verdict.reason}`, { kind: 'demote', mode: 'immediate', releaseLock: false });
    }
    return d(`following no leader: ${verdict.reason}`);
  }

  if (iLead) {
    if (i.lockRenewal === 'failed') {
      if (paused) return d('continue to run as primary after failing to update leader lock in DCS');
      return d('demoted self because failed to update leader lock in DCS', { kind: 'demote', mode: 'immediate', releaseLock: false });
    }
    if (db.role !== 'primary') return d('promoted self to leader because I had the session lock', { kind: 'promote' });
    const sw = decideSwitchover(i);
    if (sw) return sw;
    return d(`no action. I am (${name}), the leader with the lock`, { kind: 'leaderDuties' });
  }

  if (db.role === 'primary') {
    return d('demoting self because I do not have the lock and I was a leader', { kind: 'demote', mode: 'immediate', releaseLock: false });
  }
  return d(`no action. I am (${name}), a secondary, and following a leader (${leader})`, { kind: 'follow', leader });
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
    const derived = Number.isNaN(atMs) ? 'stale' : decideScheduled(atMs, i.nowMs, i.config.loop_wait * 1000).kind;
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
  const candidates = i.peers.filter((p) => (req.member ? p.name === req.member : p.name !== i.name) && isEligibleCandidate(p, opts));
  if (candidates.length === 0) return d('no healthy members found: clearing the failover key', { kind: 'clearFailover' }, duties);
  return d(`manual ${isFailover ? 'failover' : 'switchover'}: demoting myself`, { kind: 'demote', mode: 'graceful', releaseLock: true });
}
