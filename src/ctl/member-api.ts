/**
 * Calls to a member's REST API (docs/api.md). The base address comes from the member key's
 * `api_url` (`http://host:port/ha` → `http://host:port`). A member that cannot be reached is an
 * outcome (`{ reachable: false, error }`), never an exception, so commands can report it by name.
 */
import type { Member } from '../domain/member.ts';
import { errorText } from './errors.ts';

/** Outcome of one request to a member. */
export type MemberReply =
  | { reachable: true; status: number; text: string }
  | { reachable: false; error: string };

/** Base URL of a member's API from its `api_url` (the last path segment removed). */
export function memberBaseUrl(apiUrl: string): string {
  try {
    const u = new URL(apiUrl);
    return u.origin + u.pathname.replace(/\/[^/]*$/, '');
  } catch {
    return apiUrl.replace(/\/[^/]*$/, '');
  }
}

/**
 * Sends `method path` with an optional JSON body to a member; waits at most `timeoutMs`.
 * Resolves `{ reachable: false, error }` when the connection fails or times out.
 */
export async function callMember(member: Member, method: string, path: string, body?: unknown, timeoutMs = 10_000): Promise<MemberReply> {
  const url = memberBaseUrl(member.data.api_url) + path;
  try {
    const r = await fetch(url, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { reachable: true, status: r.status, text: (await r.text()).trim() };
  } catch (e) {
    const msg = e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : errorText(e);
    return { reachable: false, error: msg };
  }
}

/** The standard line for an unreachable member: `member X is not reachable at <url> (<error>)`. */
export function unreachableText(member: Member, error: string): string {
  return `member ${member.name} is not reachable at ${memberBaseUrl(member.data.api_url)} (${error})`;
}
