/**
 * GET /metrics: the 26 `ha_*` metrics of seed 000 ("Metrics") plus ours (`ha_diverged`,
 * `ha_replica_not_streaming_seconds`, the fence's, `ha_sync_degraded`, the receipts' `ha_discarded_*`), Prometheus text format 0.0.4,
 * through a prom-client Registry of our own (never the global one). Every metric has the labels
 * `scope` and `name`; values are read from the snapshot in `collect()` at scrape time
 * (patroni.md §1.6 `/metrics` for the value rules; stack.md §5).
 *
 * `ha_database_state` is preceded by an extra comment line
 * `# Values: 0=initdb, 1=initdb_failed, …, 14=crashed` between its HELP and TYPE lines, as the
 * reference does (a plain comment for Prometheus parsers).
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { lsnToNumber } from '../domain/lsn.ts';
import { failoverPriority } from '../domain/member.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import { DATABASE_STATES, databaseStateNumber } from '../domain/states.ts';
import { nodeFacts } from '../domain/node-facts.ts';

/** Name, type (seed: g = gauge, c = counter) and help of each metric, in the seed's order. */
export const HA_METRICS = [
  ['ha_version', 'gauge', 'Agent version digits, each part zero-padded to 2 digits (0.1.0 -> 000100 = 100)'],
  ['ha_database_running', 'gauge', '1 if the database runs'],
  ['ha_postmaster_start_time', 'gauge', 'Epoch seconds of the database start, 0 if not running'],
  ['ha_primary', 'gauge', '1 if this node is the leader (primary holding the leader lock)'],
  ['ha_xlog_location', 'counter', 'Current WAL flush location in bytes; 0 if not the primary'],
  ['ha_standby_leader', 'gauge', '1 if standby leader'],
  ['ha_replica', 'gauge', '1 if replica'],
  ['ha_sync_standby', 'gauge', '1 if sync standby'],
  ['ha_quorum_standby', 'gauge', '1 if quorum standby'],
  ['ha_xlog_received_location', 'counter', 'Received WAL location in bytes; 0 if not a replica'],
  ['ha_xlog_replayed_location', 'counter', 'Replayed WAL location in bytes; 0 if not a replica'],
  ['ha_xlog_replayed_timestamp', 'gauge', 'Epoch seconds of the last replayed transaction; 0 if null'],
  ['ha_xlog_paused', 'gauge', '1 if WAL replay is paused'],
  ['ha_database_streaming', 'gauge', '1 if streaming from the leader'],
  ['ha_database_in_archive_recovery', 'gauge', '1 if replicating from an archive'],
  ['ha_database_server_version', 'gauge', 'Database server version (server_version_num) if running, else 0'],
  ['ha_cluster_unlocked', 'gauge', '1 if the cluster is unlocked, 0 if locked'],
  ['ha_failsafe_mode_is_active', 'gauge', '1 if failsafe mode is active'],
  ['ha_failsafe_mode_enabled', 'gauge', '1 if failsafe_mode is enabled'],
  ['ha_failsafe_member', 'gauge', '1 if this node is a failsafe member'],
  ['ha_database_timeline', 'gauge', 'Timeline if running, else 0'],
  ['ha_dcs_last_seen', 'gauge', 'Epoch seconds of the last successful DCS contact'],
  ['ha_pending_restart', 'gauge', '1 if a restart is needed'],
  ['ha_is_paused', 'gauge', '1 if automatic failover is disabled (pause)'],
  ['ha_database_state', 'gauge', 'Numeric database state'],
  ['ha_failover_priority', 'gauge', 'Failover priority of this node (0 when nofailover)'],
  // Ours, beyond the seed's 26 (docs/ha.md "Divergence").
  ['ha_diverged', 'gauge', '1 if the local WAL diverged from the leader timeline (the member does not run as a replica)'],
  ['ha_replica_not_streaming_seconds', 'gauge', 'Seconds a running replica has not streamed from its leader; 0 while it streams'],
  // Ours (docs/ha.md "Fencing").
  ['ha_watchdog_armed', 'gauge', '1 if the fence (software watchdog) is armed on the local postmaster'],
  ['ha_watchdog_failed', 'gauge', '1 if watchdog.mode is required and the fence could not be armed'],
  [
    'ha_sync_degraded',
    'gauge',
    '1 if synchronous mode is on and this primary has no synchronous standby (asynchronous, or waiting in strict mode)',
  ],
  // Ours (docs/ha.md "Receipts").
  ['ha_discarded_receipts', 'gauge', 'Receipts this member kept of WAL a rewind or re-clone discarded (GET /discarded)'],
  ['ha_discarded_transactions', 'gauge', 'Transactions listed in those receipts'],
  [
    'ha_discarded_committed_transactions',
    'gauge',
    'Transactions in those receipts that had committed on this member (never on the leader)',
  ],
] as const;

/** One of the metric names (the seed's 26, plus ha_diverged and ha_replica_not_streaming_seconds). */
export type HaMetricName = (typeof HA_METRICS)[number][0];

/** The `# Values:` comment line of `ha_database_state`. */
export const DATABASE_STATE_VALUES_LINE = `# Values: ${DATABASE_STATES.map((s, i) => `${i}=${s}`).join(', ')}`;

/** The agent version as a number: parts zero-padded to 2 digits, concatenated (`4.1.4` → 40104, `0.1.0` → 100). */
export function versionNumber(version: string): number {
  const parts = version.split(/[.+-]/).slice(0, 3);
  const digits = parts.map((p) => (/^\d+$/.test(p) ? p.padStart(2, '0') : '00')).join('');
  return Number(digits) || 0;
}

/** Epoch seconds of a PostgreSQL timestamp text (`2026-11-21 13:02:31.123+00`), 0 when null or unparseable. */
export function timestampSeconds(text: string | null | undefined): number {
  if (!text) return 0;
  const iso = text
    .trim()
    .replace(' ', 'T')
    .replace(/([+-]\d{2})$/, '$1:00');
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms / 1000 : 0;
}

/** The value of every metric for snapshot `s` at `nowMs`. Pure. */
export function metricValues(s: NodeSnapshot, nowMs: number): Record<HaMetricName, number> {
  const f = nodeFacts(s, nowMs);
  const pg = s.pg;
  const replica = pg?.inRecovery === true;
  const primaryRole = s.role === 'primary';
  const bit = (b: boolean) => (b ? 1 : 0);
  return {
    ha_version: versionNumber(s.version),
    ha_database_running: bit(s.state === 'running'),
    ha_postmaster_start_time: timestampSeconds(pg?.postmasterStartTime),
    ha_primary: bit(primaryRole && f.isLeader),
    ha_xlog_location: pg && !replica ? lsnToNumber(pg.flushLsn ?? 0n) : 0,
    ha_standby_leader: bit(s.role === 'standby_leader'),
    ha_replica: bit(s.role === 'replica'),
    ha_sync_standby: bit(f.syncStandby && s.role === 'replica'),
    ha_quorum_standby: bit(f.quorumStandby && s.role === 'replica'),
    ha_xlog_received_location: replica ? lsnToNumber(pg.receiveLsn ?? pg.replayLsn ?? 0n) : 0,
    ha_xlog_replayed_location: replica ? lsnToNumber(pg.replayLsn ?? 0n) : 0,
    ha_xlog_replayed_timestamp: replica ? timestampSeconds(pg.replayTimestamp) : 0,
    ha_xlog_paused: bit(replica && pg.replayPaused === true),
    ha_database_streaming: bit(f.replicationState === 'streaming'),
    ha_database_in_archive_recovery: bit(f.replicationState === 'in archive recovery'),
    ha_database_server_version: pg?.serverVersion ?? 0,
    ha_cluster_unlocked: bit(f.clusterUnlocked),
    ha_failsafe_mode_is_active: bit(s.failsafeActive === true),
    ha_failsafe_mode_enabled: bit(s.config.failsafe_mode === true),
    ha_failsafe_member: bit(s.cluster.failsafe !== undefined && Object.hasOwn(s.cluster.failsafe, s.name)),
    ha_database_timeline: pg?.timeline ?? 0,
    ha_dcs_last_seen: Math.floor(s.dcsLastSeenMs / 1000),
    ha_pending_restart: bit(pg !== undefined && Object.keys(pg.pendingRestart).length > 0),
    ha_is_paused: bit(f.paused),
    ha_database_state: databaseStateNumber(s.state),
    ha_failover_priority: failoverPriority(s.tags),
    ha_diverged: bit(s.diverged !== undefined),
    ha_replica_not_streaming_seconds:
      s.notStreamingSinceMs !== undefined ? Math.max(0, Math.floor((nowMs - s.notStreamingSinceMs) / 1000)) : 0,
    ha_watchdog_armed: bit(s.watchdog?.armed === true),
    ha_watchdog_failed: bit(s.watchdog?.failed === true),
    ha_sync_degraded: bit(s.syncDegraded !== undefined && f.isLeader),
    ha_discarded_receipts: s.discarded?.receipts ?? 0,
    ha_discarded_transactions: s.discarded?.transactions ?? 0,
    ha_discarded_committed_transactions: s.discarded?.committed ?? 0,
  };
}

/** The metrics endpoint's registry and renderer. */
export interface NodeMetrics {
  /** Our own registry holding the metrics (content type: `registry.contentType`). */
  registry: Registry;
  /** Renders one scrape from one snapshot (every metric reads the same snapshot), with the `# Values:` line. */
  render(): Promise<string>;
}

/**
 * Creates the registry. `snapshot` and `now` are read at scrape time; a scrape through `render()`
 * reads the snapshot once, a direct `registry.metrics()` reads it once per metric.
 */
export function createNodeMetrics(snapshot: () => NodeSnapshot, now: () => number): NodeMetrics {
  const registry = new Registry();
  // Set by render() for the synchronous part of registry.metrics(), during which prom-client
  // calls every collect(): one scrape then reads one snapshot.
  let scrape: { values: Record<HaMetricName, number>; labels: { scope: string; name: string } } | undefined;
  const current = (): { values: Record<HaMetricName, number>; labels: { scope: string; name: string } } => {
    if (scrape) return scrape;
    const s = snapshot();
    return { values: metricValues(s, now()), labels: { scope: s.scope, name: s.name } };
  };
  for (const [name, type, help] of HA_METRICS) {
    const labelNames = ['scope', 'name'] as const;
    if (type === 'counter') {
      new Counter({
        name,
        help,
        labelNames,
        registers: [registry],
        collect() {
          const { values, labels } = current();
          this.reset();
          this.inc(labels, values[name]);
        },
      });
    } else {
      new Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        collect() {
          const { values, labels } = current();
          this.reset();
          this.set(labels, values[name]);
        },
      });
    }
  }
  return {
    registry,
    async render() {
      const s = snapshot();
      scrape = { values: metricValues(s, now()), labels: { scope: s.scope, name: s.name } };
      let pending: Promise<string>;
      try {
        pending = registry.metrics();
      } finally {
        scrape = undefined;
      }
      const text = await pending;
      return text.replace(/^(# HELP ha_database_state .*)$/m, `$1\n${DATABASE_STATE_VALUES_LINE}`);
    },
  };
}
