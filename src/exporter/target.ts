/**
 * One scrape target: the primary connection, an auto-discovered database, or pgbouncer's admin
 * console. Owns a small postgres.js pool, the pre-check facts, the plan and per-collector state
 * (pg_exporter.md §1.5, §1.7, §1.12, §1.13).
 */
import postgres, { type Sql } from 'postgres';
import { CollectorRun, type WarnFn } from './collector-run.ts';
import type { Family } from './exposition.ts';
import { planCollectors } from './planner.ts';
import { runQuery } from './pg-query.ts';
import type { ArrayResult, QueryResult } from './result-families.ts';
import type { CollectorDef, ServerFacts } from './types.ts';

/** How to reach a target and how to treat it. */
export interface TargetOptions {
  /** postgres:// URL. */
  url: string;
  /** Connected to pgbouncer's admin console (database name `pgbouncer`). */
  pooler: boolean;
  /** Auto-discovered database (skips `cluster` collectors, pool of one). */
  forked: boolean;
  /** Bound for each pre-check statement, including connecting; milliseconds. */
  connectTimeoutMs: number;
  disableCache: boolean;
  cliTags: string[];
  applicationName: string;
  warn: WarnFn;
  /** The exporter's constant labels (written into collector output as results arrive). */
  constLabels?: [string, string][];
  /** Connections of the pool [3 for the primary, 1 for forked or pgbouncer targets]. */
  poolMax?: number;
  /** Seconds an unused connection stays open [60]. */
  idleTimeoutSeconds?: number;
  /** User name, overriding the URL's (a `/probe` auth module). */
  username?: string;
  /** Password (a `/probe` auth module); never part of the URL. */
  password?: string;
}

/**
 * Which collectors one scrape runs: fatal collectors always; the others when `select` is absent
 * or returns true. Used by `/probe?collectors=…&tags=…`.
 */
export type CollectorFilter = (def: CollectorDef) => boolean;

/** Result of one target scrape. */
export interface TargetScrape {
  up: boolean;
  families: Family[];
  /** Why the target is down (pre-check or fatal collector failure). */
  error?: Error;
}

/** Database name named by a postgres URL: the path, or `?dbname=`. Empty when none. */
export function urlDatabase(url: string): string {
  try {
    const u = new URL(url);
    return u.searchParams.get('dbname') ?? decodeURIComponent(u.pathname.replace(/^\//, ''));
  } catch {
    return '';
  }
}

/** The same URL pointing at another database (in `?dbname=` if that is how it was named). */
export function urlWithDatabase(url: string, db: string): string {
  const u = new URL(url);
  if (u.searchParams.has('dbname')) u.searchParams.set('dbname', db);
  else u.pathname = `/${encodeURIComponent(db)}`;
  return u.toString();
}

/** The pre-check statement: facts that drive planning and auto-discovery. */
export const FACTS_SQL = `SELECT current_catalog::text AS dbname, current_user::text AS username,
  pg_catalog.pg_is_in_recovery() AS recovery,
  pg_catalog.current_setting('server_version_num')::int AS version,
  pg_catalog.to_json(ARRAY(SELECT datname::text FROM pg_catalog.pg_database WHERE datallowconn AND NOT datistemplate ORDER BY 1)) AS databases,
  pg_catalog.to_json(ARRAY(SELECT nspname::text FROM pg_catalog.pg_namespace)) AS schemas,
  pg_catalog.to_json(ARRAY(SELECT extname::text FROM pg_catalog.pg_extension)) AS extensions`;

/** pgbouncer `x.y.z` to x*10000+y*100+z; 0 when absent. */
export function parsePoolerVersion(text: string): number {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? Number(m[1]) * 10000 + Number(m[2]) * 100 + Number(m[3]) : 0;
}

export class Target {
  readonly sql: Sql;
  facts: ServerFacts | undefined;
  /** Installed collectors in priority order, undefined until planned. */
  runs: CollectorRun[] | undefined;
  private planKey = '';
  private lastNotice = '';
  /** Self-monitoring counters (seconds, counts). */
  readonly stats = { lastDurationSeconds: 0, totalSeconds: 0, totalCount: 0, errorCount: 0 };
  readonly urlDbname: string;
  /** Connections of this target's pool (3 for the primary, 1 for forked or pgbouncer targets). */
  readonly poolMax: number;

  constructor(
    readonly opts: TargetOptions,
    private collectors: CollectorDef[],
  ) {
    this.urlDbname = urlDatabase(opts.url);
    this.poolMax = opts.poolMax ?? (opts.pooler || opts.forked ? 1 : 3);
    this.sql = postgres(opts.url, {
      max: this.poolMax,
      prepare: false,
      fetch_types: false,
      connect_timeout: Math.max(opts.connectTimeoutMs, 100) / 1000,
      max_lifetime: 60,
      idle_timeout: opts.idleTimeoutSeconds ?? 60,
      ...(opts.username !== undefined ? { username: opts.username } : {}),
      ...(opts.password !== undefined ? { password: opts.password } : {}),
      connection: opts.pooler ? {} : { application_name: opts.applicationName },
      onnotice: (n) => {
        this.lastNotice = String(n['message'] ?? '');
      },
    });
  }

  /** The database name used for self-metric labels: the connected catalog, else the URL's. */
  get datname(): string {
    return this.facts?.dbname ?? this.urlDbname;
  }

  /** Replaces the collector set (reload): the next scrape re-plans; statistics reset. */
  setCollectors(collectors: CollectorDef[]): void {
    this.collectors = collectors;
    this.runs = undefined;
    this.planKey = '';
  }

  private query(text: string, deadlineMs: number | undefined, what: string): Promise<QueryResult>;
  private query(text: string, deadlineMs: number | undefined, what: string, arrays: boolean): Promise<QueryResult | ArrayResult>;
  private query(text: string, deadlineMs: number | undefined, what: string, arrays = false): Promise<QueryResult | ArrayResult> {
    return arrays
      ? runQuery(this.sql, text, deadlineMs, this.opts.pooler, what, true)
      : runQuery(this.sql, text, deadlineMs, this.opts.pooler, what);
  }

  /** Gathers facts; throws on any failure (the target is down for this scrape). */
  async precheck(): Promise<ServerFacts> {
    const deadline = Date.now() + this.opts.connectTimeoutMs;
    if (this.opts.pooler) {
      this.lastNotice = '';
      const res = await this.query('SHOW VERSION;', deadline, 'fail fetching server version');
      const first = res.rows[0];
      const text = first ? String(Object.values(first)[0] ?? '') : this.lastNotice;
      return {
        version: parsePoolerVersion(text),
        inRecovery: false,
        dbname: this.urlDbname,
        username: '',
        databases: [],
        schemas: [],
        extensions: [],
      };
    }
    const res = await this.query(FACTS_SQL, deadline, 'fail fetching server version');
    const r = res.rows[0] as {
      dbname: string;
      username: string;
      recovery: boolean;
      version: number;
      databases: string[];
      schemas: string[];
      extensions: string[];
    };
    return {
      version: r.version,
      inRecovery: r.recovery,
      dbname: r.dbname,
      username: r.username,
      databases: r.databases,
      schemas: r.schemas,
      extensions: r.extensions,
    };
  }

  /** (Re)plans when never planned or when version, recovery or database name changed. */
  private ensurePlanned(facts: ServerFacts): void {
    const key = `${facts.version}|${facts.inRecovery}|${facts.dbname}`;
    if (this.runs && key === this.planKey) return;
    const planned = planCollectors(this.collectors, {
      facts,
      cliTags: this.opts.cliTags,
      pooler: this.opts.pooler,
      forked: this.opts.forked,
    });
    this.runs = planned.map((d) => new CollectorRun(d, this.opts.disableCache, this.opts.constLabels ?? []));
    this.planKey = key;
  }

  /**
   * One scrape: pre-check, re-plan if needed, fatal collectors then the rest by priority (those
   * `select` keeps, when given). Never throws; failures are in the result and in `stats`.
   */
  async scrape(select?: CollectorFilter): Promise<TargetScrape> {
    const t0 = performance.now();
    const nowSeconds = Date.now() / 1000;
    this.stats.totalCount++;
    const finish = (r: TargetScrape): TargetScrape => {
      const d = (performance.now() - t0) / 1000;
      this.stats.lastDurationSeconds = d;
      this.stats.totalSeconds += d;
      if (!r.up) this.stats.errorCount++;
      return r;
    };
    let facts: ServerFacts;
    try {
      facts = await this.precheck();
    } catch (e) {
      const err = Object.assign(new Error(`fail fetching server version: ${(e as Error).message}`), {
        code: (e as { code?: unknown }).code,
      });
      return finish({ up: false, families: [], error: err });
    }
    this.facts = facts;
    this.ensurePlanned(facts);
    const runs = this.runs ?? [];
    const q = this.query.bind(this);
    const families: Family[] = [];
    for (const run of runs.filter((r) => r.def.fatal)) {
      const res = await run.visit(q, nowSeconds, this.opts.warn);
      if (res.error) {
        return finish({ up: false, families, error: new Error(`query [${run.def.branch}] failed: ${res.error.message}`) });
      }
      families.push(...res.families);
    }
    // Pass 2 runs in priority order with up to `poolMax` collectors in flight, so PostgreSQL
    // executes one collector while this process converts the previous result; results are
    // merged in priority order, so the output does not depend on completion order.
    const rest = runs.filter((r) => !r.def.fatal && (!select || select(r.def)));
    const results = new Array<Family[] | undefined>(rest.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < rest.length; i = next++) {
        const run = rest[i]!;
        const res = await run.visit(q, nowSeconds, this.opts.warn);
        if (res.error) {
          if (!res.fromCache) this.opts.warn(`query [${run.def.branch}] error skipped: ${res.error.message}`);
          continue;
        }
        results[i] = res.families;
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.poolMax, rest.length) }, worker));
    for (const r of results) if (r) families.push(...r);
    return finish({ up: true, families });
  }

  /** Closes the pool (waits at most 1 s for in-flight queries). */
  async close(): Promise<void> {
    await this.sql.end({ timeout: 1 }).catch(() => undefined);
  }
}
