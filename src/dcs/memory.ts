/**
 * InMemoryDcs: the Dcs contract over an InMemoryStore shared by several clients of one process
 * (embedding, the demo, fast tests). It behaves like EtcdDcs where the HA logic can tell: one
 * lease per client kept alive only by `keepalive()`, a cache fed by an asynchronous watch,
 * expected outcomes as values, and DcsError('dcs_unavailable') while the store marks the client
 * unreachable (`store.setReachable(name, false)`). A partitioned call rejects at once rather
 * than after retryTimeoutMs (the bound holds trivially; tests stay fast).
 */
import type { ClusterView, FailoverRequest, HistoryEntry, LeaderStatus, SyncState } from '../domain/cluster.ts';
import type { MemberData } from '../domain/member.ts';
import { ViewCache, type KvChange } from './cache.ts';
import { encodeJson, encodeMember, encodeStatus } from './codec.ts';
import { clusterPrefix, DcsError, type AcquireResult, type Dcs, type DcsEvent, type DcsOptions } from './dcs.ts';
import { DcsEmitter } from './emitter.ts';
import { KEY, absoluteKey, memberKey, relativeKey } from './keys.ts';
import { InMemoryStore, type StoreChange } from './memory-store.ts';
import type { StoredKv } from './view.ts';

export { InMemoryStore } from './memory-store.ts';
export type { InMemoryStoreOptions, StoreChange } from './memory-store.ts';

/** Options of InMemoryDcs: the shared store plus DcsOptions. */
export interface InMemoryDcsOptions extends DcsOptions {
  store: InMemoryStore;
}

/** The in-process Dcs implementation (see module comment). */
export class InMemoryDcs implements Dcs {
  readonly scope: string;
  readonly name: string;
  /** Absolute key prefix `/<namespace>/<scope>/`. */
  readonly prefix: string;
  private readonly store: InMemoryStore;
  private readonly now: () => number;
  private ttlSeconds: number;
  private retryTimeoutMs: number;
  private deadline: (() => number) | undefined;
  private readonly cache = new ViewCache();
  private readonly emitter = new DcsEmitter();
  private leaseId: string | undefined;
  private lastSeen = 0;
  private lastKeepalive = 0;
  private watching = false;
  private cancelWatch: (() => void) | undefined;
  private unregister: (() => void) | undefined;
  private closed = false;

  constructor(options: InMemoryDcsOptions) {
    this.store = options.store;
    this.scope = options.scope;
    this.name = options.name;
    this.prefix = clusterPrefix(options.namespace, options.scope);
    this.ttlSeconds = options.ttlSeconds;
    this.retryTimeoutMs = options.retryTimeoutMs;
    this.now = options.now ?? Date.now;
  }

  /** The current bound of a call, ms (calls here answer at once; kept for the contract and tests). */
  get retryTimeout(): number {
    return this.retryTimeoutMs;
  }

  setRetryTimeout(ms: number): void {
    this.retryTimeoutMs = ms;
  }

  setDeadline(deadline: (() => number) | undefined): void {
    this.deadline = deadline;
  }

  /** Current lease id (decimal string), undefined before the grant (tests, diagnostics). */
  currentLeaseId(): string | undefined {
    return this.leaseId;
  }

  async start(opts: { lease?: boolean; watch?: boolean } = {}): Promise<void> {
    this.unregister ??= this.store.register({
      name: this.name,
      reachabilityChanged: (reachable) => this.reachabilityChanged(reachable),
    });
    await this.call(() => {
      if (opts.lease !== false) this.grant();
      this.readAll();
    });
    if (opts.watch !== false) {
      this.watching = true;
      this.cancelWatch = this.store.watch(this.prefix, (changes) => this.onWatch(changes));
    }
  }

  async close(opts: { keepLease?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    try {
      if (this.leaseId && opts.keepLease !== true && this.store.isReachable(this.name)) this.store.revokeLease(this.leaseId);
    } finally {
      this.closed = true;
      this.leaseId = undefined;
      this.watching = false;
      this.cancelWatch?.();
      this.unregister?.();
    }
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
    await this.call(() => this.readAll());
    return this.cache.view();
  }

  async keepalive(): Promise<void> {
    await this.call(() => this.keepaliveNow());
  }

  async setTtl(ttlSeconds: number): Promise<void> {
    await this.call(() => {
      // The old lease is abandoned, not revoked: revoking would delete the leader key at once and
      // open the lock to others before the caller re-puts it with the new lease.
      this.ttlSeconds = ttlSeconds;
      this.grant();
    });
  }

  async attemptToAcquireLeader(): Promise<AcquireResult> {
    return this.call(() => {
      this.keepaliveNow();
      const key = this.abs(KEY.leader);
      const current = this.store.get(key);
      if (current) return { acquired: false, holder: current.value || undefined };
      this.putWithLease(key, this.name);
      return { acquired: true, createRevision: this.store.get(key)?.createRevision ?? '0' };
    });
  }

  async takeLeader(expected: { leader: { name: string; revision: string }; syncRevision: string }): Promise<AcquireResult> {
    return this.call(() => {
      this.keepaliveNow();
      const key = this.abs(KEY.leader);
      const current = this.store.get(key);
      const sync = this.store.get(this.abs(KEY.sync));
      if (
        !current ||
        current.value !== expected.leader.name ||
        current.modRevision !== expected.leader.revision ||
        sync?.modRevision !== expected.syncRevision
      )
        return { acquired: false, holder: current?.value || undefined };
      // As etcd: a put on the existing key keeps its create_revision; the value and lease change,
      // so the old holder's renewal fails.
      this.putWithLease(key, this.name);
      return { acquired: true, createRevision: this.store.get(key)?.createRevision ?? '0' };
    });
  }

  async updateLeader(createRevision: string, opts: { keepalive?: boolean } = {}): Promise<boolean> {
    return this.call(() => {
      if (opts.keepalive !== false) this.keepaliveNow();
      const key = this.abs(KEY.leader);
      const current = this.store.get(key);
      // Never creates the key: only the incarnation this member holds is renewed.
      if (!current || current.value !== this.name || current.createRevision !== createRevision) return false;
      if (current.lease !== this.leaseId) this.putWithLease(key, this.name);
      return true;
    });
  }

  async deleteLeader(createRevision?: string): Promise<boolean> {
    return this.call(() => {
      const key = this.abs(KEY.leader);
      const current = this.store.get(key);
      if (current?.value !== this.name) return false;
      if (createRevision !== undefined && current.createRevision !== createRevision) return false;
      return this.store.delete(key);
    });
  }

  async clearLeader(expected: { name: string; revision: string }): Promise<boolean> {
    return this.call(() => {
      const key = this.abs(KEY.leader);
      const current = this.store.get(key);
      if (!current || current.value !== expected.name || current.modRevision !== expected.revision) return false;
      return this.store.delete(key);
    });
  }

  async touchMember(data: MemberData): Promise<void> {
    await this.call(() => this.putWithLease(this.abs(memberKey(this.name)), encodeMember(data)));
  }

  async deleteMember(): Promise<void> {
    await this.call(() => this.store.delete(this.abs(memberKey(this.name))));
  }

  async initialize(sysid: string, opts: { create: boolean }): Promise<boolean> {
    return this.call(() => {
      const key = this.abs(KEY.initialize);
      if (opts.create && this.store.get(key)) return false;
      return this.store.put(key, sysid);
    });
  }

  async cancelInitialize(): Promise<boolean> {
    return this.call(() => {
      const key = this.abs(KEY.initialize);
      if (this.store.get(key)?.value !== '') return false;
      this.store.delete(key);
      return true;
    });
  }

  async setConfig(value: Record<string, unknown>, expectedRevision?: string): Promise<boolean> {
    return this.casPut(KEY.config, encodeJson(value), expectedRevision);
  }

  async setStatus(status: LeaderStatus): Promise<void> {
    await this.call(() => this.store.put(this.abs(KEY.status), encodeStatus(status)));
  }

  async setFailover(value: FailoverRequest, expectedRevision?: string): Promise<boolean> {
    return this.casPut(KEY.failover, encodeJson(value), expectedRevision);
  }

  async setSync(value: SyncState | null, expectedRevision?: string): Promise<boolean> {
    if (value !== null) return this.casPut(KEY.sync, encodeJson(value), expectedRevision);
    return this.call(() => {
      const key = this.abs(KEY.sync);
      if (expectedRevision !== undefined && !this.revisionMatches(key, expectedRevision)) return false;
      this.store.delete(key);
      return true;
    });
  }

  async setSyncUnderLeader(value: SyncState, syncRevision: string, leader: { name: string; revision: string }): Promise<boolean> {
    return this.call(() => {
      const key = this.abs(KEY.sync);
      const lk = this.store.get(this.abs(KEY.leader));
      if (!this.revisionMatches(key, syncRevision) || lk?.value !== leader.name || lk.modRevision !== leader.revision) return false;
      return this.store.put(key, encodeJson(value));
    });
  }

  async setHistory(history: HistoryEntry[]): Promise<void> {
    await this.call(() => this.store.put(this.abs(KEY.history), encodeJson(history)));
  }

  async setFailsafe(value: Record<string, string> | null): Promise<void> {
    await this.call(() => {
      const key = this.abs(KEY.failsafe);
      if (value === null) this.store.delete(key);
      else this.store.put(key, encodeJson(value));
    });
  }

  async deleteCluster(): Promise<void> {
    await this.call(() => this.store.deletePrefix(this.prefix));
  }

  // ---- internals -----------------------------------------------------------------------------

  /** Runs `fn` as one store round trip: async boundary, partition and closed checks, lastSeen. */
  private async call<T>(fn: () => T): Promise<T> {
    await Promise.resolve();
    if (this.closed) throw new DcsError('dcs_unavailable', `DCS client ${this.name} is closed`);
    if (this.deadline && this.now() >= this.deadline()) {
      throw new DcsError('dcs_unavailable', `in-memory DCS call of ${this.name} not made: the leader cycle's deadline passed`);
    }
    if (!this.store.isReachable(this.name)) {
      throw new DcsError('dcs_unavailable', `in-memory DCS unreachable from ${this.name} (simulated partition)`);
    }
    const result = fn();
    this.lastSeen = this.now();
    return result;
  }

  private abs(key: string): string {
    return absoluteKey(this.prefix, key);
  }

  private grant(): void {
    this.leaseId = this.store.grantLease(this.ttlSeconds);
    this.lastKeepalive = this.now();
  }

  /** Keepalive of the current lease; grants a new one when the store no longer knows it. */
  private keepaliveNow(): void {
    if (this.leaseId && this.store.keepAlive(this.leaseId)) this.lastKeepalive = this.now();
    else this.grant();
  }

  /** Puts with the current lease; regrants once when the lease is gone ("lease not found"). */
  private putWithLease(key: string, value: string): void {
    if (!this.leaseId) this.grant();
    if (this.store.put(key, value, this.leaseId)) return;
    this.grant();
    this.store.put(key, value, this.leaseId);
  }

  private revisionMatches(key: string, expectedRevision: string): boolean {
    return (this.store.get(key)?.modRevision ?? '0') === expectedRevision;
  }

  private casPut(rel: string, value: string, expectedRevision: string | undefined): Promise<boolean> {
    return this.call(() => {
      const key = this.abs(rel);
      if (expectedRevision !== undefined && !this.revisionMatches(key, expectedRevision)) return false;
      return this.store.put(key, value);
    });
  }

  private readAll(): void {
    const { entries, revision } = this.store.range(this.prefix);
    const rel = new Map<string, StoredKv>();
    for (const [k, v] of entries) {
      const r = relativeKey(this.prefix, k);
      if (r !== undefined) rel.set(r, v);
    }
    this.emitter.emit(...this.cache.replace(rel, BigInt(revision)));
  }

  private onWatch(changes: StoreChange[]): void {
    if (!this.watching || !this.store.isReachable(this.name)) return;
    this.lastSeen = this.now();
    const rel: KvChange[] = [];
    for (const c of changes) {
      const key = relativeKey(this.prefix, c.key);
      if (key === undefined) continue;
      rel.push(c.type === 'put' ? { type: 'put', key, kv: c.kv } : { type: 'delete', key, revision: c.revision });
    }
    this.emitter.emit(...this.cache.apply(rel));
  }

  private reachabilityChanged(reachable: boolean): void {
    if (this.closed) return;
    if (!reachable) {
      this.emitter.emit({ type: 'dcs.unreachable', error: 'in-memory DCS unreachable (simulated partition)' });
      return;
    }
    // Healed: re-list (the watch dropped events meanwhile), then report reachable.
    queueMicrotask(() => {
      if (this.closed || !this.store.isReachable(this.name)) return;
      this.readAll();
      this.lastSeen = this.now();
      this.emitter.emit({ type: 'dcs.reachable' });
    });
  }
}
