/**
 * One HA cycle (docs/ha.md "The cycle"): gather the facts (lease keepalive, dynamic config, the
 * leader lock, local status, peers), ask decideCycle, carry the actions out, publish the member
 * key. Also keeps the per-cycle trackers decideCycle reads (start back-off, not streaming since,
 * ghost leader key, divergence verdict).
 */
import type { ClusterView } from '../../domain/cluster.ts';
import { decideCycle, ghostSighting, leaderTimeline, notStreamingGraceMs, type CycleDecision, type CycleInput } from '../../domain/ha-cycle.ts';
import type { PeerStatus } from '../../domain/leader-race.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { DatabaseState } from '../../domain/states.ts';
import { parseHistoryFile, type HistoryLine, type LocalPosition } from '../../domain/timeline-history.ts';
import type { AdminCommands } from '../local/admin.ts';
import { isBusy } from '../local/busy.ts';
import type { ConfigApplier } from '../local/config-apply.ts';
import type { Executor } from './executor.ts';
import type { Failsafe } from '../lock/failsafe.ts';
import type { RenewalBasis } from '../lock/leader-lock.ts';
import type { MemberKey } from '../member/member-key.ts';
import { walOf } from '../member/member-data.ts';
import type { NodeCore } from '../node-core.ts';
import { fetchPeers } from './peers.ts';
import type { ReceiptKeeper } from '../local/receipts.ts';

/** A background read of the leader's position (HaCycle.leaderWalIfStalled). */
interface LeaderRead {
  leader: string;
  startedAtMs: number;
  pending: boolean;
  answer?: { timeline: number; walBytes: bigint; askedAtMs: number };
}

export class HaCycle {
  private lastMessage = '';
  /** The last background read of the leader's position while this replica did not stream. */
  private leaderRead: LeaderRead | undefined;

  constructor(
    private readonly core: NodeCore,
    private readonly parts: {
      config: ConfigApplier;
      executor: Executor;
      memberKey: MemberKey;
      admin: AdminCommands;
      stopped: () => boolean;
      failsafe?: Failsafe;
      receipts?: ReceiptKeeper;
    },
  ) {}

  /** Runs one cycle. Errors of single steps are logged; a failed DCS write rejects (the loop logs it). */
  async run(): Promise<void> {
    const { core } = this;
    const { dcs, log, name } = core.deps;
    const nowMs = core.now();
    // The local facts and the peers' status do not depend on the keepalive or the lock: gathered
    // meanwhile. Every decision still waits for the keepalive and the lock's renewal below.
    const factsP = this.localFacts(nowMs);
    factsP.catch(() => undefined);
    const early = this.peersEarly(dcs.view());
    let dcsOk = true;
    // The lock's renewal below skips its own keepalive and counts its validity from this one.
    const keptAlive = core.lock.mark();
    try {
      await dcs.keepalive();
    } catch (e) {
      dcsOk = false;
      log.warn({ err: String(e) }, 'lease keepalive failed');
    }
    if (dcsOk) await this.parts.failsafe?.dcsBack();
    let view = dcs.view();
    this.parts.config.applyDynamic(view);
    const lock = await this.lockFacts(view, dcsOk, keptAlive);
    view = lock.view;
    dcsOk = lock.dcsOk;
    // Synchronous replication is managed only under the lock (a new leader starts from its own state).
    if (!lock.holdsLock) core.sync.reset();
    // Dated now, with the view in hand: the keepalive and the renewal above may have stalled
    // (a frozen or late agent), and a key created meanwhile is not as old as the cycle (finding 22).
    this.trackGhostLeader(view, core.now());
    if (view.leader) this.core.state.noLeaderSinceMs = undefined;
    else this.core.state.noLeaderSinceMs ??= nowMs;

    const facts = await factsP;
    const failover = view.failover?.value;
    const needPeers =
      dcsOk && facts.state === 'running' && !facts.busy && (!view.leader || (lock.holdsLock && !!(failover?.leader || failover?.member)));
    const peers: PeerStatus[] = needPeers
      ? early && sameOthers(early.view, view, name)
        ? await early.peers
        : await fetchPeers(view, name, core.deps.fetchStatus)
      : [];
    // A running primary's WAL position moves with every commit: sampled before (or while) the
    // peers answered, it can be behind what a replica streaming from it reported, and the leader
    // race would then find a replica "ahead" of the primary (seen in the failsafe e2e test after
    // the DCS came back: the primary demoted for a moment). In the race (no leader key) compare
    // with a position read after every peer's answer, as the reference does. Not in a switchover
    // the lock holder runs: there an older own position only makes candidates look less behind
    // by a few ms of WAL, and the extra round trip would sit on the switchover's path.
    let probe = facts.probe;
    if (!view.leader && peers.length > 0 && probe && !probe.inRecovery) {
      await core.probeStartedAfter(core.now());
      probe = core.probe() ?? probe;
    }

    const leaderWal = this.leaderWalIfStalled(view, facts.probe, nowMs);
    const schedules = core.schedules();
    schedules?.observeFailoverKey(view);
    schedules?.tick();
    const switchoverPhase = schedules?.switchoverPhase();
    const st = core.state;
    const failsafe = (await this.parts.failsafe?.facts({ dcsOk, view, state: facts.state, role: facts.role })) ?? {};
    const input: CycleInput = {
      ...failsafe,
      name,
      nowMs,
      config: st.config,
      view,
      dcsOk,
      holdsLock: lock.holdsLock,
      ...(lock.renewal ? { lockRenewal: lock.renewal } : {}),
      db: { state: facts.state, role: facts.role, busy: facts.busy },
      hasData: facts.hasData,
      walBytes: walOf(probe),
      timeline: facts.probe?.inRecovery ? Math.max(facts.probe.timeline, st.replicaTimeline) : (facts.probe?.timeline ?? facts.local?.timeline ?? 0),
      ...(facts.local ? { local: facts.local } : {}),
      ...(facts.replicaHistory ? { localHistory: facts.replicaHistory } : {}),
      ...(facts.replicaPromotedBy ? { localPromotedBy: facts.replicaPromotedBy } : {}),
      demoted: st.demoted,
      initializedByMe: st.initializedByMe,
      ...(st.sysid ? { sysid: st.sysid } : {}),
      tags: st.tags,
      peers,
      ...(switchoverPhase ? { switchoverPhase } : {}),
      ...(facts.probe?.inRecovery
        ? {
            replication: {
              upstream: core.source.configuredFor,
              streaming: facts.probe.streaming,
              ...(st.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: st.notStreamingSinceMs } : {}),
            },
          }
        : {}),
      ...(st.nextStartAtMs !== undefined ? { nextStartAtMs: st.nextStartAtMs } : {}),
      ...(st.ghostLeader ? { ghostLeaderSinceMs: st.ghostLeader.sinceMs } : {}),
      ...(st.noLeaderSinceMs !== undefined ? { noLeaderSinceMs: st.noLeaderSinceMs } : {}),
      ...(st.rewindFailure ? { rewindFailure: st.rewindFailure } : {}),
      ...(leaderWal ? { leaderWal } : {}),
      ...(st.sameNumberFork ? { sameNumberFork: st.sameNumberFork } : {}),
    };
    const decision = decideCycle(input);
    this.noteDivergence(decision, facts);
    // Before a rewind or re-clone throws away local WAL, its receipt (docs/ha.md "Receipts").
    if (decision.discard && decision.actions.some((a) => a.kind === 'rewind' || a.kind === 'reinitialize')) {
      await this.parts.receipts?.take(decision.discard);
    }
    for (const action of decision.actions) {
      if (this.parts.stopped()) break;
      // Starting or promoting a primary on the lock needs the lock now, not when the facts were
      // gathered: a cycle that stalled in between (a stopped or late process) may hold a renewal
      // answer that is older than ttl (finding 15, docs/simulation.md). With a fence, the lock must
      // also outlast the fence's margin: past it the fence may have fired already, before the new
      // postmaster existed (finding 16; the launch itself checks again). The next cycle decides again.
      const refusal = needsLiveLock(action) ? core.fencing.primaryLaunchRefusal(true, core.lock.untilMs, core.now()) : undefined;
      if (refusal !== undefined) {
        core.notice('lock.stale', `not carrying out '${decision.message}': ${refusal} (the cycle ran late)`);
        break;
      }
      await this.parts.executor.execute(action, view);
    }
    if (decision.actions.some((a) => a.kind === 'clearFailover')) schedules?.switchoverFailed(decision.message);
    void this.core.fencing.sync();
    await this.parts.admin.runDueRestart();
    if (decision.message !== this.lastMessage) {
      log.info({ member: name, actions: decision.actions.map((a) => a.kind) }, decision.message);
      this.lastMessage = decision.message;
    }
    if (dcsOk) await this.parts.memberKey.publish().catch((e) => log.warn({ err: String(e) }, 'publishing the member key failed'));
    if (dcsOk) await this.parts.failsafe?.afterCycle(dcs.view()).catch((e) => log.warn({ err: String(e) }, 'updating the failsafe key failed'));
  }

  /**
   * Starts fetching the peers' status at the start of the cycle when the cached view already
   * says the cycle will need it (no leader, or our own lock with a switchover pending): used only
   * when the cycle does need it and the members are still those of `view`.
   */
  private peersEarly(view: ClusterView): { view: ClusterView; peers: Promise<PeerStatus[]> } | undefined {
    const { core } = this;
    const snap = core.db().getSnapshot();
    if (snap.value !== 'running' || snap.context.promoting) return undefined;
    const f = view.failover?.value;
    if (view.leader && !(view.leader.name === core.deps.name && !!(f?.leader || f?.member))) return undefined;
    const peers = fetchPeers(view, core.deps.name, core.deps.fetchStatus);
    peers.catch(() => undefined);
    return { view, peers };
  }

  /**
   * The leader lock (leader-lock.ts): renew the incarnation we hold with a compare-and-set, adopt
   * our own key at start, retry a release that did not reach the DCS, and never act on a view
   * that still shows a lock we released or lost (re-read the DCS instead).
   */
  private async lockFacts(
    view: ClusterView,
    dcsOk: boolean,
    keptAlive: RenewalBasis,
  ): Promise<{ view: ClusterView; dcsOk: boolean; holdsLock: boolean; renewal?: 'ok' | 'failed' }> {
    const { lock, deps } = this.core;
    if (!dcsOk) return { view, dcsOk, holdsLock: false };
    if (lock.releasePending) await lock.retryRelease();
    const reading = lock.read(view);
    if (reading === 'mine') {
      // watchdog.mode required and the fence cannot be armed (fencing.ts): a running primary
      // demotes as after a failed renewal; once no postmaster runs the lock is given up.
      const fenceOk = this.core.fencing.mayLead();
      if (!fenceOk && (await deps.pg.postmasterPid()) === undefined) {
        await lock.release();
        this.core.notice('watchdog.released', 'released the leader lock: watchdog.mode is required and the fence cannot be armed');
        return { view: deps.dcs.view(), dcsOk, holdsLock: false };
      }
      const r = await lock.renew(keptAlive);
      if (r === 'lost') this.core.notice('lock.lost', 'lost the leader lock: the key is gone or is not the one this member created');
      // A lost lock is not held from here on (the view may still name us: decideCycle then waits
      // for the key to clear); a renewal the DCS did not answer still is, until it runs out.
      return { view: deps.dcs.view(), dcsOk, holdsLock: r !== 'lost', renewal: r === 'ok' && fenceOk ? 'ok' : 'failed' };
    }
    if (reading === 'adoptable') {
      try {
        if (await lock.adopt(view)) {
          this.core.notice('lock.adopted', `adopted the leader key (create revision ${view.leader?.createRevision}) that names this member`);
          return { view: deps.dcs.view(), dcsOk, holdsLock: true, renewal: 'ok' };
        }
      } catch (e) {
        deps.log.warn({ err: String(e) }, 'adopting the leader key failed');
      }
      return { view: deps.dcs.view(), dcsOk, holdsLock: false };
    }
    if (reading === 'stale') {
      try {
        return { view: await deps.dcs.refresh(), dcsOk, holdsLock: false };
      } catch {
        return { view, dcsOk: false, holdsLock: false };
      }
    }
    return { view, dcsOk, holdsLock: false };
  }

  /** The local database: machine state, data directory, probe, pg_controldata when stopped. */
  private async localFacts(nowMs: number): Promise<{
    state: DatabaseState;
    role: CycleInput['db']['role'];
    busy: boolean;
    hasData: boolean;
    probe: PgStatus | undefined;
    local: LocalPosition | undefined;
    replicaHistory?: HistoryLine[];
    replicaPromotedBy?: string;
  }> {
    const { core } = this;
    const { pg } = core.deps;
    const snap = core.db().getSnapshot();
    const state = snap.value as DatabaseState;
    const busy = isBusy(state) || snap.context.promoting;
    const hasData = await pg.hasData();
    if (state === 'running') await core.probeNow();
    const probe = state === 'running' ? core.probe() : undefined;
    let local: LocalPosition | undefined;
    if (hasData && !busy && state !== 'running') {
      try {
        const cd = await pg.controlData();
        core.state.sysid = cd.systemIdentifier;
        // Where the WAL ends is read from the WAL itself (docs/ha.md "Divergence"; kept by
        // PgControl while nothing changes); a failure is kept as the reason.
        let walEnd: { timeline: number; endLsn: bigint } | undefined;
        let walEndError: string | undefined;
        try {
          walEnd = await pg.walEnd();
        } catch (e) {
          walEndError = String(e instanceof Error ? e.message : e).replace(/\s+/g, ' ').slice(0, 300);
        }
        const timeline = walEnd?.timeline ?? cd.checkpointTimeline;
        const history = await this.localHistory(timeline);
        const promotedBy = await this.promotedBy(timeline);
        local = {
          clusterState: cd.clusterState,
          timeline,
          checkpointLsn: cd.checkpointLsn,
          minRecoveryLsn: cd.minRecoveryLsn,
          ...(walEnd ? { walEndLsn: walEnd.endLsn } : {}),
          ...(walEndError ? { walEndError } : {}),
          ...(history ? { history } : {}),
          ...(promotedBy ? { promotedBy } : {}),
          // pg_rewind needs wal_log_hints or data checksums (unknown: let pg_rewind decide).
          ...(cd.walLogHints === false && (cd.dataChecksumVersion ?? 0) === 0 ? { rewindable: false } : {}),
        };
      } catch {
        local = undefined;
      }
    }
    const st = core.state;
    if (!probe || !probe.inRecovery || probe.streaming) st.notStreamingSinceMs = undefined;
    else st.notStreamingSinceMs ??= nowMs;
    if (state !== 'running' || !probe?.inRecovery) st.replicaTimeline = 0;
    else st.replicaTimeline = Math.max(st.replicaTimeline, probe.timeline);
    const replicaTl = probe?.inRecovery ? Math.max(probe.timeline, st.replicaTimeline) : 0;
    const replicaHistory = replicaTl ? await this.localHistory(replicaTl) : undefined;
    const replicaPromotedBy = replicaTl ? await this.promotedBy(replicaTl) : undefined;
    return {
      state,
      role: snap.context.role,
      busy,
      hasData,
      probe,
      local,
      ...(replicaHistory ? { replicaHistory } : {}),
      ...(replicaPromotedBy ? { replicaPromotedBy } : {}),
    };
  }

  /**
   * The leader's timeline and flush position for decideCycle's sameNumberFork, while this running
   * replica follows it and has not streamed for notStreamingGraceMs; else undefined. Read in the
   * background (the cycle never waits for it: a stalled replica's leader is often the one that is
   * gone, and the race must not wait for its timeout), from the leader's status document; an
   * answer counts only when its request started more than 1 s (the age of the leader's probe)
   * after the replica stopped streaming, so the position it shows is at least the one the replica
   * stopped at, and only for the leader it was asked of, for 3 × loop_wait.
   */
  private leaderWalIfStalled(view: ClusterView, probe: PgStatus | undefined, nowMs: number): CycleInput['leaderWal'] {
    const st = this.core.state;
    const leader = view.leader?.name;
    const since = st.notStreamingSinceMs;
    if (!probe?.inRecovery || probe.streaming || since === undefined || !leader || leader === this.core.deps.name || this.core.source.configuredFor !== leader || nowMs - since < notStreamingGraceMs(st.config)) {
      this.leaderRead = undefined;
      return undefined;
    }
    const read = this.leaderRead;
    if (!read || read.leader !== leader || (!read.pending && nowMs - read.startedAtMs >= st.config.loop_wait * 1000)) {
      const url = view.members.find((m) => m.name === leader)?.data.api_url;
      if (url) {
        const next: LeaderRead = { leader, startedAtMs: nowMs, pending: true, ...(read?.leader === leader && read.answer ? { answer: read.answer } : {}) };
        this.leaderRead = next;
        this.core.deps.fetchStatus(url).then(
          (doc) => {
            next.pending = false;
            const xlog = doc?.['xlog'] as { location?: unknown } | undefined;
            if (doc?.['role'] === 'primary' && typeof doc['timeline'] === 'number' && typeof xlog?.location === 'number') {
              next.answer = { timeline: doc['timeline'], walBytes: BigInt(xlog.location), askedAtMs: next.startedAtMs };
            }
          },
          () => {
            next.pending = false;
          },
        );
      }
    }
    const a = this.leaderRead?.leader === leader ? this.leaderRead.answer : undefined;
    if (!a || a.askedAtMs <= since + 1000 || nowMs - a.askedAtMs > 3 * st.config.loop_wait * 1000) return undefined;
    return { timeline: a.timeline, walBytes: a.walBytes };
  }

  /** The member whose promotion made `timeline`, when the data directory's marker records that timeline. */
  private async promotedBy(timeline: number): Promise<string | undefined> {
    if (timeline <= 1) return undefined;
    const marker = await this.core.deps.pg.readPromotion().catch(() => undefined);
    return marker?.timeline === timeline ? marker.member : undefined;
  }

  /** The local history file of `timeline` (above 1), parsed; undefined when absent or unreadable. */
  private async localHistory(timeline: number): Promise<HistoryLine[] | undefined> {
    if (timeline <= 1) return undefined;
    try {
      return parseHistoryFile(await this.core.deps.pg.readTimelineHistory(timeline));
    } catch {
      return undefined;
    }
  }

  /**
   * The divergence verdict stays until the member runs again (re-cloned, rewound, promoted or
   * streaming) or its data is gone: a cycle that returns early (DCS down, a stop in progress)
   * does not clear it.
   */
  private noteDivergence(decision: CycleDecision, facts: { state: DatabaseState; role: string; hasData: boolean; probe: PgStatus | undefined }): void {
    const st = this.core.state;
    // A failed rewind is forgotten once the data directory is gone or runs again (re-cloned).
    if (!facts.hasData || (facts.state === 'running' && (facts.role === 'primary' || facts.probe?.streaming === true))) st.rewindFailure = undefined;
    // A same-number fork is kept for the data directory it was found in (CycleInput.sameNumberFork).
    if (decision.sameNumberFork) st.sameNumberFork = decision.sameNumberFork;
    if (!facts.hasData || facts.state === 'creating_replica' || (st.sameNumberFork && st.sameNumberFork.timeline !== leaderTimeline(this.core.deps.dcs.view()))) {
      st.sameNumberFork = undefined;
    }
    if (decision.diverged !== undefined) {
      if (decision.diverged !== st.divergedReason) this.core.notice('diverged', decision.diverged);
      st.divergedReason = decision.diverged;
      st.discardPlan = decision.discard;
      return;
    }
    const runsAgain = facts.state === 'running' && (facts.role === 'primary' || facts.probe?.streaming === true);
    if (st.divergedReason !== undefined && (!facts.hasData || facts.state === 'creating_replica' || runsAgain)) {
      st.divergedReason = undefined;
      st.discardPlan = undefined;
    }
  }

  /** Since when this incarnation of the leader key has named a member without a member key (`seenMs`: when `view` was read). */
  private trackGhostLeader(view: ClusterView, seenMs: number): void {
    const st = this.core.state;
    const previous = st.ghostLeader;
    st.ghostLeader = ghostSighting(previous, view, seenMs);
    if (st.ghostLeader && st.ghostLeader !== previous) this.core.notice('lock.ghost', `the leader key names '${st.ghostLeader.name}', which has no member key`);
  }
}

/** Actions that make this member a writable primary on the strength of the leader lock. */
function needsLiveLock(action: CycleDecision['actions'][number]): boolean {
  return action.kind === 'promote' || (action.kind === 'start' && action.role === 'primary');
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
