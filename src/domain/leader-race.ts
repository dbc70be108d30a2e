/**
 * The leader race rules: may this member take the leader lock when nobody holds it?
 * (patroni.md §3.3 "Healthiest-node test", seed 000 "A healthy member").
 */
import { failoverPriority } from './member.ts';
import { documentProbeAgeMs } from './status-document.ts';
import { syncRaceRefusal, type SyncRaceRule } from './sync-standby.ts';
import type { Member, Tags } from './member.ts';

/** What a peer told us through GET <api_url> (its status document), or that it did not answer. */
export interface PeerStatus {
  name: string;
  reachable: boolean;
  /** `primary`, `replica`, … as the peer reports it. */
  role?: string;
  /** One of the 15 states. */
  state?: string;
  /** WAL position: primary flush LSN, replica max(received, replayed). Bytes. */
  walBytes?: bigint;
  /**
   * Epoch ms (this member's clock) at or after which the peer read `walBytes`: when the request
   * was sent minus the document's `probe_age_ms`. Absent when the document has no age (an agent
   * of the reference, or an older one).
   */
  walReadAtMs?: number;
  /**
   * The peer's PostgreSQL does not run: where its data directory's WAL ends (its document's
   * `local_wal_end`, bytes) and on which timeline. Counted only under maximum_lag_on_failover
   * (finding 28). Absent when it runs, its data diverged, or the agent did not read it.
   */
  stoppedWal?: { walBytes: bigint; timeline: number };
  timeline?: number;
  tags?: Tags;
}

/**
 * Where another member's WAL stood when its agent last wrote its member key (`xlog_location` and
 * `timeline`, src/node/member/member-data.ts): the DCS's record, rewritten every cycle while the member's
 * database runs and the member reaches the DCS, so at most about one loop_wait old then. Bytes.
 */
export interface PublishedPosition {
  name: string;
  walBytes: bigint;
  timeline?: number;
}

/**
 * The WAL positions the member keys in `members` publish, `self`'s own left out. A key without
 * `xlog_location` (the member's database did not run at its last cycle) gives none.
 */
export function publishedPositions(members: readonly Member[], self: string): PublishedPosition[] {
  const out: PublishedPosition[] = [];
  for (const m of members) {
    const wal = m.data.xlog_location;
    if (m.name === self || typeof wal !== 'number' || !Number.isSafeInteger(wal) || wal < 0) continue;
    out.push({ name: m.name, walBytes: BigInt(wal), ...(typeof m.data.timeline === 'number' ? { timeline: m.data.timeline } : {}) });
  }
  return out;
}

/** This member's facts for the race. */
export interface SelfFacts {
  name: string;
  walBytes: bigint;
  timeline: number;
  tags: Tags;
}

/** Inputs of the race decision. */
export interface RaceInput {
  self: SelfFacts;
  peers: PeerStatus[];
  /** The leader's last published position (`status.optime`), bytes; 0 when unknown. */
  leaderOptimeBytes: bigint;
  maxLagBytes: number;
  checkTimeline: boolean;
  clusterTimeline: number;
  /** The `failover` key when it names a candidate or the former leader. */
  failover?: { leader?: string; member?: string };
  /**
   * Synchronous mode on and the `sync` key present: who may be promoted without losing an
   * acknowledged commit (src/domain/sync-standby.ts syncRaceRefusal). Absent: asynchronous rules.
   */
  sync?: SyncRaceRule;
  /**
   * Failsafe mode: false for a member the `failsafe` key does not list, which can never win the
   * race (src/domain/failsafe.ts failsafeListed). Absent: every member may.
   */
  failsafeListed?: (name: string) => boolean;
  /**
   * The WAL positions the other members' keys publish (publishedPositions). Used only for a
   * member that did not answer (or was not asked): more than maximum_lag_on_failover ahead of
   * the racer, it stops the race as a reachable member ahead would (finding 21). Absent: none.
   */
  published?: PublishedPosition[];
}

/** Verdict with the one-sentence reason the HA cycle logs. */
export type RaceVerdict = { healthy: true; reason: string } | { healthy: false; reason: string };

/** Status-document WAL position of a peer: primary `xlog.location`, replica max(received, replayed). */
export function peerWalFromStatus(doc: Record<string, unknown>): bigint | undefined {
  const xlog = doc['xlog'] as Record<string, unknown> | undefined;
  if (!xlog) return undefined;
  const nums = ['location', 'received_location', 'replayed_location'].map((k) => xlog[k]).filter((v): v is number => typeof v === 'number');
  if (nums.length === 0) return undefined;
  return nums.map((n) => BigInt(n)).reduce((a, b) => (a > b ? a : b));
}

/**
 * Builds a PeerStatus from a status document (undefined doc = unreachable). `sentAtMs`: epoch ms
 * the request was sent, with the document's `probe_age_ms` it dates the WAL position.
 */
export function peerFromStatus(name: string, doc: Record<string, unknown> | undefined, sentAtMs?: number): PeerStatus {
  if (!doc) return { name, reachable: false };
  const wal = peerWalFromStatus(doc);
  const age = documentProbeAgeMs(doc);
  const readAt = wal !== undefined && sentAtMs !== undefined && age !== undefined ? sentAtMs - age : undefined;
  const stoppedWal = wal === undefined && doc['diverged'] === undefined ? localWalEnd(doc['local_wal_end']) : undefined;
  return {
    name,
    reachable: true,
    ...(typeof doc['role'] === 'string' ? { role: doc['role'] } : {}),
    ...(typeof doc['state'] === 'string' ? { state: doc['state'] } : {}),
    ...(wal !== undefined ? { walBytes: wal } : {}),
    ...(readAt !== undefined ? { walReadAtMs: readAt } : {}),
    ...(stoppedWal ? { stoppedWal } : {}),
    ...(typeof doc['timeline'] === 'number' ? { timeline: doc['timeline'] } : {}),
    ...(doc['tags'] && typeof doc['tags'] === 'object' ? { tags: doc['tags'] as Tags } : {}),
  };
}

/** A status document's `local_wal_end` ({location, timeline}); undefined when absent or malformed. */
function localWalEnd(v: unknown): { walBytes: bigint; timeline: number } | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const { location, timeline } = v as Record<string, unknown>;
  if (typeof location !== 'number' || !Number.isSafeInteger(location) || location < 0) return undefined;
  if (typeof timeline !== 'number' || !Number.isSafeInteger(timeline) || timeline < 1) return undefined;
  return { walBytes: BigInt(location), timeline };
}

/**
 * The healthiest-node test. A member races only when all hold:
 * - it may be promoted (no `nofailover`, priority > 0);
 * - with a manual failover naming another reachable member, it steps aside; an operator's
 *   failover candidate races without the lag rule; the former leader of a switchover steps aside
 *   for a member that can win (not for one its own WAL position would stop);
 * - a switchover's candidate more than maximum_lag_on_failover behind the leader's last optime or
 *   a reachable member holds up nobody and does not race (the switchover did not hand over);
 *   nor does one whose timeline is behind that of this member or of a reachable member holding
 *   more WAL (a newer timeline the history key may not show yet: finding 23);
 * - its lag behind the leader's last optime is within maximum_lag_on_failover;
 * - its timeline is not behind the cluster timeline (with check_timeline never; without it only
 *   when no reachable member is on the cluster timeline);
 * - no reachable peer still runs as primary;
 * - synchronous mode with a `sync` key: the key lets it (listed; in quorum mode enough votes),
 *   unless an operator's failover names it;
 * - no reachable peer is ahead in WAL (excepted: the sync key's former leader, a peer the sync
 *   key refuses, a peer behind the cluster timeline while this member is on it, and a peer the
 *   failsafe key does not list as long as this member is within maximum_lag_on_failover of it);
 *   at equal WAL a peer with higher failover_priority wins (not one the failsafe key leaves out);
 * - no member that did not answer published in its member key a WAL position more than
 *   maximum_lag_on_failover ahead of this member (same exceptions; not for a failover or
 *   switchover candidate, whose own rules above already count it).
 * Unreachable peers count only through their member key's position, and only beyond the lag
 * tolerance (finding 21, docs/simulation.md).
 */
export function isHealthiest(input: RaceInput): RaceVerdict {
  const c = raceContext(input);
  return (
    notAllowed(c) ??
    candidateRaces(c) ??
    formerLeaderStepsAside(c) ??
    ownPosition(c) ??
    peersAhead(c) ??
    silentAhead(c) ?? { healthy: true, reason: c.isCandidate ? 'I am the failover candidate' : 'I am the healthiest member' }
  );
}

/** What the phases of isHealthiest share besides the input. */
interface RaceContext {
  input: RaceInput;
  /** This member and the peers, for the sync key's rules. */
  everyone: { name: string; reachable: boolean; walBytes?: bigint }[];
  myPriority: number;
  /** A manual failover or switchover names this member. */
  isCandidate: boolean;
  /** An operator's failover (a candidate without a leader) names this member: it races without the lag rule. */
  operatorFailover: boolean;
  maxLag: bigint;
  /** The sync key does not let `p` win at all (a quorum vote still settling is not a refusal). */
  syncRefuses(p: { name: string; walBytes?: bigint }): boolean;
  /**
   * A switchover's candidate more than maximum_lag_on_failover behind the leader's last optime or
   * behind a member (this one, or a reachable peer) does not hold up the race, and races under
   * the lag rule itself: the switchover did not hand over (finding 19).
   */
  switchoverCandidateLags(cand: { walBytes?: bigint }): boolean;
}

function raceContext(input: RaceInput): RaceContext {
  const { self, peers, failover } = input;
  const everyone = [{ name: self.name, reachable: true, walBytes: self.walBytes }, ...peers];
  const settled = input.sync ? { mode: input.sync.mode, key: input.sync.key } : undefined;
  const isCandidate = failover?.member === self.name;
  return {
    input,
    everyone,
    myPriority: failoverPriority(self.tags),
    isCandidate,
    operatorFailover: isCandidate && !failover?.leader,
    maxLag: BigInt(input.maxLagBytes),
    syncRefuses: (p) => !!settled && syncRaceRefusal(settled, { name: p.name, walBytes: p.walBytes ?? 0n }, everyone) !== undefined,
    switchoverCandidateLags: (cand) =>
      !!failover?.leader && cand.walBytes !== undefined && switchoverLag(cand.walBytes, input) !== undefined,
  };
}

/** A member that may never be promoted (nofailover, priority 0) does not race, unless an operator names it. */
function notAllowed(c: RaceContext): RaceVerdict | undefined {
  return c.myPriority <= 0 && !c.isCandidate ? { healthy: false, reason: 'I am not allowed to promote' } : undefined;
}

/**
 * A manual failover or switchover names another member: it races alone only while it can
 * promote (patroni.md §3.5: "if it is healthy"); a candidate that is down, has no running
 * database, or (in a switchover) is behind the cluster timeline does not hold up the race.
 */
function candidateRaces(c: RaceContext): RaceVerdict | undefined {
  const { input } = c;
  const { self, peers, failover } = input;
  if (!failover?.member || c.isCandidate) return undefined;
  const cand = peers.find((p) => p.name === failover.member);
  const candBehind =
    !!failover.leader &&
    !!cand &&
    ((cand.timeline !== undefined && input.clusterTimeline > 0 && cand.timeline < input.clusterTimeline) ||
      newerTimelineAhead(cand, input) !== undefined);
  // A switchover's candidate the sync key no longer lets be promoted (it left the key after the
  // request was accepted) does not hold up the race either: it would refuse it, and everyone
  // would wait for it (ha simulate, docs/simulation.md).
  const candRefusedBySync =
    !!failover.leader &&
    !!input.sync &&
    !!cand &&
    syncRaceRefusal(input.sync, { name: cand.name, walBytes: cand.walBytes ?? 0n }, [
      { name: self.name, reachable: true, walBytes: self.walBytes },
      ...peers,
    ]) !== undefined;
  // Nor does a candidate the failsafe key does not list: it would refuse to race ("not listed in
  // the failsafe key") while the others waited for it (finding 12, docs/simulation.md).
  const candUnlisted = !!input.failsafeListed && !input.failsafeListed(failover.member);
  const candLags = !!cand && c.switchoverCandidateLags(cand);
  if (
    cand?.reachable &&
    cand.state === 'running' &&
    failoverPriority(cand.tags) > 0 &&
    !candBehind &&
    !candRefusedBySync &&
    !candUnlisted &&
    !candLags
  ) {
    return { healthy: false, reason: `manual failover to ${failover.member} in progress` };
  }
  return undefined;
}

/**
 * The former leader of a switchover steps aside, but only for a member that can win the race:
 * running, allowed to promote, not behind the cluster timeline (no member behind it wins by
 * itself), let by the sync key (synchronous mode), in failsafe mode listed in the failsafe key,
 * and not stopped by this member's WAL position: the candidate (it races without comparing WAL),
 * a member at or past this one's position, or one whose race skips this member (the sync key's
 * former leader or a member it refuses; this member behind the cluster timeline while the peer is
 * on it). Otherwise nobody would take the lock (findings 13 and 18, docs/simulation.md).
 */
function formerLeaderStepsAside(c: RaceContext): RaceVerdict | undefined {
  const { input } = c;
  const { self, peers, failover } = input;
  if (failover?.leader !== self.name || c.isCandidate) return undefined;
  const selfAsPeer = { name: self.name, walBytes: self.walBytes };
  const peerSkipsMyWal = (p: PeerStatus) =>
    (!!input.sync && input.sync.key.leader === self.name) ||
    c.syncRefuses(selfAsPeer) ||
    (input.clusterTimeline > 0 && self.timeline < input.clusterTimeline && p.timeline !== undefined && p.timeline >= input.clusterTimeline);
  const other = peers.some(
    (p) =>
      p.reachable &&
      p.state === 'running' &&
      failoverPriority(p.tags) > 0 &&
      !(input.clusterTimeline > 0 && p.timeline !== undefined && p.timeline < input.clusterTimeline) &&
      !c.syncRefuses(p) &&
      (input.failsafeListed?.(p.name) ?? true) &&
      ((p.name === failover.member && !c.switchoverCandidateLags(p) && newerTimelineAhead(p, input) === undefined) ||
        p.walBytes === undefined ||
        p.walBytes >= self.walBytes ||
        peerSkipsMyWal(p)),
  );
  return other ? { healthy: false, reason: 'I am the former leader of a switchover' } : undefined;
}

/** This member's own position: the lag rule, a switchover candidate's extra rules, the sync key, the cluster timeline. */
function ownPosition(c: RaceContext): RaceVerdict | undefined {
  const { input, operatorFailover } = c;
  const { self } = input;
  // Only an operator's failover (a candidate without a leader) races without the lag rule and may
  // take a member behind the cluster timeline; a switchover candidate may not.
  if (!operatorFailover && input.leaderOptimeBytes > 0n && input.leaderOptimeBytes - self.walBytes > c.maxLag) {
    return { healthy: false, reason: 'my wal position exceeds maximum replication lag' };
  }
  if (c.isCandidate && !operatorFailover) {
    // A switchover whose leader did not hand over (its lock ran out while it kept writing, e.g. in
    // failsafe mode): a candidate far behind a member it can reach would drop that WAL.
    const ahead = switchoverLag(self.walBytes, input);
    if (ahead) return { healthy: false, reason: `wal position of ${ahead} is more than maximum_lag_on_failover ahead of mine` };
    // It races without comparing WAL: behind a newer timeline that a member holding more WAL runs
    // on, it would fork a second timeline with that number (finding 23).
    const newer = newerTimelineAhead(self, input);
    if (newer)
      return {
        healthy: false,
        reason: `my timeline ${self.timeline} is behind timeline ${newer.timeline} of ${newer.name}, which holds more WAL`,
      };
  }
  // Synchronous mode: only a member the sync key shows holding every acknowledged commit; an
  // operator's failover naming a member may still take an asynchronous one (patroni.md §3.5).
  if (input.sync && !operatorFailover) {
    const refusal = syncRaceRefusal(input.sync, self, input.peers);
    if (refusal) return { healthy: false, reason: refusal };
  }
  if (!operatorFailover && input.clusterTimeline > 0 && self.timeline < input.clusterTimeline) {
    // A member behind the cluster timeline that promotes forks a second timeline with a number
    // already used (PostgreSQL picks the next free number it knows of), often at the very same
    // switch point: two lineages no history file can tell apart. Never automatically, whatever
    // check_timeline says, nor as a switchover's candidate; an operator's failover naming this
    // member still may (docs/ha.md "Leader race").
    return { healthy: false, reason: `my timeline ${self.timeline} is behind the cluster timeline ${input.clusterTimeline}` };
  }
  return undefined;
}

/** A reachable peer still running as primary, ahead in WAL, or at equal WAL with a higher priority (with the exceptions of isHealthiest). */
function peersAhead(c: RaceContext): RaceVerdict | undefined {
  const { input } = c;
  const { self, failover } = input;
  for (const p of input.peers) {
    if (!p.reachable || p.name === self.name) continue;
    if (p.role === 'primary' && p.state === 'running') return { healthy: false, reason: `primary (${p.name}) is still alive` };
    if (c.isCandidate || p.walBytes === undefined || skipsPosition(c, p)) continue;
    // A peer the failsafe key does not list never wins the race (failsafeRaceVeto), and nothing
    // but a leader rewrites the key: deferring to it for its WAL position or its priority would
    // leave nobody to take over (finding 24). Its WAL still counts under the lag rule: this member
    // races only within maximum_lag_on_failover of it (what an asynchronous failover may drop). In
    // synchronous mode no acknowledged commit is at stake: the sync key, checked above, let this
    // member, so it holds them all (as for a peer the sync key refuses, finding 14).
    if (input.failsafeListed && !input.failsafeListed(p.name)) {
      if (p.walBytes - self.walBytes > c.maxLag)
        return {
          healthy: false,
          reason: `wal position of ${p.name} (not listed in the failsafe key) is more than maximum_lag_on_failover ahead of mine`,
        };
      continue;
    }
    if (p.walBytes > self.walBytes) return { healthy: false, reason: `wal position of ${p.name} is ahead of my wal position` };
    if (p.walBytes === self.walBytes && failoverPriority(p.tags) > c.myPriority && p.name !== failover?.leader) {
      return { healthy: false, reason: `${p.name} has equally tolerable wal position and higher priority` };
    }
  }
  return undefined;
}

/**
 * Whose WAL position does not count against this member: the sync key's former leader (it may
 * hold WAL it never had acknowledged); a member the sync key does not let win (it holds no
 * acknowledged commit this member lacks: the key lets this member, which holds them all, its
 * votes included; deferring to it would leave nobody to take over, finding 14); a member behind
 * the cluster timeline while this one is on it (it never wins the race by itself, and what it
 * has past the cluster's switch point is not in the cluster's history).
 */
function skipsPosition(c: RaceContext, p: { name: string; walBytes?: bigint; timeline?: number }): boolean {
  const { input } = c;
  if (input.sync && p.name === input.sync.key.leader) return true;
  if (c.syncRefuses(p)) return true;
  return (
    input.clusterTimeline > 0 &&
    p.timeline !== undefined &&
    p.timeline < input.clusterTimeline &&
    input.self.timeline >= input.clusterTimeline
  );
}

/**
 * A member that did not answer (a network cut, a late or lost answer) is not known to be gone:
 * its member key still shows where its WAL stood at its last cycle, and the leader's last optime
 * can be older than that (the leader wrote on after its last status update: its DCS was cut,
 * failsafe mode). Ignoring it let a member promote more than maximum_lag_on_failover behind a
 * member whose answer had been lost to a network cut that healed before the promotion (finding
 * 21). More than the lag tolerance ahead, it stops the race as a reachable peer ahead would;
 * within it, not (the key is up to a cycle old, and a member that cannot be asked must not hold
 * up a failover the lag rule allows). The exceptions of peersAhead hold. Not for a candidate.
 */
function silentAhead(c: RaceContext): RaceVerdict | undefined {
  if (c.isCandidate) return undefined;
  for (const k of silentPositions(c.input)) {
    if (skipsPosition(c, k)) continue;
    if (k.walBytes - c.input.self.walBytes > c.maxLag) {
      return {
        healthy: false,
        reason: `wal position of ${k.name} (${k.source}) is more than maximum_lag_on_failover ahead of mine`,
      };
    }
  }
  return undefined;
}

/** A position the race knows of a member that is not running and answering (silentPositions). */
interface SilentPosition extends PublishedPosition {
  /** Where it comes from, for the reason: `its member key; it did not answer` or `its PostgreSQL is not running`. */
  source: string;
}

/**
 * The positions of members other than `input.self` that are not a reachable peer with a running
 * PostgreSQL: the published positions (RaceInput.published) of those that did not answer, were
 * not asked, or answered without any WAL position (finding 31), and where the WAL of a reachable
 * peer whose PostgreSQL does not run ends (PeerStatus.stoppedWal: a former leader restarting after
 * a crash may hold WAL past its last published optime, finding 28) unless that is on a timeline
 * behind the cluster timeline (what such WAL holds past the cluster's switch point is not in the
 * cluster's history).
 */
function silentPositions(input: Pick<RaceInput, 'self' | 'peers' | 'published' | 'clusterTimeline'>): SilentPosition[] {
  const silent: SilentPosition[] = [];
  for (const k of input.published ?? []) {
    if (k.name === input.self.name) continue;
    const peer = input.peers.find((p) => p.reachable && p.name === k.name);
    // An answer without a position (an agent just restarted that has not read its PostgreSQL yet:
    // finding 31) says nothing of where its WAL ends: its member key still does.
    if (!peer) silent.push({ ...k, source: 'its member key; it did not answer' });
    else if (peer.walBytes === undefined && !peer.stoppedWal)
      silent.push({ ...k, source: 'its member key; its answer had no WAL position' });
  }
  for (const p of input.peers) {
    const behind = !!p.stoppedWal && input.clusterTimeline > 0 && p.stoppedWal.timeline < input.clusterTimeline;
    if (p.reachable && p.walBytes === undefined && p.stoppedWal && !behind && p.name !== input.self.name)
      silent.push({
        name: p.name,
        walBytes: p.stoppedWal.walBytes,
        timeline: p.stoppedWal.timeline,
        source: 'its PostgreSQL is not running',
      });
  }
  return silent;
}

/**
 * Is a switchover candidate at WAL position `candWal` (bytes) more than maximum_lag_on_failover
 * behind the leader's last optime or behind a member of `input` (self, reachable peers, the
 * member-key position of a member that did not answer: finding 21)? Returns
 * the name of the member ahead (`'the leader's last optime'` for the optime), undefined when none.
 * Asynchronous standbys of a graceful switchover are within a few bytes of each other (the
 * leader's shutdown checkpoint reaches every streaming standby), so the tolerance only matters
 * when the switchover did not hand over (docs/simulation.md finding 19).
 */
function switchoverLag(
  candWal: bigint,
  input: Pick<RaceInput, 'self' | 'peers' | 'leaderOptimeBytes' | 'maxLagBytes' | 'published' | 'clusterTimeline'>,
): string | undefined {
  const maxLag = BigInt(input.maxLagBytes);
  if (input.leaderOptimeBytes > 0n && input.leaderOptimeBytes - candWal > maxLag) return "the leader's last optime";
  if (input.self.walBytes - candWal > maxLag) return input.self.name;
  for (const p of input.peers) {
    if (p.reachable && p.walBytes !== undefined && p.walBytes - candWal > maxLag) return p.name;
  }
  for (const k of silentPositions(input)) {
    if (k.walBytes - candWal > maxLag) return `${k.name} (${k.source})`;
  }
  return undefined;
}

/**
 * Would a switchover's candidate `cand` (its timeline and WAL position, bytes) fork a second
 * timeline with a number already in use? Returns the member of `input` (this one, or a reachable
 * peer; not the candidate) that runs on a newer timeline than the candidate's with more WAL than
 * it, undefined when there is none or the candidate's timeline or position is unknown.
 *
 * The race's cluster timeline comes from the `history` key, which a leader that died right after
 * its promotion never wrote; its replicas run on its new timeline all the same. A candidate still
 * on the parent timeline that promotes makes a timeline with the same number (PostgreSQL takes
 * the newest it knows of plus one) and, having stopped where that leader promoted, the same
 * switch point: two lineages that no history file, and no divergence check, tells apart — such a
 * replica would later stream from the candidate (finding 23, docs/simulation.md). A member on the
 * newer timeline always holds more WAL than that switch point (at least the promotion's
 * checkpoint); a candidate ahead of it in WAL forks at another point, which the history files
 * tell, so it still may race (refusing it could leave nobody to take over).
 */
function newerTimelineAhead(
  cand: { name: string; timeline?: number; walBytes?: bigint },
  input: Pick<RaceInput, 'self' | 'peers'>,
): { name: string; timeline: number } | undefined {
  if (cand.timeline === undefined || cand.walBytes === undefined) return undefined;
  const members: PeerStatus[] = [
    { name: input.self.name, reachable: true, timeline: input.self.timeline, walBytes: input.self.walBytes },
    ...input.peers,
  ];
  for (const m of members) {
    if (m.name === cand.name || !m.reachable || m.timeline === undefined || m.walBytes === undefined) continue;
    if (m.timeline > cand.timeline && m.walBytes > cand.walBytes) return { name: m.name, timeline: m.timeline };
  }
  return undefined;
}

/** What the leader knows of a handover: its own position, the lag bound, the cluster timeline, and whether it is a failover. */
export interface CandidateOptions {
  leaderOptimeBytes: bigint;
  maxLagBytes: number;
  checkTimeline: boolean;
  clusterTimeline: number;
  failover: boolean;
}

/**
 * Is a peer eligible to take over in a switchover or failover the leader carries out
 * (seed 000 healthy-member rules 1, 2, 4, 5)? Its timeline must not be behind the cluster's;
 * `failover` skips the lag rule.
 */
export function isEligibleCandidate(p: PeerStatus, opts: CandidateOptions): boolean {
  return candidateRefusal(p, opts) === undefined;
}

/**
 * Why a peer may not take over in a handover the leader carries out (isEligibleCandidate's rules,
 * in its order), as a sentence for the log and the API's answer (issue 30, item 5: a refused
 * switchover answers with its reason); undefined when it may.
 */
export function candidateRefusal(p: PeerStatus, opts: CandidateOptions): string | undefined {
  if (!p.reachable) return `${p.name} did not answer the leader's status request`;
  if (p.state !== 'running') return `${p.name} is not running (${p.state ?? 'state unknown'})`;
  if (failoverPriority(p.tags) <= 0) return `${p.name} is tagged nofailover (or failover_priority 0)`;
  // A candidate behind the cluster timeline would fork a second timeline with a used number.
  if (p.timeline !== undefined && p.timeline < opts.clusterTimeline) {
    return `${p.name} is on timeline ${p.timeline}, behind the cluster's ${opts.clusterTimeline} (it has not followed the current leader yet)`;
  }
  if (opts.failover) return undefined;
  if (p.walBytes !== undefined && opts.leaderOptimeBytes - p.walBytes > BigInt(opts.maxLagBytes)) {
    return `${p.name} is ${opts.leaderOptimeBytes - p.walBytes} bytes behind the leader (maximum_lag_on_failover ${opts.maxLagBytes})`;
  }
  return undefined;
}
