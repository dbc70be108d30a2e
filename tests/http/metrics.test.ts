import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { versionNumber } from '../../src/http/metrics.ts';
import { appFor, clusterView, config, laggingReplica, NOW, OPTIME, primaryLeader, stoppedReplica, streamingReplica } from './fixtures.ts';

/** Seed 000 metric table: name -> type. */
const SEED_METRICS: Record<string, 'gauge' | 'counter'> = {
  ha_version: 'gauge',
  ha_database_running: 'gauge',
  ha_postmaster_start_time: 'gauge',
  ha_primary: 'gauge',
  ha_xlog_location: 'counter',
  ha_standby_leader: 'gauge',
  ha_replica: 'gauge',
  ha_sync_standby: 'gauge',
  ha_quorum_standby: 'gauge',
  ha_xlog_received_location: 'counter',
  ha_xlog_replayed_location: 'counter',
  ha_xlog_replayed_timestamp: 'gauge',
  ha_xlog_paused: 'gauge',
  ha_database_streaming: 'gauge',
  ha_database_in_archive_recovery: 'gauge',
  ha_database_server_version: 'gauge',
  ha_cluster_unlocked: 'gauge',
  ha_failsafe_mode_is_active: 'gauge',
  ha_failsafe_mode_enabled: 'gauge',
  ha_failsafe_member: 'gauge',
  ha_database_timeline: 'gauge',
  ha_dcs_last_seen: 'gauge',
  ha_pending_restart: 'gauge',
  ha_is_paused: 'gauge',
  ha_database_state: 'gauge',
  ha_failover_priority: 'gauge',
  // Ours, beyond the seed (docs/ha.md "Divergence").
  ha_diverged: 'gauge',
  ha_replica_not_streaming_seconds: 'gauge',
  // Ours (docs/ha.md "Fencing").
  ha_watchdog_armed: 'gauge',
  ha_watchdog_failed: 'gauge',
  // Ours (docs/ha.md "Synchronous replication").
  ha_sync_degraded: 'gauge',
  // Ours (docs/ha.md "Receipts").
  ha_discarded_receipts: 'gauge',
  ha_discarded_transactions: 'gauge',
  ha_discarded_committed_transactions: 'gauge',
};

interface Parsed {
  types: Map<string, string>;
  help: Set<string>;
  samples: Map<string, { labels: Record<string, string>; value: number }[]>;
  lines: string[];
}

/** A small parser of the text exposition format 0.0.4 (HELP, TYPE, comments, samples with labels). */
function parse(text: string): Parsed {
  const out: Parsed = { types: new Map(), help: new Set(), samples: new Map(), lines: text.split('\n') };
  for (const line of out.lines) {
    if (line === '') continue;
    let m = /^# TYPE (\w+) (gauge|counter)$/.exec(line);
    if (m) {
      out.types.set(m[1]!, m[2]!);
      continue;
    }
    m = /^# HELP (\w+) .+$/.exec(line);
    if (m) {
      out.help.add(m[1]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) throw new Error(`unparseable sample line: ${line}`);
    const labels = Object.fromEntries(
      m[2]!.split(',').map((pair) => {
        const [k, v] = pair.split('=');
        return [k!, JSON.parse(v!) as string];
      }),
    );
    const list = out.samples.get(m[1]!) ?? [];
    list.push({ labels, value: Number(m[3]) });
    out.samples.set(m[1]!, list);
  }
  return out;
}

async function scrape(s: NodeSnapshot | (() => NodeSnapshot)): Promise<Parsed> {
  const { app } = appFor(s);
  const res = await app.request('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parse(await res.text());
}

function value(p: Parsed, name: string): number {
  const list = p.samples.get(name);
  expect(list, name).toHaveLength(1);
  return list![0]!.value;
}

describe('GET /metrics', () => {
  it('exposes exactly the 26 ha_* metrics of the seed plus ha_diverged and ha_replica_not_streaming_seconds, typed as the seed, each with scope and name labels', async () => {
    const p = await scrape(primaryLeader());
    expect([...p.types.keys()].sort()).toEqual(Object.keys(SEED_METRICS).sort());
    for (const [name, type] of Object.entries(SEED_METRICS)) {
      expect(p.types.get(name), name).toBe(type);
      expect(p.help.has(name), name).toBe(true);
      expect(p.samples.get(name), name).toEqual([{ labels: { scope: 'demo', name: 'pg-1' }, value: expect.any(Number) }]);
    }
  });

  it('ha_diverged and ha_replica_not_streaming_seconds follow the snapshot', async () => {
    const calm = await scrape(primaryLeader());
    expect(value(calm, 'ha_diverged')).toBe(0);
    expect(value(calm, 'ha_replica_not_streaming_seconds')).toBe(0);
    const p = await scrape({ ...primaryLeader(), diverged: 'diverged from leader pg-2: x', notStreamingSinceMs: NOW - 42_000 });
    expect(value(p, 'ha_diverged')).toBe(1);
    expect(value(p, 'ha_replica_not_streaming_seconds')).toBe(42);
  });

  it('ha_discarded_* count the receipts kept (0 without any)', async () => {
    const none = await scrape(primaryLeader());
    expect(value(none, 'ha_discarded_receipts')).toBe(0);
    expect(value(none, 'ha_discarded_committed_transactions')).toBe(0);
    const some = await scrape({
      ...primaryLeader(),
      discarded: { receipts: 2, transactions: 7, committed: 5, lastAt: '2026-11-27T10:00:00.000Z', location: '/var/lib/x.discarded' },
    });
    expect(value(some, 'ha_discarded_receipts')).toBe(2);
    expect(value(some, 'ha_discarded_transactions')).toBe(7);
    expect(value(some, 'ha_discarded_committed_transactions')).toBe(5);
  });

  it('ha_sync_degraded follows the snapshot on the leader only', async () => {
    expect(value(await scrape(primaryLeader()), 'ha_sync_degraded')).toBe(0);
    expect(value(await scrape({ ...primaryLeader(), syncDegraded: 'no eligible synchronous standby' }), 'ha_sync_degraded')).toBe(1);
    expect(
      value(await scrape({ ...primaryLeader(), leaderUntilMs: 0, syncDegraded: 'no eligible synchronous standby' }), 'ha_sync_degraded'),
    ).toBe(0);
  });

  it('ha_watchdog_armed and ha_watchdog_failed follow the fence status', async () => {
    const none = await scrape(primaryLeader());
    expect(value(none, 'ha_watchdog_armed')).toBe(0);
    expect(value(none, 'ha_watchdog_failed')).toBe(0);
    const armed = await scrape({ ...primaryLeader(), watchdog: { mode: 'automatic', armed: true, failed: false } });
    expect(value(armed, 'ha_watchdog_armed')).toBe(1);
    const failed = await scrape({ ...primaryLeader(), watchdog: { mode: 'required', armed: false, failed: true } });
    expect(value(failed, 'ha_watchdog_armed')).toBe(0);
    expect(value(failed, 'ha_watchdog_failed')).toBe(1);
  });

  it('puts the # Values line of ha_database_state between its HELP and TYPE lines', async () => {
    const p = await scrape(primaryLeader());
    const i = p.lines.findIndex((l) => l.startsWith('# HELP ha_database_state '));
    expect(p.lines[i + 1]).toBe(
      '# Values: 0=initdb, 1=initdb_failed, 2=custom_bootstrap, 3=custom_bootstrap_failed, 4=creating_replica, ' +
        '5=running, 6=starting, 7=bootstrap_starting, 8=start_failed, 9=restarting, 10=restart_failed, 11=stopping, ' +
        '12=stopped, 13=stop_failed, 14=crashed',
    );
    expect(p.lines[i + 2]).toBe('# TYPE ha_database_state gauge');
  });

  it('reports a primary leader', async () => {
    const p = await scrape(
      primaryLeader({ config: config({ failsafe_mode: true }), cluster: clusterView({ failsafe: { 'pg-1': 'http://10.0.0.1:8008/ha' } }) }),
    );
    expect(value(p, 'ha_version')).toBe(100);
    expect(value(p, 'ha_database_running')).toBe(1);
    expect(value(p, 'ha_postmaster_start_time')).toBe(Date.UTC(2026, 0, 15, 11, 0, 0, 250) / 1000);
    expect(value(p, 'ha_primary')).toBe(1);
    expect(value(p, 'ha_replica')).toBe(0);
    expect(value(p, 'ha_xlog_location')).toBe(Number(OPTIME));
    expect(value(p, 'ha_xlog_received_location')).toBe(0);
    expect(value(p, 'ha_database_server_version')).toBe(150018);
    expect(value(p, 'ha_database_timeline')).toBe(2);
    expect(value(p, 'ha_cluster_unlocked')).toBe(0);
    expect(value(p, 'ha_failsafe_mode_enabled')).toBe(1);
    expect(value(p, 'ha_failsafe_member')).toBe(1);
    expect(value(p, 'ha_dcs_last_seen')).toBe(Math.floor((NOW - 1000) / 1000));
    expect(value(p, 'ha_database_state')).toBe(5);
    expect(value(p, 'ha_failover_priority')).toBe(1);
  });

  it('reports a streaming replica', async () => {
    const p = await scrape(laggingReplica({ tags: { failover_priority: 3 } }));
    expect(value(p, 'ha_primary')).toBe(0);
    expect(value(p, 'ha_replica')).toBe(1);
    expect(value(p, 'ha_xlog_location')).toBe(0);
    expect(value(p, 'ha_xlog_received_location')).toBe(Number(OPTIME) - 20 * 1024 * 1024);
    expect(value(p, 'ha_xlog_replayed_location')).toBe(Number(OPTIME) - 20 * 1024 * 1024);
    expect(value(p, 'ha_xlog_replayed_timestamp')).toBe(Date.UTC(2026, 0, 15, 11, 59, 59, 500) / 1000);
    expect(value(p, 'ha_database_streaming')).toBe(1);
    expect(value(p, 'ha_database_in_archive_recovery')).toBe(0);
    expect(value(p, 'ha_failover_priority')).toBe(3);
  });

  it('reports a stopped, paused, nofailover node with zeros where nothing is known', async () => {
    const p = await scrape(stoppedReplica({ config: config({ pause: true }), tags: { nofailover: true }, dcsLastSeenMs: 0 }));
    expect(value(p, 'ha_database_running')).toBe(0);
    expect(value(p, 'ha_postmaster_start_time')).toBe(0);
    expect(value(p, 'ha_database_server_version')).toBe(0);
    expect(value(p, 'ha_database_timeline')).toBe(0);
    expect(value(p, 'ha_is_paused')).toBe(1);
    expect(value(p, 'ha_cluster_unlocked')).toBe(1);
    expect(value(p, 'ha_database_state')).toBe(12);
    expect(value(p, 'ha_failover_priority')).toBe(0);
  });

  it('reads the snapshot at scrape time', async () => {
    let current = streamingReplica();
    const { app } = appFor(() => current);
    const first = parse(await (await app.request('/metrics')).text());
    current = streamingReplica({ state: 'crashed' });
    const second = parse(await (await app.request('/metrics')).text());
    expect(value(first, 'ha_database_state')).toBe(5);
    expect(value(second, 'ha_database_state')).toBe(14);
  });

  it('never registers in the global prom-client registry', async () => {
    await scrape(primaryLeader());
    expect(await register.getSingleMetric('ha_version')).toBeUndefined();
  });

  it.each([
    ['0.1.0', 100],
    ['4.1.4', 40104],
    ['1.12.3', 11203],
    ['2.0.0-rc.1', 20000],
  ])('ha_version of %s is %i', (version, expected) => {
    expect(versionNumber(version)).toBe(expected);
  });
});
