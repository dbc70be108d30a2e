/**
 * Timeline history files (`pg_wal/<TLI>.history`, PostgreSQL docs "Timelines") and the
 * divergence check a former primary or replica runs before following a new leader.
 */
import { parseLsn } from './lsn.ts';
import type { HistoryEntry } from './cluster.ts';

/** One line of a history file: the parent timeline, where it ended (bytes), and why. */
export interface HistoryLine {
  timeline: number;
  switchLsn: bigint;
  reason: string;
}

/** Parses a `.history` file: lines `<parentTLI>\t<X/Y>\t<reason>`; comments and blanks skipped. */
export function parseHistoryFile(text: string): HistoryLine[] {
  const out: HistoryLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [tli, lsn, ...rest] = line.split(/\s+/);
    if (!tli || !lsn || !/^\d+$/.test(tli)) continue;
    out.push({ timeline: Number(tli), switchLsn: parseLsn(lsn), reason: rest.join(' ') });
  }
  return out;
}

/**
 * The DCS `history` value from a history file: `[timeline, switch_lsn_int, reason, timestamp, new_leader]`
 * per line. Timestamps and leaders of earlier entries are kept from `previous` when the timeline
 * and its switch point match.
 */
export function historyEntries(lines: HistoryLine[], opts: { previous?: HistoryEntry[]; now: string; newLeader: string }): HistoryEntry[] {
  return lines.map((l, i) => {
    // An earlier entry is kept only when it describes the same fork (same switch point): another
    // member's promotion from the same parent timeline is another lineage.
    const prev = opts.previous?.find((e) => e[0] === l.timeline && Number(l.switchLsn) === e[1]);
    const last = i === lines.length - 1;
    if (prev && !last) return prev;
    // The last line is the fork this leader's own promotion made: it names this leader.
    if (last && prev && prev[4] !== undefined && prev[4] !== opts.newLeader)
      return [l.timeline, Number(l.switchLsn), l.reason, opts.now, opts.newLeader];
    return [l.timeline, Number(l.switchLsn), l.reason, prev?.[3] ?? opts.now, prev?.[4] ?? (last ? opts.newLeader : undefined)].filter(
      (x) => x !== undefined,
    ) as HistoryEntry;
  });
}

/** What the local data directory says about where it stopped. */
export interface LocalPosition {
  /** pg_controldata "Database cluster state". */
  clusterState: string;
  /**
   * The newest timeline of the local WAL: the timeline of `walEndLsn` when the WAL end was read,
   * else the latest checkpoint's TimeLineID.
   */
  timeline: number;
  /** Latest checkpoint location, bytes. */
  checkpointLsn: bigint;
  /** Minimum recovery ending location, bytes (0 on a primary). */
  minRecoveryLsn: bigint;
  /**
   * Where the valid local WAL of `timeline` ends, read from the WAL itself (pg_waldump: the end of
   * its last valid record, where PostgreSQL's replay of it stops); bytes. Undefined when it could
   * not be read.
   */
  walEndLsn?: bigint;
  /** Why the WAL end could not be read: such data counts as diverged unless it shut down cleanly (never a guess). */
  walEndError?: string;
  /**
   * The local history of `timeline` (its `pg_wal/<TLI>.history`), when it is above 1 and known:
   * where each earlier timeline ended on this member's lineage.
   */
  history?: HistoryLine[];
  /** The promotion marker of the data directory: which member's promotion made `timeline` (when it records that timeline). */
  promotedBy?: string;
  /**
   * pg_rewind can work on this data directory: false when pg_controldata shows neither
   * `wal_log_hints` on nor data checksums; undefined when unknown (pg_rewind then decides).
   */
  rewindable?: boolean;
}

/** A clean shutdown: the data directory's WAL ends at its shutdown checkpoint (primary) or restartpoint (replica). */
export function shutDownCleanly(clusterState: string): boolean {
  return clusterState === 'shut down' || clusterState === 'shut down in recovery';
}

/** Verdict of the divergence check. */
export type Divergence = { kind: 'ok' } | { kind: 'diverged'; reason: string } | { kind: 'unknown'; reason: string };

/**
 * checkDivergence's lineage checks: the same timeline numbers with another lineage (a timeline
 * forked twice ends its parent at another point; or the leader's history names another member's
 * promotion for the local timeline). Undefined when neither shows.
 */
function otherLineage(local: LocalPosition, history: HistoryEntry[] | undefined): Divergence | undefined {
  // Same numbers, other lineage: a timeline forked twice (two members promoted from the same
  // parent) has the same number on both sides but ends its parents at other points.
  for (const line of local.history ?? []) {
    const theirs = history?.find((e) => e[0] === line.timeline);
    if (!theirs) return { kind: 'unknown', reason: `the leader's history does not describe timeline ${line.timeline} yet` };
    if (BigInt(theirs[1]) !== line.switchLsn) {
      return {
        kind: 'diverged',
        reason: `timeline ${line.timeline} ends at ${line.switchLsn} in the local history but at ${theirs[1]} in the leader's: another timeline ${line.timeline + 1}`,
      };
    }
  }
  // The same timeline number made by two promotions: the leader's history names who made it.
  if (local.promotedBy !== undefined && local.timeline > 1) {
    const made = history?.find((e) => e[0] === local.timeline - 1);
    if (made && made[4] !== undefined && made[4] !== local.promotedBy) {
      return {
        kind: 'diverged',
        reason: `timeline ${local.timeline} here was made by ${local.promotedBy}'s promotion, the leader's by ${made[4]}'s`,
      };
    }
  }
  return undefined;
}

/**
 * May a data directory that stopped at `local` stream from a leader on `leaderTimeline` whose
 * timeline history is `history` (the DCS key)? (docs/ha.md "Divergence")
 * - same timeline: ok (the leader is the same lineage);
 * - local timeline ahead of the leader's: diverged;
 * - behind: the local WAL must end at or before the switch point of its timeline in the leader's
 *   history. Where it ends is read from the WAL itself when it was (`walEndLsn`: the end of the
 *   last valid record, compared with the switch point, which is the end of the last record the
 *   new leader's timeline kept); otherwise a clean shutdown ends at its shutdown checkpoint
 *   (primary) or minimum recovery point (replica), and data that did not shut down cleanly and
 *   whose WAL end could not be read counts as diverged (never a guess).
 */
export function checkDivergence(local: LocalPosition, leaderTimeline: number, history: HistoryEntry[] | undefined): Divergence {
  if (leaderTimeline === 0) return { kind: 'unknown', reason: 'leader timeline unknown' };
  const fork = otherLineage(local, history);
  if (fork) return fork;
  if (local.timeline === leaderTimeline) return { kind: 'ok' };
  if (local.timeline > leaderTimeline)
    return { kind: 'diverged', reason: `local timeline ${local.timeline} is ahead of the leader's ${leaderTimeline}` };
  const entry = history?.find((e) => e[0] === local.timeline);
  if (!entry) return { kind: 'unknown', reason: `no history entry for timeline ${local.timeline}` };
  const switchLsn = BigInt(entry[1]);
  if (local.walEndLsn !== undefined) {
    if (local.walEndLsn > switchLsn) {
      return {
        kind: 'diverged',
        reason: `local WAL (ends at ${local.walEndLsn}) goes past the switch point (${switchLsn}) of timeline ${local.timeline}`,
      };
    }
    return { kind: 'ok' };
  }
  if (!shutDownCleanly(local.clusterState)) {
    const who = local.clusterState === 'in production' ? 'former primary' : 'data directory';
    return {
      kind: 'diverged',
      reason: `${who} of timeline ${local.timeline} did not shut down cleanly ('${local.clusterState}') and where its WAL ends could not be read${local.walEndError ? `: ${local.walEndError}` : ''}`,
    };
  }
  // The checkpoint LSN is where the last checkpoint record *starts*: that record must lie before
  // the switch point. The minimum recovery point is where replayed WAL *ends*: it may reach the
  // switch point (the end of the old timeline's last record) but not go past it.
  if (local.checkpointLsn >= switchLsn) {
    return {
      kind: 'diverged',
      reason: `local WAL (checkpoint at ${local.checkpointLsn}) goes past the switch point (${switchLsn}) of timeline ${local.timeline}`,
    };
  }
  if (local.minRecoveryLsn > switchLsn) {
    return {
      kind: 'diverged',
      reason: `local WAL (replayed to ${local.minRecoveryLsn}) goes past the switch point (${switchLsn}) of timeline ${local.timeline}`,
    };
  }
  return { kind: 'ok' };
}
