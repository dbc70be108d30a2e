/**
 * Access control and limits of the node API (patroni.md §1.2; decisions in docs/api.md and
 * docs/security.md), as Hono middleware:
 * - every answer gets the configured extra headers (`http_extra_headers`, plus
 *   `https_extra_headers` with TLS);
 * - GET, HEAD and OPTIONS stay open (health checks, /ha, /cluster, …), as in the reference;
 * - unsafe requests (POST, PUT, PATCH, DELETE), in this order: allowlist → 403 `Access is
 *   denied`; `verify_client: optional` without a valid client certificate → 403 `client
 *   certificate required`; basic authentication → 401 `no auth header received` /
 *   `not authenticated` with `WWW-Authenticate`; more than `maxUnsafeRequests` in flight → 503
 *   with `Retry-After: 1`; a body over `maxBodyBytes` (from Content-Length, or counted while
 *   reading) → 413. Each refusal happens before the handler runs, so nothing changes.
 * The policy is read on every request, so a reload can swap it.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { TLSSocket } from 'node:tls';
import type { Allowlist } from './allowlist.ts';
import { checkBasicAuth, WWW_AUTHENTICATE, type BasicCredentials } from './basic-auth.ts';
import { refuse } from './api-error.ts';

/** Default largest request body, bytes (64 KiB: a PATCH /config is a few hundred bytes). */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
/** Default number of unsafe requests served at once (a switchover holds one for up to 2 × loop_wait). */
export const DEFAULT_MAX_UNSAFE_REQUESTS = 4;

/** Methods that change something and are guarded. */
export const UNSAFE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The access policy of the node API. */
export interface ApiGuardPolicy {
  /** Basic credentials required on unsafe requests; absent = none (the agent warns). */
  authentication?: BasicCredentials;
  /** Compiled allowlist; absent = every address may send unsafe requests. */
  allowlist?: Allowlist;
  /** Client certificates (`optional` is enforced here on unsafe requests; `required` by the TLS handshake). */
  verifyClient: 'none' | 'optional' | 'required';
  /** Headers added to every answer. */
  extraHeaders: Readonly<Record<string, string>>;
  /** Largest request body, bytes. */
  maxBodyBytes: number;
  /** Unsafe requests served at once. */
  maxUnsafeRequests: number;
}

/** An open policy: no authentication, no allowlist, the default limits. */
export function openPolicy(): ApiGuardPolicy {
  return { verifyClient: 'none', extraHeaders: {}, maxBodyBytes: DEFAULT_MAX_BODY_BYTES, maxUnsafeRequests: DEFAULT_MAX_UNSAFE_REQUESTS };
}

/** The client's socket when served by @hono/node-server (`c.env.incoming.socket`); undefined in `app.request()` tests without env. */
function socketOf(c: Context): (Partial<TLSSocket> & { remoteAddress?: string }) | undefined {
  const env = c.env as { incoming?: { socket?: Partial<TLSSocket> & { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket;
}

/** True when the TLS socket presented a client certificate that verified against the CA. */
function hasValidClientCert(c: Context): boolean {
  const s = socketOf(c);
  if (!s || s.authorized !== true || typeof s.getPeerCertificate !== 'function') return false;
  const cert = s.getPeerCertificate();
  return cert !== null && typeof cert === 'object' && Object.keys(cert).length > 0;
}

/**
 * The guard middleware.
 * @param policy the current policy (called once per request)
 * @param memberHosts the hosts of the members' api_url in the node's DCS view (allowlist_include_members)
 */
export function apiGuard(policy: () => ApiGuardPolicy, memberHosts: () => string[]): MiddlewareHandler {
  let inFlight = 0;
  return async (c, next) => {
    const p = policy();
    const unsafe = UNSAFE_METHODS.has(c.req.method);
    let counted = false;
    try {
      if (unsafe) {
        const refusal = await refusalOf(c, p, memberHosts);
        if (refusal) {
          c.res = refusal;
        } else if (inFlight >= p.maxUnsafeRequests) {
          c.res = refuse('overloaded', `too many unsafe requests in flight (limit ${p.maxUnsafeRequests}); retry later`, {
            'Retry-After': '1',
          });
        } else {
          inFlight += 1;
          counted = true;
          const tooLarge = await bodyLimit({
            maxSize: p.maxBodyBytes,
            onError: () => refuse('body_too_large', `request body larger than ${p.maxBodyBytes} bytes`),
          })(c, next);
          if (tooLarge instanceof Response) c.res = tooLarge;
        }
      } else {
        await next();
      }
    } finally {
      if (counted) inFlight -= 1;
    }
    addHeaders(c, p.extraHeaders);
  };
}

/** Adds `headers` to the answer (a copy when its headers are immutable). */
function addHeaders(c: Context, headers: Readonly<Record<string, string>>): void {
  const entries = Object.entries(headers);
  if (entries.length === 0) return;
  try {
    for (const [name, value] of entries) c.res.headers.set(name, value);
  } catch {
    const h = new Headers(c.res.headers);
    for (const [name, value] of entries) h.set(name, value);
    c.res = new Response(c.res.body, { status: c.res.status, statusText: c.res.statusText, headers: h });
  }
}

/** The refusal of an unsafe request, in the reference's order; undefined when it may proceed. */
async function refusalOf(c: Context, p: ApiGuardPolicy, memberHosts: () => string[]): Promise<Response | undefined> {
  if (p.allowlist && !(await p.allowlist.allows(socketOf(c)?.remoteAddress, memberHosts()))) {
    return refuse('forbidden', 'Access is denied');
  }
  if (p.verifyClient === 'optional' && !hasValidClientCert(c)) return refuse('forbidden', 'client certificate required');
  if (p.authentication) {
    const verdict = checkBasicAuth(c.req.header('authorization'), p.authentication);
    if (verdict === 'missing') return refuse('unauthenticated', 'no auth header received', { 'WWW-Authenticate': WWW_AUTHENTICATE });
    if (verdict === 'wrong') return refuse('unauthenticated', 'not authenticated', { 'WWW-Authenticate': WWW_AUTHENTICATE });
  }
  return undefined;
}
