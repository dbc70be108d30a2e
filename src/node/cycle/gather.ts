/**
 * The gather step of the HA cycle (docs/ha.md "The cycle"): the lease keepalive, the dynamic
 * configuration, the leader lock, the local database, the peers' status, failsafe mode and the
 * scheduled switchover, gathered into decideCycle's input. It owns the facts carried between
 * cycles (trackers.ts: ghost leader, no leader since, not streaming since, divergence, start
 * back-off, same-number fork) and the background read of the leader's position (leader-read.ts).
 * Decides nothing: the decision is decideCycle's (src/domain/ha-cycle.ts), the actions the
 * executor's.
 */
import type { Logger } from 'pino';
import type { Dcs } from '../../dcs/dcs.ts';
import type { ClusterView } from '../../domain/cluster.ts';
import type { DynamicConfig } from '../../domain/dynamic-config.ts';
import type { CycleDecision, CycleInput } from '../../domain/ha-cycle.ts';
import type { PeerStatus } from '../../domain/leader-race.ts';
import type { Tags } from '../../domain/member.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import { hasNoLeaderMethod, type ReplicaMethodsConfig } from '../../domain/replica-methods.ts';
import { fencePlace } from '../../domain/quorum-failover.ts';
import type { Failsafe } from '../lock/failsafe.ts';
import type { LeaderLock } from '../lock/leader-lock.ts';
import type { ConfigApplier } from '../local/config-apply.ts';
import type { FailureRecord } from '../local/failure-record.ts';
import type { RewindRecord } from '../local/rewind-record.ts';
import { walOf } from '../member/member-data.ts';
import type { ReplicationSource } from '../replication/replication-source.ts';
import type { SyncManager } from '../replication/sync-manager.ts';
import { LeaderPositionRead } from './leader-read.ts';
import { lockFacts, type LockFacts, type LockFactsDeps } from './lock-facts.ts';
import { readLocalFacts, type LocalFacts, type LocalFactsDeps } from './local-facts.ts';
import { fetchPeers } from './peers.ts';
import type { ScheduledWork } from './schedules.ts';
import type { CycleTrackers } from './trackers.ts';

/** What the gather step reads and calls (HaNode wires it). */
export interface GatherDeps extends Omit<LockFactsDeps, 'pg'>, Omit<LocalFactsDeps, 'trackers' | 'pg'> {
  pg: LockFactsDeps['pg'] & LocalFactsDeps['pg'];
  /** This member's name. */
  name: string;
  /** Epoch ms. */
  now(): number;
  dcs: Pick<Dcs, 'view' | 'refresh' | 'keepalive'>;
  log: Pick<Logger, 'warn'>;
  lock: LockFactsDeps['lock'] & Pick<LeaderLock, 'mark'>;
  /** The facts kept between cycles that are not the cycle's own (NodeState). */
  state: Readonly<{ config: DynamicConfig; tags: Tags; demoted: boolean; initializedByMe: boolean; replicaMethods: ReplicaMethodsConfig }>;
  config: Pick<ConfigApplier, 'applyDynamic'>;
  sync: Pick<SyncManager, 'reset'>;
  failsafe?: Pick<Failsafe, 'dcsBack' | 'facts'>;
  rewinds: Pick<RewindRecord, 'failure' | 'forget'>;
  /** The last failed database action (a failed bootstrap this member won gives the `initialize` key back). */
  failures: Pick<FailureRecord, 'bootstrapFailure'>;
  source: Pick<ReplicationSource, 'configuredFor'>;
  trackers: CycleTrackers;
  /** A probe started at or after `tMs` (LocalWatch.probeStartedAfter). */
  probeStartedAfter(tMs: number): Promise<void>;
  /** Member status fetcher (GET <api_url>); undefined when unreachable. */
  fetchStatus(apiUrl: string): Promise<Record<string, unknown> | undefined>;
  /** The scheduled switchover and restart machines (defined once the node started). */
  schedules(): Pick<ScheduledWork, 'observeFailoverKey' | 'tick' | 'switchoverPhase'> | undefined;
}

/** What one gather step found: decideCycle's input and what the rest of the cycle needs. */
export interface Gathered {
  input: CycleInput;
  /** The view the decision is made on (the executor acts against it). */
  view: ClusterView;
  /** The keepalive (and renewal) reached the DCS. */
  dcsOk: boolean;
  local: LocalFacts;
}

/** The gather step: `collect` returns one cycle's facts; `afterDecision` updates the trackers the decision feeds. */
export class CycleGather {
  private readonly leaderRead: LeaderPositionRead;

  constructor(private readonly deps: GatherDeps) {
    this.leaderRead = new LeaderPositionRead(deps.fetchStatus);
  }

  /** The lease keepalive; false when the DCS did not answer (logged). After an answer, failsafe mode learns the DCS is back. */
  private async keepalive(): Promise<boolean> {
    const d = this.deps;
    try {
      await d.dcs.keepalive();
    } catch (e) {
      d.log.warn({ err: String(e) }, 'lease keepalive failed');
      return false;
    }
    await d.failsafe?.dcsBack();
    return true;
  }

  /**
   * The probe this cycle's own WAL position comes from. A running primary's WAL position moves
   * with every commit: sampled before (or while) the peers answered, it can be behind what a
   * replica streaming from it reported, and the leader race would then find a replica "ahead" of
   * the primary (seen in the failsafe e2e test after the DCS came back: the primary demoted for a
   * moment). In the race (no leader key) compare with a position read after every peer's answer,
   * as the reference does. Not in a switchover the lock holder runs: there an older own position
   * only makes candidates look less behind by a few ms of WAL, and the extra round trip would sit
   * on the switchover's path.
   */
  private async ownPosition(view: ClusterView, peers: PeerStatus[], probe: PgStatus | undefined): Promise<PgStatus | undefined> {
    const d = this.deps;
    if (view.leader || peers.length === 0 || !probe || probe.inRecovery) return probe;
    await d.probeStartedAfter(d.now());
    return d.probe() ?? probe;
  }

  /** Gathers one cycle's facts. The keepalive's failure is a fact (dcsOk false); other DCS failures reject. */
  async collect(): Promise<Gathered> {
    const d = this.deps;
    const nowMs = d.now();
    // The local facts and the peers' status do not depend on the keepalive or the lock: gathered
    // meanwhile. Every decision still waits for the keepalive and the lock's renewal below.
    const localP = readLocalFacts(d, nowMs);
    localP.catch(() => undefined);
    const early = this.peersEarly(d.dcs.view());
    // The lock's renewal below skips its own keepalive and counts its validity from this one.
    const keptAlive = d.lock.mark();
    const dcsOk = await this.keepalive();
    const viewNow = d.dcs.view();
    d.config.applyDynamic(viewNow);
    const lock = await lockFacts(d, viewNow, dcsOk, keptAlive);
    const view = lock.view;
    // Synchronous replication is managed only under the lock (a new leader starts from its own state).
    if (!lock.holdsLock) d.sync.reset();
    // Dated now, with the view in hand: the keepalive and the renewal above may have stalled
    // (a frozen or late agent), and a key created meanwhile is not as old as the cycle (finding 22).
    d.trackers.observeLeader(view, d.now(), nowMs);
    const local = await localP;
    const peers: PeerStatus[] = needPeers(lock, local, d.state.config, d.name)
      ? await (early && sameOthers(early.view, view, d.name) ? early.peers : fetchPeers(view, d.name, d.fetchStatus, d.now))
      : [];
    const probe = await this.ownPosition(view, peers, local.probe);
    const leaderWal = this.leaderRead.positionIfStalled(
      view,
      { ...d.trackers.facts, name: d.name, probe: local.probe, configuredFor: d.source.configuredFor, config: d.state.config },
      nowMs,
    );
    const schedules = d.schedules();
    schedules?.observeFailoverKey(view);
    schedules?.tick();
    const switchoverPhase = schedules?.switchoverPhase();
    const failsafe = (await d.failsafe?.facts({ dcsOk: lock.dcsOk, view, state: local.state, role: local.role })) ?? {};
    const input = cycleInput(this.deps, {
      nowMs,
      lock,
      local,
      walBytes: walOf(probe),
      peers,
      failsafe,
      ...(leaderWal ? { leaderWal } : {}),
      ...(switchoverPhase ? { switchoverPhase } : {}),
    });
    return { input, view, dcsOk: lock.dcsOk, local };
  }

  /**
   * After decideCycle: the trackers that depend on the decision (divergence verdict, same-number
   * fork), and a failed rewind forgotten once the data directory is gone or runs again.
   */
  afterDecision(decision: CycleDecision, g: Gathered): void {
    if (this.deps.trackers.afterDecision(decision, g.local, this.deps.dcs.view())) this.deps.rewinds.forget();
  }

  /**
   * Starts fetching the peers' status at the start of the cycle when the cached view already
   * says the cycle will need it (no leader, or our own lock with a switchover pending): used only
   * when the cycle does need it and the members are still those of `view`.
   */
  private peersEarly(view: ClusterView): { view: ClusterView; peers: Promise<PeerStatus[]> } | undefined {
    const d = this.deps;
    const snap = d.db().getSnapshot();
    if (snap.value !== 'running' || snap.context.promoting) return undefined;
    const f = view.failover?.value;
    if (view.leader && !(view.leader.name === d.name && !!(f?.leader || f?.member))) return undefined;
    const peers = fetchPeers(view, d.name, d.fetchStatus, d.now);
    peers.catch(() => undefined);
    return { view, peers };
  }
}

/**
 * The peers' status is needed: the DCS answered, the database runs idle, and there is no leader,
 * our lock has a switchover pending, or this member is to take over from a fenced leader (quorum
 * failover: the take respects maximum_lag_on_failover against the reachable peers).
 */
function needPeers(lock: LockFacts, local: LocalFacts, config: DynamicConfig, name: string): boolean {
  const failover = lock.view.failover?.value;
  if (!lock.dcsOk || local.state !== 'running' || local.busy) return false;
  if (!lock.view.leader || (lock.holdsLock && !!(failover?.leader || failover?.member))) return true;
  const place = fencePlace(config, lock.view, name);
  return place !== undefined && place.incomplete === undefined && place.taker === name;
}

/** The parts of decideCycle's input the gather step computed this cycle. */
interface CycleParts {
  nowMs: number;
  lock: LockFacts;
  local: LocalFacts;
  walBytes: bigint;
  peers: PeerStatus[];
  failsafe: Partial<CycleInput>;
  leaderWal?: CycleInput['leaderWal'];
  switchoverPhase?: CycleInput['switchoverPhase'];
}

/** decideCycle's input from this cycle's parts and the facts kept between cycles. */
function cycleInput(d: GatherDeps, p: CycleParts): CycleInput {
  const st = d.state;
  const t = d.trackers.facts;
  const { lock, local } = p;
  const rewindFailure = d.rewinds.failure;
  const bootstrapFailed = d.failures.bootstrapFailure;
  return {
    ...p.failsafe,
    name: d.name,
    nowMs: p.nowMs,
    config: st.config,
    view: lock.view,
    dcsOk: lock.dcsOk,
    holdsLock: lock.holdsLock,
    ...(lock.renewal ? { lockRenewal: lock.renewal } : {}),
    db: { state: local.state, role: local.role, busy: local.busy },
    hasData: local.hasData,
    ...(!local.hasData && hasNoLeaderMethod(st.replicaMethods) ? { noLeaderClone: true } : {}),
    walBytes: p.walBytes,
    timeline: local.probe?.inRecovery
      ? Math.max(local.probe.timeline, t.replicaTimeline)
      : (local.probe?.timeline ?? local.local?.timeline ?? 0),
    ...(local.local ? { local: local.local } : {}),
    ...(local.replicaHistory ? { localHistory: local.replicaHistory } : {}),
    ...(local.replicaPromotedBy ? { localPromotedBy: local.replicaPromotedBy } : {}),
    demoted: st.demoted,
    initializedByMe: st.initializedByMe,
    ...(t.sysid ? { sysid: t.sysid } : {}),
    tags: st.tags,
    peers: p.peers,
    ...(p.switchoverPhase ? { switchoverPhase: p.switchoverPhase } : {}),
    ...(local.probe?.inRecovery
      ? {
          replication: {
            upstream: d.source.configuredFor,
            streaming: local.probe.streaming,
            ...(t.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: t.notStreamingSinceMs } : {}),
          },
        }
      : {}),
    ...(t.nextStartAtMs !== undefined ? { nextStartAtMs: t.nextStartAtMs } : {}),
    ...(t.ghostLeader ? { ghostLeaderSinceMs: t.ghostLeader.sinceMs } : {}),
    ...(t.noLeaderSinceMs !== undefined ? { noLeaderSinceMs: t.noLeaderSinceMs } : {}),
    ...(rewindFailure ? { rewindFailure } : {}),
    ...(bootstrapFailed !== undefined ? { bootstrapFailed } : {}),
    ...(p.leaderWal ? { leaderWal: p.leaderWal } : {}),
    ...(t.sameNumberFork ? { sameNumberFork: t.sameNumberFork } : {}),
  };
}

/** True when both views list the same other members with the same API addresses. */
function sameOthers(a: ClusterView, b: ClusterView, self: string): boolean {
  const key = (v: ClusterView) =>
    v.members
      .filter((m) => m.name !== self && m.data.api_url)
      .map((m) => `${m.name}@${m.data.api_url}`)
      .sort()
      .join(',');
  return a === b || key(a) === key(b);
}
