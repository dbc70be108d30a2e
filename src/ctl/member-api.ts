/**
 * Calls to a member's REST API (docs/api.md). The base address comes from the member key's
 * `api_url` (`http://host:port/ha` → `http://host:port`). A member that cannot be reached is an
 * outcome (`{ reachable: false, error }`), never an exception, so commands can report it by name.
 */
import type { Member } from '../domain/member.ts';
import { requestApi, type ApiClientOptions } from '../net/api-client.ts';

/** Outcome of one request to a member. */
export type MemberReply = { reachable: true; status: number; text: string } | { reachable: false; error: string };

/** Base URL of a member's API from its `api_url` (the last path segment removed). */
export function memberBaseUrl(apiUrl: string): string {
  try {
    const u = new URL(apiUrl);
    return u.origin + u.pathname.replace(/\/[^/]*$/, '');
  } catch {
    return apiUrl.replace(/\/[^/]*$/, '');
  }
}

/** TLS and credentials of every call (one hactl process talks to one cluster). */
let client: ApiClientOptions = {};

/**
 * Sets how hactl calls the members: CA (`ctl.cacert`, else `restapi.cafile`), client certificate,
 * `insecure`, and the basic credentials (`ctl.authentication`, else `restapi.authentication`).
 * Called once per command, before any call.
 */
export function setMemberClient(options: ApiClientOptions): void {
  client = options;
}

/**
 * Sends `method path` with an optional JSON body to a member; waits at most `timeoutMs`.
 * Credentials are sent on unsafe methods only (GETs are open; a password should not travel
 * where it is not needed). Resolves `{ reachable: false, error }` when the connection or the
 * TLS handshake fails, or the member does not answer in time.
 */
export async function callMember(member: Member, method: string, path: string, body?: unknown, timeoutMs = 10_000): Promise<MemberReply> {
  const url = memberBaseUrl(member.data.api_url) + path;
  const { auth, ...tls } = client;
  const unsafe = method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
  const r = await requestApi(url, {
    ...tls,
    ...(unsafe && auth ? { auth } : {}),
    method,
    ...(body !== undefined ? { body } : {}),
    timeoutMs,
  });
  return r.reachable ? { reachable: true, status: r.status, text: r.text.trim() } : r;
}

/** The standard line for an unreachable member: `member X is not reachable at <url> (<error>)`. */
export function unreachableText(member: Member, error: string): string {
  return `member ${member.name} is not reachable at ${memberBaseUrl(member.data.api_url)} (${error})`;
}
