/**
 * The node REST API as a Hono app over snapshots (seed 000; decisions in docs/api.md).
 * Handlers answer from `deps.snapshot()` alone; writes go through `deps.commands`. Requests whose
 * answer shows the status probe (PROBE_READERS) first await `deps.fresh()`, so the probe behind
 * it is at most 1 s old although the agent only probes on demand (src/node/local/local-watch.ts).
 *
 * Deliberate departures from the reference (patroni.md §1.1, §8):
 * - every response has a Content-Type and a Content-Length;
 * - HEAD and OPTIONS answer the status GET would, with its headers and no body (OPTIONS adds
 *   `Allow`); OPTIONS on a path without GET answers 204 with `Allow`;
 * - an unknown path is 404 `{"error":"not found","path":…}` (never a health verdict); a known path
 *   with an unsupported method is 405 with `Allow`.
 */
import { Hono, type Context } from 'hono';
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import { apiGuard, openPolicy, type ApiGuardPolicy } from './api-guard.ts';
import { buildClusterDocument } from '../domain/cluster-document.ts';
import type { NodeCommands } from './commands.ts';
import { getConfigHandler, registerConfigRoutes } from './config-routes.ts';
import { registerFailsafeRoutes } from './failsafe-routes.ts';
import type { NodeAppDeps, ResolvedDeps, SwitchoverPollOptions } from './deps.ts';
import { HEALTH_PATHS } from './health.ts';
import type { NodeMetrics } from './metrics.ts';
import { registerRestartRoutes } from './restart-routes.ts';
import { ApiError, errorAnswer } from './api-error.ts';
import { document, JSON_CONTENT_TYPE, methodNotAllowed, notFound, sized } from './responses.ts';
import { statusAnswers, type StatusAnswers } from './status-answers.ts';
import { registerSwitchoverRoutes } from './switchover-routes.ts';

export type { NodeCommands } from './commands.ts';
export type { NodeAppDeps } from './deps.ts';

/** Methods each known path answers (besides HEAD/OPTIONS, added for paths with GET). */
const ROUTE_METHODS: ReadonlyMap<string, readonly string[]> = new Map<string, readonly string[]>([
  ...HEALTH_PATHS.map((p) => [p, ['GET']] as const),
  ['/ha', ['GET']],
  ['/cluster', ['GET']],
  ['/history', ['GET']],
  ['/metrics', ['GET']],
  ['/config', ['GET', 'PATCH', 'PUT']],
  ['/switchover', ['POST', 'DELETE']],
  ['/failover', ['POST']],
  ['/restart', ['POST', 'DELETE']],
  ['/reload', ['POST']],
  ['/reinitialize', ['POST']],
  ['/backup', ['POST']],
  ['/failsafe', ['POST']],
  ['/discarded', ['GET']],
]);

/**
 * Paths whose answers show the local status probe (`snapshot().pg`): the health checks and the
 * status document (GET /ha is what peers read: WAL positions for the leader race and quorum
 * votes, VOTE_SETTLE_MS in src/domain/sync-standby.ts), /metrics, POST /restart (pending
 * restart, postmaster start time) and POST /failsafe (the answer's `lsn`, read from the probe in
 * src/node/lock/failsafe.ts). /cluster, /history and /config show no probe data.
 */
export const PROBE_READERS: ReadonlySet<string> = new Set<string>([...HEALTH_PATHS, '/ha', '/metrics', '/restart', '/failsafe']);

/** Hosts of every member's api_url in the snapshot's DCS view (for allowlist_include_members). */
function memberHosts(s: NodeSnapshot): string[] {
  const hosts: string[] = [];
  for (const m of s.cluster.members) {
    try {
      hosts.push(new URL(m.data.api_url).hostname);
    } catch {
      // a member key without a valid api_url allows nobody
    }
  }
  return hosts;
}

/** The Allow header value of a path: its methods, plus HEAD when it has GET, plus OPTIONS. */
function allowOf(methods: readonly string[]): string[] {
  return methods.includes('GET') ? [...methods, 'HEAD', 'OPTIONS'] : [...methods, 'OPTIONS'];
}

/**
 * Creates the node API.
 * @param deps.snapshot the latest NodeSnapshot (read on every request; never mutated here)
 * @param deps.commands the node's write operations (NodeCommands)
 * @param deps.now clock in epoch ms (default Date.now): leader lease, DCS view age, liveness, schedules
 * @param deps.switchoverPoll polling of immediate switchovers (default every 25 ms for
 *   2 × max(10, loop_wait) s)
 * @param deps.settingsCatalogue the local server's PostgreSQL settings catalogue, against which
 *   PATCH/PUT /config check `database.parameters` (default: none, parameters not checked)
 * @param deps.fresh awaited before answering a PROBE_READERS path when it returns a promise
 *   (HaNode.freshProbe; default: the snapshot is always fresh)
 * @param deps.guard the access policy (api-guard.ts), read on every request (default: open,
 *   64 KiB bodies, 4 unsafe requests at once). When given, the status document carries
 *   `"authentication": "basic"` or `"none"`.
 * @returns a Hono app; serve it with @hono/node-server or call `app.request()` in tests.
 * Never throws at request time: unexpected errors become 500 `{"error":"internal error",…}`.
 */
export function createNodeApp(deps: {
  snapshot: () => NodeSnapshot;
  commands: NodeCommands;
  now?: () => number;
  switchoverPoll?: SwitchoverPollOptions;
  settingsCatalogue?: () => SettingsCatalogue | undefined;
  guard?: () => ApiGuardPolicy;
  fresh?: () => Promise<void> | undefined;
}): Hono {
  const resolved: ResolvedDeps = {
    snapshot: deps.snapshot,
    commands: deps.commands,
    now: deps.now ?? Date.now,
    switchoverPoll: deps.switchoverPoll ?? {},
    settingsCatalogue: deps.settingsCatalogue ?? (() => undefined),
  } satisfies NodeAppDeps;
  const app = new Hono();
  const defaultPolicy = openPolicy();
  const guard = deps.guard ?? (() => defaultPolicy);
  app.use(
    '*',
    apiGuard(guard, () => memberHosts(resolved.snapshot())),
  );
  const fresh = deps.fresh ?? (() => undefined);
  // After the guard: a refused request does not make the agent probe.
  app.use('*', async (c, next) => {
    if (PROBE_READERS.has(c.req.path)) {
      const wait = fresh();
      if (wait) await wait;
    }
    await next();
  });
  const { statusJson, healthAnswer } = statusAnswers(resolved, () => (deps.guard ? (deps.guard().authentication ? 2 : 1) : 0));
  const getHandlers = readHandlers(resolved, statusJson, healthAnswer);
  for (const [path, handler] of getHandlers) app.get(path, handler);

  registerConfigRoutes(app, resolved);
  registerSwitchoverRoutes(app, resolved);
  registerRestartRoutes(app, resolved);
  registerFailsafeRoutes(app, resolved);

  registerMethodAnswers(app, getHandlers);

  app.notFound((c) => notFound(c));
  // A handler's ApiError is answered with the status of its code; anything else is a bug: 500.
  app.onError((err) => (err instanceof ApiError ? errorAnswer(err) : document(500, { error: 'internal error', message: err.message })));

  installHealthFastPath(app, healthAnswer, () => guard().extraHeaders, fresh);
  return app;
}

/**
 * OPTIONS of every known path (the GET's status and headers with `Allow` and no body; 204 with
 * `Allow` for a path without GET) and 405 with `Allow` for a known path's other methods.
 */
function registerMethodAnswers(app: Hono, getHandlers: ReadonlyMap<string, GetHandler>): void {
  for (const [path, methods] of ROUTE_METHODS) {
    const allow = allowOf(methods);
    const get = getHandlers.get(path);
    app.options(path, async (c) => {
      if (!get) return new Response(null, { status: 204, headers: { Allow: allow.join(', ') } });
      const res = await get(c);
      const headers = new Headers(res.headers);
      headers.set('Allow', allow.join(', '));
      headers.set('Content-Length', '0');
      return new Response(null, { status: res.status, headers });
    });
    app.all(path, (c) => methodNotAllowed(c, allow));
  }
}

/**
 * Fast path of GET health checks (load balancers probe them thousands of times a second): the
 * same answer as the route (status, body, Content-Type, Content-Length, the policy's extra
 * headers — the only thing apiGuard does to a GET), without the router, the middleware chain and
 * its promise; a promise only while a fresh probe is awaited. Anything unusual (another method,
 * an encoded or unknown path, an error) goes to Hono, which answers as before.
 */
function installHealthFastPath(
  app: Hono,
  healthAnswer: StatusAnswers['healthAnswer'],
  extraHeaders: () => Readonly<Record<string, string>>,
  fresh: () => Promise<void> | undefined,
): void {
  const healthIndex = new Map<string, number>(HEALTH_PATHS.map((p, i) => [p, i]));
  const honoFetch = app.fetch;
  app.fetch = (request, env, executionCtx) => {
    if (request.method === 'GET') {
      const url = request.url;
      const start = url.indexOf('/', url.indexOf(':') + 3);
      if (start >= 0) {
        const q = url.indexOf('?', start);
        const index = healthIndex.get(q < 0 ? url.slice(start) : url.slice(start, q));
        if (index !== undefined) {
          const query = q < 0 ? '' : url.slice(q + 1);
          const answer = (): Response | Promise<Response> => {
            try {
              return healthAnswer(index, query, extraHeaders());
            } catch {
              return honoFetch(request, env, executionCtx); // answered by Hono (onError)
            }
          };
          // Synchronous while the probe is fresh (the common case); else once a fresh probe is in.
          const wait = fresh();
          return wait ? wait.then(answer) : answer();
        }
      }
    }
    return honoFetch(request, env, executionCtx);
  };
}

/** A GET handler of the API. */
type GetHandler = (c: Context) => Response | Promise<Response>;

/** The GET handlers by path: the health checks, /ha, /cluster, /history, /discarded, /config and /metrics. */
function readHandlers(
  resolved: ResolvedDeps,
  statusJson: StatusAnswers['statusJson'],
  healthAnswer: StatusAnswers['healthAnswer'],
): Map<string, GetHandler> {
  // prom-client (and the registry) are loaded at the first scrape: an agent nobody scrapes never
  // holds them (about 10 MB of RSS, issue 13).
  let metricsP: Promise<NodeMetrics> | undefined;
  const metrics = (): Promise<NodeMetrics> =>
    (metricsP ??= import('./metrics.ts').then((m) => m.createNodeMetrics(resolved.snapshot, resolved.now)));
  const health = (index: number) => (c: Context) => {
    const url = c.req.url;
    const q = url.indexOf('?');
    return healthAnswer(index, q < 0 ? '' : url.slice(q + 1), {});
  };
  const getHandlers = new Map<string, GetHandler>();
  HEALTH_PATHS.forEach((path, i) => getHandlers.set(path, health(i)));
  getHandlers.set('/ha', () => sized(statusJson(resolved.snapshot(), resolved.now()), 200, JSON_CONTENT_TYPE));
  getHandlers.set('/cluster', () => document(200, buildClusterDocument(resolved.snapshot())));
  getHandlers.set('/history', () => document(200, resolved.snapshot().cluster.history ?? []));
  // Ours (docs/ha.md "Receipts"): every receipt kept, oldest first; read from the receipt store, not the snapshot.
  getHandlers.set('/discarded', async () => document(200, (await resolved.commands.discarded?.()) ?? []));
  getHandlers.set('/config', getConfigHandler(resolved));
  getHandlers.set('/metrics', async () => {
    const m = await metrics();
    return sized(await m.render(), 200, m.registry.contentType);
  });
  return getHandlers;
}
