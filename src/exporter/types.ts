/**
 * Vocabulary of the metrics exporter: collector definitions as loaded from the collector
 * configuration format of pg_exporter (see docs/exporter.md and shared/pg_exporter-config/0000-doc.yml).
 */

/** What a result column becomes. Read case-insensitively from `usage:`, stored upper case. */
export type Usage = 'DISCARD' | 'LABEL' | 'COUNTER' | 'GAUGE' | 'HISTOGRAM';

/** One `metrics:` item of a collector. */
export interface ColumnDef {
  /** Result-set column looked up (the item's key, or its `name:` override). */
  name: string;
  usage: Usage;
  /** Label name (LABEL) or metric suffix (value columns) to emit instead of `name`. */
  rename?: string;
  description?: string;
  /** `scale:` exactly as written (kept for /explain); `scale` is its float value (1 when absent). */
  scaleText?: string;
  scale: number;
  /** `default:` exactly as written; `defaultValue` is its float value (used when the value is NULL). */
  defaultText?: string;
  defaultValue?: number;
  /** HISTOGRAM upper bounds, finite and strictly increasing; +Inf is implicit. */
  bucket?: number[];
}

/** One `predicate_queries:` item. */
export interface PredicateDef {
  name?: string;
  query: string;
  /** Seconds the verdict (pass or skip) is cached; 0 = not cached. */
  ttlSeconds: number;
}

/** One collector (a top-level "branch" of the configuration), normalised. */
export interface CollectorDef {
  /** Top-level key: unique in the merged configuration, the unit of override. */
  branch: string;
  /** Metric prefix (`name:`, defaults to the branch). */
  name: string;
  desc: string;
  query: string;
  predicates: PredicateDef[];
  tags: string[];
  /** Result cache lifetime in seconds (0 = run every scrape). */
  ttlSeconds: number;
  /** Time budget for predicates + main query in seconds; 0/absent is stored as 0.1; negative disables. */
  timeoutSeconds: number;
  priority: number;
  /** Inclusive lower bound (server_version_num form), 0 = none. */
  minVersion: number;
  /** Exclusive upper bound, 0 = none. */
  maxVersion: number;
  fatal: boolean;
  skip: boolean;
  columns: ColumnDef[];
  /** File name (no directory) the branch came from. */
  source: string;
}

/** A loaded configuration: collectors in planning order plus per-file warnings. */
export interface LoadedConfig {
  /** Path given to the loader (file or directory). */
  path: string;
  collectors: CollectorDef[];
  /** Human-readable warnings, e.g. a skipped file in directory mode. */
  warnings: string[];
}

/** Facts about one target server gathered by the pre-check; they drive planning. */
export interface ServerFacts {
  /** server_version_num (or pgbouncer x.y.z as x*10000+y*100+z); 0 = unknown. */
  version: number;
  inRecovery: boolean;
  dbname: string;
  username: string;
  /** Databases with datallowconn that are not templates. */
  databases: string[];
  schemas: string[];
  extensions: string[];
}
