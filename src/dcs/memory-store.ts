/**
 * InMemoryStore: an etcd-like key-value store inside one process, shared by several InMemoryDcs
 * clients (one per simulated agent). It keeps what the HA logic depends on:
 * - one revision counter; every write batch (put, delete, lease expiry, prefix delete) takes the
 *   next revision; keys carry create/mod revisions and the lease they are attached to;
 * - leases with a TTL on an injectable clock `now()`; an expired lease deletes its keys. Expiry is
 *   checked lazily by every operation AND by a timer (`expiryCheckMs`, unref'd, running only
 *   while leases exist) so watchers see the deletes promptly without anyone calling in;
 * - watches on a prefix, delivered asynchronously (queueMicrotask), one batch per revision, like
 *   a real watch stream;
 * - `setReachable(name, false)` partitions every client whose member name is `name`: its calls
 *   reject with DcsError('dcs_unavailable') and it emits `dcs.unreachable`; `true` heals it.
 *
 * All operations are synchronous, so a compare followed by a write inside one client method is
 * atomic (the equivalent of an etcd transaction).
 */
import type { StoredKv } from './view.ts';

/** Options of InMemoryStore. */
export interface InMemoryStoreOptions {
  /** Clock of the store (lease expiry), epoch ms. Default Date.now. */
  now?: () => number;
  /** Period of the background expiry check, ms (real time). Default 100. */
  expiryCheckMs?: number;
}

/** One write seen by a watch: absolute key, new value (undefined for a delete), revision. */
export type StoreChange = { type: 'put'; key: string; kv: StoredKv } | { type: 'delete'; key: string; revision: string };

/** A client registered for partition simulation. */
export interface StoreClientHandle {
  /** Member name the partition switch addresses. */
  readonly name: string;
  /** Called (synchronously) when the reachability of this client changes. */
  reachabilityChanged(reachable: boolean): void;
}

interface Lease {
  ttlSeconds: number;
  expiresAtMs: number;
}

interface Watch {
  prefix: string;
  deliver: (changes: StoreChange[]) => void;
}

const LEASE_ID_BASE = 7_587_869_000_000_000_000n;

/** The shared in-process store. See the module comment for the rules. */
export class InMemoryStore {
  readonly now: () => number;
  private readonly expiryCheckMs: number;
  private readonly kv = new Map<string, StoredKv>();
  private readonly leases = new Map<string, Lease>();
  private readonly watches = new Set<Watch>();
  private readonly clients = new Set<StoreClientHandle>();
  private readonly unreachable = new Set<string>();
  private rev = 1n;
  private leaseCounter = 0n;
  private timer: NodeJS.Timeout | undefined;

  constructor(options: InMemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.expiryCheckMs = options.expiryCheckMs ?? 100;
  }

  /** Current store revision (etcd's header.revision), decimal string. */
  revision(): string {
    return String(this.rev);
  }

  // ---- partition simulation ------------------------------------------------------------------

  /** Registers a client for `setReachable`; returns the unregister function. */
  register(client: StoreClientHandle): () => void {
    this.clients.add(client);
    return () => {
      this.clients.delete(client);
    };
  }

  /** Partitions (`false`) or heals (`true`) every client with member name `name`. */
  setReachable(name: string, reachable: boolean): void {
    const was = !this.unreachable.has(name);
    if (reachable) this.unreachable.delete(name);
    else this.unreachable.add(name);
    if (was === reachable) return;
    for (const c of [...this.clients]) if (c.name === name) c.reachabilityChanged(reachable);
  }

  /** False while clients named `name` are partitioned. */
  isReachable(name: string): boolean {
    return !this.unreachable.has(name);
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** One key (absolute), after expiring due leases. */
  get(key: string): StoredKv | undefined {
    this.expireLeases();
    return this.kv.get(key);
  }

  /** Every key under `prefix` (absolute keys) and the revision of the read. */
  range(prefix: string): { entries: Map<string, StoredKv>; revision: string } {
    this.expireLeases();
    const entries = new Map<string, StoredKv>();
    for (const [k, v] of this.kv) if (k.startsWith(prefix)) entries.set(k, v);
    return { entries, revision: this.revision() };
  }

  // ---- writes --------------------------------------------------------------------------------

  /**
   * Puts `value` at `key` with lease `lease` ('0' = none). Returns false (and writes nothing)
   * when the lease is unknown or expired, as etcd answers "requested lease not found".
   */
  put(key: string, value: string, lease = '0'): boolean {
    this.expireLeases();
    if (lease !== '0' && !this.leases.has(lease)) return false;
    const rev = ++this.rev;
    const prev = this.kv.get(key);
    const kv: StoredKv = {
      value,
      modRevision: String(rev),
      createRevision: prev ? prev.createRevision : String(rev),
      lease,
    };
    this.kv.set(key, kv);
    this.notify([{ type: 'put', key, kv }]);
    return true;
  }

  /** Deletes one key; false when it did not exist. */
  delete(key: string): boolean {
    this.expireLeases();
    return this.deleteKeys([key]) > 0;
  }

  /** Deletes every key under `prefix` in one revision; returns how many. */
  deletePrefix(prefix: string): number {
    this.expireLeases();
    return this.deleteKeys([...this.kv.keys()].filter((k) => k.startsWith(prefix)));
  }

  // ---- leases --------------------------------------------------------------------------------

  /** Grants a lease of `ttlSeconds` (>= 1); returns its id (decimal string). */
  grantLease(ttlSeconds: number): string {
    this.expireLeases();
    if (!(ttlSeconds >= 1)) throw new RangeError(`lease TTL must be at least 1 s, got ${ttlSeconds}`);
    const id = String(LEASE_ID_BASE + ++this.leaseCounter);
    this.leases.set(id, { ttlSeconds, expiresAtMs: this.now() + ttlSeconds * 1000 });
    this.armTimer();
    return id;
  }

  /** Resets the lease's TTL; false when the lease is unknown or has expired. */
  keepAlive(id: string): boolean {
    this.expireLeases();
    const lease = this.leases.get(id);
    if (!lease) return false;
    lease.expiresAtMs = this.now() + lease.ttlSeconds * 1000;
    return true;
  }

  /** Revokes a lease, deleting its keys at once (no-op for an unknown lease). */
  revokeLease(id: string): void {
    this.expireLeases();
    if (!this.leases.delete(id)) return;
    this.deleteKeys(this.keysOfLease(id));
    this.disarmTimerIfIdle();
  }

  /** Granted TTL and remaining ms of a live lease; undefined when unknown (tests). */
  leaseTimeToLive(id: string): { ttlSeconds: number; remainingMs: number } | undefined {
    this.expireLeases();
    const lease = this.leases.get(id);
    return lease && { ttlSeconds: lease.ttlSeconds, remainingMs: lease.expiresAtMs - this.now() };
  }

  /** Deletes every lease whose TTL has run out on `now()`, with its keys. Called by every operation and the timer. */
  expireLeases(): void {
    const now = this.now();
    for (const [id, lease] of this.leases) {
      if (now < lease.expiresAtMs) continue;
      this.leases.delete(id);
      this.deleteKeys(this.keysOfLease(id));
    }
    this.disarmTimerIfIdle();
  }

  // ---- watches -------------------------------------------------------------------------------

  /** Watches keys under `prefix`; each write batch is delivered in a microtask. Returns cancel. */
  watch(prefix: string, deliver: (changes: StoreChange[]) => void): () => void {
    const w: Watch = { prefix, deliver };
    this.watches.add(w);
    return () => {
      this.watches.delete(w);
    };
  }

  /** Stops the expiry timer (the store stays usable; operations still expire leases lazily). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  // ---- internals -----------------------------------------------------------------------------

  private keysOfLease(id: string): string[] {
    return [...this.kv].filter(([, v]) => v.lease === id).map(([k]) => k);
  }

  private deleteKeys(keys: string[]): number {
    const present = keys.filter((k) => this.kv.has(k));
    if (present.length === 0) return 0;
    const revision = String(++this.rev);
    for (const k of present) this.kv.delete(k);
    this.notify(present.map((key) => ({ type: 'delete' as const, key, revision })));
    return present.length;
  }

  private notify(changes: StoreChange[]): void {
    for (const w of this.watches) {
      const mine = changes.filter((c) => c.key.startsWith(w.prefix));
      if (mine.length === 0) continue;
      queueMicrotask(() => {
        if (this.watches.has(w)) w.deliver(mine);
      });
    }
  }

  private armTimer(): void {
    if (this.timer || this.expiryCheckMs <= 0) return;
    this.timer = setInterval(() => this.expireLeases(), this.expiryCheckMs);
    this.timer.unref();
  }

  private disarmTimerIfIdle(): void {
    if (this.leases.size === 0) this.close();
  }
}
