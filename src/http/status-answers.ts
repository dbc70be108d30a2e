/**
 * The status document's text and the health checks' answers (seed 000 "Node status document",
 * "Health checks"), rendered for a probe storm. For one snapshot object (the node hands out a new
 * one whenever anything in it changes) the status document and the verdicts without query
 * parameters change with the clock only through healthTimeKey (plus the `authentication` field,
 * which follows the guard policy) and `probe_age_ms`: the rest is rendered once per (snapshot,
 * key) and served until either changes, and the age is appended to each answer. Exact, not a
 * time-based reuse.
 */
import type { NodeSnapshot } from '../domain/snapshot.ts';
import { buildStatusDocument, probeAgeMs } from '../domain/status-document.ts';
import { refuse } from './api-error.ts';
import type { ResolvedDeps } from './deps.ts';
import { evaluateHealth, HEALTH_PATHS, healthTimeKey } from './health.ts';
import { JSON_CONTENT_TYPE } from './responses.ts';

/** The status document of one snapshot at one healthTimeKey, and the verdicts without query found so far. */
interface Rendered {
  snapshot: NodeSnapshot;
  key: number;
  /** The status document without `probe_age_ms`. */
  json: string;
  /** Byte length of `json`. */
  bytes: number;
  /** Byte length of `json`, as the Content-Length value. */
  length: string;
  /** Verdict per HEALTH_PATHS index for requests without query parameters. */
  verdicts: (200 | 503 | undefined)[];
}

/** What statusAnswers gives the app. */
export interface StatusAnswers {
  /** The status document's text (GET /ha) of `s` at `nowMs` (epoch ms). */
  statusJson(s: NodeSnapshot, nowMs: number): string;
  /**
   * The answer of health check `HEALTH_PATHS[index]` with query text `query` (without `?`), the
   * status document as its body: 200 or 503, or 400 naming a bad query parameter.
   */
  healthAnswer(index: number, query: string, extraHeaders: Readonly<Record<string, string>>): Response;
}

/**
 * The renderer over `deps` (snapshot and clock). `auth()`: 0 without an access policy (no
 * `authentication` field), 1 for `"none"`, 2 for `"basic"`; read at every answer.
 */
export function statusAnswers(deps: Pick<ResolvedDeps, 'snapshot' | 'now'>, auth: () => 0 | 1 | 2): StatusAnswers {
  let rendered: Rendered | undefined;
  const renderedFor = (s: NodeSnapshot, nowMs: number): Rendered => {
    const a = auth();
    const key = healthTimeKey(s, nowMs) | (a << 3);
    const r = rendered;
    if (r && r.snapshot === s && r.key === key) return r;
    // `probe_age_ms` changes with the clock: rendered without it, appended to each answer (withAge).
    const { probe_age_ms: _age, ...doc } = buildStatusDocument(s, nowMs);
    const json = JSON.stringify({ ...doc, ...(a ? { authentication: a === 2 ? 'basic' : 'none' } : {}) });
    const bytes = Buffer.byteLength(json);
    rendered = { snapshot: s, key, json, bytes, length: String(bytes), verdicts: new Array(HEALTH_PATHS.length) };
    return rendered;
  };
  /** The text and Content-Length at `nowMs`: the rendered text with `probe_age_ms` appended when the snapshot has a probe. */
  const withAge = (r: Rendered, s: NodeSnapshot, nowMs: number): { json: string; length: string } => {
    const age = probeAgeMs(s, nowMs);
    if (age === undefined) return r;
    const tail = `,"probe_age_ms":${age}}`;
    return { json: r.json.slice(0, -1) + tail, length: String(r.bytes - 1 + tail.length) };
  };
  const NO_QUERY = new URLSearchParams();
  return {
    statusJson: (s, nowMs) => withAge(renderedFor(s, nowMs), s, nowMs).json,
    healthAnswer: (index, query, extraHeaders) => {
      const s = deps.snapshot();
      const nowMs = deps.now();
      const r = renderedFor(s, nowMs);
      let status: number;
      if (query === '') {
        status = r.verdicts[index] ??= (evaluateHealth(HEALTH_PATHS[index]!, s, nowMs, NO_QUERY) as { status: 200 | 503 }).status;
      } else {
        const hash = query.indexOf('#');
        const verdict = evaluateHealth(HEALTH_PATHS[index]!, s, nowMs, new URLSearchParams(hash < 0 ? query : query.slice(0, hash)));
        if (verdict.status === 400) return refuse('invalid_request', verdict.message, extraHeaders);
        status = verdict.status;
      }
      const body = withAge(r, s, nowMs);
      return new Response(body.json, {
        status,
        headers: { 'Content-Type': JSON_CONTENT_TYPE, 'Content-Length': body.length, ...extraHeaders },
      });
    },
  };
}
