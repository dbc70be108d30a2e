/**
 * Log sequence numbers. Inside the program an LSN is a `bigint` count of bytes; the `X/Y`
 * hexadecimal text form (PostgreSQL's pg_lsn output) appears only at the edges.
 */

/** Parses PostgreSQL's `X/Y` form (both parts hex) into bytes. Throws on malformed text. */
export function parseLsn(text: string): bigint {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text.trim());
  if (!m) throw new Error(`invalid LSN: ${JSON.stringify(text)}`);
  return (BigInt('0x' + m[1]) << 32n) | BigInt('0x' + m[2]);
}

/** Formats bytes as PostgreSQL's `X/Y` form (upper-case hex, as pg_lsn prints it). */
export function formatLsn(lsn: bigint): string {
  const hi = lsn >> 32n;
  const lo = lsn & 0xffffffffn;
  return `${hi.toString(16).toUpperCase()}/${lo.toString(16).toUpperCase()}`;
}

/** Converts an LSN to a JSON-safe number of bytes (exact below 2^53, i.e. 8 PiB of WAL). */
export function lsnToNumber(lsn: bigint): number {
  return Number(lsn);
}
