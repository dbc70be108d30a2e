/**
 * "Did you mean …?" for a key nobody reads: the closest known key by optimal string alignment
 * distance (Levenshtein plus the transposition of two neighbouring letters, so `loop_wiat` is one
 * edit from `loop_wait`). Pure.
 */

/**
 * Optimal string alignment distance of `a` and `b`: the fewest insertions, deletions,
 * substitutions and transpositions of two adjacent characters (no substring edited twice).
 * Case-sensitive; O(|a|·|b|).
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known key closest to `key`, when it is close enough to be a typo: at most 2 edits, and
 * fewer edits than half the length of `key` (so `ttl` does not suggest `tags`). Compared
 * case-insensitively (`TTL` suggests `ttl`); ties go to the first of `known`. Undefined when
 * nothing is that close, or when `key` itself is known.
 */
export function closestKey(key: string, known: Iterable<string>): string | undefined {
  const k = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const dist = editDistance(k, candidate.toLowerCase());
    if (dist < bestDistance) {
      best = candidate;
      bestDistance = dist;
    }
  }
  return best !== undefined && best !== key && bestDistance <= 2 && bestDistance * 2 < key.length ? best : undefined;
}

/** `unknown key`, with `; did you mean <closest>?` when {@link closestKey} finds one. */
export function unknownKeyProblem(key: string, known: Iterable<string>): string {
  const close = closestKey(key, known);
  return close === undefined ? 'unknown key' : `unknown key; did you mean ${close}?`;
}
