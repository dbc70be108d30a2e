/**
 * Request bodies: read as text and parsed here (Hono's `c.req.json()` throws on malformed input,
 * stack.md §6). The Content-Type header is not required (as the reference).
 */
import type { Context } from 'hono';
import { message } from './responses.ts';

/** Outcome of reading a body: the decoded JSON object, or the 400 response to send. */
export type JsonBody = { ok: true; value: Record<string, unknown> } | { ok: false; response: Response };

/**
 * Reads the request body as one JSON object.
 * - malformed JSON → 400 `malformed JSON: <parser message>`;
 * - valid JSON that is not an object (array, string, number, null) → 400
 *   `request body must be a JSON object`;
 * - `required` and the body is empty or `{}` → 400 `request body must be a non-empty JSON object`;
 * - not `required` and the body is empty (or whitespace) → `{}`.
 */
export async function readJsonObject(c: Context, required: boolean): Promise<JsonBody> {
  const raw = await c.req.text();
  if (raw.trim() === '') {
    return required ? fail('request body must be a non-empty JSON object') : { ok: true, value: {} };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    return fail(`malformed JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return fail('request body must be a JSON object');
  }
  const value = parsed as Record<string, unknown>;
  if (required && Object.keys(value).length === 0) return fail('request body must be a non-empty JSON object');
  return { ok: true, value };
}

function fail(text: string): { ok: false; response: Response } {
  return { ok: false, response: message(400, text) };
}

/** Text of an unknown thrown value, for 503 bodies. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
