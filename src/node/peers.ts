/**
 * Member-to-member status reads: GET <api_url> of each other member with a hard 2 s timeout and
 * no retry (patroni.md §3.1). An unreachable member is reported as such, never thrown.
 */
import type { ClusterView } from '../domain/cluster.ts';
import { peerFromStatus, type PeerStatus } from '../domain/leader-race.ts';

/** Fetches a status document; undefined when the member does not answer 2xx/503 JSON in time. */
export async function fetchStatusDocument(apiUrl: string, timeoutMs = 2000): Promise<Record<string, unknown> | undefined> {
  try {
    const res = await fetch(apiUrl, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    const doc = JSON.parse(text) as unknown;
    return typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Statuses of every member of the view except `self`, fetched in parallel. */
export async function fetchPeers(
  view: ClusterView,
  self: string,
  fetchStatus: (apiUrl: string) => Promise<Record<string, unknown> | undefined> = fetchStatusDocument,
): Promise<PeerStatus[]> {
  const others = view.members.filter((m) => m.name !== self && m.data.api_url);
  return Promise.all(others.map(async (m) => peerFromStatus(m.name, await fetchStatus(m.data.api_url))));
}
