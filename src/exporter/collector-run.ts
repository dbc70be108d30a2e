/**
 * One installed collector on one server: result cache (TTL), predicate gates with their own
 * TTL, one time budget for predicates plus the main query, and run statistics
 * (pg_exporter.md §1.8, §1.9). Failures and skips are cached for the TTL like upstream.
 */
import { familySize, type Family } from './exposition.ts';
import { renderFamilies, resultRowCount, type ArrayResult, type QueryResult, type RenderCache } from './result-families.ts';
import type { CollectorDef } from './types.ts';

/**
 * Runs one SQL text before an absolute deadline (ms since epoch, or undefined for none). With
 * `arrays` (the main query) the answer may have its rows as arrays (an ArrayResult); predicates
 * are asked without it and read object rows.
 */
export type QueryFn = (text: string, deadlineMs: number | undefined, what: string, arrays?: boolean) => Promise<QueryResult | ArrayResult>;

/** Outcome of one visit. `error` is set when the collector failed (nothing is published). */
export interface VisitResult {
  families: Family[];
  error?: Error;
  skipped: boolean;
  fromCache: boolean;
}

/** Statistics of one installed collector since it was planned. */
export interface CollectorStats {
  total: number;
  /** Rows returned by the last real execution (seed: "rows returned"). */
  rows: number;
  errors: number;
  skips: number;
  /** Samples published by the last visit. */
  metrics: number;
  /** Seconds of cache left after the last visit. */
  ttlLeftSeconds: number;
  /** Last real execution, milliseconds. */
  durationMs: number;
}

/** Warnings sink (e.g. a logger). */
export type WarnFn = (msg: string) => void;

/** A predicate that did not return exactly one boolean column and row. */
export class PredicateError extends Error {
  readonly code = 'EPREDICATE';
}

export class CollectorRun {
  readonly stats: CollectorStats = { total: 0, rows: 0, errors: 0, skips: 0, metrics: 0, ttlLeftSeconds: 0, durationMs: 0 };
  private lastRunAt: number | undefined;
  private cached: VisitResult | undefined;
  private readonly predicateCache = new Map<number, { at: number; pass: boolean }>();
  /** Label layout of this collector with the constant labels, and the last result's row form. */
  private readonly layout: RenderCache = {};

  /**
   * `constLabels` are the exporter's constant labels, merged into the series text when the result
   * arrives (the ExpositionBuilder of the same constant labels then copies that text as is).
   */
  constructor(
    readonly def: CollectorDef,
    private readonly disableCache: boolean,
    private readonly constLabels: readonly [string, string][] = [],
  ) {}

  /**
   * Visits the collector at scrape time `nowSeconds` (shared by the whole server scrape): replays
   * the cache while `now - lastRun <= ttl`, else runs predicates then the main query. Never throws.
   */
  async visit(query: QueryFn, nowSeconds: number, warn: WarnFn): Promise<VisitResult> {
    this.stats.total++;
    const ttl = this.def.ttlSeconds;
    if (!this.disableCache && this.cached && this.lastRunAt !== undefined && !(nowSeconds - this.lastRunAt > ttl)) {
      this.account(this.cached, nowSeconds);
      return { ...this.cached, fromCache: true };
    }
    this.lastRunAt = nowSeconds;
    const started = performance.now();
    const deadline = this.def.timeoutSeconds < 0 ? undefined : Date.now() + this.def.timeoutSeconds * 1000;
    let result: VisitResult;
    try {
      const pass = await this.checkPredicates(query, deadline, nowSeconds);
      if (!pass) {
        result = { families: [], skipped: true, fromCache: false };
      } else {
        const res = await query(this.def.query, deadline, `query [${this.def.branch}]`, true);
        const built = renderFamilies(this.def, res, this.constLabels, this.layout);
        for (const w of built.warnings) warn(`query [${this.def.branch}] ${w}`);
        this.stats.rows = resultRowCount(res);
        result = { families: built.families, skipped: false, fromCache: false };
      }
    } catch (e) {
      result = { families: [], error: e as Error, skipped: false, fromCache: false };
    }
    this.stats.durationMs = performance.now() - started;
    // With the cache disabled nothing is replayed, so the result is not kept past this scrape.
    this.cached = this.disableCache ? undefined : result;
    this.account(result, nowSeconds);
    return result;
  }

  private account(r: VisitResult, now: number): void {
    if (r.error) this.stats.errors++;
    if (r.skipped) this.stats.skips++;
    let metrics = 0;
    for (const f of r.families) metrics += familySize(f);
    this.stats.metrics = metrics;
    const ttl = this.disableCache ? 0 : this.def.ttlSeconds;
    this.stats.ttlLeftSeconds = this.lastRunAt === undefined ? 0 : Math.max(0, ttl - (now - this.lastRunAt));
  }

  private async checkPredicates(query: QueryFn, deadline: number | undefined, now: number): Promise<boolean> {
    for (let i = 0; i < this.def.predicates.length; i++) {
      const p = this.def.predicates[i]!;
      const label = p.name ?? String(i);
      const hit = this.predicateCache.get(i);
      if (p.ttlSeconds > 0 && hit && now - hit.at < p.ttlSeconds) {
        if (!hit.pass) return false;
        continue;
      }
      const res = await query(p.query, deadline, `predicate [${label}] of query [${this.def.branch}]`);
      const count = resultRowCount(res);
      let pass: boolean;
      if (count === 0) pass = false;
      else {
        if (count > 1) throw new PredicateError(`predicate [${label}] returned ${count} rows`);
        if (res.columns.length !== 1) throw new PredicateError(`predicate [${label}] returned ${res.columns.length} columns`);
        const col = res.columns[0]!;
        const value = 'values' in res ? res.values[0]![0] : res.rows[0]![col.name];
        if (value !== null && col.type !== 16) throw new PredicateError(`predicate [${label}] returned a non-boolean column`);
        pass = value === true;
      }
      if (p.ttlSeconds > 0) this.predicateCache.set(i, { at: now, pass });
      if (!pass) return false;
    }
    return true;
  }
}
