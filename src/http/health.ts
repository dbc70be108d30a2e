/**
 * Health-check verdicts (seed 000 "Health checks"; patroni.md §1.4, §1.5). Pure: one snapshot, one
 * instant, the query string in; 200, 503 or a 400 message out. The route layer (app.ts) adds the
 * status document as body on GET.
 *
 * Rules (decisions in docs/api.md):
 * - leader codes: with no valid DCS view while paused, from the role alone; else when this node
 *   holds the lock (`leaderUntilMs > now`): `/leader` 200; a standby-cluster leader (role
 *   `standby_leader`, or any lock holder while `standby_cluster` is set) answers `/primary` 503,
 *   and `/standby-leader` 200 when it runs as a replica (never `/replica`); otherwise `/primary` 200
 *   when the role is `primary` (seed: "the primary holding the leader lock");
 * - replica code: no `noloadbalance` tag, not lagging, role `replica`, state `running`, and the
 *   `replication_state` parameter (if given) equal to the node's;
 * - lagging: `lag` given, leader optime known (> 0) and `optime > replayed + lag`;
 * - sync family (`/sync`, `/quorum`, `/async`, `/read-only-sync`, `/read-only-quorum`) needs a
 *   valid DCS view;
 * - `tag_<key>` parameters apply (when the code is already 200) to every path except
 *   `/`, `/primary`, `/read-write`, `/leader`, `/standby-leader`, `/standby_leader`, `/liveness`,
 *   `/readiness`.
 * - `lag` that does not parse → 400 naming `lag`; `mode` other than apply/write → 400.
 */
import { timingOf } from '../domain/dynamic-config.ts';
import type { Tags } from '../domain/member.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import { isStandbyCluster } from '../domain/standby-cluster.ts';
import { parseLagParam } from './lag-param.ts';
import { dcsViewValid, nodeFacts, type NodeFacts } from '../domain/node-facts.ts';

/** Every health-check path, each answering GET, HEAD and OPTIONS. */
export const HEALTH_PATHS = [
  '/',
  '/primary',
  '/read-write',
  '/standby-leader',
  '/standby_leader',
  '/leader',
  '/replica',
  '/read-only',
  '/synchronous',
  '/sync',
  '/read-only-sync',
  '/quorum',
  '/read-only-quorum',
  '/asynchronous',
  '/async',
  '/health',
  '/liveness',
  '/readiness',
] as const;

/** One of the health-check paths. */
export type HealthPath = (typeof HEALTH_PATHS)[number];

/** A verdict (200/503), or a 400 with a message for a bad query parameter. */
export type HealthVerdict = { status: 200 | 503 } | { status: 400; message: string };

/** Paths where `tag_<key>` parameters are ignored (seed 000 "Tag parameters are ignored by …"). */
const TAGS_IGNORED: ReadonlySet<string> = new Set([
  '/',
  '/primary',
  '/read-write',
  '/leader',
  '/standby-leader',
  '/standby_leader',
  '/liveness',
  '/readiness',
]);

/** Predefined boolean tags: `false` means absent (patroni.md §1.4). */
const PREDEFINED_BOOLEAN_TAGS: ReadonlySet<string> = new Set(['nofailover', 'noloadbalance', 'clonefrom', 'nosync', 'nostream']);

/**
 * The verdict of health check `path` for snapshot `s` at `nowMs` (epoch ms) with query `query`.
 * Never throws; a malformed `lag` or `mode` gives `{status: 400, message}`.
 */
export function evaluateHealth(path: HealthPath, s: NodeSnapshot, nowMs: number, query: URLSearchParams): HealthVerdict {
  const lagText = query.get('lag');
  let maxLagBytes: bigint | undefined;
  if (lagText !== null) {
    const parsed = parseLagParam(lagText);
    if (!parsed.ok) return { status: 400, message: parsed.message };
    maxLagBytes = parsed.bytes;
  }
  const f = nodeFacts(s, nowMs);
  if (path === '/liveness') return { status: livenessOk(s, f, nowMs) ? 200 : 503 };
  if (path === '/readiness') {
    const mode = query.get('mode') ?? 'apply';
    if (mode !== 'apply' && mode !== 'write') {
      return { status: 400, message: `invalid mode: ${JSON.stringify(mode)}; expected apply or write` };
    }
    return { status: readinessOk(s, f, mode, maxLagBytes) ? 200 : 503 };
  }
  const ok = pathOk(path, s, f, query, maxLagBytes);
  const tagsOk = !ok || TAGS_IGNORED.has(path) || tagsMatch(s.tags, query);
  return { status: ok && tagsOk ? 200 : 503 };
}

function pathOk(path: HealthPath, s: NodeSnapshot, f: NodeFacts, query: URLSearchParams, maxLagBytes: bigint | undefined): boolean {
  const { leader, primary, standbyLeader } = leaderCodes(s, f);
  // The lock holder of a standby cluster never answers as a replica (patroni.md §1.4).
  const replica = !(f.isLeader && isStandbyCluster(s.config)) && replicaOk(s, f, query, maxLagBytes);
  switch (path) {
    case '/':
    case '/primary':
    case '/read-write':
      return primary;
    case '/standby-leader':
    case '/standby_leader':
      return standbyLeader;
    case '/leader':
      return leader;
    case '/replica':
      return replica;
    case '/read-only':
      return primary || standbyLeader || replica;
    case '/health':
      return s.state === 'running';
    case '/synchronous':
    case '/sync':
      return f.dcsValid && f.syncStandby && replica;
    case '/quorum':
      return f.dcsValid && f.quorumStandby && replica;
    case '/asynchronous':
    case '/async':
      return f.dcsValid && !f.syncStandby && !f.quorumStandby && replica;
    case '/read-only-sync':
      return f.dcsValid && (primary || standbyLeader || (f.syncStandby && replica));
    case '/read-only-quorum':
      return f.dcsValid && (primary || standbyLeader || (f.quorumStandby && replica));
    default:
      return false;
  }
}

/** Leader-ish codes of patroni.md §1.4 (true = 200). */
function leaderCodes(s: NodeSnapshot, f: NodeFacts): { leader: boolean; primary: boolean; standbyLeader: boolean } {
  if (!f.dcsValid && f.paused) {
    return {
      leader: s.role === 'primary' || s.role === 'standby_leader',
      primary: s.role === 'primary',
      standbyLeader: s.role === 'standby_leader',
    };
  }
  if (!f.isLeader) return { leader: false, primary: false, standbyLeader: false };
  // A standby cluster: /primary 503 on every member; /standby-leader 200 on the lock holder running as a replica.
  if (isStandbyCluster(s.config))
    return { leader: true, primary: false, standbyLeader: s.role === 'replica' || s.role === 'standby_leader' };
  if (s.role === 'standby_leader') return { leader: true, primary: false, standbyLeader: true };
  return { leader: true, primary: s.role === 'primary', standbyLeader: false };
}

function replicaOk(s: NodeSnapshot, f: NodeFacts, query: URLSearchParams, maxLagBytes: bigint | undefined): boolean {
  if (s.tags.noloadbalance === true) return false;
  if (s.role !== 'replica' || s.state !== 'running') return false;
  const wanted = query.get('replication_state');
  if (wanted !== null && wanted !== f.replicationState) return false;
  if (maxLagBytes !== undefined && f.leaderOptime > 0n) {
    const replayed = s.pg?.replayLsn ?? 0n;
    if (f.leaderOptime > replayed + maxLagBytes) return false;
  }
  return true;
}

/**
 * `tag_<key>=<value>`: the node's tag must exist and equal the value; strings compare exactly,
 * other values as their lower-cased string form (`true`, `1.4`); predefined boolean tags set to
 * false count as absent.
 */
function tagsMatch(tags: Tags, query: URLSearchParams): boolean {
  for (const [key, expected] of query) {
    if (!key.startsWith('tag_')) continue;
    const name = key.slice('tag_'.length);
    const actual = Object.hasOwn(tags, name) ? tags[name] : undefined;
    if (actual === undefined || actual === null) return false;
    if (actual === false && PREDEFINED_BOOLEAN_TAGS.has(name)) return false;
    const text = typeof actual === 'string' ? actual : stringForm(actual);
    if (text !== expected) return false;
  }
  return true;
}

/** Lower-cased string form of a non-string tag value (`true`, `1`, `1.4`, JSON for objects). */
function stringForm(v: unknown): string {
  return (typeof v === 'object' ? JSON.stringify(v) : String(v)).toLowerCase();
}

/**
 * `/liveness`: 200 when paused, or when the last HA loop finished at most ttl seconds ago
 * (primary) or 2 × ttl seconds ago (any other role). No SQL.
 */
function livenessOk(s: NodeSnapshot, f: NodeFacts, nowMs: number): boolean {
  return f.paused || loopRecent(s, nowMs);
}

/** The last HA loop finished at most ttl (primary) or 2 × ttl seconds (other roles) before `nowMs`. */
function loopRecent(s: NodeSnapshot, nowMs: number): boolean {
  if (s.lastLoopMs <= 0) return false;
  const thresholdMs = (s.role === 'primary' ? 1 : 2) * timingOf(s.config).ttlMs;
  return nowMs - s.lastLoopMs <= thresholdMs;
}

/**
 * Everything the clock changes in the answers of one snapshot, as a small integer: the health
 * verdicts (evaluateHealth) and the status document (buildStatusDocument) of snapshot `s` depend
 * on `nowMs` only through the leader lease (`leaderUntilMs > now`), the DCS view validity and the
 * liveness window. So for one snapshot object, two instants with the same key give the same
 * verdicts and the same document, and an answer rendered at one may be served at the other
 * (app.ts caches by snapshot and key). Keep this in step with any new use of `nowMs` there
 * (tests/http/health-cache.test.ts checks it on random instants).
 */
export function healthTimeKey(s: NodeSnapshot, nowMs: number): number {
  return (s.leaderUntilMs > nowMs ? 1 : 0) | (dcsViewValid(s, nowMs) ? 2 : 0) | (loopRecent(s, nowMs) ? 4 : 0);
}

/**
 * `/readiness`: 200 when this node holds the leader lock; otherwise state `running`, replication
 * state `streaming`, a leader position known (valid DCS view or latest_end_lsn; failsafe active
 * counts as ready), and lag (leader optime − replayed for `apply`, − received for `write`) not
 * above `lag` or `maximum_lag_on_failover`.
 */
function readinessOk(s: NodeSnapshot, f: NodeFacts, mode: 'apply' | 'write', maxLagBytes: bigint | undefined): boolean {
  if (f.isLeader) return true;
  if (s.state !== 'running' || f.replicationState !== 'streaming') return false;
  const pg = s.pg;
  if (!pg) return false;
  if (!f.dcsValid && pg.latestEndLsn === undefined) return s.failsafeActive === true;
  const limit = maxLagBytes ?? BigInt(Math.max(0, Math.trunc(s.config.maximum_lag_on_failover)));
  const position = mode === 'write' ? (pg.receiveLsn ?? pg.replayLsn ?? 0n) : (pg.replayLsn ?? 0n);
  const lag = f.leaderOptime - position;
  return lag <= limit;
}
