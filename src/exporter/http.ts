/**
 * The exporter's HTTP API (Hono): role routes answered from the cached role, /metrics, /reload,
 * /explain, /stat, /version and the landing page. Paths, aliases and verdicts are the seed's
 * tables (shared/seeds/001_*.txt); unknown paths answer 404 (seed; upstream serves the landing page).
 */
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { BodyBufferPool, byteLength, piecesStream, utf8Pieces } from './body-pieces.ts';
import { versionText } from './build-info.ts';
import type { Exporter } from './exporter.ts';
import type { ProbeAnswer } from './probe.ts';
import type { ProbeParams } from './probe-request.ts';
import type { Role } from './role-probe.ts';

const TEXT = 'text/plain; charset=utf-8';
/** Content type of /metrics (text exposition 0.0.4). */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Paths of each role check (seed's endpoint table). */
export const ROLE_ROUTES = {
  up: ['/up', '/health', '/liveness', '/readiness', '/read'],
  primary: ['/primary', '/leader', '/master', '/read-write', '/rw'],
  replica: ['/replica', '/standby', '/slave', '/read-only', '/ro'],
} as const;

/** Status for a role check: 200 when the role fits, 404 for the other role, 503 when unavailable. */
export function verdict(check: keyof typeof ROLE_ROUTES, role: Role): 200 | 404 | 503 {
  const available = role === 'primary' || role === 'replica';
  if (!available) return 503;
  if (check === 'up') return 200;
  return role === check ? 200 : 404;
}

/** What the HTTP layer needs from an exporter (an Exporter satisfies it). */
export type ExporterApi = Pick<Exporter, 'role' | 'collect' | 'reload' | 'explain' | 'stat' | 'build'>;

/** What the HTTP layer needs from a Prober (`/probe`, and `/explain` `/stat` with `?target=`). */
export interface ProbeApi {
  probe(params: ProbeParams): Promise<ProbeAnswer>;
  explain(params: ProbeParams): ProbeAnswer;
  stat(params: ProbeParams): ProbeAnswer;
}

export interface HttpOptions {
  /** Metrics path [/metrics]. */
  telemetryPath?: string;
  /** Serves `GET /probe` and `?target=` on `/explain` and `/stat`; without it `/probe` is 404. */
  probe?: ProbeApi;
  /** Applied to every route before anything else (e.g. basic auth). */
  middleware?: MiddlewareHandler[];
  /** Largest request body, bytes [65536]; larger → 413 before any handler runs. */
  maxBodyBytes?: number;
}

/** Default largest request body of the exporter, bytes (no route reads a body; /reload takes none). */
export const EXPORTER_MAX_BODY_BYTES = 64 * 1024;

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/'/g, '&#39;').replace(/"/g, '&#34;');

/** Builds the Hono app. Handlers other than /metrics, /probe and /reload never touch the database. */
export function createExporterApp(exp: ExporterApi, opts: HttpOptions = {}): Hono {
  const app = new Hono();
  const bodies = new BodyBufferPool();
  const metricsPath = opts.telemetryPath ?? '/metrics';
  for (const m of opts.middleware ?? []) app.use('*', m);
  const maxBody = opts.maxBodyBytes ?? EXPORTER_MAX_BODY_BYTES;
  app.use(
    '*',
    bodyLimit({ maxSize: maxBody, onError: (c) => c.body(`request body larger than ${maxBody} bytes`, 413, { 'Content-Type': TEXT }) }),
  );
  for (const check of Object.keys(ROLE_ROUTES) as (keyof typeof ROLE_ROUTES)[]) {
    for (const path of ROLE_ROUTES[check]) {
      app.get(path, (c) => {
        const role = exp.role;
        return c.body(role, verdict(check, role), { 'Content-Type': TEXT });
      });
    }
  }
  /**
   * Writes an exposition body. One large block allocated and freed per answer grows the RSS
   * (body-pieces.ts). Under @hono/node-server a GET is encoded into a reused buffer and written
   * by the handler itself (one write; the buffer returns to the pool on 'finish'); HEAD and other
   * hosts (app.request) get the same bytes as a stream of pieces under 128 KiB.
   */
  const sendExposition = (c: Context, text: string, contentType: string) => {
    const headers = { 'Content-Type': contentType };
    const out = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
    if (out && c.req.method === 'GET') {
      const { bytes, release } = bodies.encode(text);
      out.once('finish', release);
      out.writeHead(200, { ...headers, 'Content-Length': String(bytes.length) });
      out.end(bytes);
      return RESPONSE_ALREADY_SENT;
    }
    const pieces = utf8Pieces(text);
    return c.body(piecesStream(pieces), 200, { ...headers, 'Content-Length': String(byteLength(pieces)) });
  };
  app.get(metricsPath, async (c) => sendExposition(c, await exp.collect(), METRICS_CONTENT_TYPE));
  const probe = opts.probe;
  /** The probe parameters of a request, or a 400 text when one is repeated. */
  const probeParams = (c: Context): ProbeParams | string => {
    const out: Record<string, string> = {};
    for (const k of ['target', 'auth_module', 'collectors', 'tags'] as const) {
      const all = c.req.queries(k) ?? [];
      if (all.length > 1) return `${k} is given more than once`;
      if (all[0] !== undefined) out[k] = all[0];
    }
    return out;
  };
  const answer = (c: Context, a: ProbeAnswer) => c.body(a.body, a.status as 200, { 'Content-Type': a.contentType, ...(a.headers ?? {}) });
  app.get('/probe', async (c) => {
    if (!probe) return c.body('no probe configuration: start the exporter with --probe.config', 404, { 'Content-Type': TEXT });
    const params = probeParams(c);
    if (typeof params === 'string') return c.body(params, 400, { 'Content-Type': TEXT });
    const a = await probe.probe(params);
    return a.status === 200 ? sendExposition(c, a.body, a.contentType) : answer(c, a);
  });
  const reload = async (c: Context) => {
    const r = await exp.reload();
    return r.ok
      ? c.body('server reloaded', 200, { 'Content-Type': TEXT })
      : c.body(`fail to reload: ${r.error}`, 500, { 'Content-Type': TEXT });
  };
  app.on(['GET', 'POST'], '/reload', reload);
  app.all('/reload', (c) => c.body('method not allowed', 405, { 'Content-Type': TEXT, Allow: 'GET, POST' }));
  /** `?target=` asks the prober about a probe target; without it the primary connection answers. */
  const perTarget = (c: Context, which: 'explain' | 'stat') => {
    if (c.req.query('target') === undefined) return undefined;
    if (!probe) return c.body('no probe configuration: start the exporter with --probe.config', 404, { 'Content-Type': TEXT });
    const params = probeParams(c);
    if (typeof params === 'string') return c.body(params, 400, { 'Content-Type': TEXT });
    return answer(c, probe[which](params));
  };
  app.get('/explain', (c) => perTarget(c, 'explain') ?? c.body(exp.explain(), 200, { 'Content-Type': TEXT }));
  app.get('/stat', (c) => perTarget(c, 'stat') ?? c.body(exp.stat(), 200, { 'Content-Type': 'text/plain; charset=UTF-8' }));
  app.get('/version', (c) => c.body(versionText(exp.build), 200, { 'Content-Type': TEXT }));
  app.get('/', (c) =>
    c.body(
      `<html><head><title>DB Exporter</title></head><body><h1>DB Exporter</h1><p><a href='${escapeHtml(metricsPath)}'>Metrics</a></p></body></html>`,
      200,
      { 'Content-Type': 'text/html; charset=UTF-8' },
    ),
  );
  app.notFound((c) => c.body('not found', 404, { 'Content-Type': TEXT }));
  return app;
}
