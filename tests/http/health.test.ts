import { describe, expect, it } from 'vitest';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { HEALTH_PATHS } from '../../src/http/health.ts';
import {
  appFor,
  clusterView,
  config,
  crashedReplica,
  laggingReplica,
  MiB,
  noDcsReplica,
  noloadbalanceReplica,
  NOW,
  OPTIME,
  pausedPrimaryNoDcs,
  primaryLeader,
  stoppedReplica,
  streamingReplica,
} from './fixtures.ts';

async function status(s: NodeSnapshot, path: string, method = 'GET'): Promise<number> {
  const { app } = appFor(s);
  return (await app.request(path, { method })).status;
}

const SNAPSHOTS = {
  leader: primaryLeader(),
  replica: streamingReplica(),
  lagging: laggingReplica(),
  noloadbalance: noloadbalanceReplica(),
  stopped: stoppedReplica(),
} as const;

// path -> [leader, replica, lagging, noloadbalance, stopped]
const TABLE: Record<(typeof HEALTH_PATHS)[number], [number, number, number, number, number]> = {
  '/': [200, 503, 503, 503, 503],
  '/primary': [200, 503, 503, 503, 503],
  '/read-write': [200, 503, 503, 503, 503],
  '/standby-leader': [503, 503, 503, 503, 503],
  '/standby_leader': [503, 503, 503, 503, 503],
  '/leader': [200, 503, 503, 503, 503],
  '/replica': [503, 200, 200, 503, 503],
  '/read-only': [200, 200, 200, 503, 503],
  '/synchronous': [503, 503, 503, 503, 503],
  '/sync': [503, 503, 503, 503, 503],
  '/read-only-sync': [200, 503, 503, 503, 503],
  '/quorum': [503, 503, 503, 503, 503],
  '/read-only-quorum': [200, 503, 503, 503, 503],
  '/asynchronous': [503, 200, 200, 503, 503],
  '/async': [503, 200, 200, 503, 503],
  '/health': [200, 200, 200, 200, 503],
  '/liveness': [200, 200, 200, 200, 200],
  '/readiness': [200, 200, 503, 200, 503],
};

describe('health checks: every endpoint x node kind', () => {
  const rows = HEALTH_PATHS.flatMap((path) => Object.keys(SNAPSHOTS).map((kind, i) => ({ path, kind, expected: TABLE[path][i] })));
  it.each(rows)('GET $path on $kind answers $expected', async ({ path, kind, expected }) => {
    expect(await status(SNAPSHOTS[kind as keyof typeof SNAPSHOTS], path)).toBe(expected);
  });

  it('answers the status document as JSON with a Content-Length on GET', async () => {
    const { app } = appFor(SNAPSHOTS.replica);
    for (const path of ['/replica', '/primary', '/liveness', '/readiness']) {
      const res = await app.request(path);
      const text = await res.text();
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
      expect(JSON.parse(text)).toMatchObject({ state: 'running', role: 'replica', ha: { name: 'pg-2' } });
    }
  });

  it.each(['HEAD', 'OPTIONS'])('%s answers the same status as GET with headers and no body', async (method) => {
    for (const s of Object.values(SNAPSHOTS)) {
      const { app } = appFor(s);
      for (const path of HEALTH_PATHS) {
        const get = await app.request(path);
        const other = await app.request(path, { method });
        expect(other.status, `${method} ${path}`).toBe(get.status);
        expect(await other.text()).toBe('');
        expect(other.headers.get('content-type')).toBe('application/json');
        if (method === 'OPTIONS') expect(other.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      }
    }
  });

  it('marks a standby-cluster leader on /standby-leader and /leader, not on /primary', async () => {
    const s = streamingReplica({ role: 'standby_leader', leaderUntilMs: NOW + 10_000 });
    expect(await status(s, '/standby-leader')).toBe(200);
    expect(await status(s, '/standby_leader')).toBe(200);
    expect(await status(s, '/leader')).toBe(200);
    expect(await status(s, '/primary')).toBe(503);
    expect(await status(s, '/replica')).toBe(503);
  });

  it('stops answering 200 on /primary once the in-memory lease has expired', async () => {
    expect(await status(primaryLeader({ leaderUntilMs: NOW }), '/primary')).toBe(503);
    expect(await status(primaryLeader({ leaderUntilMs: NOW + 1 }), '/primary')).toBe(200);
  });

  it('keeps a paused primary without DCS on /primary and /leader by its role', async () => {
    expect(await status(pausedPrimaryNoDcs(), '/primary')).toBe(200);
    expect(await status(pausedPrimaryNoDcs(), '/leader')).toBe(200);
    expect(await status(pausedPrimaryNoDcs(), '/standby-leader')).toBe(503);
  });

  it('reports a crashed node unhealthy everywhere but /liveness', async () => {
    for (const path of HEALTH_PATHS) {
      expect(await status(crashedReplica(), path), path).toBe(path === '/liveness' ? 200 : 503);
    }
  });
});

describe('synchronous family', () => {
  const syncKey = (names: string | null) => ({
    sync: { value: { leader: 'pg-1', sync_standby: names }, revision: '30' },
  });

  it('answers /sync 200 for a replica listed in /sync while synchronous_mode is on', async () => {
    const s = streamingReplica({ config: config({ synchronous_mode: true }), cluster: clusterView(syncKey('pg-2,pg-3')) });
    expect(await status(s, '/sync')).toBe(200);
    expect(await status(s, '/synchronous')).toBe(200);
    expect(await status(s, '/read-only-sync')).toBe(200);
    expect(await status(s, '/async')).toBe(503);
    expect(await status(s, '/quorum')).toBe(503);
  });

  it('answers /quorum 200 for a listed replica in quorum mode', async () => {
    const s = streamingReplica({ config: config({ synchronous_mode: 'quorum' }), cluster: clusterView(syncKey('pg-2')) });
    expect(await status(s, '/quorum')).toBe(200);
    expect(await status(s, '/read-only-quorum')).toBe(200);
    expect(await status(s, '/sync')).toBe(503);
    expect(await status(s, '/async')).toBe(503);
  });

  it('answers 503 on the sync family without a valid DCS view, but /replica still 200', async () => {
    const s = noDcsReplica({ config: config({ synchronous_mode: true }), cluster: clusterView(syncKey('pg-2')) });
    for (const path of ['/sync', '/synchronous', '/read-only-sync', '/async', '/asynchronous', '/quorum']) {
      expect(await status(s, path), path).toBe(503);
    }
    expect(await status(s, '/replica')).toBe(200);
    expect(await status(s, '/read-only')).toBe(200);
  });

  it('treats a replica not listed in /sync as asynchronous', async () => {
    const s = streamingReplica({ config: config({ synchronous_mode: true }), cluster: clusterView(syncKey('pg-3')) });
    expect(await status(s, '/sync')).toBe(503);
    expect(await status(s, '/async')).toBe(200);
  });
});

describe('lag, replication_state and tag parameters', () => {
  it.each([
    ['/replica?lag=1MB', 503],
    ['/replica?lag=32MB', 200],
    [`/replica?lag=${20n * MiB}`, 200],
    [`/replica?lag=${20n * MiB - 1n}`, 503],
    ['/replica?lag=20480kB', 200],
    ['/replica?lag=0.01953125GB', 200],
    ['/async?lag=1MB', 503],
    ['/asynchronous?lag=1GB', 200],
    ['/read-only?lag=1MB', 503],
  ])('lagging replica (20 MiB behind): GET %s answers %i', async (path, expected) => {
    expect(await status(laggingReplica(), path)).toBe(expected);
  });

  it('takes the leader position as the max of the DCS optime and latest_end_lsn', async () => {
    const pg = streamingReplica().pg!;
    const s = streamingReplica({ pg: { ...pg, latestEndLsn: OPTIME + 5n * MiB } });
    expect(await status(s, '/replica?lag=4MB')).toBe(503);
    expect(await status(s, '/replica?lag=5MB')).toBe(200);
  });

  it.each(['1mb', 'abc', '-1', '', '0x10', '1KB', '5 GiB'])('rejects lag=%j with a 400 naming lag', async (lag) => {
    const { app } = appFor(laggingReplica());
    const res = await app.request(`/replica?lag=${encodeURIComponent(lag)}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toMatch(/^invalid lag: /);
  });

  it('filters /replica on replication_state', async () => {
    const pg = streamingReplica().pg!;
    const archive = streamingReplica({ pg: { ...pg, streaming: false, archiveRecovery: true } });
    expect(await status(streamingReplica(), '/replica?replication_state=streaming')).toBe(200);
    expect(await status(archive, '/replica?replication_state=streaming')).toBe(503);
    expect(await status(archive, '/replica?replication_state=in%20archive%20recovery')).toBe(200);
    expect(await status(archive, '/replica')).toBe(200);
  });

  const tagged = streamingReplica({ tags: { dc: 'east', failover_priority: 2, clonefrom: true, noloadbalance: false, ratio: 1.5 } });
  it.each([
    ['/replica?tag_dc=east', 200],
    ['/replica?tag_dc=west', 503],
    ['/replica?tag_dc=East', 503],
    ['/replica?tag_rack=r1', 503],
    ['/replica?tag_failover_priority=2', 200],
    ['/replica?tag_clonefrom=true', 200],
    ['/replica?tag_clonefrom=True', 503],
    ['/replica?tag_ratio=1.5', 200],
    ['/replica?tag_noloadbalance=false', 503],
    ['/replica?tag_dc=east&tag_clonefrom=true', 200],
    ['/replica?tag_dc=east&tag_clonefrom=false', 503],
    ['/health?tag_dc=west', 503],
    ['/read-only?tag_dc=east', 200],
    ['/async?tag_dc=west', 503],
  ])('tag filters: GET %s answers %i', async (path, expected) => {
    expect(await status(tagged, path)).toBe(expected);
  });

  it('ignores tag filters on the leader paths', async () => {
    const s = primaryLeader({ tags: { dc: 'east' } });
    for (const path of ['/', '/primary', '/read-write', '/leader']) {
      expect(await status(s, `${path}?tag_dc=west`), path).toBe(200);
    }
    expect(await status(s, '/health?tag_dc=west')).toBe(503);
    expect(await status(s, '/read-only?tag_dc=west')).toBe(503);
  });
});

describe('/liveness', () => {
  const ttlMs = 30_000;
  it.each([
    ['primary, last loop exactly ttl ago', primaryLeader({ lastLoopMs: NOW - ttlMs }), 200],
    ['primary, last loop ttl + 1 ms ago', primaryLeader({ lastLoopMs: NOW - ttlMs - 1 }), 503],
    ['replica, last loop 2*ttl ago', streamingReplica({ lastLoopMs: NOW - 2 * ttlMs }), 200],
    ['replica, last loop 2*ttl + 1 ms ago', streamingReplica({ lastLoopMs: NOW - 2 * ttlMs - 1 }), 503],
    ['replica, ttl 60, last loop 100 s ago', streamingReplica({ config: config({ ttl: 60 }), lastLoopMs: NOW - 100_000 }), 200],
    ['no loop completed yet', streamingReplica({ lastLoopMs: 0 }), 503],
    ['paused, loop stuck for an hour', streamingReplica({ config: config({ pause: true }), lastLoopMs: NOW - 3_600_000 }), 200],
  ])('%s → %i', async (_name, s, expected) => {
    expect(await status(s, '/liveness')).toBe(expected);
  });
});

describe('/readiness', () => {
  const pg = streamingReplica().pg!;
  it.each([
    ['leader', primaryLeader(), '', 200],
    ['caught-up replica', streamingReplica(), '', 200],
    ['replica 20 MiB behind (default limit 1 MiB)', laggingReplica(), '', 503],
    ['replica 20 MiB behind, lag=32MB', laggingReplica(), '?lag=32MB', 200],
    [
      'replica 20 MiB behind, maximum_lag_on_failover 64 MiB',
      laggingReplica({ config: config({ maximum_lag_on_failover: Number(64n * MiB) }) }),
      '',
      200,
    ],
    ['received but not replayed, mode=apply', streamingReplica({ pg: { ...pg, replayLsn: OPTIME - 20n * MiB } }), '?mode=apply', 503],
    ['received but not replayed, mode=write', streamingReplica({ pg: { ...pg, replayLsn: OPTIME - 20n * MiB } }), '?mode=write', 200],
    ['archive recovery', streamingReplica({ pg: { ...pg, streaming: false, archiveRecovery: true } }), '', 503],
    ['no DCS view, latest_end_lsn known', noDcsReplica(), '', 200],
    ['no DCS view, latest_end_lsn unknown', noDcsReplica({ pg: { ...pg, latestEndLsn: undefined } }), '', 503],
    [
      'no DCS view, no latest_end_lsn, failsafe active',
      noDcsReplica({ pg: { ...pg, latestEndLsn: undefined }, failsafeActive: true }),
      '',
      200,
    ],
    ['stopped', stoppedReplica(), '', 503],
  ])('%s → %i', async (_name, s, query, expected) => {
    expect(await status(s, `/readiness${query}`)).toBe(expected);
  });

  it('rejects an unknown mode with 400', async () => {
    const { app } = appFor(streamingReplica());
    const res = await app.request('/readiness?mode=flush');
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('mode');
  });
});

describe('routing', () => {
  it('answers an unknown path with a 404 JSON error, whatever the method', async () => {
    const { app } = appFor(primaryLeader());
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await app.request('/masterfoo?x=1', { method });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(await res.json()).toEqual({ error: 'not found', path: '/masterfoo' });
    }
    expect((await app.request('/nope', { method: 'HEAD' })).status).toBe(404);
  });

  it('answers 405 with Allow for an unsupported method on a known path', async () => {
    const { app } = appFor(primaryLeader());
    const put = await app.request('/primary', { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    const get = await app.request('/switchover');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, DELETE, OPTIONS');
    const del = await app.request('/config', { method: 'DELETE' });
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('GET, PATCH, PUT, HEAD, OPTIONS');
  });

  it.each(['/ha', '/cluster', '/history', '/metrics', '/config'])('answers HEAD and OPTIONS %s like GET, without a body', async (path) => {
    const { app } = appFor(primaryLeader());
    const get = await app.request(path);
    const getBody = await get.text();
    expect(get.headers.get('content-length')).toBe(String(Buffer.byteLength(getBody)));
    for (const method of ['HEAD', 'OPTIONS']) {
      const res = await app.request(path, { method });
      expect(res.status, `${method} ${path}`).toBe(get.status);
      expect(res.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(await res.text()).toBe('');
    }
    const options = await app.request(path, { method: 'OPTIONS' });
    expect(options.headers.get('allow')).toContain('GET, ');
  });

  it('answers OPTIONS on a write-only path with 204 and Allow', async () => {
    const { app } = appFor(primaryLeader());
    const res = await app.request('/restart', { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')).toBe('POST, DELETE, OPTIONS');
  });
});
