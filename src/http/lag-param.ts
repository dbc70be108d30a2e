/**
 * The `lag` query parameter of the health checks (patroni.md §1.4 "lag parsing"): integer bytes,
 * or a number (fractions allowed) followed by a case-sensitive unit `B`, `kB`, `MB`, `GB`, `TB`,
 * all powers of 1024 (`16kB` = 16384, `1.5kB` = 1536, `64MB` = 67108864).
 *
 * Deliberate departures from the reference: an unparseable value is an error (the handler answers
 * 400 naming `lag`) instead of a silent "no limit"; hex (`0x…`) and octal (`010`) forms are not
 * accepted (`010` is 10 bytes).
 */

const UNIT_BYTES: Readonly<Record<string, bigint>> = {
  B: 1n,
  kB: 1024n,
  MB: 1024n ** 2n,
  GB: 1024n ** 3n,
  TB: 1024n ** 4n,
};

/** Outcome of `parseLagParam`: bytes (fractions of a byte truncated), or the 400 message. */
export type ParsedLag = { ok: true; bytes: bigint } | { ok: false; message: string };

/**
 * Parses `text` as a lag limit in bytes. Never throws.
 * @returns `{ ok: true, bytes }` or `{ ok: false, message }` where the message names `lag`.
 */
export function parseLagParam(text: string): ParsedLag {
  const m = /^\s*(\d+)(?:\.(\d+))?\s*(B|kB|MB|GB|TB)?\s*$/.exec(text);
  const unit = UNIT_BYTES[m?.[3] ?? 'B'];
  if (!m || unit === undefined) {
    return {
      ok: false,
      message: `invalid lag: ${JSON.stringify(text)}; expected bytes or a size with unit B, kB, MB, GB or TB (e.g. 16kB, 64MB)`,
    };
  }
  const whole = BigInt(m[1] ?? '0');
  const fraction = m[2] ?? '';
  // Exact decimal fraction: whole*unit + fraction*unit/10^digits, truncated to whole bytes.
  const fractionBytes = fraction === '' ? 0n : (BigInt(fraction) * unit) / 10n ** BigInt(fraction.length);
  return { ok: true, bytes: whole * unit + fractionBytes };
}
