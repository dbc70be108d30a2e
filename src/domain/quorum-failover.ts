/**
 * Quorum failover (issue 28; docs/ha.md "Quorum failover"): synchronous standbys fence a lost
 * primary before its lease runs out, so a new primary takes over in seconds at any ttl, with no
 * acknowledged commit lost. Pure: the rules; the node carries them out
 * (src/node/replication/quorum-fence.ts), the DCS stores the record in the `sync` key.
 *
 * The proof, for a leader whose `sync` key holds members K with quorum q (q = 1 in mode `on`):
 * the key protocol (src/domain/sync-standby.ts) keeps `k + q > |G ∪ K|` for the set G in force on
 * the primary (`ANY k`/`FIRST k`), and writes the key before any set it protects takes effect. A
 * member of the fence F has stopped taking WAL from the leader and never takes more from it while
 * it stays in F. If |F ∩ K| ≥ q then |G \ F| ≤ |G ∪ K| − q < k: no k members of G are left to
 * flush a new commit, so the primary cannot acknowledge another one (strict mode: it never falls
 * back to asynchronous). And every commit it did acknowledge was flushed by k members of G, which
 * meet every q members of K: at least one member of F ∩ K holds it, so the most advanced member
 * of F (they received one lineage from one primary: WAL ends compare as prefixes) holds them all.
 * The take is one DCS transaction comparing the revisions of the `sync` key (the F and K it was
 * judged on) and of the `leader` key (the lock it replaces): a key or set written since, or a
 * member that left F since, makes it fail.
 *
 * No false failover: a member fences only after the leader's agent and PostgreSQL did not answer
 * it, and its WAL receiver did not stream, for `quorum_failover_window` seconds; the take also
 * needs a majority of the cluster's other members in F (witnesses), so one cut link is never
 * enough. A member whose leader answers again while the fence is incomplete leaves F (a
 * compare-and-set on the `sync` key) before it streams again.
 */
import type { ClusterView } from './cluster.ts';
import type { DynamicConfig } from './dynamic-config.ts';
import type { SyncKey, SyncMode } from './sync-standby.ts';
import { syncKeyOf, syncSettings } from './sync-standby.ts';

/** The fence record: the members that stopped taking WAL from `leader`, each with its WAL end then (bytes). */
export interface QuorumFence {
  leader: string;
  members: Record<string, number>;
}

/** The quorum failover settings in force, or undefined when the mode is off. */
export interface QuorumFailoverSettings {
  /** `quorum_failover_window` in ms: how long the leader must be unreachable before a member fences. */
  windowMs: number;
  mode: Exclude<SyncMode, 'off'>;
}

/**
 * Why `quorum_failover_window` cannot be set in `config` (a 400 naming the reason), or undefined.
 * It needs synchronous mode `quorum` or `on` with `synchronous_mode_strict`: only a primary that
 * never acknowledges without its synchronous standbys can be fenced by them.
 */
export function quorumFailoverProblem(
  config: Pick<DynamicConfig, 'synchronous_mode' | 'synchronous_mode_strict'> & { quorum_failover_window?: unknown },
): string | undefined {
  const w = config.quorum_failover_window;
  if (w === undefined || w === null || w === 0) return undefined;
  if (typeof w !== 'number' || !Number.isFinite(w) || w < 0)
    return `quorum_failover_window: must be a number of seconds >= 0, got ${JSON.stringify(w)}`;
  const s = syncSettings(
    config as Pick<DynamicConfig, 'synchronous_mode' | 'synchronous_mode_strict' | 'synchronous_node_count' | 'maximum_lag_on_syncnode'>,
  );
  if (s.mode === 'off' || !s.strict) {
    return 'quorum_failover_window: needs synchronous_mode "quorum" or true with synchronous_mode_strict: true (only a primary that never acknowledges without its synchronous standbys can be fenced by them)';
  }
  return undefined;
}

/** The settings in force for `config`, or undefined when quorum failover is off (or cannot be on). */
export function quorumFailoverSettings(config: DynamicConfig): QuorumFailoverSettings | undefined {
  const w = (config as { quorum_failover_window?: unknown }).quorum_failover_window;
  if (typeof w !== 'number' || !(w > 0) || quorumFailoverProblem(config) !== undefined) return undefined;
  const s = syncSettings(config);
  return { windowMs: Math.round(w * 1000), mode: s.mode === 'quorum' ? 'quorum' : 'on' };
}

/** Members of F in the key needed to silence the primary: the key's quorum, 1 in mode `on`. */
export function fromKeyNeeded(mode: QuorumFailoverSettings['mode'], key: SyncKey): number {
  return mode === 'quorum' ? key.quorum : 1;
}

/** Witnesses needed: a majority of the cluster's members other than the leader. */
export function witnessesNeeded(standbys: number): number {
  return Math.floor(standbys / 2) + 1;
}

/**
 * Does the fence silence the leader of `key` (the proof above), with enough witnesses?
 * `standbys`: the members of the cluster other than the leader (member keys). Returns undefined
 * when complete, else why not.
 */
export function fenceIncomplete(
  mode: QuorumFailoverSettings['mode'],
  key: SyncKey,
  fence: QuorumFence | undefined,
  standbys: readonly string[],
): string | undefined {
  if (!fence || fence.leader !== key.leader) return `no fence of ${key.leader}`;
  const q = fromKeyNeeded(mode, key);
  if (key.members.length === 0 || q < 1) return `the sync key of ${key.leader} lists no synchronous standby`;
  const fenced = Object.keys(fence.members);
  const inKey = fenced.filter((m) => key.members.includes(m)).length;
  if (inKey < q) return `${inKey} of the ${q} synchronous standbys needed have fenced ${key.leader}`;
  const witnesses = fenced.filter((m) => standbys.includes(m)).length;
  const needed = witnessesNeeded(standbys.length);
  if (witnesses < needed) return `${witnesses} of the ${needed} members needed have fenced ${key.leader}`;
  return undefined;
}

/** The member of the fence that takes over: the furthest WAL end; at equal ends the lowest name. */
export function fenceTaker(fence: QuorumFence): string | undefined {
  let best: [string, number] | undefined;
  for (const [name, lsn] of Object.entries(fence.members)) {
    if (!best || lsn > best[1] || (lsn === best[1] && name < best[0])) best = [name, lsn];
  }
  return best?.[0];
}

/**
 * Should this member fence the leader now? Its WAL receiver does not stream, and the leader's
 * agent and PostgreSQL have not answered it for at least the window (`unreachableSinceMs`: since
 * when neither did; undefined while one does).
 */
export function shouldFence(i: {
  settings: QuorumFailoverSettings;
  nowMs: number;
  streaming: boolean;
  unreachableSinceMs: number | undefined;
}): boolean {
  return !i.streaming && i.unreachableSinceMs !== undefined && i.nowMs - i.unreachableSinceMs >= i.settings.windowMs;
}

/** The fence with `name` added at `lsn` (a new record when `fence` names another leader). */
export function joinFence(fence: QuorumFence | undefined, leader: string, name: string, lsn: bigint): QuorumFence {
  const base = fence && fence.leader === leader ? fence.members : {};
  return { leader, members: { ...base, [name]: Number(lsn) } };
}

/** The fence without `name`; undefined when nobody is left. */
export function leaveFence(fence: QuorumFence, name: string): QuorumFence | undefined {
  const { [name]: _gone, ...rest } = fence.members;
  return Object.keys(rest).length ? { leader: fence.leader, members: rest } : undefined;
}

/** Parses the `fence` field of a stored `sync` key value; undefined when absent or malformed. */
export function fenceOf(value: unknown): QuorumFence | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const f = value as { leader?: unknown; members?: unknown };
  if (typeof f.leader !== 'string' || typeof f.members !== 'object' || f.members === null) return undefined;
  const members: Record<string, number> = {};
  for (const [k, v] of Object.entries(f.members as Record<string, unknown>)) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
    members[k] = v;
  }
  return { leader: f.leader, members };
}

/**
 * This member's place in a fence of the current leader, read from the view: undefined when the
 * mode is off, there is no leader or sync key, or the `sync` key's fence (of this leader) does not
 * list this member. Otherwise whether the fence silences the leader (`incomplete`: why not), the
 * member that takes over, and the revisions the take compares (the leader key as read, the `sync`
 * key as read).
 */
export interface FencePlace {
  leader: string;
  fence: QuorumFence;
  incomplete: string | undefined;
  taker: string | undefined;
  leaderRevision: string;
  syncRevision: string;
}

/** See FencePlace. `config` decides whether the mode is on. */
export function fencePlace(config: DynamicConfig, view: ClusterView, me: string): FencePlace | undefined {
  const settings = quorumFailoverSettings(config);
  const leader = view.leader;
  const sync = view.sync;
  if (!settings || !leader || !sync) return undefined;
  const fence = fenceOf(sync.value.fence);
  if (!fence || fence.leader !== leader.name || !(me in fence.members)) return undefined;
  const standbys = view.members.map((m) => m.name).filter((n) => n !== leader.name);
  return {
    leader: leader.name,
    fence,
    incomplete: fenceIncomplete(settings.mode, syncKeyOf(sync.value), fence, standbys),
    taker: fenceTaker(fence),
    leaderRevision: leader.revision,
    syncRevision: sync.revision,
  };
}
