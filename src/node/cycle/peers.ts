/**
 * Member-to-member status reads: GET <api_url> of each other member with a hard 2 s timeout and
 * no retry (patroni.md §3.1). An unreachable member is reported as such, never thrown. Over
 * https the member's certificate is verified against the configured CA and our client
 * certificate is presented (members with `verify_client: required`); see docs/security.md.
 */
import type { ClusterView } from '../../domain/cluster.ts';
import { peerFromStatus, type PeerStatus } from '../../domain/leader-race.ts';
import { requestApi, type ApiClientOptions } from '../../net/api-client.ts';

/**
 * Fetches a status document; undefined when the member does not answer 2xx/503 JSON in time,
 * or when TLS fails (unknown CA, refused client certificate).
 * @param client TLS settings (no credentials are sent: GET /ha is open to all)
 */
export async function fetchStatusDocument(
  apiUrl: string,
  timeoutMs = 2000,
  client: ApiClientOptions = {},
): Promise<Record<string, unknown> | undefined> {
  const { auth: _unused, ...tlsOnly } = client;
  const reply = await requestApi(apiUrl, { ...tlsOnly, timeoutMs });
  if (!reply.reachable) return undefined;
  try {
    const doc = JSON.parse(reply.text) as unknown;
    return typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Statuses of every member of the view except `self`, fetched in parallel. `now` (epoch ms) dates
 * each request's sending, from which each peer's WAL position is dated (PeerStatus.walReadAtMs).
 */
export async function fetchPeers(
  view: ClusterView,
  self: string,
  fetchStatus: (apiUrl: string) => Promise<Record<string, unknown> | undefined> = fetchStatusDocument,
  now: () => number = Date.now,
): Promise<PeerStatus[]> {
  const others = view.members.filter((m) => m.name !== self && m.data.api_url);
  return Promise.all(
    others.map(async (m) => {
      const sentAtMs = now();
      return peerFromStatus(m.name, await fetchStatus(m.data.api_url), sentAtMs);
    }),
  );
}
