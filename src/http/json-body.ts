/**
 * Request bodies: read as text and parsed here (Hono's `c.req.json()` throws on malformed input,
 * stack.md §6). The Content-Type header is not required (as the reference).
 */
import type { Context } from 'hono';
import { refuse } from './api-error.ts';

/**
 * Deepest nesting of arrays and objects accepted in a body. Handlers walk bodies recursively
 * (merge, validation); a deeper document would end in "Maximum call stack size exceeded".
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Nesting depth of JSON text (brackets outside strings), counted without recursion and without
 * parsing, so a 10,000-level document costs one pass over the text.
 */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92 /* \\ */) i++;
      else if (ch === 34 /* " */) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 123 /* { */ || ch === 91 /* [ */) {
      depth++;
      if (depth > max) max = depth;
    } else if (ch === 125 /* } */ || ch === 93 /* ] */) depth--;
  }
  return max;
}

/** Outcome of reading a body: the decoded JSON object, or the 400 response to send. */
export type JsonBody = { ok: true; value: Record<string, unknown> } | { ok: false; response: Response };

/**
 * Reads the request body as one JSON object.
 * - malformed JSON → 400 `malformed JSON: <parser message>`;
 * - valid JSON that is not an object (array, string, number, null) → 400
 *   `request body must be a JSON object`;
 * - `required` and the body is empty or `{}` → 400 `request body must be a non-empty JSON object`;
 * - not `required` and the body is empty (or whitespace) → `{}`;
 * - nested deeper than MAX_JSON_DEPTH → 400 `request body nested deeper than 64 levels`.
 */
export async function readJsonObject(c: Context, required: boolean): Promise<JsonBody> {
  const raw = await c.req.text();
  if (raw.trim() === '') {
    return required ? fail('request body must be a non-empty JSON object') : { ok: true, value: {} };
  }
  if (jsonDepth(raw) > MAX_JSON_DEPTH) return fail(`request body nested deeper than ${MAX_JSON_DEPTH} levels`);
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
  return { ok: false, response: refuse('invalid_request', text) };
}
