/**
 * Synchronous replication run by the leader (docs/ha.md "Synchronous replication"; reference
 * behaviour: patroni.md §3.8, §3.3; key layout: dcs-layout.md `sync`). Pure: no I/O, no clock.
 *
 * Two things say who holds acknowledged commits, and they change in an order that keeps the
 * invariant "every member that may be promoted holds every acknowledged commit":
 * - `synchronous_standby_names` (a SyncSet): who must acknowledge a commit. `FIRST n (a, b)`
 *   with exactly n names (mode `true`) or `ANY k (a, b, …)` (mode `quorum`).
 * - the `sync` key (a SyncKey): who may be promoted. In mode `true` any member listed; in
 *   `quorum` a member that gathers `quorum` votes from listed members not ahead of it.
 *
 * The rule tying them (for `FIRST n` with n names, equivalently `ANY n` of n): with a key of
 * members K and quorum q (q = 1 in mode `true`), every set of k acknowledgers from G meets every
 * set of q voters from K exactly when `k + q > |G ∪ K|`. A key is written only when it satisfies
 * that rule for the set in force and for every earlier set whose acknowledgements are not yet
 * known to be on the members of the set in force ("uncovered"). Members leave the key before
 * they leave the set; they enter it only after PostgreSQL reports them synchronous and caught up
 * with the primary's flush position at the moment the set took effect.
 */
import type { SyncState } from './cluster.ts';
import type { DynamicConfig } from './dynamic-config.ts';
import type { Member } from './member.ts';
import type { ReplicationRow } from './pg-status.ts';

/** `synchronous_mode`: off (false), on (true) or quorum. */
export type SyncMode = 'off' | 'on' | 'quorum';

/** The synchronous settings of the dynamic configuration, defaults filled (patroni.md §4.2). */
export interface SyncSettings {
  mode: SyncMode;
  /** `synchronous_mode_strict`: never fall back to asynchronous. */
  strict: boolean;
  /** `synchronous_node_count` (>= 1). */
  nodeCount: number;
  /** `maximum_lag_on_syncnode`, bytes; <= 0: no limit. */
  maxLagBytes: number;
}

/** The synchronous settings of `config`. */
export function syncSettings(
  config: Pick<DynamicConfig, 'synchronous_mode' | 'synchronous_mode_strict' | 'synchronous_node_count' | 'maximum_lag_on_syncnode'>,
): SyncSettings {
  const m = config.synchronous_mode;
  return {
    mode: m === 'quorum' ? 'quorum' : m === true ? 'on' : 'off',
    strict: config.synchronous_mode_strict === true,
    nodeCount: typeof config.synchronous_node_count === 'number' && config.synchronous_node_count >= 1 ? config.synchronous_node_count : 1,
    maxLagBytes: typeof config.maximum_lag_on_syncnode === 'number' ? config.maximum_lag_on_syncnode : -1,
  };
}

/**
 * What `synchronous_standby_names` says about acknowledgements:
 * - `async`: empty; commits wait for nobody;
 * - `blocked`: the strict placeholder; commits wait for a standby that never connects;
 * - `first` / `any`: commits wait for `num` of `members` (names sorted);
 * - `unknown`: a value this agent did not write, or not known yet (no promise about who acknowledged).
 */
export type SyncSet =
  | { kind: 'async' }
  | { kind: 'blocked' }
  | { kind: 'first' | 'any'; num: number; members: string[] }
  | { kind: 'unknown'; text?: string };

/**
 * The standby name no member has: in strict mode with no eligible standby, commits wait for it
 * (patroni.md §3.8 uses `__patroni_strict_sync_replica_placeholder__`). Not `*`: `*` matches any
 * standby, including a `nosync` member or a pg_basebackup stream, which would acknowledge.
 */
export const STRICT_PLACEHOLDER = '__ha_strict_sync_placeholder__';

/** Double-quotes a standby name for synchronous_standby_names (PostgreSQL docs 20.6.2: `"` doubled). */
function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * The `synchronous_standby_names` text of a set: `''`, the placeholder, `FIRST n ("a","b")` or
 * `ANY k ("a","b")`. Throws for `unknown` (nothing to write).
 */
export function formatSyncSet(s: SyncSet): string {
  switch (s.kind) {
    case 'async':
      return '';
    case 'blocked':
      return STRICT_PLACEHOLDER;
    case 'first':
    case 'any':
      return `${s.kind === 'first' ? 'FIRST' : 'ANY'} ${s.num} (${s.members.map(quoteName).join(',')})`;
    case 'unknown':
      throw new Error('an unknown synchronous_standby_names value cannot be written');
  }
}

/** Parses what formatSyncSet writes; any other text is `unknown` (carrying the text). */
export function parseSyncSet(text: string): SyncSet {
  const t = text.trim();
  if (t === '') return { kind: 'async' };
  if (t === STRICT_PLACEHOLDER) return { kind: 'blocked' };
  const m = /^(FIRST|ANY) (\d+) \((.*)\)$/.exec(t);
  if (m) {
    const names: string[] = [];
    const re = /"((?:[^"]|"")*)"(,|$)/y;
    let rest = m[3]!;
    let ok = true;
    while (rest.length > 0) {
      re.lastIndex = 0;
      const n = re.exec(rest);
      if (!n) {
        ok = false;
        break;
      }
      names.push(n[1]!.replace(/""/g, '"'));
      rest = rest.slice(n[0].length);
    }
    const num = Number(m[2]);
    if (ok && names.length > 0 && num >= 1 && num <= names.length) {
      return { kind: m[1] === 'FIRST' ? 'first' : 'any', num, members: [...names].sort() };
    }
  }
  return { kind: 'unknown', text };
}

/** Same set (members compared sorted). */
export function sameSyncSet(a: SyncSet, b: SyncSet): boolean {
  if (a.kind !== b.kind) return false;
  if ((a.kind === 'first' || a.kind === 'any') && (b.kind === 'first' || b.kind === 'any')) {
    return a.num === b.num && a.members.join('\u0000') === b.members.join('\u0000');
  }
  if (a.kind === 'unknown' && b.kind === 'unknown') return a.text === b.text;
  return true;
}

/** The `sync` key as the rules read it: members sorted; quorum as written (0 in mode `true`). */
export interface SyncKey {
  leader: string;
  members: string[];
  quorum: number;
}

/** Parses the `sync` key value (dcs-layout.md: `sync_standby` is "a,b" or null). */
export function syncKeyOf(s: SyncState): SyncKey {
  const members =
    typeof s.sync_standby === 'string' && s.sync_standby !== ''
      ? s.sync_standby
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : [];
  return { leader: s.leader, members: [...new Set(members)].sort(), quorum: typeof s.quorum === 'number' ? s.quorum : 0 };
}

/** The `sync` key value of a SyncKey. */
export function syncStateOf(k: SyncKey): SyncState {
  return { leader: k.leader, sync_standby: k.members.length ? [...k.members].sort().join(',') : null, quorum: k.quorum };
}

/** Same key. */
export function sameSyncKey(a: SyncKey | undefined, b: SyncKey): boolean {
  return !!a && a.leader === b.leader && a.quorum === b.quorum && a.members.join('\u0000') === b.members.join('\u0000');
}

/** The votes a key asks of a candidate: the quorum in mode `quorum`, 1 (itself listed) in mode `true`. */
function votesNeeded(mode: SyncMode, key: SyncKey): number {
  return mode === 'quorum' ? key.quorum : 1;
}

/**
 * Does a key with members `k` and quorum `q` protect the acknowledgements made under `s`?
 * An empty key promotes nobody (but its leader): always safe. The placeholder acknowledges
 * nothing: always safe. Asynchronous or unknown sets promise nothing: only the empty key is safe.
 */
function protects(k: string[], q: number, s: SyncSet): boolean {
  if (k.length === 0 || s.kind === 'blocked') return true;
  if (s.kind === 'async' || s.kind === 'unknown') return false;
  if (q < 1) return false;
  const union = new Set([...s.members, ...k]);
  return s.num + q > union.size;
}

/**
 * The key with as many of `wanted` as can be kept, safe for every set of `sets`: in mode `true`
 * (q fixed at 1) members are dropped until it is; in `quorum` the quorum is raised (never below
 * `minQuorum`) and the key emptied when the quorum would exceed its members.
 */
export function protectiveKey(mode: SyncMode, leader: string, wanted: string[], sets: SyncSet[], minQuorum = 0): SyncKey {
  let members = [...new Set(wanted)].sort();
  const empty: SyncKey = { leader, members: [], quorum: 0 };
  if (mode === 'on') {
    for (const s of sets) {
      if (protects(members, 1, s)) continue;
      if (s.kind === 'first' || s.kind === 'any') members = members.filter((m) => s.members.includes(m));
      if (!protects(members, 1, s)) return empty;
    }
    return { leader, members, quorum: 0 };
  }
  let q = Math.max(1, minQuorum);
  for (const s of sets) {
    if (s.kind === 'blocked') continue;
    if (s.kind === 'async' || s.kind === 'unknown') return empty;
    const union = new Set([...s.members, ...members]);
    q = Math.max(q, union.size - s.num + 1);
  }
  if (members.length === 0 || q > members.length) return empty;
  return { leader, members, quorum: q };
}

/** What the leader knows of one candidate standby. */
export interface SyncCandidateFacts {
  name: string;
  syncState: string;
  flushLsn: bigint;
  nofailover: boolean;
}

/**
 * The members that may be synchronous standbys, best first (patroni.md §3.8): a streaming
 * walsender whose application_name is a running member other than `self`, not tagged `nosync`,
 * not cascading from another member (`replicatefrom` naming someone else), and not more than
 * `maxLagBytes` behind the best of them. Order: members already in the key, then those
 * PostgreSQL reports synchronous, then the furthest flushed, members that may be promoted
 * first, then by name.
 */
export function syncCandidates(i: {
  self: string;
  members: Member[];
  replication: ReplicationRow[];
  settings: SyncSettings;
  inKey: string[];
}): string[] {
  const byName = new Map(i.members.map((m) => [m.name.toLowerCase(), m]));
  const facts: SyncCandidateFacts[] = [];
  const seen = new Set<string>();
  for (const r of i.replication) {
    if (r.state !== 'streaming') continue;
    const m = byName.get(r.application_name.toLowerCase());
    if (!m || m.name === i.self || seen.has(m.name)) continue;
    const tags = m.data.tags ?? {};
    if (tags.nosync === true) continue;
    const from = tags['replicatefrom'];
    if (typeof from === 'string' && from !== '' && from !== i.self) continue;
    if (m.data.state !== 'running') continue;
    seen.add(m.name);
    facts.push({ name: m.name, syncState: r.sync_state, flushLsn: r.flush_lsn ?? 0n, nofailover: tags.nofailover === true });
  }
  const best = facts.reduce((a, f) => (f.flushLsn > a ? f.flushLsn : a), 0n);
  const kept = i.settings.maxLagBytes > 0 ? facts.filter((f) => best - f.flushLsn <= BigInt(i.settings.maxLagBytes)) : facts;
  const rank = (f: SyncCandidateFacts): number[] => [
    i.inKey.includes(f.name) ? 0 : 1,
    f.syncState === 'sync' || f.syncState === 'quorum' ? 0 : 1,
    f.nofailover ? 1 : 0,
  ];
  return kept
    .sort((a, b) => {
      const ra = rank(a);
      const rb = rank(b);
      for (let x = 0; x < ra.length; x++) if (ra[x] !== rb[x]) return ra[x]! - rb[x]!;
      if (a.flushLsn !== b.flushLsn) return a.flushLsn > b.flushLsn ? -1 : 1;
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    })
    .map((f) => f.name);
}

/**
 * The set the leader aims for: mode `true` FIRST n of the best n candidates; `quorum` ANY
 * min(n, |all|) of all candidates. No candidate: asynchronous, or in strict mode the set in force
 * when it still names standbys (commits wait for them to come back), else the placeholder.
 */
export function targetSyncSet(settings: SyncSettings, candidates: string[], current: SyncSet): SyncSet {
  if (candidates.length > 0) {
    if (settings.mode === 'quorum') {
      return { kind: 'any', num: Math.min(settings.nodeCount, candidates.length), members: [...candidates].sort() };
    }
    const picks = candidates.slice(0, settings.nodeCount).sort();
    return { kind: 'first', num: picks.length, members: picks };
  }
  if (!settings.strict) return { kind: 'async' };
  const kind = settings.mode === 'quorum' ? 'any' : 'first';
  return current.kind === kind ? current : { kind: 'blocked' };
}

/** Inputs of one step of the synchronous-replication protocol (the leader, each cycle). */
export interface SyncStepInput {
  settings: SyncSettings;
  self: string;
  /** The `sync` key; undefined when absent. */
  key: SyncKey | undefined;
  /** The set this agent last wrote (or found running). */
  configured: SyncSet;
  /** PostgreSQL reports `configured` in force (a probe after the reload shows its text). */
  effective: boolean;
  /** Earlier sets whose acknowledgements are not known to be held by the members of `configured`. */
  uncovered: SyncSet[];
  /**
   * Members of `configured` PostgreSQL reports synchronous (pg_stat_replication.sync_state `sync`
   * or `quorum`) whose flush position reached the primary's flush position at the moment
   * `configured` took effect.
   */
  caughtUp: string[];
  /** syncCandidates(), best first. */
  candidates: string[];
}

/** One step: write the key, change the set, or nothing (with why the primary is degraded, if it is). */
export type SyncStep =
  | { kind: 'writeKey'; key: SyncKey; reason: string }
  | { kind: 'setGuc'; set: SyncSet; reason: string }
  | { kind: 'none'; target: SyncSet; degraded?: string };

function describe(s: SyncSet): string {
  switch (s.kind) {
    case 'async':
      return 'asynchronous (no standby)';
    case 'blocked':
      return 'no standby: commits wait (strict)';
    case 'unknown':
      return `unknown (${JSON.stringify(s.text ?? '')})`;
    default:
      return formatSyncSet(s);
  }
}

/**
 * The next step of the protocol (module docstring), for a leader whose synchronous mode is on:
 * 1. the key names another leader or is absent: write it with this leader and no member;
 * 2. the set differs from the target: first shrink the key until it protects the set in force,
 *    the uncovered ones and the target (members leave the key before they leave the set), then
 *    write the target set;
 * 3. the target is in force and covers the earlier sets: admit to the key the members that are
 *    synchronous and caught up (the quorum recomputed for the set in force).
 */
export function decideSyncStep(i: SyncStepInput): SyncStep {
  const { settings, self } = i;
  const mode = settings.mode;
  if (!i.key || i.key.leader !== self) {
    return {
      kind: 'writeKey',
      key: { leader: self, members: [], quorum: 0 },
      reason: `the sync key ${i.key ? `names ${i.key.leader}` : 'is absent'}: this leader takes it over with no standby`,
    };
  }
  const key = i.key;
  const target = targetSyncSet(settings, i.candidates, i.configured);
  if (!sameSyncSet(i.configured, target)) {
    const kept = key.members.filter(
      (m) => target.kind === 'blocked' || ((target.kind === 'first' || target.kind === 'any') && target.members.includes(m)),
    );
    const safe = protectiveKey(mode, self, kept, [i.configured, ...i.uncovered, target], mode === 'quorum' ? key.quorum : 0);
    if (!sameSyncKey(key, safe)) {
      const gone = key.members.filter((m) => !safe.members.includes(m));
      return {
        kind: 'writeKey',
        key: safe,
        reason: gone.length
          ? `removing ${gone.join(', ')} from the sync key before synchronous_standby_names changes to ${describe(target)}`
          : `raising the sync key's quorum to ${safe.quorum} before synchronous_standby_names changes to ${describe(target)}`,
      };
    }
    return { kind: 'setGuc', set: target, reason: `synchronous_standby_names: ${describe(i.configured)} -> ${describe(target)}` };
  }
  const degraded =
    i.candidates.length > 0
      ? undefined
      : settings.strict
        ? `no eligible synchronous standby: commits wait${target.kind === 'first' || target.kind === 'any' ? ` for ${formatSyncSet(target)}` : ''} (synchronous_mode_strict)`
        : 'no eligible synchronous standby: commits are acknowledged asynchronously (synchronous_mode_strict is off)';
  const none: SyncStep = { kind: 'none', target, ...(degraded ? { degraded } : {}) };
  if (!i.effective || i.uncovered.length > 0) return none;
  if (target.kind !== 'first' && target.kind !== 'any') return none;
  const admitted = i.caughtUp.filter((m) => target.members.includes(m));
  const wanted = [...new Set([...key.members.filter((m) => target.members.includes(m)), ...admitted])];
  const next = protectiveKey(mode, self, wanted, [target]);
  // Never empty a key to admit nobody; only grow or lower the quorum here.
  if (next.members.length === 0 || sameSyncKey(key, next)) return none;
  if (next.members.length < key.members.length) return none;
  const added = next.members.filter((m) => !key.members.includes(m));
  return {
    kind: 'writeKey',
    key: next,
    reason: added.length
      ? `${added.join(', ')} ${added.length > 1 ? 'are' : 'is'} synchronous and caught up: added to the sync key${mode === 'quorum' ? ` (quorum ${next.quorum})` : ''}`
      : `sync key quorum ${key.quorum} -> ${next.quorum}`,
  };
}

/**
 * How long after the leader key vanished the peers' published WAL positions can be trusted as
 * votes (mode `quorum`), ms. A member's status document carries the WAL position of its last
 * probe, not a position read at the request: a vote fetched right after the former primary
 * stopped may predate the last WAL it received — the commits acknowledged through it — and let a
 * member behind it win (finding 8, docs/simulation.md). The former primary stops before its key
 * goes (a graceful release, or a demotion before its lease runs out): positions probed more than
 * one probe age (1 s) plus a margin after the key went missing are final. That bound holds
 * because a peer's GET /ha (its status document, what the race fetches) is one of the API's
 * on-demand probe readers (PROBE_READERS, src/http/app.ts): the agent probes when its last probe
 * started more than 1 s before the request (LocalWatch.fresh, src/node/local/local-watch.ts); the
 * simulator keeps a probe every second. A probe that hangs past its bounded wait leaves an older
 * position, as a hanging periodic probe did. In failsafe mode a primary runs on without its key
 * until the POST /failsafe calls it sent stop binding the members: the count then starts at the
 * end of the calls binding the racer (finding 20; src/domain/ha-cycle.ts syncRule).
 */
export const VOTE_SETTLE_MS = 1500;

/** What the race reads of the `sync` key while synchronous mode is on. */
export interface SyncRaceRule {
  mode: 'on' | 'quorum';
  key: SyncKey;
  /**
   * Mode `quorum`: the former primary may have sent WAL less than VOTE_SETTLE_MS ago (the leader
   * key vanished, or the POST /failsafe calls binding this member ended, that recently); the
   * peers' positions may not show the last WAL it sent them yet. Votes of peers do not count
   * until then (this many ms from now).
   */
  votesSettleInMs?: number;
  /**
   * Mode `quorum`: epoch ms (this member's clock) of the last instant the former primary may have
   * sent WAL, as far as this member knows (syncRule in src/domain/ha-cycle.ts). A peer's vote
   * counts only when its WAL position was read at or after it (PeerStatus.walReadAtMs, from the
   * status document's `probe_age_ms`): a document served from a probe taken before, by an agent
   * that was frozen or whose probes hung, may not show the last commits acknowledged through that
   * peer (finding 30, docs/simulation.md). A peer whose document carries no age counts as before.
   */
  votesReadAfterMs?: number;
}

/**
 * May `self` take the leader lock under the `sync` key (patroni.md §3.3)? Its former leader may;
 * in mode `true` a listed member may; in `quorum` a member that gathers `key.quorum` votes from
 * listed members (itself included when listed) that answered and are not ahead of it. An empty
 * key promotes nobody but its leader. Returns undefined when allowed, else the reason.
 */
export function syncRaceRefusal(
  rule: SyncRaceRule,
  self: { name: string; walBytes: bigint },
  peers: { name: string; reachable: boolean; walBytes?: bigint; walReadAtMs?: number }[],
): string | undefined {
  const { key } = rule;
  if (key.leader === self.name) return undefined;
  if (key.members.length === 0) return `the sync key lists no synchronous standby: only its leader ${key.leader} may take over`;
  if (rule.mode === 'on') {
    return key.members.includes(self.name) ? undefined : `I am not a synchronous standby (sync key: ${key.members.join(', ')})`;
  }
  const needed = votesNeeded(rule.mode, key);
  const selfVote = key.members.includes(self.name) ? 1 : 0;
  if (rule.votesSettleInMs !== undefined && rule.votesSettleInMs > 0 && needed > selfVote) {
    return `waiting ${rule.votesSettleInMs} ms for the sync key members' WAL positions to settle before counting their votes`;
  }
  const after = rule.votesReadAfterMs;
  const stale: string[] = [];
  const voters = key.members.filter((m) => {
    if (m === self.name) return true;
    const p = peers.find((x) => x.name === m);
    if (!p || !p.reachable || p.walBytes === undefined || p.walBytes > self.walBytes) return false;
    if (after !== undefined && p.walReadAtMs !== undefined && p.walReadAtMs < after) {
      stale.push(`${m}'s was read ${Math.ceil(after - p.walReadAtMs)} ms before the former primary's last possible WAL`);
      return false;
    }
    return true;
  });
  if (voters.length >= needed) return undefined;
  const why = stale.length ? `; not counted: ${stale.join(', ')}` : '';
  return `quorum not reached: ${voters.length} of ${needed} votes from the sync key (${key.members.join(', ')}) not ahead of me${why}`;
}
