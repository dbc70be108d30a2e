/**
 * JSON-safe summaries of machine contexts for GET /machines: bigint → decimal string,
 * Error → `{ message }`, Date → ISO text, Map → object, Set → array; functions and XState actor
 * references are dropped, cycles and very deep values are cut.
 */

/** Nesting depth beyond which a value is replaced by `"…"`. */
const MAX_DEPTH = 8;

/** True for an XState actor reference (spawned children, `self`, parents): never serialised. */
function isActorRef(v: object): boolean {
  const r = v as { sessionId?: unknown; send?: unknown; getSnapshot?: unknown };
  return typeof r.sessionId === 'string' && typeof r.send === 'function' && typeof r.getSnapshot === 'function';
}

/**
 * Returns a value that `JSON.stringify` accepts and that shows what `v` holds.
 * Dropped members (functions, actor refs, `undefined`) are omitted from objects; in arrays they
 * become `null`, as JSON does. Never throws.
 */
export function jsonSafe(v: unknown): unknown {
  return walk(v, 0, new WeakSet());
}

function walk(v: unknown, depth: number, seen: WeakSet<object>): unknown {
  switch (typeof v) {
    case 'bigint':
      return v.toString();
    case 'number':
      return Number.isFinite(v) ? v : String(v);
    case 'string':
    case 'boolean':
      return v;
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (v === null || typeof v !== 'object') return null;
  if (seen.has(v)) return '[circular]';
  if (depth >= MAX_DEPTH) return '…';
  if (v instanceof Error) return { message: v.message };
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (isActorRef(v)) return undefined;
  seen.add(v);
  try {
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1, seen) ?? null);
    if (v instanceof Set) return [...v].map((x) => walk(x, depth + 1, seen) ?? null);
    const entries: Iterable<[unknown, unknown]> = v instanceof Map ? v.entries() : Object.entries(v);
    const out: Record<string, unknown> = {};
    for (const [k, x] of entries) {
      const safe = walk(x, depth + 1, seen);
      if (safe !== undefined) out[String(k)] = safe;
    }
    return out;
  } finally {
    seen.delete(v);
  }
}
