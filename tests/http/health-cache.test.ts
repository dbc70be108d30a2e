/**
 * The health answers are rendered once per (snapshot, healthTimeKey) and GET health checks take
 * a fast path around the router (src/http/app.ts). Both must answer exactly what evaluating the
 * snapshot afresh gives: the clock may only matter through healthTimeKey.
 */
import { describe, expect, it } from 'vitest';
import { createNodeApp } from '../../src/http/app.ts';
import { openPolicy } from '../../src/http/api-guard.ts';
import { evaluateHealth, HEALTH_PATHS, healthTimeKey } from '../../src/http/health.ts';
import { buildStatusDocument } from '../../src/domain/status-document.ts';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { FakeCommands, laggingReplica, noDcsReplica, NOW, pausedPrimaryNoDcs, primaryLeader, streamingReplica } from './fixtures.ts';

const SNAPSHOTS: [string, NodeSnapshot][] = [
  ['primary leader', primaryLeader()],
  ['streaming replica', streamingReplica()],
  ['lagging replica', laggingReplica()],
  ['replica without DCS', noDcsReplica()],
  ['paused primary without DCS', pausedPrimaryNoDcs()],
];

/** Instants around every threshold of the snapshot (lease, DCS view, liveness window). */
function instants(s: NodeSnapshot): number[] {
  const ttl = s.config.ttl * 1000;
  const edges = [s.leaderUntilMs, s.dcsLastSeenMs + ttl, s.lastLoopMs + ttl, s.lastLoopMs + 2 * ttl, NOW];
  return edges.flatMap((e) => [e - 1, e - 0.5, e, e + 0.5, e + 1, e + 5000]);
}

describe('health answers cached per snapshot and time key', () => {
  it('instants with the same key give the same verdicts and status document', () => {
    for (const [, s] of SNAPSHOTS) {
      const byKey = new Map<number, string>();
      for (const t of instants(s)) {
        const q = new URLSearchParams();
        const answer = JSON.stringify([HEALTH_PATHS.map((p) => evaluateHealth(p, s, t, q).status), buildStatusDocument(s, t)]);
        const k = healthTimeKey(s, t);
        if (byKey.has(k)) expect(answer).toBe(byKey.get(k));
        else byKey.set(k, answer);
      }
    }
  });

  for (const [name, s] of SNAPSHOTS) {
    it(`${name}: every GET health check (with and without query) answers as evaluated afresh, at moving instants`, async () => {
      let now = NOW;
      const app = createNodeApp({
        snapshot: () => s,
        commands: new FakeCommands(),
        now: () => now,
        guard: () => ({ ...openPolicy(), extraHeaders: { 'X-Probe': 'yes' } }),
      });
      for (const t of instants(s)) {
        now = t;
        for (const path of HEALTH_PATHS) {
          for (const query of ['', '?lag=1MB', '?lag=bogus', '?replication_state=streaming&tag_x=1', '?mode=write']) {
            const res = await app.request(`${path}${query}`);
            const verdict = evaluateHealth(path, s, t, new URLSearchParams(query));
            expect(res.status, `${path}${query} at ${t}`).toBe(verdict.status);
            expect(res.headers.get('x-probe')).toBe('yes');
            const body = await res.text();
            expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
            if (verdict.status === 400) {
              expect(body).toBe(verdict.message);
              expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
            } else {
              expect(res.headers.get('content-type')).toBe('application/json');
              expect(JSON.parse(body)).toEqual({ ...buildStatusDocument(s, t), authentication: 'none' });
            }
          }
        }
      }
    });
  }

  it('HEAD and OPTIONS (through the router) agree with GET (fast path)', async () => {
    const s = primaryLeader();
    const app = createNodeApp({ snapshot: () => s, commands: new FakeCommands(), now: () => NOW });
    for (const path of HEALTH_PATHS) {
      const get = await app.request(path);
      for (const method of ['HEAD', 'OPTIONS']) {
        const res = await app.request(path, { method });
        expect(res.status, `${method} ${path}`).toBe(get.status);
        expect(await res.text()).toBe('');
      }
    }
  });

  it('a new snapshot object or a changed authentication re-renders', async () => {
    let s = primaryLeader();
    let auth = false;
    const app = createNodeApp({
      snapshot: () => s,
      commands: new FakeCommands(),
      now: () => NOW,
      guard: () => ({ ...openPolicy(), ...(auth ? { authentication: { username: 'u', password: 'p' } } : {}) }),
    });
    expect(((await (await app.request('/primary')).json()) as { authentication: string }).authentication).toBe('none');
    auth = true;
    expect(((await (await app.request('/primary')).json()) as { authentication: string }).authentication).toBe('basic');
    s = streamingReplica();
    const res = await app.request('/primary');
    expect(res.status).toBe(503);
    expect(((await res.json()) as { role: string }).role).toBe('replica');
    expect((await app.request('/replica')).status).toBe(200);
  });

  it('paths near health paths are not taken by the fast path', async () => {
    const app = createNodeApp({ snapshot: () => primaryLeader(), commands: new FakeCommands(), now: () => NOW });
    expect((await app.request('/primary/')).status).toBe(404);
    expect((await app.request('/primaryx')).status).toBe(404);
    expect((await app.request('/primary', { method: 'POST' })).status).toBe(405);
  });

  it('a snapshot getter that throws gives the router’s 500', async () => {
    const app = createNodeApp({
      snapshot: () => {
        throw new Error('boom');
      },
      commands: new FakeCommands(),
      now: () => NOW,
    });
    const res = await app.request('/primary');
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: 'internal error', message: 'boom' });
  });
});
