/**
 * The background read of the leader's position for decideCycle's same-number fork (docs/ha.md
 * "Divergence": a WAL on the leader's timeline number that goes past the leader's own is another
 * lineage). Only while this running replica follows the leader and has not streamed for
 * notStreamingGraceMs. Read in the background: the cycle never waits for it (a stalled replica's
 * leader is often the one that is gone, and the race must not wait for its timeout).
 */
import type { ClusterView } from '../../domain/cluster.ts';
import { timingOf, type DynamicConfig } from '../../domain/dynamic-config.ts';
import { notStreamingGraceMs, type CycleInput } from '../../domain/ha-cycle.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import { documentProbeAgeMs } from '../../domain/status-document.ts';
import { walOf } from '../member/member-data.ts';

/** One read of the leader's status document: of whom, when it started (epoch ms), whether it is in flight, and the last answer. */
interface Read {
  leader: string;
  startedAtMs: number;
  pending: boolean;
  answer?: {
    timeline: number;
    walBytes: bigint;
    askedAtMs: number;
    /**
     * No later than the instant the leader's probe that read `walBytes` started (epoch ms, this
     * agent's clock): when the request was sent minus the document's `probe_age_ms`; without an
     * age (the reference's agent), minus 1 s, the real agent's probe on demand.
     */
    readAtMs: number;
  };
}

/** How old a status document's probe may be when it carries no `probe_age_ms` (the agent probes on demand past 1 s). */
const UNDATED_PROBE_AGE_MS = 1000;

/** This replica as the read needs it. */
export interface StalledReplica {
  /** This member's name. */
  name: string;
  /** The running replica's probe this cycle. */
  probe: PgStatus | undefined;
  /** Since when it has not streamed (epoch ms). */
  notStreamingSinceMs: number | undefined;
  /** The member its primary_conninfo was configured for. */
  configuredFor: string | undefined;
  config: DynamicConfig;
}

/** The background read of the leader's position while this replica does not stream. */
export class LeaderPositionRead {
  /** The last background read of the leader's position while this replica did not stream. */
  private read: Read | undefined;
  /**
   * The local WAL end (bytes) of the last probe and the time (epoch ms) of the first probe that
   * showed it: the replica received nothing after that instant. A replica that streams between two
   * cycles without any cycle's probe catching it streaming keeps its notStreamingSinceMs, so that
   * alone does not say the WAL stood still (finding 26, docs/simulation.md).
   */
  private steady: { walBytes: bigint; sinceMs: number } | undefined;

  constructor(
    /** Member status fetcher (GET <api_url>); undefined when unreachable. */
    private readonly fetchStatus: (apiUrl: string) => Promise<Record<string, unknown> | undefined>,
  ) {}

  /**
   * The leader's timeline and flush position while `me` follows it and has not streamed for
   * notStreamingGraceMs; else undefined (and the read is dropped). Starts a read when none is
   * under way for this leader or the last one started loop_wait ago. An answer counts only when
   * the leader's probe behind it started after the replica stopped streaming (dated by the
   * document's `probe_age_ms`; without it, a request sent more than 1 s after), so the position
   * it shows is at least the one the replica stopped at, and only for the leader it was asked
   * of, for 3 × loop_wait. A leader's agent that was frozen answers from a probe taken before
   * the freeze, while its PostgreSQL wrote on and streamed: that older position is no sign of
   * another lineage (finding 32, docs/simulation.md).
   */
  positionIfStalled(view: ClusterView, me: StalledReplica, nowMs: number): CycleInput['leaderWal'] {
    const leader = view.leader?.name;
    const { probe, config } = me;
    const since = this.stillSince(probe, me.notStreamingSinceMs);
    if (
      !probe?.inRecovery ||
      probe.streaming ||
      since === undefined ||
      !leader ||
      leader === me.name ||
      me.configuredFor !== leader ||
      nowMs - since < notStreamingGraceMs(config)
    ) {
      this.read = undefined;
      return undefined;
    }
    const read = this.read;
    const { loopWaitMs } = timingOf(config);
    if (!read || read.leader !== leader || (!read.pending && nowMs - read.startedAtMs >= loopWaitMs)) {
      const url = view.members.find((m) => m.name === leader)?.data.api_url;
      if (url) this.start(leader, url, nowMs, read?.leader === leader ? read.answer : undefined);
    }
    const a = this.read?.leader === leader ? this.read.answer : undefined;
    if (!a || a.readAtMs <= since || nowMs - a.askedAtMs > 3 * loopWaitMs) return undefined;
    return { timeline: a.timeline, walBytes: a.walBytes };
  }

  /**
   * Since when (epoch ms) neither the WAL receiver streamed (as the cycles saw it) nor the local
   * WAL end moved (as the probes saw it): the later of the two; undefined while it streams.
   */
  private stillSince(probe: PgStatus | undefined, notStreamingSinceMs: number | undefined): number | undefined {
    if (!probe?.inRecovery) {
      this.steady = undefined;
      return undefined;
    }
    const wal = walOf(probe);
    if (!this.steady || this.steady.walBytes !== wal) this.steady = { walBytes: wal, sinceMs: probe.atMs };
    return notStreamingSinceMs === undefined ? undefined : Math.max(notStreamingSinceMs, this.steady.sinceMs);
  }

  /** Starts a read of `leader`'s status at `url`; `answer`: the previous answer, kept until a new one comes. */
  private start(leader: string, url: string, nowMs: number, answer: Read['answer']): void {
    const next: Read = { leader, startedAtMs: nowMs, pending: true, ...(answer ? { answer } : {}) };
    this.read = next;
    this.fetchStatus(url).then(
      (doc) => {
        next.pending = false;
        const xlog = doc?.['xlog'] as { location?: unknown } | undefined;
        if (doc?.['role'] === 'primary' && typeof doc['timeline'] === 'number' && typeof xlog?.location === 'number') {
          const probeAgeMs = documentProbeAgeMs(doc) ?? UNDATED_PROBE_AGE_MS;
          next.answer = {
            timeline: doc['timeline'],
            walBytes: BigInt(xlog.location),
            askedAtMs: next.startedAtMs,
            readAtMs: next.startedAtMs - probeAgeMs,
          };
        }
      },
      () => {
        next.pending = false;
      },
    );
  }
}
