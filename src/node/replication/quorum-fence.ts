/**
 * Quorum failover, the standby's side (issue 28; docs/ha.md "Quorum failover"; the rules in
 * src/domain/quorum-failover.ts): between HA cycles, a running replica of a leader watches that
 * leader. When its WAL receiver does not stream and the leader's agent does not answer (nor its
 * PostgreSQL, where the deps can check it) for `quorum_failover_window`, it fences the leader:
 *
 * 1. it stops taking WAL from it: primary_conninfo emptied and reloaded (the WAL receiver ends);
 * 2. it reads where its WAL ends (the flushed receive position, or the replay position);
 * 3. it adds itself with that position to the fence record in the `sync` key (compare-and-set on
 *    the key's revision; one retry on a fresh read) and wakes the HA loop, whose decision takes
 *    the leader key once the fence silences the leader (ha-cycle.ts asFenced).
 *
 * When the leader answers again the member leaves the fence (an incomplete one at once, a complete
 * one after 2 × the window: its taker did not act) in a transaction that also compares the leader
 * key, and the next cycle points it at the leader again. Nothing runs while the mode is off, in a
 * standby cluster, in pause, on the lock holder or on a database that is not a running replica.
 * One writer: this watch is the only writer of this member's entry in the fence.
 */
import type { ClusterView, SyncState } from '../../domain/cluster.ts';
import type { DynamicConfig } from '../../domain/dynamic-config.ts';
import { memberHostPort } from '../../domain/member.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import {
  fenceIncomplete,
  fenceOf,
  joinFence,
  leaveFence,
  quorumFailoverSettings,
  shouldFence,
  type QuorumFence,
} from '../../domain/quorum-failover.ts';
import { standbyClusterOf } from '../../domain/standby-cluster.ts';
import { syncKeyOf } from '../../domain/sync-standby.ts';
import type { Dcs } from '../../dcs/dcs.ts';
import { everyOn, sleepOn, type Clock } from '../clock.ts';
import type { Notice } from '../node-core.ts';
import { walOf } from '../member/member-data.ts';

/** What the watch reads and calls (HaNode wires it). */
export interface QuorumFenceDeps {
  name: string;
  clock: Clock;
  dcs: Pick<Dcs, 'view' | 'refresh' | 'setSync' | 'setSyncUnderLeader'>;
  /** The dynamic configuration in force. */
  config(): DynamicConfig;
  /** This agent holds the leader lock. */
  holdsLock(): boolean;
  /** The database machine: state and role. */
  database(): { value: string; role: string } | undefined;
  /** A probe of the local PostgreSQL at most 1 s old (LocalWatch.fresh), undefined when it does not answer. */
  freshProbe(): Promise<PgStatus | undefined>;
  /** A probe started at or after `tMs` (LocalWatch.probeStartedAfter), undefined when it does not answer. */
  probeAfter(tMs: number): Promise<PgStatus | undefined>;
  /** GET <api_url> of a member; undefined when it did not answer (peers.ts fetchStatusDocument, bounded). */
  fetchStatus(apiUrl: string): Promise<Record<string, unknown> | undefined>;
  /** Whether the leader's PostgreSQL accepts a connection at host:port within the bound; absent: not checked. */
  pgAnswers?(host: string, port: number, timeoutMs: number): Promise<boolean>;
  /**
   * Stops taking WAL from `leader`: the stream pointed nowhere and never at it again until
   * `unfence` (ReplicationSource.fence), the configuration rewritten and reloaded.
   */
  stopStreaming(leader: string): Promise<void>;
  /** The fence was left: `leader` may be followed again (ReplicationSource.unfence). */
  unfence(): void;
  /** The leader this member's stream is fenced from (ReplicationSource.fenced), or undefined. */
  fenced(): string | undefined;
  /** Wakes the HA loop (a fence joined or left). */
  wake(): void;
  notice: Notice;
}

/** How often the watch looks at the leader, ms: a quarter of the window, 100 ms to 1 s. */
export function fenceStepMs(windowMs: number): number {
  return Math.min(1000, Math.max(100, Math.round(windowMs / 4)));
}

/** The standby's side of quorum failover (see the module comment). */
export class QuorumFenceWatch {
  /** Since when the leader (this `leader` name) has been unreachable and the receiver down; undefined while not. */
  private unreachable: { leader: string; sinceMs: number } | undefined;
  /** Since when the fenced leader (this `leader` name) has answered again; undefined while it does not. */
  private answering: { leader: string; sinceMs: number } | undefined;
  private busy = false;
  private cancel: (() => void) | undefined;
  private stepMs = 0;

  constructor(private readonly d: QuorumFenceDeps) {}

  /** Starts (or re-times after a configuration change) the periodic check. */
  start(): void {
    const settings = quorumFailoverSettings(this.d.config());
    const step = settings ? fenceStepMs(settings.windowMs) : 1000;
    if (this.cancel && step === this.stepMs) return;
    this.cancel?.();
    this.stepMs = step;
    this.cancel = everyOn(this.d.clock, step, () => void this.tick());
  }

  stop(): void {
    this.cancel?.();
    this.cancel = undefined;
  }

  /** One check (exposed for tests); never rejects. */
  async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      await this.check();
    } catch (e) {
      this.d.notice('quorum.fence', `quorum failover watch: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.busy = false;
    }
  }

  private async check(): Promise<void> {
    const config = this.d.config();
    const settings = quorumFailoverSettings(config);
    const view = this.d.dcs.view();
    const leader = view.leader?.name;
    this.followRecord(view);
    const db = this.d.database();
    if (
      !settings ||
      standbyClusterOf(config) ||
      config.pause === true ||
      this.d.holdsLock() ||
      !leader ||
      leader === this.d.name ||
      db?.value !== 'running' ||
      db.role !== 'replica' ||
      !view.sync ||
      syncKeyOf(view.sync.value).leader !== leader
    ) {
      this.unreachable = undefined;
      return;
    }
    const fence = fenceOf(view.sync.value.fence);
    const listed = fence?.leader === leader && this.d.name in fence.members;
    const answers = await this.leaderAnswers(view, leader, settings.windowMs);
    if (listed) {
      if (answers) await this.leaveIfIncomplete(view, leader, fence!, settings.mode, settings.windowMs);
      else this.answering = undefined;
      return;
    }
    // A key without synchronous standbys: its primary waits for none, there is nothing to fence.
    if (syncKeyOf(view.sync.value).members.length === 0) {
      this.unreachable = undefined;
      return;
    }
    const probe = await this.d.freshProbe();
    const streaming = probe?.streaming === true;
    const now = this.d.clock.now();
    if (answers || streaming) {
      this.unreachable = undefined;
      return;
    }
    if (this.unreachable?.leader !== leader) this.unreachable = { leader, sinceMs: now };
    if (!shouldFence({ settings, nowMs: now, streaming, unreachableSinceMs: this.unreachable.sinceMs })) return;
    await this.join(leader, now - this.unreachable.sinceMs);
  }

  /**
   * The stream's fence follows the DCS record: once no fence of the current leader lists this
   * member (the fence was left, the leader key changed hands, a leader of a new term rewrote the
   * `sync` key), the stream may point at the leader again.
   */
  private followRecord(view: ClusterView): void {
    const fencedFrom = this.d.fenced();
    if (fencedFrom === undefined) return;
    const fence = fenceOf(view.sync?.value.fence);
    if (view.leader?.name === fencedFrom && fence?.leader === fencedFrom && this.d.name in fence.members) return;
    this.d.unfence();
    this.d.notice('quorum.fence', `no longer fenced from ${fencedFrom}: the fence record is gone or the leader key changed`);
    this.d.wake();
  }

  /** The leader's agent answers GET /ha, or (when checked) its PostgreSQL accepts a connection; bounded by half the window. */
  private async leaderAnswers(view: ClusterView, leader: string, windowMs: number): Promise<boolean> {
    const m = view.members.find((x) => x.name === leader);
    if (!m) return false;
    const timeoutMs = Math.max(100, Math.round(windowMs / 2));
    const api = m.data.api_url
      ? withTimeout(this.d.clock, this.d.fetchStatus(m.data.api_url), timeoutMs).then((doc) => doc !== undefined)
      : false;
    const hp = memberHostPort(m.data.conn_url);
    const pg = hp && this.d.pgAnswers ? this.d.pgAnswers(hp.host, hp.port, timeoutMs).catch(() => false) : false;
    const [a, p] = await Promise.all([api, pg]);
    return a || p;
  }

  /** Stops streaming, then adds this member with its WAL end to the fence of `leader`. */
  private async join(leader: string, unreachableMs: number): Promise<void> {
    await this.d.stopStreaming(leader);
    let recorded = false;
    try {
      recorded = await this.record(leader, unreachableMs);
    } finally {
      // Not recorded (the key changed, the DCS did not answer): the member streams again.
      if (!recorded) this.d.unfence();
    }
  }

  /** Adds this member at its WAL end to the fence of `leader` in the `sync` key; false when not recorded. */
  private async record(leader: string, unreachableMs: number): Promise<boolean> {
    const probe = await this.receiverGone();
    if (!probe) throw new Error('the WAL receiver did not stop within 2 s of the reload: not joining the fence');
    const lsn = walOf(probe);
    for (let attempt = 0; attempt < 2; attempt++) {
      const view = attempt === 0 ? this.d.dcs.view() : await this.d.dcs.refresh();
      const sync = view.sync;
      if (!sync || view.leader?.name !== leader) return false;
      const key = syncKeyOf(sync.value);
      if (key.leader !== leader || key.members.length === 0) return false;
      const fence = joinFence(fenceOf(sync.value.fence), leader, this.d.name, lsn);
      if (await this.d.dcs.setSync(withFence(sync.value, fence), sync.revision)) {
        this.d.notice(
          'quorum.fence',
          `fenced ${leader}: no WAL received and its agent unreachable for ${Math.round(unreachableMs)} ms; WAL ends at ${lsn} (fence: ${Object.keys(fence.members).join(', ')})`,
        );
        this.d.wake();
        return true;
      }
    }
    return false;
  }

  /**
   * A probe, started after the reload, that shows no WAL receiver at all: the WAL end it reads
   * is final (nothing more arrives). Polled every 200 ms for 2 s; undefined when it did not stop.
   */
  private async receiverGone(): Promise<PgStatus | undefined> {
    for (let n = 0; n < 10; n++) {
      const probe = await this.d.probeAfter(this.d.clock.now());
      if (probe && !probe.streaming && probe.upstreamHost === undefined) return probe;
      await sleepOn(this.d.clock, 200);
    }
    return undefined;
  }

  /**
   * The leader answers again: leave its fence. An incomplete fence at once; a complete one once the
   * leader has answered for 2 × the window (its taker did not take over: it is more than
   * maximum_lag_on_failover behind, or may not be promoted), else the fenced leader, alive and
   * holding its key, could never acknowledge again. Either way in one transaction that also
   * compares the leader key: a take compares the same `sync` revision, so at most one of the two
   * happens, and a member that left never streams from a leader whose key was taken.
   */
  private async leaveIfIncomplete(
    view: ClusterView,
    leader: string,
    fence: QuorumFence,
    mode: 'quorum' | 'on',
    windowMs: number,
  ): Promise<void> {
    const sync = view.sync!;
    const key = view.leader!;
    const standbys = view.members.map((m) => m.name).filter((n) => n !== leader);
    const now = this.d.clock.now();
    if (this.answering?.leader !== leader) this.answering = { leader, sinceMs: now };
    const complete = fenceIncomplete(mode, syncKeyOf(sync.value), fence, standbys) === undefined;
    if (complete && now - this.answering.sinceMs < 2 * windowMs) return;
    const rest = leaveFence(fence, this.d.name);
    if (await this.d.dcs.setSyncUnderLeader(withFence(sync.value, rest), sync.revision, { name: leader, revision: key.revision })) {
      this.unreachable = undefined;
      this.answering = undefined;
      this.d.unfence();
      this.d.notice('quorum.fence', `left the ${complete ? 'complete ' : ''}fence of ${leader}: it answers again`);
      this.d.wake();
    }
  }
}

/** The `sync` value with `fence` set (or removed when undefined). */
function withFence(value: SyncState, fence: QuorumFence | undefined): SyncState {
  const { fence: _old, ...rest } = value;
  return fence ? { ...rest, fence } : rest;
}

/** `p`'s value, or undefined once `ms` passed on `clock` (or when `p` rejects). */
function withTimeout<T>(clock: Clock, p: Promise<T | undefined>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = clock.setTimeout(() => resolve(undefined), ms, { unref: true });
    p.then(
      (v) => {
        clock.clearTimeout(timer);
        resolve(v);
      },
      () => {
        clock.clearTimeout(timer);
        resolve(undefined);
      },
    );
  });
}
