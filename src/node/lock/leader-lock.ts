/**
 * The leader lock as this agent holds it: the one owner of "do I lead?" (docs/ha.md "The leader
 * lock"). The DCS key `leader` is shared; what this module adds is the identity of the
 * incarnation this agent created (its create_revision), so that:
 *
 * - the key is created only by the leader race (`acquire`, create-only transaction);
 * - renewal is a compare-and-set on this member's own incarnation (value, create_revision and
 *   lease, Dcs.updateLeader) and can never create the key;
 * - once released or lost, the agent does not lead again until it wins a new race, even while a
 *   stale view still shows the old key with its name;
 * - a key that names this member but that this process did not create is adopted only at start
 *   (the previous run of this agent held it) or when it carries this agent's own lease (an
 *   acquire whose answer was lost); both through the same compare-and-set, never by creating.
 *
 * Time is the agent's own clock (`now`, epoch ms): `untilMs` is when the lock may have expired
 * in the DCS, counted from the instant the last successful renewal was SENT (the DCS extended the
 * lease at or after that instant; counting from the answer would add the answer's delay and any
 * event-loop lag to what the agent believes: finding 9, docs/simulation.md).
 */
import type { ClusterView } from '../../domain/cluster.ts';
import type { Dcs } from '../../dcs/dcs.ts';

/** Where this agent stands with the lock. */
export type LockState =
  /** Never held in this process. */
  | { kind: 'none' }
  /** Held: renewal (or acquire) sent at `renewedMs`, valid until `untilMs` = renewedMs + ttl on our clock. */
  | { kind: 'held'; createRevision: string; renewedMs: number; untilMs: number }
  /** Released by us (`deleted` false while the delete has not reached the DCS) or lost. */
  | { kind: 'released'; createRevision: string; deleted: boolean; why: 'released' | 'lost' };

/** When a lease keepalive was sent: epoch ms (`sentMs`) and the fence's monotonic stamp, if fenced. */
export interface RenewalBasis {
  sentMs: number;
  stamp?: number;
}

/** What the view's `leader` key means for this agent. */
export type LockReading =
  /** This agent holds the lock. */
  | 'mine'
  /** Another member (or nobody) holds it. */
  | 'other'
  /** The key names this member and may be adopted (start-up, or our own lease). */
  | 'adoptable'
  /** The key names this member but is an incarnation we released or lost: the view is stale. */
  | 'stale';

/** The leader lock as this agent holds it (see the module comment). */
export class LeaderLock {
  private st: LockState = { kind: 'none' };

  constructor(
    private readonly deps: {
      dcs: Dcs;
      /** This member's name. */
      name: string;
      /** Epoch ms. */
      now: () => number;
      /** Current ttl, ms. */
      ttlMs: () => number;
      /** This agent's current lease id, when the DCS implementation tells it. */
      leaseId?: () => string | undefined;
      /**
       * The fence (fencing.ts): `stamp` marks the send time of each acquire or renewal (monotonic);
       * `held` gets it once the DCS confirmed the lock (the lease cannot expire before stamp + ttl).
       */
      fence?: { stamp: () => number; held: (stamp: number) => void };
    },
  ) {}

  /** The current state (a copy-free read; do not mutate). */
  get state(): LockState {
    return this.st;
  }

  /** True while this agent holds the lock (acquired or renewed, not released, not lost). */
  get held(): boolean {
    return this.st.kind === 'held';
  }

  /** Epoch ms until which the lock is ours on our own clock; 0 when not held. */
  get untilMs(): number {
    return this.st.kind === 'held' ? this.st.untilMs : 0;
  }

  /** How to read the view's `leader` key (see LockReading). */
  read(view: ClusterView): LockReading {
    if (this.st.kind === 'held') return 'mine';
    const key = view.leader;
    if (!key || key.name !== this.deps.name) return 'other';
    if (this.st.kind === 'none') return 'adoptable';
    if (key.createRevision === this.st.createRevision) return 'stale';
    const lease = this.deps.leaseId?.();
    return lease !== undefined && key.leaseId === lease ? 'adoptable' : 'stale';
  }

  /** Leader race (create-only). True when won; DCS failures reject (DcsError). */
  async acquire(): Promise<{ acquired: true } | { acquired: false; holder: string | undefined }> {
    const sentMs = this.deps.now();
    const sent = this.deps.fence?.stamp();
    const r = await this.deps.dcs.attemptToAcquireLeader();
    if (!r.acquired) return r;
    this.hold(r.createRevision, sentMs, sent);
    return { acquired: true };
  }

  /**
   * Quorum failover's take (Dcs.takeLeader): the leader key of `expected.leader` replaced by this
   * member's, compare-and-set on that key and on the `sync` key as read. True when taken: held
   * from the instant the request was sent, like an acquire. DCS failures reject (DcsError).
   */
  async take(expected: { leader: { name: string; revision: string }; syncRevision: string }): Promise<boolean> {
    const sentMs = this.deps.now();
    const sent = this.deps.fence?.stamp();
    const r = await this.deps.dcs.takeLeader(expected);
    if (!r.acquired) return false;
    this.hold(r.createRevision, sentMs, sent);
    return true;
  }

  /**
   * Adopts the key the view shows with this member's name (only when `read(view)` is
   * 'adoptable'): a compare-and-set renewal of that incarnation. True when adopted.
   */
  async adopt(view: ClusterView): Promise<boolean> {
    if (this.read(view) !== 'adoptable' || !view.leader) return false;
    const rev = view.leader.createRevision;
    const sentMs = this.deps.now();
    const sent = this.deps.fence?.stamp();
    if (await this.deps.dcs.updateLeader(rev)) {
      this.hold(rev, sentMs, sent);
      return true;
    }
    return false;
  }

  /**
   * The instant a lease keepalive is about to be sent, on both clocks: given to `renew` by a
   * caller that keeps the lease alive itself just before renewing (the HA cycle).
   */
  mark(): RenewalBasis {
    const stamp = this.deps.fence?.stamp();
    return { sentMs: this.deps.now(), ...(stamp !== undefined ? { stamp } : {}) };
  }

  /**
   * Renews the held lock. 'ok': renewed, `untilMs` moved to the send time + ttl; 'lost': the key is gone,
   * names another member or is another incarnation (the state becomes released/lost);
   * 'failed': the DCS could not be reached (the state is kept: the key may still be ours, and
   * `untilMs` runs out on our clock). Nothing to renew: 'lost'.
   *
   * `keptAlive`: the caller kept the lease alive successfully, with the request sent at this
   * basis (from `mark()`), before calling: the renewal then skips its own keepalive (one gRPC
   * message less per cycle, issue 13) and the lock's validity and the fence's deadline count from
   * that earlier send time, when the lease was last extended. The compare-and-set (or, on etcd,
   * the watch cache when it is current as of that keepalive: Dcs.updateLeader) still checks the
   * key is on the current lease, the one that keepalive extended (or a newer one granted after
   * it).
   */
  async renew(keptAlive?: RenewalBasis): Promise<'ok' | 'lost' | 'failed'> {
    const st = this.st;
    if (st.kind !== 'held') return 'lost';
    let ok: boolean;
    const basis = keptAlive ?? this.mark();
    const sentMs = basis.sentMs;
    const sent = basis.stamp;
    try {
      ok = await this.deps.dcs.updateLeader(st.createRevision, { keepalive: keptAlive === undefined });
    } catch {
      return 'failed';
    }
    if (this.st !== st) return this.st.kind === 'held' ? 'ok' : 'lost';
    if (!ok) {
      this.st = { kind: 'released', createRevision: st.createRevision, deleted: true, why: 'lost' };
      return 'lost';
    }
    this.hold(st.createRevision, sentMs, sent);
    return 'ok';
  }

  /**
   * Releases the lock: from now on this agent does not lead, whatever the view says; the key is
   * deleted with a compare-and-set on our incarnation. A delete that fails is retried by
   * `retryRelease` (our lease is kept alive for the member key, so the key would not expire).
   * True when the key is gone (or was not ours any more).
   */
  async release(): Promise<boolean> {
    const st = this.st;
    if (st.kind === 'none') return true;
    if (st.kind === 'released' && st.deleted) return true;
    this.st = { kind: 'released', createRevision: st.createRevision, deleted: false, why: 'released' };
    return this.retryRelease();
  }

  /** Retries a release whose delete has not reached the DCS. True when done. */
  async retryRelease(): Promise<boolean> {
    const st = this.st;
    if (st.kind !== 'released' || st.deleted) return true;
    try {
      await this.deps.dcs.deleteLeader(st.createRevision);
    } catch {
      return false;
    }
    if (this.st === st) this.st = { ...st, deleted: true };
    return true;
  }

  /** A release whose delete is still to be made. */
  get releasePending(): boolean {
    return this.st.kind === 'released' && !this.st.deleted;
  }

  /** Holds incarnation `createRevision`, renewed by a request sent at `sentMs` (epoch ms); `sent`: the fence's stamp. */
  private hold(createRevision: string, sentMs: number, sent?: number): void {
    this.st = { kind: 'held', createRevision, renewedMs: sentMs, untilMs: sentMs + this.deps.ttlMs() };
    if (sent !== undefined) this.deps.fence?.held(sent);
  }
}
