/**
 * The live targets of `/probe`: one Target (its own pool, plan, caches and statistics) per
 * target specification, at most `limits.maxTargets` of them, of which as many as there are named
 * targets are kept for those (so DSN targets can never crowd a named target out). A target not probed for
 * `limits.targetIdleSeconds` is dropped and its pool closed (a sweep runs every quarter of that,
 * at most every 30 s, and before a new target is refused). Probes of one target run one after
 * another on it; concurrent probes with the same collector selection share one scrape.
 */
import type { ProbeLimits } from './probe-config.ts';
import type { TargetSpec } from './probe-request.ts';
import type { CollectorFilter, Target, TargetScrape } from './target.ts';

/** What the registry needs of a target (a Target satisfies it; tests use fakes). */
export type ProbeTargetLike = Pick<Target, 'scrape' | 'close' | 'datname' | 'stats' | 'runs' | 'facts' | 'poolMax'>;

/** One live target and its probe statistics. */
export interface ProbeEntry<T extends ProbeTargetLike = ProbeTargetLike> {
  spec: TargetSpec;
  target: T;
  /** Last probe start or end, ms since epoch. */
  lastUsedMs: number;
  /** Probes running or waiting on this target. */
  busy: number;
  /** Probes answered (counter). */
  probes: number;
  /** Probes whose scrape found the target down (counter). */
  errors: number;
  /** Wall time of the last probe's scrape, seconds. */
  lastDurationSeconds: number;
  /** End of the last probe, Unix seconds (0 before the first). */
  lastProbeTime: number;
  /** 1 when the last probe reached the server, else 0. */
  up: number;
  /** Series dropped from this target's answers as duplicates or conflicts (counter). */
  dropped: number;
  /** Tail of the probes queued on this target. */
  chain: Promise<unknown>;
  /** In-flight scrapes by selection key, shared by concurrent identical probes. */
  shared: Map<string, Promise<TargetScrape>>;
}

/** The registry of live `/probe` targets (module comment): bounded, swept when idle, one probe at a time per target. */
export class ProbeTargets<T extends ProbeTargetLike = ProbeTargetLike> {
  private readonly live = new Map<string, ProbeEntry<T>>();
  private timer: NodeJS.Timeout | undefined;
  private readonly closing = new Set<Promise<void>>();

  /**
   * `make` builds the target of a specification (no connection is opened until it scrapes);
   * `now` is the clock in ms (tests pass a fake one); `named` is the number of named targets of
   * the configuration (slots kept for them).
   */
  constructor(
    readonly limits: ProbeLimits,
    private readonly make: (spec: TargetSpec) => T,
    private readonly now: () => number = Date.now,
    readonly named = 0,
  ) {}

  /** Live targets given as a DSN. */
  get dsnSize(): number {
    let n = 0;
    for (const e of this.live.values()) if (!e.spec.named) n++;
    return n;
  }

  /** Whether a new target of this kind fits: a named one below maxTargets, a DSN one below maxTargets minus the named targets. */
  private fits(named: boolean): boolean {
    return named ? this.live.size < this.limits.maxTargets : this.dsnSize < this.limits.maxTargets - this.named;
  }

  /** Live targets. */
  get size(): number {
    return this.live.size;
  }

  /** The live entries, in creation order. */
  entries(): ProbeEntry<T>[] {
    return [...this.live.values()];
  }

  /** The live entry of a key, without creating one. */
  get(key: string): ProbeEntry<T> | undefined {
    return this.live.get(key);
  }

  /**
   * The entry of `spec`: the live one with its key, or a new one when it fits (see `fits`) once
   * idle targets are dropped; undefined when full (the caller answers 429 and nothing was created).
   */
  acquire(spec: TargetSpec): ProbeEntry<T> | undefined {
    const hit = this.live.get(spec.key);
    if (hit) return hit;
    if (!this.fits(spec.named)) this.sweep();
    if (!this.fits(spec.named)) return undefined;
    const e: ProbeEntry<T> = {
      spec,
      target: this.make(spec),
      lastUsedMs: this.now(),
      busy: 0,
      probes: 0,
      errors: 0,
      lastDurationSeconds: 0,
      lastProbeTime: 0,
      up: 0,
      dropped: 0,
      chain: Promise.resolve(),
      shared: new Map(),
    };
    this.live.set(spec.key, e);
    return e;
  }

  /**
   * Scrapes an entry's target: after the probes queued before it, or shares the in-flight
   * scrape of the same `selectKey`. Updates the entry's statistics. Never throws.
   */
  scrape(e: ProbeEntry<T>, selectKey: string, filter: CollectorFilter | undefined): Promise<TargetScrape> {
    const same = e.shared.get(selectKey);
    if (same) return same;
    e.busy++;
    e.lastUsedMs = this.now();
    const p = e.chain.then(async () => {
      const t0 = performance.now();
      const r = await e.target.scrape(filter);
      e.lastDurationSeconds = (performance.now() - t0) / 1000;
      e.probes++;
      if (!r.up) e.errors++;
      e.up = r.up ? 1 : 0;
      e.lastProbeTime = Math.trunc(this.now() / 1000);
      return r;
    });
    const done = p.finally(() => {
      e.busy--;
      e.lastUsedMs = this.now();
      e.shared.delete(selectKey);
    });
    e.chain = done.catch(() => undefined);
    e.shared.set(selectKey, done);
    return done;
  }

  /** Drops targets idle for longer than `limits.targetIdleSeconds` (and not busy); returns their labels. */
  sweep(): string[] {
    const limit = this.limits.targetIdleSeconds * 1000;
    const t = this.now();
    const dropped: string[] = [];
    for (const [k, e] of this.live) {
      if (e.busy === 0 && t - e.lastUsedMs > limit) {
        this.live.delete(k);
        dropped.push(e.spec.label);
        this.closeLater(e);
      }
    }
    return dropped;
  }

  private closeLater(e: ProbeEntry<T>): void {
    const p = e.target.close().catch(() => undefined);
    this.closing.add(p);
    void p.finally(() => this.closing.delete(p));
  }

  /** Sweeps every quarter of `limits.targetIdleSeconds` (at most every 30 s); the timer does not keep the process alive. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.sweep(), Math.min(30_000, Math.max(1000, (this.limits.targetIdleSeconds * 1000) / 4)));
    this.timer.unref();
  }

  /** Stops the sweeper, drops every target and closes their pools (waits for running probes first). */
  async closeAll(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const all = [...this.live.values()];
    this.live.clear();
    await Promise.all(all.map((e) => e.chain.catch(() => undefined)));
    for (const e of all) this.closeLater(e);
    await Promise.all([...this.closing]);
  }
}
