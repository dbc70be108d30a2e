/**
 * Response helpers of the node API. Every response carries a correct Content-Type and a
 * Content-Length (a deliberate departure from the reference's HTTP/1.0 answers without length):
 * `text/plain; charset=utf-8` for messages, `application/json` for documents.
 */
import type { Context } from 'hono';

/** Content-Type of plain-text messages. */
export const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';
/** Content-Type of JSON documents. */
export const JSON_CONTENT_TYPE = 'application/json';

/** A response with `body` as is, the given status and content type, and its Content-Length in bytes. */
export function sized(body: string, status: number, contentType: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { 'Content-Type': contentType, 'Content-Length': String(Buffer.byteLength(body)), ...headers },
  });
}

/** A plain-text message (`text/plain; charset=utf-8`) with the given status. */
export function message(status: number, text: string, headers?: Record<string, string>): Response {
  return sized(text, status, TEXT_CONTENT_TYPE, headers);
}

/** A JSON document (`application/json`, compact) with the given status. */
export function document(status: number, value: unknown, headers?: Record<string, string>): Response {
  return sized(JSON.stringify(value), status, JSON_CONTENT_TYPE, headers);
}

/** 404 for a path the API does not know: `{"error":"not found","path":"/x"}` (never a health verdict). */
export function notFound(c: Context): Response {
  return document(404, { error: 'not found', path: c.req.path });
}

/** 405 for a known path with an unsupported method, with the `Allow` header listing the methods. */
export function methodNotAllowed(c: Context, allow: readonly string[]): Response {
  return document(405, { error: 'method not allowed', method: c.req.method, path: c.req.path }, { Allow: allow.join(', ') });
}
