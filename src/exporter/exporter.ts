/**
 * The exporter: primary target plus auto-discovered databases, the role probe, shared scrapes,
 * self-monitoring metrics, reload, /explain and /stat data. Embeddable (the node agent can hold
 * one) and used by the standalone `db-exporter` CLI.
 */
import { ConfigError, loadConfig } from './config-load.ts';
import { explainText } from './explain.ts';
import { ExpositionBuilder, type Family } from './exposition.ts';
import { RoleProbe, type Role } from './role-probe.ts';
import { statRowsOf, statText, type StatRow } from './stat.ts';
import { Target, urlDatabase, urlWithDatabase } from './target.ts';
import { buildInfo, type BuildInfo } from './build-info.ts';
import { serverStatFamilies } from './self-families.ts';
import type { LoadedConfig } from './types.ts';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** Minimal logger (pino-compatible). */
export interface ExporterLogger {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** Options of an exporter; defaults in brackets. */
export interface ExporterOptions {
  /** postgres:// URL of the primary target (database `pgbouncer` selects pooler mode). */
  url: string;
  /** Collector config file or directory. */
  configPath: string;
  /** Prefix of the self-monitoring metrics [`db`, or `pgbouncer` in pooler mode]. */
  namespace?: string;
  /** Constant labels added to every series. */
  constLabels?: Record<string, string>;
  /** `--tag` values. */
  tags?: string[];
  disableCache?: boolean;
  /** Removes the `<ns>_exporter_*` families (seed rule; `<ns>_up` etc. stay). */
  disableIntro?: boolean;
  /** [true] */
  autoDiscovery?: boolean;
  /** [template0, template1, postgres] */
  excludeDatabases?: string[];
  /** [] = no restriction */
  includeDatabases?: string[];
  /**
   * Apply HEAP_FLAGS to this process's V8 when the first exporter is created [true]. They are
   * process-wide: an embedding process may prefer its own settings (docs/exporter.md, "Memory").
   */
  heapTuning?: boolean;
  /** Pre-check and probe bound, milliseconds [1000]. */
  connectTimeoutMs?: number;
  /** Role probe period, milliseconds [1000]. */
  probeIntervalMs?: number;
  logger?: ExporterLogger;
  /** More families for each `/metrics` answer, e.g. the `/probe` targets' self-monitoring (Prober.families). */
  extraFamilies?: () => Family[];
}

/**
 * V8 flags applied at exporter creation. `--heap-growing-percent` makes V8 size the old generation
 * at live size + that percentage after each full GC instead of up to several times the live size,
 * so the garbage of past scrapes (each builds a ~1 MB body) is collected before the heap, and the
 * RSS, grows. Only flags that V8 reads at run time can be set here; the environment variable
 * DB_EXPORTER_HEAP_FLAGS (space-separated, empty for none) replaces the list.
 */
export const HEAP_FLAGS: readonly string[] = ['--heap-growing-percent=30'];
let heapTuned = false;

/**
 * Young generation: by default its growth is stopped when the first exporter is created
 * (`--semi-space-growth-factor=1`), so new space stays at the size V8 gave it at start (8 MiB
 * here) instead of reaching 16 MiB during the first scrape. Since 2026-11-26: the built
 * exporter's RSS after 100 back-to-back scrapes is then 1.15–1.17 × after the first (1.25–1.32
 * with growth stopped at 16 MiB, the default until then, which the first scrape already reached),
 * with no measurable scrape-time cost (docs/performance.md "Exporter, 2026-11-26").
 * DB_EXPORTER_NEW_SPACE_CAP_MB=N lets it grow and stops it once it reached N MiB (checked after
 * each scrape); 0 lets it grow to V8's maximum. V8 reads `--max-semi-space-size` only at start.
 */
export function newSpaceCapMb(): number | undefined {
  const env = process.env['DB_EXPORTER_NEW_SPACE_CAP_MB'];
  return env === undefined ? undefined : Number(env);
}
let newSpaceCapped = false;

/** Stops young generation growth once it reached DB_EXPORTER_NEW_SPACE_CAP_MB (called after each scrape; see newSpaceCapMb). */
export function capNewSpace(): void {
  if (newSpaceCapped) return;
  const cap = newSpaceCapMb();
  if (cap === undefined || !(cap > 0)) {
    newSpaceCapped = true;
    return;
  }
  const ns = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  if (!ns || ns.space_size >= cap * 1048576) {
    newSpaceCapped = true;
    setFlagsFromString('--semi-space-growth-factor=1');
  }
}

/** Applies the heap flags once per process (HEAP_FLAGS, then the young generation's growth stop: newSpaceCapMb). Returns the flags applied. */
export function tuneHeap(): string[] {
  if (heapTuned) return [];
  heapTuned = true;
  const env = process.env['DB_EXPORTER_HEAP_FLAGS'];
  const flags = env === undefined ? [...HEAP_FLAGS] : env.split(/\s+/).filter(Boolean);
  // The young generation stops growing now unless a cap (or no cap) was asked for (newSpaceCapMb).
  if (newSpaceCapMb() === undefined && !flags.some((f) => f.startsWith('--semi-space-growth-factor')))
    flags.push('--semi-space-growth-factor=1');
  for (const f of flags) setFlagsFromString(f);
  return flags;
}

const silent: ExporterLogger = { debug() {}, info() {}, warn() {}, error() {} };
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Checks constant labels against every collector's label names, `datname`/`query` (unless
 * intro metrics are disabled) and `le` for histogram collectors. Throws ConfigError on a clash.
 */
export function checkConstLabels(config: LoadedConfig, constLabels: Record<string, string>, disableIntro: boolean): void {
  const names = Object.keys(constLabels);
  for (const n of names) {
    if (!LABEL_NAME.test(n) || n.startsWith('__')) throw new ConfigError(`invalid constant label name ${n}`);
    if (!disableIntro && (n === 'datname' || n === 'query'))
      throw new ConfigError(`invalid configuration with current constant labels: ${n} clashes with a built-in label`);
  }
  for (const c of config.collectors) {
    const labels = c.columns.filter((x) => x.usage === 'LABEL').map((x) => x.rename ?? x.name);
    if (c.columns.some((x) => x.usage === 'HISTOGRAM')) labels.push('le');
    for (const n of names)
      if (labels.includes(n))
        throw new ConfigError(`invalid configuration with current constant labels: ${n} clashes with a label of collector ${c.branch}`);
  }
}

export class Exporter {
  config: LoadedConfig;
  readonly primary: Target;
  readonly forked = new Map<string, Target>();
  readonly probe: RoleProbe;
  readonly pooler: boolean;
  readonly namespace: string;
  readonly build: BuildInfo = buildInfo();
  private readonly log: ExporterLogger;
  private readonly startedAt = Date.now();
  private inflight: Promise<string> | undefined;
  private reloading: Promise<unknown> = Promise.resolve();
  private readonly counters = { scrapeTotal: 0, scrapeErrors: 0, lastDuration: 0, lastScrapeTime: 0, dropped: 0 };
  private lastVersion = 0;
  private lastRecovery = 0;
  private upNow = 0;
  /** Constant labels as pairs: one array shared by the targets and every scrape's builder. */
  private readonly constPairs: [string, string][];

  /** Loads the configuration (throws ConfigError) and prepares targets; nothing connects yet. */
  constructor(readonly opts: ExporterOptions) {
    this.log = opts.logger ?? silent;
    if (opts.heapTuning ?? true) tuneHeap();
    this.constPairs = Object.entries(opts.constLabels ?? {});
    this.pooler = urlDatabase(opts.url) === 'pgbouncer';
    this.namespace = opts.namespace || (this.pooler ? 'pgbouncer' : 'db');
    this.config = loadConfig(opts.configPath);
    for (const w of this.config.warnings) this.log.warn(w);
    if (this.config.collectors.length === 0) throw new ConfigError(`no valid queries loaded from config ${opts.configPath}`);
    checkConstLabels(this.config, opts.constLabels ?? {}, opts.disableIntro ?? false);
    this.primary = this.makeTarget(opts.url, false);
    this.probe = new RoleProbe({
      url: opts.url,
      pooler: this.pooler,
      connectTimeoutMs: this.connectTimeoutMs,
      intervalMs: opts.probeIntervalMs ?? 1000,
      applicationName: 'db_exporter',
      onChange: (role, prev) => this.log.info(`role changed from ${prev} to ${role}`),
    });
  }

  private get connectTimeoutMs(): number {
    const t = this.opts.connectTimeoutMs ?? 1000;
    return t > 0 ? t : 100;
  }

  private makeTarget(url: string, forked: boolean): Target {
    return new Target(
      {
        url,
        pooler: this.pooler,
        forked,
        connectTimeoutMs: this.connectTimeoutMs,
        disableCache: this.opts.disableCache ?? false,
        cliTags: this.opts.tags ?? [],
        applicationName: 'db_exporter',
        warn: (m) => this.log.warn(m),
        constLabels: this.constPairs,
      },
      this.config.collectors,
    );
  }

  /** Cached role from the background probe (never queries). */
  get role(): Role {
    return this.probe.role;
  }

  /** Starts the background role probe. */
  start(): void {
    this.probe.start();
  }

  /** Stops the probe and closes every pool. */
  async stop(): Promise<void> {
    await this.inflight?.catch(() => undefined);
    await this.probe.stop();
    await Promise.all([this.primary.close(), ...[...this.forked.values()].map((t) => t.close())]);
  }

  /**
   * Collects and renders the metrics body. Concurrent callers share one collection; a reload waits
   * for it. Never throws.
   */
  collect(): Promise<string> {
    if (!this.inflight) {
      this.inflight = this.reloading
        .then(() => this.doCollect())
        .finally(() => {
          this.inflight = undefined;
        });
    }
    return this.inflight;
  }

  private async doCollect(): Promise<string> {
    const t0 = performance.now();
    this.counters.scrapeTotal++;
    const builder = new ExpositionBuilder(this.constPairs);
    const res = await this.primary.scrape();
    const add = (fams: Family[]) => {
      for (const f of fams) builder.add(f);
    };
    add(res.families);
    if (res.error) this.log.warn(`fail scraping primary server: ${res.error.message}`);
    if (this.primary.facts) {
      this.lastVersion = this.primary.facts.version;
      if (res.up) this.lastRecovery = this.primary.facts.inRecovery ? 1 : 0;
    }
    if (res.up && !this.pooler && (this.opts.autoDiscovery ?? true) && this.primary.facts)
      await this.syncDatabases(this.primary.facts.databases);
    for (const [db, t] of this.forked) {
      const r = await t.scrape();
      if (r.error) this.log.warn(`fail scraping database ${db}: ${r.error.message}`);
      add(r.families);
    }
    this.upNow = res.up ? 1 : 0;
    if (!res.up) this.counters.scrapeErrors++;
    // Like upstream, the scrape result overwrites the cached role until the next probe tick.
    this.probe.set(
      res.up
        ? this.primary.facts?.inRecovery
          ? 'replica'
          : 'primary'
        : (res.error as { code?: unknown } | undefined)?.code === '57P03'
          ? 'starting'
          : 'down',
    );
    this.counters.lastDuration = (performance.now() - t0) / 1000;
    this.counters.lastScrapeTime = Math.trunc(Date.now() / 1000);
    if (builder.dropped > 0) {
      this.counters.dropped += builder.dropped;
      this.log.warn(`dropped ${builder.dropped} duplicate or conflicting series from ${[...builder.droppedFrom].join(', ')}`);
    }
    add(this.selfFamilies());
    if (this.opts.extraFamilies) add(this.opts.extraFamilies());
    const body = builder.render();
    if (this.opts.heapTuning ?? true) capNewSpace();
    return body;
  }

  /** Adds targets for new databases and closes those of vanished ones. */
  private async syncDatabases(databases: string[]): Promise<void> {
    const exclude = this.opts.excludeDatabases ?? ['template0', 'template1', 'postgres'];
    const include = this.opts.includeDatabases ?? [];
    const own = this.primary.datname;
    const wanted = databases.filter((d) => d !== own && !exclude.includes(d) && (include.length === 0 || include.includes(d)));
    for (const d of wanted) {
      if (!this.forked.has(d)) {
        this.log.info(`database ${d} discovered`);
        this.forked.set(d, this.makeTarget(urlWithDatabase(this.opts.url, d), true));
      }
    }
    for (const [d, t] of this.forked) {
      if (!wanted.includes(d)) {
        this.log.info(`database ${d} vanished`);
        this.forked.delete(d);
        await t.close();
      }
    }
  }

  private selfFamilies(): Family[] {
    const ns = this.namespace;
    const g = (name: string, help: string, value: number, labels: [string, string][] = []): Family => ({
      name,
      help,
      type: 'gauge',
      samples: [{ labels, value }],
    });
    const out: Family[] = [
      g(`${ns}_up`, 'last scrape was able to connect to the server: 1 for yes, 0 for no', this.upNow),
      g(`${ns}_version`, 'server version number', this.lastVersion),
      g(`${ns}_in_recovery`, 'server is in recovery mode? 1 for yes 0 for no', this.lastRecovery),
    ];
    if (this.opts.disableIntro) return out;
    const b = this.build;
    const c = this.counters;
    out.push(
      g(
        `${ns}_exporter_build_info`,
        "A metric with a constant '1' value labeled with version, revision, branch, goversion, builddate, goos, and goarch from which db_exporter was built.",
        1,
        [
          ['version', b.version],
          ['revision', b.revision],
          ['branch', b.branch],
          ['goversion', b.goversion],
          ['builddate', b.builddate],
          ['goos', b.goos],
          ['goarch', b.goarch],
        ],
      ),
      g(`${ns}_exporter_up`, 'always be 1 if your could retrieve metrics', 1),
      g(`${ns}_exporter_uptime`, 'seconds since exporter primary server inited', (Date.now() - this.startedAt) / 1000),
      {
        name: `${ns}_exporter_scrape_total_count`,
        help: 'times exporter was scraped for metrics',
        type: 'counter',
        samples: [{ labels: [], value: c.scrapeTotal }],
      },
      {
        name: `${ns}_exporter_scrape_error_count`,
        help: 'times exporter was scraped for metrics and failed',
        type: 'counter',
        samples: [{ labels: [], value: c.scrapeErrors }],
      },
      g(`${ns}_exporter_scrape_duration`, 'seconds exporter spending on scraping', c.lastDuration),
      g(`${ns}_exporter_last_scrape_time`, 'last scrape timestamp', c.lastScrapeTime),
      g(
        `${ns}_exporter_dropped_series_count`,
        'cumulative series dropped because they duplicated another series or conflicted with its family',
        c.dropped,
      ),
    );
    out.push(...serverStatFamilies(ns, [this.primary, ...this.forked.values()]));
    return out;
  }

  /**
   * Re-reads the configuration path with the same rules and re-checks constant labels. On
   * success every target gets the new set (re-plan on next scrape, statistics reset); on failure
   * the old configuration keeps serving. Waits for an in-flight scrape. Never throws.
   */
  async reload(): Promise<{ ok: true } | { ok: false; error: string }> {
    const run = async (): Promise<{ ok: true } | { ok: false; error: string }> => {
      await this.inflight?.catch(() => undefined);
      let next: LoadedConfig;
      try {
        next = loadConfig(this.opts.configPath);
        if (next.collectors.length === 0) throw new ConfigError(`no valid queries loaded from config ${this.opts.configPath}`);
        checkConstLabels(next, this.opts.constLabels ?? {}, this.opts.disableIntro ?? false);
      } catch (e) {
        const msg = (e as Error).message;
        this.log.error(`fail to reload: ${msg}`);
        return {
          ok: false,
          error:
            msg.startsWith('fail loading config') || msg.startsWith('invalid configuration')
              ? msg
              : `fail loading config ${this.opts.configPath}: ${msg}`,
        };
      }
      for (const w of next.warnings) this.log.warn(w);
      this.config = next;
      for (const t of [this.primary, ...this.forked.values()]) t.setCollectors(next.collectors);
      this.log.info('server reloaded');
      return { ok: true };
    };
    const p = this.reloading.then(run);
    this.reloading = p.catch(() => undefined);
    return p;
  }

  /** /explain: blocks of the primary's installed collectors (all loaded ones before planning). */
  explain(): string {
    const defs = this.primary.runs ? this.primary.runs.map((r) => r.def) : [];
    return explainText(defs);
  }

  /** /stat rows of the primary's installed collectors. */
  statRows(): StatRow[] {
    return statRowsOf(this.primary.runs);
  }

  /** /stat body. */
  stat(): string {
    return statText(this.statRows());
  }
}
