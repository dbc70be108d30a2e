/**
 * A unified diff of two texts (line based, LCS), as `edit-config` shows before writing:
 * `--- before` / `+++ after` headers and `@@ -a,b +c,d @@` hunks with 3 lines of context.
 * Meant for small documents (the DP table is lines(a) × lines(b)).
 */

type Op = { kind: ' ' | '-' | '+'; line: string };

function splitLines(text: string): string[] {
  if (text === '') return [];
  return text.replace(/\n$/, '').split('\n');
}

function editScript(a: string[], b: string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      ops.push({ kind: ' ', line: a[i]! });
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) {
      ops.push({ kind: '-', line: a[i++]! });
    } else {
      ops.push({ kind: '+', line: b[j++]! });
    }
  }
  while (i < n) ops.push({ kind: '-', line: a[i++]! });
  while (j < m) ops.push({ kind: '+', line: b[j++]! });
  return ops;
}

/**
 * Unified diff lines of `before` → `after`; [] when the texts are equal.
 * @param labels header names (default `before`, `after`)
 * @param context lines of context around changes (default 3)
 */
export function unifiedDiff(before: string, after: string, labels: [string, string] = ['before', 'after'], context = 3): string[] {
  const ops = editScript(splitLines(before), splitLines(after));
  if (ops.every((o) => o.kind === ' ')) return [];
  const out = [`--- ${labels[0]}`, `+++ ${labels[1]}`];
  // positions (1-based) in a and b before each op
  const posA: number[] = [];
  const posB: number[] = [];
  let pa = 1;
  let pb = 1;
  for (const o of ops) {
    posA.push(pa);
    posB.push(pb);
    if (o.kind !== '+') pa++;
    if (o.kind !== '-') pb++;
  }
  const changed = ops.map((o, k) => (o.kind !== ' ' ? k : -1)).filter((k) => k >= 0);
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k]! - context);
    let end = Math.min(ops.length - 1, changed[k]! + context);
    while (k + 1 < changed.length && changed[k + 1]! - context <= end + 1) {
      k++;
      end = Math.min(ops.length - 1, changed[k]! + context);
    }
    k++;
    const slice = ops.slice(start, end + 1);
    const lenA = slice.filter((o) => o.kind !== '+').length;
    const lenB = slice.filter((o) => o.kind !== '-').length;
    const startA = lenA === 0 ? posA[start]! - 1 : posA[start]!;
    const startB = lenB === 0 ? posB[start]! - 1 : posB[start]!;
    out.push(`@@ -${startA},${lenA} +${startB},${lenB} @@`);
    for (const o of slice) out.push(o.kind + o.line);
  }
  return out;
}
