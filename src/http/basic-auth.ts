/**
 * HTTP basic authentication of unsafe requests (patroni.md §1.2 checks 3 and 4). The
 * comparison hashes both sides with SHA-256 and compares the digests with
 * `crypto.timingSafeEqual`: equal-length inputs, so neither the length nor the first differing
 * byte of the configured credentials shows in the answer time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** Configured credentials. */
export interface BasicCredentials {
  username: string;
  password: string;
}

/** Outcome of {@link checkBasicAuth}: accepted, no header, or a header that does not match. */
export type BasicAuthVerdict = 'ok' | 'missing' | 'wrong';

const digest = (text: string | Buffer): Buffer => createHash('sha256').update(text).digest();

/**
 * Checks an `Authorization` header value against `expected`.
 * - absent or empty → `missing`;
 * - not `Basic <base64>`, or `user:password` differing → `wrong`;
 * - else `ok`.
 * Never throws; the time taken does not depend on where the credentials differ.
 */
export function checkBasicAuth(header: string | undefined, expected: BasicCredentials): BasicAuthVerdict {
  if (header === undefined || header.trim() === '') return 'missing';
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  const given = m ? Buffer.from(m[1]!, 'base64') : Buffer.alloc(0);
  const want = Buffer.from(`${expected.username}:${expected.password}`, 'utf8');
  const same = timingSafeEqual(digest(given), digest(want));
  return m && same ? 'ok' : 'wrong';
}

/** The `WWW-Authenticate` header value sent with every 401. */
export const WWW_AUTHENTICATE = 'Basic realm="ha"';
