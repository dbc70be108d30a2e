/**
 * The dynamic configuration: the JSON value of the DCS key `config`, seeded once from
 * `bootstrap.dcs` by the bootstrap winner (shared/docs/dcs-layout.md; seed 000 "Dynamic
 * configuration document"). Keys beyond those listed are kept as they are (never read: see
 * src/config/dynamic-keys.ts). The stored document may be in the reference's dialect
 * (src/domain/config-dialect.ts); the types here are the native dialect, which `withDefaults`
 * reads either dialect into.
 */
import { readAsNative } from './config-dialect.ts';

/** `database` section of the dynamic configuration. */
export interface DynamicDatabaseConfig {
  use_slots: boolean;
  /**
   * The reference's `use_pg_rewind`: a member whose WAL diverged from the leader's timeline is
   * rewound with pg_rewind from the leader and follows it. Default **true** here (the reference's
   * is false): the agent writes `wal_log_hints = on` from the first start, so every data directory
   * it made can be rewound, and a former primary that diverged rejoins by itself (docs/ha.md
   * "Divergence": "Defaults").
   */
  use_db_rewind: boolean;
  /**
   * Patroni's `remove_data_directory_on_diverged_timelines`: a member whose WAL diverged from
   * the leader's timeline (and cannot be rewound) has its data directory wiped and is re-cloned
   * from a running member, instead of staying stopped. Default false.
   */
  remove_data_directory_on_diverged_timelines: boolean;
  /**
   * Patroni's `remove_data_directory_on_rewind_failure`: when pg_rewind of a diverged member
   * fails after it began to change the data directory (PostgreSQL docs, pg_rewind: the directory
   * is then "likely not in a state that can be recovered"), it is wiped and re-cloned from the
   * leader, instead of the member staying stopped until an operator reinitializes it. Default
   * **true** here (the reference's is false): what such a directory held is lost either way, and
   * the receipt taken before the rewind lists what was discarded (docs/ha.md "Divergence":
   * "Defaults"). A rewind that failed before changing anything is tried again instead.
   */
  remove_data_directory_on_rewind_failure: boolean;
  /** PostgreSQL parameter name -> value (string or integer). */
  parameters: Record<string, string | number>;
  [other: string]: unknown;
}

/** The effective dynamic configuration (defaults filled in). */
export interface DynamicConfig {
  /** Lease TTL of the leader lock and member keys, seconds. */
  ttl: number;
  /** Period of the HA loop, seconds. */
  loop_wait: number;
  /** Budget of every DCS and PostgreSQL call, seconds. */
  retry_timeout: number;
  /** Bytes a replica may lag behind the leader and still be promoted. */
  maximum_lag_on_failover: number;
  check_timeline: boolean;
  database: DynamicDatabaseConfig;
  pause?: boolean;
  /**
   * Synchronous replication run by the leader (docs/ha.md "Synchronous replication"): true
   * (`FIRST n (...)`), `quorum` (`ANY n (...)`), false (asynchronous).
   */
  synchronous_mode?: boolean | 'quorum';
  /** With no eligible standby the primary acknowledges nothing (instead of going asynchronous). Default false. */
  synchronous_mode_strict?: boolean;
  /** Standbys a commit waits for (`n` of FIRST n / ANY n). Default 1. */
  synchronous_node_count?: number;
  /** Bytes a standby may lag behind the best one and still be chosen as synchronous; -1 or 0: no limit. Default -1. */
  maximum_lag_on_syncnode?: number;
  failsafe_mode?: boolean;
  [other: string]: unknown;
}

/**
 * The durations of a dynamic configuration in ms. The DCS document carries them in seconds (the
 * reference's keys ttl, loop_wait, retry_timeout); the agent, the API and hactl compute in ms and
 * read them from here (`timingOf`): the one place these seconds become ms.
 */
export interface Timing {
  /** Lease TTL of the leader lock and member keys. */
  readonly ttlMs: number;
  /** Period of the HA loop. */
  readonly loopWaitMs: number;
  /** Budget of every DCS and PostgreSQL call. */
  readonly retryTimeoutMs: number;
}

const timings = new WeakMap<object, Timing>();

/** The durations of `config` in ms, converted once per configuration object (configurations are replaced, never changed in place). */
export function timingOf(config: Pick<DynamicConfig, 'ttl' | 'loop_wait' | 'retry_timeout'>): Timing {
  let t = timings.get(config);
  if (!t) {
    t = { ttlMs: config.ttl * 1000, loopWaitMs: config.loop_wait * 1000, retryTimeoutMs: config.retry_timeout * 1000 };
    timings.set(config, t);
  }
  return t;
}

/** Defaults of the issue and of the reference: ttl 30, loop_wait 10, retry_timeout 10, 1 MiB lag. */
export const DYNAMIC_DEFAULTS: DynamicConfig = {
  ttl: 30,
  loop_wait: 10,
  retry_timeout: 10,
  maximum_lag_on_failover: 1048576,
  check_timeline: false,
  database: {
    use_slots: true,
    use_db_rewind: true,
    remove_data_directory_on_diverged_timelines: false,
    remove_data_directory_on_rewind_failure: true,
    parameters: {},
  },
};

/** Bounds of one timing setting, seconds (inclusive). */
export interface TimingBounds {
  min: number;
  max: number;
}

/**
 * Bounds of the three timing settings, seconds, applied to the DCS copy by
 * `sanitizeDynamicConfig` (src/config/dynamic-sanitize.ts); the maxima are also refused by the
 * API schema (src/config/dynamic-schema.ts).
 *
 * Minima (patroni.md §3.1): `loop_wait >= 1`, `retry_timeout >= 3`; `ttl >= 7`, the smallest ttl
 * for which the timing rule can hold with the other two at their minima (1 + 2*3). The reference
 * asks ttl >= 20; 7 is kept lower so that fast test clusters (ttl 10, loop_wait 2,
 * retry_timeout 3) stay as written.
 *
 * Maxima: every value times 1000 must stay a valid Node timer delay (setTimeout caps at
 * 2^31-1 ms, about 24.8 days; larger delays fire at once and the loop spins) and ttl must be a
 * valid etcd lease TTL (etcd caps leases at 9e9 s). ttl <= 86400 (one day: a dead leader keeps
 * its lock that long at worst), loop_wait <= 3600 and retry_timeout <= 3600 (one hour) are far
 * below both caps and far above any sensible setting.
 */
export const TIMING_BOUNDS: Readonly<Record<'ttl' | 'loop_wait' | 'retry_timeout', TimingBounds>> = {
  ttl: { min: 7, max: 86_400 },
  loop_wait: { min: 1, max: 3_600 },
  retry_timeout: { min: 3, max: 3_600 },
};

/**
 * Checks the timing rule `loop_wait + 2 * retry_timeout <= ttl` (dcs-layout.md "Leases and the
 * leader lock": a leader that cannot renew must be demoting before its lease can expire).
 * Returns an error message naming the three numbers, or undefined when the rule holds.
 */
export function timingError(c: Pick<DynamicConfig, 'ttl' | 'loop_wait' | 'retry_timeout'>): string | undefined {
  if (c.loop_wait + 2 * c.retry_timeout > c.ttl) {
    return (
      `loop_wait + 2*retry_timeout must not exceed ttl: loop_wait ${c.loop_wait} + 2*retry_timeout ${c.retry_timeout}` +
      ` = ${c.loop_wait + 2 * c.retry_timeout} > ttl ${c.ttl}`
    );
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Fills defaults into a stored (possibly partial) dynamic configuration, in either dialect: a
 * document in the reference's dialect is read as native first (`readAsNative`: `postgresql` →
 * `database`, `use_pg_rewind` → `use_db_rewind`, the reference's defaults where they differ from
 * ours). Unknown keys are kept. Values of the wrong type fall back to the default; numbers are
 * taken as they are (no range check): for the DCS copy, which anyone can write, use
 * `sanitizeDynamicConfig` (src/config/dynamic-sanitize.ts).
 */
export function withDefaults(stored: unknown): DynamicConfig {
  const native = readAsNative(stored);
  const s = isObject(native) ? native : {};
  const db = isObject(s['database']) ? s['database'] : {};
  const num = (k: string, d: number) => (typeof s[k] === 'number' ? (s[k] as number) : d);
  return {
    ...s,
    ttl: num('ttl', DYNAMIC_DEFAULTS.ttl),
    loop_wait: num('loop_wait', DYNAMIC_DEFAULTS.loop_wait),
    retry_timeout: num('retry_timeout', DYNAMIC_DEFAULTS.retry_timeout),
    maximum_lag_on_failover: num('maximum_lag_on_failover', DYNAMIC_DEFAULTS.maximum_lag_on_failover),
    check_timeline: typeof s['check_timeline'] === 'boolean' ? (s['check_timeline'] as boolean) : false,
    database: {
      ...db,
      use_slots: typeof db['use_slots'] === 'boolean' ? (db['use_slots'] as boolean) : true,
      use_db_rewind: typeof db['use_db_rewind'] === 'boolean' ? (db['use_db_rewind'] as boolean) : DYNAMIC_DEFAULTS.database.use_db_rewind,
      remove_data_directory_on_diverged_timelines:
        typeof db['remove_data_directory_on_diverged_timelines'] === 'boolean'
          ? (db['remove_data_directory_on_diverged_timelines'] as boolean)
          : false,
      remove_data_directory_on_rewind_failure:
        typeof db['remove_data_directory_on_rewind_failure'] === 'boolean'
          ? (db['remove_data_directory_on_rewind_failure'] as boolean)
          : DYNAMIC_DEFAULTS.database.remove_data_directory_on_rewind_failure,
      parameters: isObject(db['parameters']) ? (db['parameters'] as Record<string, string | number>) : {},
    },
  };
}
