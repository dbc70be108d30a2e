/**
 * One HTTP(S) request to a member's REST API, with the TLS and basic-auth settings of the
 * caller (member-to-member status reads, switchover checks, hactl). Node's own `http`/`https`
 * modules: the global fetch cannot take a CA or a client certificate without undici's
 * dispatcher. A failure to connect, a TLS error or a timeout is an outcome, never thrown.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { TlsMaterial } from './tls-files.ts';

/** How to talk to members: TLS material and credentials. */
export interface ApiClientOptions {
  /** CA verifying the member's certificate (absent: the system's CAs). */
  tls?: TlsMaterial;
  /** Do not verify the member's certificate (hactl `ctl.insecure`). */
  insecure?: boolean;
  /** Basic credentials sent on every request. */
  auth?: { username: string; password: string };
}

/** Outcome of one request. */
export type ApiReply = { reachable: true; status: number; text: string } | { reachable: false; error: string };

/** Largest answer read, bytes (a status document is a few KiB). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * Sends `method url` with an optional JSON `body` and waits at most `timeoutMs` for the whole
 * answer. Resolves `{ reachable: false, error }` on connection, TLS or timeout failures
 * (`error` is `no answer within N s` for a timeout).
 */
export function requestApi(
  url: string,
  opts: ApiClientOptions & { method?: string; body?: unknown; timeoutMs: number },
): Promise<ApiReply> {
  return new Promise((resolve) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      resolve({ reachable: false, error: `invalid URL ${url}` });
      return;
    }
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = {};
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    if (opts.auth) {
      headers['authorization'] = `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}`;
    }
    const common = { method: opts.method ?? 'GET', headers, timeout: opts.timeoutMs };
    const onAnswer = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (d: Buffer) => {
        size += d.length;
        if (size > MAX_ANSWER_BYTES) req.destroy(new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
        else chunks.push(d);
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ reachable: true, status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (e) => done(e.message));
    };
    const req =
      u.protocol === 'https:'
        ? httpsRequest(u, { ...common, ...opts.tls, rejectUnauthorized: opts.insecure !== true }, onAnswer)
        : httpRequest(u, common, onAnswer);
    let settled = false;
    const done = (error: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ reachable: false, error });
    };
    const timer = setTimeout(() => {
      done(`no answer within ${opts.timeoutMs / 1000} s`);
      req.destroy();
    }, opts.timeoutMs);
    req.on('timeout', () => {
      done(`no answer within ${opts.timeoutMs / 1000} s`);
      req.destroy();
    });
    req.on('error', (e: NodeJS.ErrnoException) => done(e.code ? `${e.code}: ${e.message}` : e.message));
    req.end(payload);
  });
}
