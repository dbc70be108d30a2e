import { describe, expect, it } from 'vitest';
import { buildStatusDocument } from '../../src/domain/status-document.ts';
import { buildClusterDocument, type ClusterDocument } from '../../src/domain/cluster-document.ts';
import { createNodeApp } from '../../src/http/app.ts';
import { parseLagParam } from '../../src/http/lag-param.ts';
import {
  appFor,
  clusterView,
  config,
  FakeCommands,
  member,
  MiB,
  noDcsReplica,
  NOW,
  OPTIME,
  primaryLeader,
  stoppedReplica,
  streamingReplica,
} from './fixtures.ts';

describe('GET /ha', () => {
  it('answers the primary status document with every applicable field', async () => {
    const { app } = appFor(primaryLeader({ tags: { dc: 'east' } }));
    const res = await app.request('/ha');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({
      state: 'running',
      role: 'primary',
      postmaster_start_time: '2026-01-15 11:00:00.250+00',
      server_version: 150018,
      timeline: 2,
      xlog: { location: Number(OPTIME) },
      replication: [
        {
          usename: 'replicator',
          application_name: 'pg-2',
          client_addr: '10.0.0.2',
          state: 'streaming',
          sync_state: 'async',
          sync_priority: 0,
        },
      ],
      dcs_last_seen: Math.floor((NOW - 1000) / 1000),
      tags: { dc: 'east' },
      database_system_identifier: '7300000000000000001',
      ha: { version: '0.1.0', scope: 'demo', name: 'pg-1' },
    });
  });

  it('shows the replica xlog set and replication_state', () => {
    const doc = buildStatusDocument(streamingReplica(), NOW);
    expect(doc.xlog).toEqual({
      received_location: Number(OPTIME),
      replayed_location: Number(OPTIME),
      replayed_timestamp: '2026-01-15 11:59:59.5+00',
      paused: false,
    });
    expect(doc.replication_state).toBe('streaming');
    expect(doc.replication).toBeUndefined();
    expect(doc.cluster_unlocked).toBeUndefined();
  });

  it('always carries state, role, dcs_last_seen and ha, even with the database stopped and no DCS ever seen', () => {
    const doc = buildStatusDocument(stoppedReplica({ dcsLastSeenMs: 0, tags: {}, sysid: undefined }), NOW);
    expect(doc).toEqual({
      state: 'stopped',
      role: 'replica',
      cluster_unlocked: true,
      dcs_last_seen: 0,
      ha: { version: '0.1.0', scope: 'demo', name: 'pg-2' },
    });
  });

  it('reports cluster_unlocked without a leader key or with a DCS view older than ttl', () => {
    const { leader: _l, ...noLeader } = clusterView();
    expect(buildStatusDocument(streamingReplica({ cluster: noLeader }), NOW).cluster_unlocked).toBe(true);
    expect(buildStatusDocument(noDcsReplica(), NOW).cluster_unlocked).toBe(true);
    expect(buildStatusDocument(streamingReplica({ dcsLastSeenMs: NOW - 30_000 }), NOW).cluster_unlocked).toBeUndefined();
  });

  it('shows pause, failsafe, pending restart, scheduled restart and sync_standby when they apply', () => {
    const pg = streamingReplica().pg!;
    const doc = buildStatusDocument(
      streamingReplica({
        config: config({ pause: true, synchronous_mode: true }),
        cluster: clusterView({ sync: { value: { leader: 'pg-1', sync_standby: 'pg-2' }, revision: '5' } }),
        failsafeActive: true,
        pg: { ...pg, pendingRestart: { shared_buffers: { old_value: '128MB', new_value: '256MB' } } },
        scheduledRestart: { schedule: '2026-01-15T13:00:00+00:00', role: 'replica', postmaster_start_time: 'x' },
      }),
      NOW,
    );
    expect(doc.pause).toBe(true);
    expect(doc.failsafe_mode_is_active).toBe(true);
    expect(doc.pending_restart).toBe(true);
    expect(doc.pending_restart_reason).toEqual({ shared_buffers: { old_value: '128MB', new_value: '256MB' } });
    expect(doc.scheduled_restart).toEqual({ schedule: '2026-01-15T13:00:00+00:00', role: 'replica' });
    expect(doc.sync_standby).toBe(true);
    expect(doc.quorum_standby).toBeUndefined();
  });

  it('shows quorum_standby in quorum mode', () => {
    const doc = buildStatusDocument(
      streamingReplica({
        config: config({ synchronous_mode: 'quorum' }),
        cluster: clusterView({ sync: { value: { leader: 'pg-1', sync_standby: 'pg-2,pg-3', quorum: 1 }, revision: '5' } }),
      }),
      NOW,
    );
    expect(doc.quorum_standby).toBe(true);
    expect(doc.sync_standby).toBeUndefined();
  });
});

describe('GET /ha: watchdog_failed', () => {
  it('is true only when the fence is required and could not be armed (patroni.md §1.3)', () => {
    expect(buildStatusDocument(streamingReplica(), NOW).watchdog_failed).toBeUndefined();
    expect(
      buildStatusDocument(streamingReplica({ watchdog: { mode: 'automatic', armed: false, failed: false } }), NOW).watchdog_failed,
    ).toBeUndefined();
    expect(buildStatusDocument(streamingReplica({ watchdog: { mode: 'required', armed: false, failed: true } }), NOW).watchdog_failed).toBe(
      true,
    );
  });
});

describe('GET /ha: divergence and not streaming', () => {
  const why = 'diverged from leader pg-1: local WAL (600) goes past the switch point (500) of timeline 1';

  it('carries diverged when the snapshot has it', () => {
    expect(buildStatusDocument(stoppedReplica({ diverged: why }), NOW).diverged).toBe(why);
    expect(buildStatusDocument(streamingReplica({ diverged: why }), NOW).diverged).toBe(why);
  });

  it('carries not_streaming_since (ISO) for a running member with notStreamingSinceMs', () => {
    const since = NOW - 42_000;
    const doc = buildStatusDocument(streamingReplica({ notStreamingSinceMs: since }), NOW);
    expect(doc.not_streaming_since).toBe(new Date(since).toISOString());
    expect(Date.parse(doc.not_streaming_since!)).toBe(since);
  });

  it('leaves both out otherwise', () => {
    const plain = buildStatusDocument(streamingReplica(), NOW);
    expect(plain).not.toHaveProperty('diverged');
    expect(plain).not.toHaveProperty('not_streaming_since');
    // Not running: no not_streaming_since even when the snapshot still has the time.
    const stopped = buildStatusDocument(stoppedReplica({ notStreamingSinceMs: NOW - 42_000 }), NOW);
    expect(stopped).not.toHaveProperty('not_streaming_since');
    expect(stopped).not.toHaveProperty('diverged');
  });

  it('answers them through GET /ha', async () => {
    const { app } = appFor(streamingReplica({ diverged: why, notStreamingSinceMs: NOW - 1_000 }));
    const body = (await (await app.request('/ha')).json()) as Record<string, unknown>;
    expect(body['diverged']).toBe(why);
    expect(body['not_streaming_since']).toBe(new Date(NOW - 1_000).toISOString());
  });
});

describe('GET /ha: probe_age_ms and local_wal_end (findings 28 and 30)', () => {
  it('dates the probe fields with probe_age_ms, always the last field', () => {
    const doc = buildStatusDocument(streamingReplica({ pgProbedAtMs: NOW - 700 }), NOW);
    expect(doc.probe_age_ms).toBe(700);
    expect(Object.keys(doc).at(-1)).toBe('probe_age_ms');
    // No probe fields, no age.
    expect(buildStatusDocument(stoppedReplica({ pgProbedAtMs: NOW - 700 }), NOW)).not.toHaveProperty('probe_age_ms');
  });

  it('answers the age at each request, not at the first rendering, with a matching Content-Length', async () => {
    let now = NOW;
    const snap = streamingReplica({ pgProbedAtMs: NOW - 200 });
    const app = createNodeApp({ snapshot: () => snap, commands: new FakeCommands(), now: () => now });
    for (const path of ['/ha', '/replica']) {
      now = NOW;
      const first = await app.request(path);
      now = NOW + 1500;
      const later = await app.request(path);
      const text = await later.text();
      expect(((await first.json()) as Record<string, unknown>)['probe_age_ms']).toBe(200);
      expect((JSON.parse(text) as Record<string, unknown>)['probe_age_ms']).toBe(1700);
      expect(later.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    }
  });

  it("shows where a stopped data directory's WAL ends, not once it runs or diverged", () => {
    const stoppedWal = { walBytes: 5000n, timeline: 2 };
    expect(buildStatusDocument(stoppedReplica({ state: 'starting', stoppedWal }), NOW).local_wal_end).toEqual({
      location: 5000,
      timeline: 2,
    });
    expect(buildStatusDocument(stoppedReplica({ stoppedWal, diverged: 'why' }), NOW)).not.toHaveProperty('local_wal_end');
    expect(buildStatusDocument(streamingReplica({ stoppedWal }), NOW)).not.toHaveProperty('local_wal_end');
  });
});

describe('GET /cluster', () => {
  it('lists members sorted by name with roles, states, host/port and LSN fields', async () => {
    const cluster = clusterView();
    cluster.members.reverse();
    const { app } = appFor(primaryLeader({ cluster }));
    const res = await app.request('/cluster');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as ClusterDocument;
    expect(doc.scope).toBe('demo');
    expect(doc.members.map((m) => m.name)).toEqual(['pg-1', 'pg-2', 'pg-3']);
    expect(doc.members[0]).toEqual({
      name: 'pg-1',
      role: 'leader',
      state: 'running',
      api_url: 'http://10.0.0.1:8008/ha',
      host: '10.0.0.1',
      port: 5432,
      timeline: 2,
    });
    expect(doc.members[2]).toEqual({
      name: 'pg-3',
      role: 'replica',
      state: 'streaming',
      api_url: 'http://10.0.0.3:8008/ha',
      host: '10.0.0.3',
      port: 5432,
      timeline: 2,
      receive_lag: Number(20n * MiB),
      receive_lsn: '0/1C00060',
      replay_lag: Number(20n * MiB),
      replay_lsn: '0/1C00060',
      lag: Number(20n * MiB),
      lsn: '0/1C00060',
    });
    expect(doc.pause).toBeUndefined();
    expect(doc.scheduled_switchover).toBeUndefined();
  });

  it('says "unknown" for positions a member did not publish, and floors lag at 0', () => {
    const cluster = clusterView({
      members: [
        member('pg-1', { role: 'primary' }),
        member('pg-2', { state: 'stopped' }),
        member('pg-3', { xlog_location: Number(OPTIME + 100n), tags: { nofailover: true }, pending_restart: true }),
      ],
    });
    const doc = buildClusterDocument(primaryLeader({ cluster }));
    const [, two, three] = doc.members;
    expect(two).toMatchObject({ state: 'stopped', lag: 'unknown', lsn: 'unknown', receive_lag: 'unknown', replay_lsn: 'unknown' });
    expect(three).toMatchObject({ lag: 0, lsn: '0/30000C4', tags: { nofailover: true }, pending_restart: true });
  });

  it('shows sync_standby / quorum_standby roles, pause and the scheduled switchover', () => {
    const cluster = clusterView({
      sync: { value: { leader: 'pg-1', sync_standby: 'pg-3' }, revision: '7' },
      failover: { value: { leader: 'pg-1', member: 'pg-2', scheduled_at: '2026-01-15T13:00:00+00:00' }, revision: '9' },
    });
    const doc = buildClusterDocument(primaryLeader({ cluster, config: config({ synchronous_mode: true, pause: true }) }));
    expect(doc.members.map((m) => m.role)).toEqual(['leader', 'replica', 'sync_standby']);
    expect(doc.pause).toBe(true);
    expect(doc.scheduled_switchover).toEqual({ at: '2026-01-15T13:00:00+00:00', from: 'pg-1', to: 'pg-2' });
    const quorum = buildClusterDocument(primaryLeader({ cluster, config: config({ synchronous_mode: 'quorum' }) }));
    expect(quorum.members[2]?.role).toBe('quorum_standby');
  });

  it('calls a standby-cluster leader standby_leader and gives it no lag fields', () => {
    const cluster = clusterView({ members: [member('pg-1', { role: 'standby_leader' }), member('pg-2')] });
    const doc = buildClusterDocument(primaryLeader({ cluster }));
    expect(doc.members[0]).toMatchObject({ role: 'standby_leader' });
    expect(doc.members[0]).not.toHaveProperty('lag');
  });
});

describe('GET /history', () => {
  it('answers the history entries of the cluster view', async () => {
    const { app } = appFor(primaryLeader());
    const res = await app.request('/history');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([[1, 50331744, 'no recovery target specified', '2026-01-10T08:00:00+00:00', 'pg-1']]);
  });

  it('answers [] when the history key is absent', async () => {
    const { history: _h, ...cluster } = clusterView();
    const { app } = appFor(primaryLeader({ cluster }));
    expect(await (await app.request('/history')).json()).toEqual([]);
  });
});

describe('parseLagParam', () => {
  it.each([
    ['0', 0n],
    ['1024', 1024n],
    ['010', 10n],
    ['100B', 100n],
    ['16kB', 16384n],
    ['1.5kB', 1536n],
    ['1.5', 1n],
    ['64MB', 67108864n],
    ['1GB', 1073741824n],
    ['2TB', 2n * 1024n ** 4n],
  ])('%s = %i bytes', (text, bytes) => {
    expect(parseLagParam(text)).toEqual({ ok: true, bytes });
  });

  it.each(['1mb', '1Mb', 'kB', '.5kB', '1e3', '-5', '0x10', '5 PB'])('rejects %j with a message naming lag', (text) => {
    const r = parseLagParam(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain('lag');
  });
});
