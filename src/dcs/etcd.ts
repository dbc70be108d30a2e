/**
 * EtcdDcs: the Dcs contract over etcd v3 with the `etcd3` package (shared/docs/dcs-layout.md,
 * reference/patroni.md §2.3-2.4, reference/stack.md §2).
 *
 * Rules that must stay true:
 * - The lease is granted with `autoKeepAlive: false` and kept alive only by `keepalive()` (one
 *   request per HA loop on one long-lived LeaseKeepAlive stream, keepalive-stream.ts), so a
 *   frozen agent loses its member and leader keys after ttl.
 *   An answer "lease not found" grants a new lease; keys are then re-put by their owners.
 * - Every call is bounded by retryTimeoutMs (gRPC deadline + Promise timer), and by the leader
 *   cycle's deadline while one is set (setDeadline); every failure, including cockatiel's
 *   BrokenCircuitError, becomes DcsError('dcs_unavailable').
 * - The leader lock is our own key, never etcd3's Election (stack.md §2.3): create-only txn to
 *   acquire, value compare to release, re-put with our lease only when value == our name.
 *   A renewal right after a keepalive is answered from the cache only when the cache is at or
 *   past the store revision of that keepalive's answer (heldPerCache).
 * - The cache is one linearizable range read, then one watch from revision + 1 with prev_kv. Any
 *   watch failure (disconnect, compaction cancel) drops the watcher, re-lists and re-watches;
 *   the cache ignores reads older than what it already holds (cache.ts).
 * - close() revokes the lease before closing the client: etcd3's close() alone leaves keepalive
 *   streams, and so our keys, alive (stack.md §2.3).
 */
import type { Etcd3, IKeyValue, IRangeResponse, Lease, Watcher, IWatchResponse } from 'etcd3';
import { EtcdLeaseInvalidError } from 'etcd3';
import type { ClusterView, FailoverRequest, HistoryEntry, LeaderStatus, SyncState } from '../domain/cluster.ts';
import type { MemberData } from '../domain/member.ts';
import { ViewCache, type KvChange } from './cache.ts';
import { encodeJson, encodeMember, encodeStatus } from './codec.ts';
import { clusterPrefix, DcsError, type AcquireResult, type Dcs, type DcsEvent, type DcsOptions } from './dcs.ts';
import { DcsEmitter } from './emitter.ts';
import { boundedCall, createEtcdClient, errorMessage, type EtcdSecurity } from './etcd-client.ts';
import { KeepaliveStream } from './keepalive-stream.ts';
import { KEY, absoluteKey, memberKey, relativeKey } from './keys.ts';
import type { StoredKv } from './view.ts';

/** Options of EtcdDcs: etcd endpoints (`host:port` or `http://host:port`) plus DcsOptions. */
export interface EtcdDcsOptions extends DcsOptions {
  hosts: string[];
  /** TLS credentials and etcd authentication (src/dcs/etcd-settings.ts builds them from `etcd3`). */
  security?: EtcdSecurity;
  /** Pause before re-listing after a watch failure, and between failed re-lists, ms. Default 500. */
  resyncDelayMs?: number;
}

const isLeaseInvalid = (err: unknown): boolean => err instanceof EtcdLeaseInvalidError;

function toStored(kv: IKeyValue): StoredKv {
  return {
    value: kv.value.toString('utf8'),
    modRevision: String(kv.mod_revision),
    createRevision: String(kv.create_revision),
    lease: String(kv.lease ?? '0'),
  };
}

/** The etcd v3 Dcs implementation (see module comment). */
export class EtcdDcs implements Dcs {
  readonly scope: string;
  readonly name: string;
  /** Absolute key prefix `/<namespace>/<scope>/`. */
  readonly prefix: string;
  private readonly client: Etcd3;
  private readonly now: () => number;
  private retryTimeoutMs: number;
  private deadline: (() => number) | undefined;
  private readonly resyncDelayMs: number;
  private ttlSeconds: number;
  private readonly cache = new ViewCache();
  private readonly emitter = new DcsEmitter();
  private lease: Lease | undefined;
  private leaseId: string | undefined;
  /** The one LeaseKeepAlive stream of `keepalive()` (keepalive-stream.ts). */
  private readonly keepalives: KeepaliveStream;
  private watcher: Watcher | undefined;
  private watchWanted = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private reachable = true;
  private lastSeen = 0;
  private lastKeepalive = 0;
  /** The last successful keepalive not yet used by a renewal: its lease and the store revision etcd answered it at. */
  private keptAliveAt: { leaseId: string; revision: bigint } | undefined;
  private closed = false;

  constructor(options: EtcdDcsOptions) {
    this.scope = options.scope;
    this.name = options.name;
    this.prefix = clusterPrefix(options.namespace, options.scope);
    this.ttlSeconds = options.ttlSeconds;
    this.retryTimeoutMs = options.retryTimeoutMs;
    this.resyncDelayMs = options.resyncDelayMs ?? 500;
    this.now = options.now ?? Date.now;
    this.client = createEtcdClient(options.hosts, options.security);
    this.keepalives = new KeepaliveStream(() => this.client.leaseClient.leaseKeepAlive());
  }

  /** Current lease id (decimal string), undefined before the grant (tests, diagnostics). */
  currentLeaseId(): string | undefined {
    return this.leaseId;
  }

  async start(opts: { lease?: boolean; watch?: boolean } = {}): Promise<void> {
    if (opts.lease !== false) await this.grant();
    await this.readAll();
    if (opts.watch !== false) {
      this.watchWanted = true;
      this.startWatch();
    }
  }

  /**
   * Revokes the lease (deadline-bounded), cancels the watch and closes the client. Resolves even
   * when etcd cannot be reached (the lease then expires after ttl): shutdown must not hang.
   */
  async close(opts: { keepLease?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watchWanted = false;
    clearTimeout(this.resyncTimer);
    const lease = this.lease;
    this.lease = undefined;
    this.leaseId = undefined;
    this.keepalives.close();
    if (lease && opts.keepLease !== true) {
      await boundedCall('lease revoke', this.retryTimeoutMs, (deadline) => lease.revoke({ deadline })).catch(() => {});
    }
    const w = this.watcher;
    this.watcher = undefined;
    if (w) await boundedCall('watch cancel', this.retryTimeoutMs, () => w.cancel()).catch(() => {});
    this.client.close();
  }

  view(): ClusterView {
    return this.cache.view();
  }

  lastSeenMs(): number {
    return this.lastSeen;
  }

  lastKeepaliveMs(): number {
    return this.lastKeepalive;
  }

  subscribe(listener: (event: DcsEvent) => void): () => void {
    return this.emitter.subscribe(listener);
  }

  async refresh(): Promise<ClusterView> {
    await this.readAll();
    return this.cache.view();
  }

  setRetryTimeout(ms: number): void {
    this.retryTimeoutMs = ms;
  }

  setDeadline(deadline: (() => number) | undefined): void {
    this.deadline = deadline;
  }

  async keepalive(): Promise<void> {
    const lease = this.lease;
    if (!lease) return this.grant();
    try {
      const sent = this.now();
      const id = this.leaseId!;
      const res = await this.call('lease keepalive', (deadline) => this.keepalives.once(id, deadline), isLeaseInvalid);
      if (this.lease === lease) {
        this.lastKeepalive = sent;
        this.keptAliveAt = { leaseId: id, revision: BigInt(res.header?.revision ?? '0') };
      }
    } catch (err) {
      if (!isLeaseInvalid(err)) throw err;
      await this.grant();
    }
  }

  /**
   * Grants a lease with the new TTL. The old lease is released, not revoked: revoking would
   * delete the leader key at once and open the lock to others before the caller re-puts it with
   * the new lease (patroni.md §2.3: "drops the lease"). It expires by itself after the old ttl.
   */
  async setTtl(ttlSeconds: number): Promise<void> {
    this.ttlSeconds = ttlSeconds;
    this.lease?.release();
    await this.grant();
  }

  async attemptToAcquireLeader(): Promise<AcquireResult> {
    await this.keepalive();
    const key = this.abs(KEY.leader);
    const res = await this.withLease('leader acquire', (leaseId, deadline) =>
      this.client
        .if(key, 'Create', '==', 0)
        .then(this.client.put(key).value(this.name).lease(leaseId), this.client.get(key))
        .else(this.client.get(key))
        .options({ deadline })
        .commit(),
    );
    const kv = res.responses[res.succeeded ? 1 : 0]?.response_range?.kvs[0];
    if (res.succeeded && kv) return { acquired: true, createRevision: String(kv.create_revision) };
    const holder = kv ? kv.value.toString('utf8') : undefined;
    // A repeated attempt after an ambiguous failure may find our own key: that is a win.
    if (kv && holder === this.name && String(kv.lease) === this.leaseId)
      return { acquired: true, createRevision: String(kv.create_revision) };
    return { acquired: false, holder: holder || undefined };
  }

  async takeLeader(expected: { leader: { name: string; revision: string }; syncRevision: string }): Promise<AcquireResult> {
    await this.keepalive();
    const key = this.abs(KEY.leader);
    const sync = this.abs(KEY.sync);
    const res = await this.withLease('leader take', (leaseId, deadline) =>
      this.client
        .if(key, 'Value', '==', expected.leader.name)
        .and(key, 'Mod', '==', expected.leader.revision)
        .and(sync, 'Mod', '==', expected.syncRevision)
        // A put on the existing key (etcd refuses two operations on one key in a transaction): the
        // create_revision stays, the value and lease change, so the old holder's renewal fails.
        .then(this.client.put(key).value(this.name).lease(leaseId), this.client.get(key))
        .else(this.client.get(key))
        .options({ deadline })
        .commit(),
    );
    const kv = res.responses[res.succeeded ? 1 : 0]?.response_range?.kvs[0];
    if (res.succeeded && kv) return { acquired: true, createRevision: String(kv.create_revision) };
    return { acquired: false, holder: kv ? kv.value.toString('utf8') || undefined : undefined };
  }

  async updateLeader(createRevision: string, opts: { keepalive?: boolean } = {}): Promise<boolean> {
    if (opts.keepalive !== false) await this.keepalive();
    if (this.heldPerCache(createRevision)) return true;
    const key = this.abs(KEY.leader);
    const held = await this.call('leader renew', (deadline) =>
      this.client
        .if(key, 'Value', '==', this.name)
        .and(key, 'Create', '==', createRevision)
        .and(key, 'Lease', '==', this.leaseId ?? '0')
        .else(this.client.get(key))
        .options({ deadline })
        .commit(),
    );
    if (held.succeeded) return true;
    const kv = held.responses[0]?.response_range?.kvs[0];
    if (!kv || kv.value.toString('utf8') !== this.name || String(kv.create_revision) !== createRevision) return false;
    // Our key on another lease (TTL changed, agent restarted): move it to ours, same incarnation.
    const moved = await this.withLease('leader re-put', (leaseId, deadline) =>
      this.client
        .if(key, 'Value', '==', this.name)
        .and(key, 'Create', '==', createRevision)
        .then(this.client.put(key).value(this.name).lease(leaseId))
        .options({ deadline })
        .commit(),
    );
    return moved.succeeded;
  }

  /**
   * Whether the renewal's compare-and-set can be answered from the cache (issue 13: one unary
   * gRPC call less per cycle on an idle leader). True only when all of these hold:
   * - a keepalive of the current lease succeeded and no renewal used it yet (each renewal needs
   *   its own keepalive since the last one);
   * - the cache is at or past the store revision that keepalive's answer carried (the header
   *   revision etcd answered it at): every change of the prefix up to that revision, a delete or
   *   re-creation of the leader key included, is in the cache. A write anywhere in etcd after the
   *   cache's revision (another cluster's keys in a shared etcd, a watch event still in flight)
   *   makes this false and the transaction runs, as before;
   * - the cached leader key is this member's incarnation: value, create_revision and the
   *   current lease.
   * Then the key was this incarnation on the lease the keepalive extended at a revision after the
   * keepalive was sent, which is what the transaction's compares establish. The answer's header
   * comes from the member that served the keepalive (renewals go through the etcd leader): a
   * member behind the etcd leader answers an older revision, by its apply lag.
   */
  private heldPerCache(createRevision: string): boolean {
    const at = this.keptAliveAt;
    this.keptAliveAt = undefined;
    if (!at || at.leaseId !== this.leaseId || at.revision === 0n || this.cache.revision() < at.revision) return false;
    const kv = this.cache.get(KEY.leader);
    return !!kv && kv.value === this.name && kv.createRevision === createRevision && kv.lease === this.leaseId;
  }

  async deleteLeader(createRevision?: string): Promise<boolean> {
    const key = this.abs(KEY.leader);
    const res = await this.call('leader delete', (deadline) => {
      const txn = this.client.if(key, 'Value', '==', this.name);
      if (createRevision !== undefined) txn.and(key, 'Create', '==', createRevision);
      return txn.then(this.client.delete().key(key)).options({ deadline }).commit();
    });
    return res.succeeded;
  }

  async clearLeader(expected: { name: string; revision: string }): Promise<boolean> {
    const key = this.abs(KEY.leader);
    const res = await this.call('leader clear', (deadline) =>
      this.client
        .if(key, 'Value', '==', expected.name)
        .and(key, 'Mod', '==', expected.revision)
        .then(this.client.delete().key(key))
        .options({ deadline })
        .commit(),
    );
    return res.succeeded;
  }

  async touchMember(data: MemberData): Promise<void> {
    const key = this.abs(memberKey(this.name));
    const value = encodeMember(data);
    await this.withLease('member put', (leaseId, deadline) =>
      this.client.put(key).value(value).lease(leaseId).options({ deadline }).exec(),
    );
  }

  async deleteMember(): Promise<void> {
    const key = this.abs(memberKey(this.name));
    await this.call('member delete', (deadline) => this.client.delete().key(key).options({ deadline }).exec());
  }

  async initialize(sysid: string, opts: { create: boolean }): Promise<boolean> {
    const key = this.abs(KEY.initialize);
    if (!opts.create) {
      await this.call('initialize put', (deadline) => this.client.put(key).value(sysid).options({ deadline }).exec());
      return true;
    }
    const res = await this.call('initialize create', (deadline) =>
      this.client.if(key, 'Create', '==', 0).then(this.client.put(key).value(sysid)).options({ deadline }).commit(),
    );
    return res.succeeded;
  }

  async cancelInitialize(): Promise<boolean> {
    const key = this.abs(KEY.initialize);
    const res = await this.call('initialize delete', (deadline) =>
      this.client.if(key, 'Value', '==', '').then(this.client.delete().key(key)).options({ deadline }).commit(),
    );
    return res.succeeded;
  }

  async setConfig(value: Record<string, unknown>, expectedRevision?: string): Promise<boolean> {
    return this.casPut(KEY.config, encodeJson(value), expectedRevision);
  }

  async setStatus(status: LeaderStatus): Promise<void> {
    await this.casPut(KEY.status, encodeStatus(status), undefined);
  }

  async setFailover(value: FailoverRequest, expectedRevision?: string): Promise<boolean> {
    return this.casPut(KEY.failover, encodeJson(value), expectedRevision);
  }

  async setSync(value: SyncState | null, expectedRevision?: string): Promise<boolean> {
    if (value !== null) return this.casPut(KEY.sync, encodeJson(value), expectedRevision);
    const key = this.abs(KEY.sync);
    if (expectedRevision === undefined) {
      await this.call('sync delete', (deadline) => this.client.delete().key(key).options({ deadline }).exec());
      return true;
    }
    const res = await this.call('sync delete', (deadline) =>
      this.client.if(key, 'Mod', '==', expectedRevision).then(this.client.delete().key(key)).options({ deadline }).commit(),
    );
    return res.succeeded;
  }

  async setSyncUnderLeader(value: SyncState, syncRevision: string, leader: { name: string; revision: string }): Promise<boolean> {
    const key = this.abs(KEY.sync);
    const lk = this.abs(KEY.leader);
    const res = await this.call('sync put under leader', (deadline) =>
      this.client
        .if(key, 'Mod', '==', syncRevision)
        .and(lk, 'Value', '==', leader.name)
        .and(lk, 'Mod', '==', leader.revision)
        .then(this.client.put(key).value(encodeJson(value)))
        .options({ deadline })
        .commit(),
    );
    return res.succeeded;
  }

  async setHistory(history: HistoryEntry[]): Promise<void> {
    await this.casPut(KEY.history, encodeJson(history), undefined);
  }

  async setFailsafe(value: Record<string, string> | null): Promise<void> {
    const key = this.abs(KEY.failsafe);
    if (value !== null) {
      await this.casPut(KEY.failsafe, encodeJson(value), undefined);
      return;
    }
    await this.call('failsafe delete', (deadline) => this.client.delete().key(key).options({ deadline }).exec());
  }

  async deleteCluster(): Promise<void> {
    await this.call('prefix delete', (deadline) => this.client.delete().prefix(this.prefix).options({ deadline }).exec());
  }

  // ---- calls ---------------------------------------------------------------------------------

  /** One bounded call; success updates lastSeen and reachability, failure reports unreachable. */
  private async call<T>(what: string, attempt: (deadline: Date) => Promise<T>, passThrough?: (e: unknown) => boolean): Promise<T> {
    if (this.closed) throw new DcsError('dcs_unavailable', `DCS client ${this.name} is closed`);
    let timeoutMs = this.retryTimeoutMs;
    if (this.deadline) {
      const left = this.deadline() - this.now();
      if (left <= 0) throw new DcsError('dcs_unavailable', `etcd ${what} not sent: the leader cycle's deadline passed ${-left} ms ago`);
      timeoutMs = Math.min(timeoutMs, left);
    }
    try {
      const result = await boundedCall(what, timeoutMs, attempt, passThrough);
      this.contact();
      return result;
    } catch (err) {
      if (err instanceof DcsError) this.markUnreachable(err.message);
      else this.contact(); // a pass-through error is an answer from etcd
      throw err;
    }
  }

  /** Runs a write that carries our lease; grants a lease first if none, and once more on "lease not found". */
  private async withLease<T>(what: string, attempt: (leaseId: string, deadline: Date) => Promise<T>): Promise<T> {
    if (!this.leaseId) await this.grant();
    try {
      return await this.call(what, (deadline) => attempt(this.leaseId!, deadline), isLeaseInvalid);
    } catch (err) {
      if (!isLeaseInvalid(err)) throw err;
      await this.grant();
      return this.call(what, (deadline) => attempt(this.leaseId!, deadline));
    }
  }

  private async grant(): Promise<void> {
    const ttl = this.ttlSeconds;
    let lease: Lease | undefined;
    const sent = this.now();
    const id = await this.call('lease grant', (deadline) => {
      lease = this.client.lease(ttl, { autoKeepAlive: false, deadline });
      return lease.grant();
    });
    this.lease = lease;
    this.leaseId = id;
    this.lastKeepalive = sent;
  }

  private async casPut(rel: string, value: string, expectedRevision: string | undefined): Promise<boolean> {
    const key = this.abs(rel);
    if (expectedRevision === undefined) {
      await this.call(`${rel} put`, (deadline) => this.client.put(key).value(value).options({ deadline }).exec());
      return true;
    }
    const res = await this.call(`${rel} compare-and-set`, (deadline) =>
      this.client.if(key, 'Mod', '==', expectedRevision).then(this.client.put(key).value(value)).options({ deadline }).commit(),
    );
    return res.succeeded;
  }

  private abs(key: string): string {
    return absoluteKey(this.prefix, key);
  }

  private contact(): void {
    this.lastSeen = this.now();
    if (!this.reachable && !this.closed) {
      this.reachable = true;
      this.emitter.emit({ type: 'dcs.reachable' });
    }
  }

  private markUnreachable(error: string): void {
    if (!this.reachable || this.closed) return;
    this.reachable = false;
    this.emitter.emit({ type: 'dcs.unreachable', error });
  }

  // ---- cache and watch -----------------------------------------------------------------------

  private async readAll(): Promise<void> {
    const res: IRangeResponse = await this.call('range read', (deadline) =>
      this.client.getAll().prefix(this.prefix).options({ deadline }).exec(),
    );
    const entries = new Map<string, StoredKv>();
    for (const kv of res.kvs) {
      const rel = relativeKey(this.prefix, kv.key.toString('utf8'));
      if (rel !== undefined) entries.set(rel, toStored(kv));
    }
    this.emitter.emit(...this.cache.replace(entries, BigInt(res.header.revision)));
  }

  private startWatch(): void {
    if (!this.watchWanted || this.closed) return;
    const w = this.client
      .watch()
      .prefix(this.prefix)
      .withPreviousKV()
      .startRevision(String(this.cache.revision() + 1n))
      .watcher();
    this.watcher = w;
    w.on('connected', () => {
      if (this.watcher === w) this.contact();
    });
    w.on('data', (res) => {
      if (this.watcher === w) this.onWatchData(res);
    });
    // etcd3 reconnects by itself from its last revision; we re-list instead, so nothing a
    // compaction or a missed create response could hide stays out of the cache.
    w.on('disconnected', (err) => this.onWatchFailure(w, err, true));
    // A server-side cancel (e.g. compacted start revision): the watcher is already detached.
    w.on('error', (err) => this.onWatchFailure(w, err, false));
  }

  private onWatchData(res: IWatchResponse): void {
    this.contact();
    const changes: KvChange[] = [];
    for (const ev of res.events) {
      const key = relativeKey(this.prefix, ev.kv.key.toString('utf8'));
      if (key === undefined) continue;
      if (ev.type === 'Put') changes.push({ type: 'put', key, kv: toStored(ev.kv) });
      else changes.push({ type: 'delete', key, revision: String(ev.kv.mod_revision || res.header.revision) });
    }
    if (changes.length > 0) this.emitter.emit(...this.cache.apply(changes));
  }

  private onWatchFailure(w: Watcher, err: unknown, detach: boolean): void {
    if (this.watcher !== w) return;
    this.watcher = undefined;
    if (detach) w.cancel().catch(() => {});
    this.markUnreachable(`etcd watch failed: ${errorMessage(err)}`);
    this.scheduleResync();
  }

  private scheduleResync(): void {
    if (this.resyncTimer || this.closed || !this.watchWanted) return;
    this.resyncTimer = setTimeout(() => {
      this.resyncTimer = undefined;
      this.readAll().then(
        () => this.startWatch(),
        () => this.scheduleResync(),
      );
    }, this.resyncDelayMs);
  }
}
