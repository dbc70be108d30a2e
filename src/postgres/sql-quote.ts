/**
 * Quoting for the few utility statements that cannot take bind parameters (ALTER/CREATE ROLE …
 * PASSWORD). Assumes standard_conforming_strings = on (the default since PostgreSQL 9.1).
 */

/** A SQL string literal: `'…'` with `'` doubled; `E'…'` with `\` doubled when it contains a backslash. Rejects NUL. */
export function quoteLiteral(s: string): string {
  if (s.includes('\0')) throw new Error('SQL literal contains NUL');
  const body = s.replace(/'/g, "''");
  return s.includes('\\') ? `E'${body.replace(/\\/g, '\\\\')}'` : `'${body}'`;
}

/** A SQL identifier: `"…"` with `"` doubled. Rejects NUL. */
export function quoteIdent(s: string): string {
  if (s.includes('\0') || s === '') throw new Error(`invalid SQL identifier ${JSON.stringify(s)}`);
  return `"${s.replace(/"/g, '""')}"`;
}
