/**
 * Probe on demand (src/http/app.ts PROBE_READERS, src/node/local/local-watch.ts `fresh`): answers that
 * show the status probe await `deps.fresh()` when it hands back a promise, and read the snapshot
 * only once it settled; the health fast path stays synchronous while the probe is fresh.
 */
import { describe, expect, it } from 'vitest';
import { createNodeApp, PROBE_READERS } from '../../src/http/app.ts';
import { HEALTH_PATHS } from '../../src/http/health.ts';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { FakeCommands, NOW, primaryLeader, streamingReplica } from './fixtures.ts';

/** A `fresh` dependency the test drives: stale until `refresh()` swaps in the new snapshot. */
function probeOnDemand(before: NodeSnapshot, after: NodeSnapshot) {
  let snapshot = before;
  let calls = 0;
  let pending: { promise: Promise<void>; resolve: () => void } | undefined;
  let stale = true;
  return {
    snapshot: () => snapshot,
    fresh: (): Promise<void> | undefined => {
      calls++;
      if (!stale) return undefined;
      if (!pending) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        pending = { promise, resolve };
      }
      return pending.promise;
    },
    refresh: () => {
      snapshot = after;
      stale = false;
      pending?.resolve();
    },
    calls: () => calls,
  };
}

const url = (path: string) => `http://localhost${path}`;

describe('API answers from a probe at most 1 s old (probe on demand)', () => {
  it('GET health checks answer synchronously while the probe is fresh', () => {
    const app = createNodeApp({ snapshot: () => primaryLeader(), commands: new FakeCommands(), now: () => NOW, fresh: () => undefined });
    const res = app.fetch(new Request(url('/primary')));
    expect(res).toBeInstanceOf(Response);
    expect((res as Response).status).toBe(200);
  });

  for (const path of ['/primary', '/replica', '/health', '/readiness', '/liveness', '/', '/read-only?lag=1MB']) {
    it(`GET ${path} waits for the fresh probe and answers from the snapshot after it`, async () => {
      // Before: a primary leader; after the probe: a streaming replica (the verdicts differ).
      const d = probeOnDemand(primaryLeader(), streamingReplica());
      const app = createNodeApp({ snapshot: d.snapshot, commands: new FakeCommands(), now: () => NOW, fresh: d.fresh });
      const pending = app.fetch(new Request(url(path)));
      expect(pending).toBeInstanceOf(Promise);
      const second = app.fetch(new Request(url(path)));
      d.refresh();
      const [a, b] = await Promise.all([pending, second]);
      const expected = await createNodeApp({ snapshot: () => streamingReplica(), commands: new FakeCommands(), now: () => NOW }).request(
        path,
      );
      for (const r of [a, b]) {
        expect(r.status).toBe(expected.status);
        expect(await r.text()).toBe(await expected.clone().text());
      }
      // Fresh now: synchronous again.
      expect(app.fetch(new Request(url(path)))).toBeInstanceOf(Response);
    });
  }

  it('GET /ha (what peers read for the leader race and quorum votes), /metrics, HEAD and OPTIONS of a health check wait too', async () => {
    for (const [method, path] of [
      ['GET', '/ha'],
      ['GET', '/metrics'],
      ['HEAD', '/replica'],
      ['OPTIONS', '/replica'],
    ] as const) {
      const d = probeOnDemand(primaryLeader(), streamingReplica());
      const app = createNodeApp({ snapshot: d.snapshot, commands: new FakeCommands(), now: () => NOW, fresh: d.fresh });
      let settled = false;
      const res = Promise.resolve(app.fetch(new Request(url(path), { method }))).then((r) => {
        settled = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 10));
      expect(settled, `${method} ${path}`).toBe(false);
      d.refresh();
      const r = await res;
      if (path === '/ha') expect(((await r.json()) as { role: string }).role).toBe('replica');
      if (path === '/replica') expect(r.status).toBe(200);
      expect(d.calls()).toBeGreaterThan(0);
    }
  });

  it('/cluster, /history and /config do not show probe data: they never wait', async () => {
    for (const path of ['/cluster', '/history', '/config']) {
      expect(PROBE_READERS.has(path)).toBe(false);
      const d = probeOnDemand(primaryLeader(), streamingReplica());
      const app = createNodeApp({ snapshot: d.snapshot, commands: new FakeCommands(), now: () => NOW, fresh: d.fresh });
      const r = await app.request(path);
      expect(r.status, path).toBe(200);
      expect(d.calls(), path).toBe(0);
    }
    for (const p of [...HEALTH_PATHS, '/ha', '/metrics', '/restart', '/failsafe']) expect(PROBE_READERS.has(p)).toBe(true);
  });
});
