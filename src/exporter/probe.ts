/**
 * The multi-target side of the exporter: `GET /probe?target=…` (the Prometheus multi-target
 * exporter pattern; docs/exporter.md "Multi-target: /probe"). A Prober holds the collector set,
 * the probe configuration (named targets, auth modules, allowlist, limits) and the live targets;
 * it answers a probe with the target's collector series plus its self-monitoring families (the
 * same names as `/metrics`), and gives `/metrics` one family set per target labelled `target`.
 */
import { ConfigError, loadConfig } from './config-load.ts';
import { explainText } from './explain.ts';
import { checkConstLabels, type ExporterLogger } from './exporter.ts';
import { ExpositionBuilder, type Family } from './exposition.ts';
import { loadProbeConfig, type ProbeConfig } from './probe-config.ts';
import { REJECT_REASONS, resolveProbe, type ProbeParams, type RejectReason, type Selection, type TargetSpec } from './probe-request.ts';
import { ProbeTargets, type ProbeEntry, type ProbeTargetLike } from './probe-targets.ts';
import { serverStatFamilies } from './self-families.ts';
import { statRowsOf, statText } from './stat.ts';
import { Target, urlDatabase, type CollectorFilter } from './target.ts';
import type { CollectorDef, LoadedConfig } from './types.ts';

/** Options of a Prober; defaults in brackets. */
export interface ProberOptions {
  /** The probe configuration file (probe-config.ts). */
  probeConfigPath: string;
  /** Collector file or directory (the same set as `/metrics`). */
  configPath: string;
  /** Prefix of the self-monitoring metrics [`db`]. */
  namespace?: string;
  /** Constant labels added to every series. */
  constLabels?: Record<string, string>;
  /** Planning tags of every target (the CLI's `--tag`), before each named target's own. */
  tags?: string[];
  disableCache?: boolean;
  /** Removes the `<ns>_exporter_*` families from probe answers and `/metrics`. */
  disableIntro?: boolean;
  /** Bound of each pre-check statement, including connecting; milliseconds [1000]. */
  connectTimeoutMs?: number;
  logger?: ExporterLogger;
  /** Environment for `password_env` [process.env]. */
  env?: NodeJS.ProcessEnv;
  /** Builds a target (tests); default: a Target with the configuration's pool limits. */
  makeTarget?: (spec: TargetSpec, collectors: CollectorDef[]) => ProbeTargetLike;
  /** Clock, ms since epoch (tests) [Date.now]. */
  now?: () => number;
}

/** An HTTP answer of the prober. */
export interface ProbeAnswer {
  status: number;
  body: string;
  contentType: string;
  headers?: Record<string, string>;
}

const TEXT = 'text/plain; charset=utf-8';
/** Content type of a probe answer (text exposition 0.0.4, as `/metrics`). */
export const PROBE_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const silent: ExporterLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** The collector filter of a selection, undefined when it selects everything. */
export function selectionFilter(s: Selection): CollectorFilter | undefined {
  if (s.collectors.length === 0 && s.tags.length === 0) return undefined;
  return (d) => s.collectors.includes(d.name) || s.collectors.includes(d.branch) || d.tags.some((t) => s.tags.includes(t));
}

/** Stable key of a selection (sorted names), for sharing identical in-flight probes. */
export const selectionKey = (s: Selection): string => `${[...s.collectors].sort().join(',')}|${[...s.tags].sort().join(',')}`;

/**
 * Answers `/probe` for the targets of a probe configuration (module comment). Construct, then
 * `start()` (idle sweeping), `probe()` per request, `families()` for the exporter's `/metrics`,
 * `reload()`, `stop()`. Throws ConfigError from the constructor when either configuration is invalid.
 */
export class Prober {
  collectors: LoadedConfig;
  probeConfig: ProbeConfig;
  targets: ProbeTargets;
  readonly namespace: string;
  /** Refused probes by reason (counter). */
  readonly rejected = new Map<RejectReason, number>();
  private readonly log: ExporterLogger;
  private readonly constPairs: [string, string][];
  private known = new Set<string>();
  private knownTags = new Set<string>();
  private reloading: Promise<unknown> = Promise.resolve();
  private started = false;

  /** Loads both configurations (throws ConfigError naming the file); nothing connects yet. */
  constructor(readonly opts: ProberOptions) {
    this.log = opts.logger ?? silent;
    this.namespace = opts.namespace || 'db';
    this.constPairs = Object.entries(opts.constLabels ?? {});
    const { collectors, probeConfig } = this.load();
    this.collectors = collectors;
    this.probeConfig = probeConfig;
    this.index();
    this.targets = this.registry();
  }

  private load(): { collectors: LoadedConfig; probeConfig: ProbeConfig } {
    const collectors = loadConfig(this.opts.configPath);
    if (collectors.collectors.length === 0) throw new ConfigError(`no valid queries loaded from config ${this.opts.configPath}`);
    checkConstLabels(collectors, this.opts.constLabels ?? {}, this.opts.disableIntro ?? false);
    const probeConfig = loadProbeConfig(this.opts.probeConfigPath, this.opts.env);
    return { collectors, probeConfig };
  }

  private index(): void {
    this.known = new Set(this.collectors.collectors.flatMap((c) => [c.name, c.branch]));
    this.knownTags = new Set(this.collectors.collectors.flatMap((c) => c.tags));
  }

  private registry(): ProbeTargets {
    const collectors = this.collectors.collectors;
    const limits = this.probeConfig.limits;
    const make =
      this.opts.makeTarget ??
      ((spec: TargetSpec, defs: CollectorDef[]): ProbeTargetLike => {
        const pooler = urlDatabase(spec.url) === 'pgbouncer';
        return new Target(
          {
            url: spec.url,
            pooler,
            forked: false,
            connectTimeoutMs: this.connectTimeoutMs,
            disableCache: this.opts.disableCache ?? false,
            cliTags: [...(this.opts.tags ?? []), ...spec.tags],
            applicationName: 'db_exporter',
            warn: (m) => this.log.warn(`target ${spec.label}: ${m}`),
            constLabels: this.constPairs,
            poolMax: pooler ? 1 : limits.poolSize,
            idleTimeoutSeconds: limits.idleConnectionSeconds,
            ...(spec.username !== undefined ? { username: spec.username } : {}),
            ...(spec.password !== undefined ? { password: spec.password } : {}),
          },
          defs,
        );
      });
    return new ProbeTargets(limits, (spec) => make(spec, collectors), this.opts.now, this.probeConfig.targets.size);
  }

  private get connectTimeoutMs(): number {
    const t = this.opts.connectTimeoutMs ?? 1000;
    return t > 0 ? t : 100;
  }

  /** Starts dropping idle targets in the background. */
  start(): void {
    this.started = true;
    this.targets.start();
  }

  /** Closes every target's pool. */
  async stop(): Promise<void> {
    await this.targets.closeAll();
  }

  private refuse(reason: RejectReason, status: number, message: string, headers?: Record<string, string>): ProbeAnswer {
    this.rejected.set(reason, (this.rejected.get(reason) ?? 0) + 1);
    this.log.debug(`probe refused (${status} ${reason}): ${message}`);
    return { status, body: message, contentType: TEXT, ...(headers ? { headers } : {}) };
  }

  /**
   * Answers `GET /probe`: 200 with the target's series (also while it is down: `<ns>_up 0`),
   * or a 4xx refusal (probe-request.ts; 429 for a new DSN target when the DSN targets' share of
   * `limits.max_targets` is live and none is idle). Never throws.
   */
  async probe(params: ProbeParams): Promise<ProbeAnswer> {
    await this.reloading;
    const r = resolveProbe(params, this.probeConfig, this.known, this.knownTags);
    if (!r.ok) return this.refuse(r.reason, r.status, r.message);
    const entry = this.targets.acquire(r.spec);
    if (!entry) {
      const l = this.probeConfig.limits;
      const named = this.probeConfig.targets.size;
      return this.refuse(
        'too_many_targets',
        429,
        `too many DSN targets: ${this.targets.dsnSize} are live (limits.max_targets ${l.maxTargets}, of which ${named} kept for the named targets); a target is dropped after ${l.targetIdleSeconds} s without a probe`,
        {
          'Retry-After': String(l.targetIdleSeconds),
        },
      );
    }
    const filter = selectionFilter(r.select);
    const res = await this.targets.scrape(entry, selectionKey(r.select), filter);
    if (res.error) this.log.warn(`fail scraping target ${entry.spec.label}: ${res.error.message}`);
    const builder = new ExpositionBuilder(this.constPairs);
    for (const f of res.families) builder.add(f);
    for (const f of this.probeSelfFamilies(entry, res.up, filter)) builder.add(f);
    if (builder.dropped > 0) {
      entry.dropped += builder.dropped;
      this.log.warn(
        `target ${entry.spec.label}: dropped ${builder.dropped} duplicate or conflicting series from ${[...builder.droppedFrom].join(', ')}`,
      );
    }
    return { status: 200, body: builder.render(), contentType: PROBE_CONTENT_TYPE };
  }

  /** `<ns>_up`, `<ns>_version`, `<ns>_in_recovery`, then (unless disableIntro) this probe's duration and the target's server and query families. */
  private probeSelfFamilies(e: ProbeEntry, up: boolean, filter: CollectorFilter | undefined): Family[] {
    const ns = this.namespace;
    const g = (name: string, help: string, value: number): Family => ({ name, help, type: 'gauge', samples: [{ labels: [], value }] });
    const facts = e.target.facts;
    const out: Family[] = [
      g(`${ns}_up`, 'last scrape was able to connect to the server: 1 for yes, 0 for no', up ? 1 : 0),
      g(`${ns}_version`, 'server version number', facts?.version ?? 0),
      g(`${ns}_in_recovery`, 'server is in recovery mode? 1 for yes 0 for no', facts?.inRecovery ? 1 : 0),
    ];
    if (this.opts.disableIntro) return out;
    out.push(g(`${ns}_exporter_scrape_duration`, 'seconds exporter spending on scraping', e.lastDurationSeconds));
    out.push(...serverStatFamilies(ns, [e.target], filter ? (d) => d.fatal || filter(d as CollectorDef) : undefined));
    return out;
  }

  /**
   * Families for the exporter's own `/metrics`: live targets and their limit, refusals by reason,
   * and per target (label `target`) whether its last probe reached it, probe and error counts,
   * last duration and time, pool size, dropped series and collector errors. Empty with disableIntro.
   */
  families(): Family[] {
    if (this.opts.disableIntro) return [];
    const ns = this.namespace;
    const fam = (suffix: string, help: string, type: 'gauge' | 'counter' = 'gauge'): Family => ({
      name: `${ns}_exporter_${suffix}`,
      help,
      type,
      samples: [],
    });
    const targets = fam('targets', 'probe targets alive now (each with its own connection pool)');
    targets.samples.push({ labels: [], value: this.targets.size });
    const limit = fam('targets_limit', 'most probe targets alive at once (limits.max_targets)');
    limit.samples.push({ labels: [], value: this.probeConfig.limits.maxTargets });
    // Every reason from the start (0), so that rate() and increase() see the first refusal.
    const rejected = fam('probe_rejected_count', 'probes refused with a 4xx, by reason', 'counter');
    for (const reason of REJECT_REASONS) rejected.samples.push({ labels: [['reason', reason]], value: this.rejected.get(reason) ?? 0 });
    const up = fam('target_up', 'last probe of the target was able to connect to the server: 1 for yes, 0 for no');
    const total = fam('target_scrape_total_count', 'probes of the target answered', 'counter');
    const errors = fam('target_scrape_error_count', 'probes of the target that found it down', 'counter');
    const dur = fam('target_scrape_duration', 'seconds the last probe of the target spent scraping');
    const last = fam('target_last_scrape_time', 'end of the last probe of the target, Unix seconds');
    const pool = fam('target_pool_size', 'most connections the target may hold open');
    const dropped = fam(
      'target_dropped_series_count',
      'series dropped from probe answers of the target because they duplicated another series or conflicted with its family',
    );
    const qerr = fam(
      'target_query_error_count',
      'collector failures on the target since its collectors were planned (sum over collectors)',
    );
    for (const e of this.targets.entries()) {
      const l: [string, string][] = [['target', e.spec.label]];
      up.samples.push({ labels: l, value: e.up });
      total.samples.push({ labels: l, value: e.probes });
      errors.samples.push({ labels: l, value: e.errors });
      dur.samples.push({ labels: l, value: e.lastDurationSeconds });
      last.samples.push({ labels: l, value: e.lastProbeTime });
      pool.samples.push({ labels: l, value: e.target.poolMax });
      dropped.samples.push({ labels: l, value: e.dropped });
      qerr.samples.push({ labels: l, value: (e.target.runs ?? []).reduce((s, r) => s + r.stats.errors, 0) });
    }
    return [targets, limit, rejected, up, total, errors, dur, last, pool, dropped, qerr];
  }

  /** The live entry a request names (never creates one), or a refusal; 404 when it has not been probed yet. */
  private live(params: ProbeParams): { entry: ProbeEntry } | { answer: ProbeAnswer } {
    const r = resolveProbe(params, this.probeConfig, this.known, this.knownTags);
    if (!r.ok) return { answer: { status: r.status, body: r.message, contentType: TEXT } };
    const entry = this.targets.get(r.spec.key);
    if (!entry)
      return {
        answer: {
          status: 404,
          body: `target ${r.spec.label} has not been probed yet: its collectors are planned at its first probe`,
          contentType: TEXT,
        },
      };
    return { entry };
  }

  /** `/explain?target=…`: the target's installed collectors (explain.ts format). */
  explain(params: ProbeParams): ProbeAnswer {
    const l = this.live(params);
    if ('answer' in l) return l.answer;
    return { status: 200, body: explainText((l.entry.target.runs ?? []).map((r) => r.def)), contentType: TEXT };
  }

  /** `/stat?target=…`: the target's collector statistics (stat.ts format). */
  stat(params: ProbeParams): ProbeAnswer {
    const l = this.live(params);
    if ('answer' in l) return l.answer;
    return { status: 200, body: statText(statRowsOf(l.entry.target.runs)), contentType: 'text/plain; charset=UTF-8' };
  }

  /**
   * Re-reads the collector set and the probe configuration. On success every live target is
   * closed (the next probe opens a new pool and re-plans); on failure the old ones keep serving.
   * Never throws.
   */
  async reload(): Promise<{ ok: true } | { ok: false; error: string }> {
    const run = async (): Promise<{ ok: true } | { ok: false; error: string }> => {
      let next: { collectors: LoadedConfig; probeConfig: ProbeConfig };
      try {
        next = this.load();
      } catch (e) {
        const msg = (e as Error).message;
        this.log.error(`fail to reload: ${msg}`);
        return { ok: false, error: msg };
      }
      for (const w of next.collectors.warnings) this.log.warn(w);
      const old = this.targets;
      this.collectors = next.collectors;
      this.probeConfig = next.probeConfig;
      this.index();
      this.targets = this.registry();
      await old.closeAll();
      if (this.started) this.targets.start();
      this.log.info('probe configuration reloaded');
      return { ok: true };
    };
    const p = this.reloading.then(run);
    this.reloading = p.catch(() => undefined);
    return p;
  }
}
