/**
 * The local database's part of the gather step: the database machine's state, whether the data
 * directory holds a cluster, the probe while it runs, and where a stopped data directory's WAL
 * ends (pg_controldata, the WAL itself, the history file and promotion marker of its timeline:
 * docs/ha.md "Divergence"). Updates the cycle's trackers from what it read (system identifier,
 * not streaming since, replica timeline).
 */
import type { CycleInput } from '../../domain/ha-cycle.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { DatabaseState } from '../../domain/states.ts';
import { parseHistoryFile, type HistoryLine, type LocalPosition } from '../../domain/timeline-history.ts';
import type { PgControl } from '../../postgres/types.ts';
import type { DatabaseView } from '../node-core.ts';
import { isBusy } from '../local/busy.ts';
import type { CycleTrackers } from './trackers.ts';

/** What the local step reads and calls. */
export interface LocalFactsDeps {
  pg: Pick<PgControl, 'hasData' | 'controlData' | 'walEnd' | 'readTimelineHistory' | 'readPromotion'>;
  /** The database machine actor. */
  db(): DatabaseView;
  /** Probes the local database now; `probe()` is then the newest status. */
  probeNow(): Promise<void>;
  probe(): PgStatus | undefined;
  trackers: Pick<CycleTrackers, 'noteSystemIdentifier' | 'observeProbe' | 'observeStoppedWal' | 'facts'>;
}

/** The local database this cycle. */
export interface LocalFacts {
  state: DatabaseState;
  role: CycleInput['db']['role'];
  /** An effect runs (or a promotion). */
  busy: boolean;
  hasData: boolean;
  /** The probe, while running. */
  probe: PgStatus | undefined;
  /** Where a stopped data directory ends; undefined while running, busy, empty or unreadable. */
  local: LocalPosition | undefined;
  /** A running replica's history file of its timeline (above 1). */
  replicaHistory?: HistoryLine[];
  /** A running replica's promotion marker, when it records its timeline. */
  replicaPromotedBy?: string;
}

/** Reads the local facts of one cycle that began at `nowMs`. */
export async function readLocalFacts(deps: LocalFactsDeps, nowMs: number): Promise<LocalFacts> {
  const { pg } = deps;
  const snap = deps.db().getSnapshot();
  const state = snap.value as DatabaseState;
  const busy = isBusy(state) || snap.context.promoting;
  const hasData = await pg.hasData();
  if (state === 'running') await deps.probeNow();
  const probe = state === 'running' ? deps.probe() : undefined;
  if (state === 'running' && deps.trackers.facts.sysid === undefined) await runningSystemIdentifier(deps);
  const local = hasData && !busy && state !== 'running' ? await stoppedPosition(deps) : undefined;
  deps.trackers.observeProbe(state, probe, nowMs);
  deps.trackers.observeStoppedWal(state, hasData, local);
  const replicaTl = probe?.inRecovery ? Math.max(probe.timeline, deps.trackers.facts.replicaTimeline) : 0;
  const replicaHistory = replicaTl ? await localHistory(pg, replicaTl) : undefined;
  const replicaPromotedBy = replicaTl ? await promotedBy(pg, replicaTl) : undefined;
  return {
    state,
    role: snap.context.role,
    busy,
    hasData,
    probe,
    local,
    ...(replicaHistory ? { replicaHistory } : {}),
    ...(replicaPromotedBy ? { replicaPromotedBy } : {}),
  };
}

/**
 * The system identifier of a database that was running when this agent met it (a postmaster
 * adopted at start: no stop, bootstrap or clone of ours read pg_controldata), read once with
 * pg_controldata, which reads the control file of a running server too. In pause, a running
 * primary takes the leader lock only when it is known to match the cluster's (decideCycle's
 * pausedPrimaryRace, issue 26). A failure leaves it unknown until the next cycle.
 */
async function runningSystemIdentifier(deps: LocalFactsDeps): Promise<void> {
  try {
    deps.trackers.noteSystemIdentifier((await deps.pg.controlData()).systemIdentifier);
  } catch {
    // unknown this cycle
  }
}

/** Where the stopped data directory ends (pg_controldata; the WAL end from the WAL itself); undefined when pg_controldata cannot be read. */
async function stoppedPosition(deps: LocalFactsDeps): Promise<LocalPosition | undefined> {
  const { pg } = deps;
  try {
    const cd = await pg.controlData();
    deps.trackers.noteSystemIdentifier(cd.systemIdentifier);
    // Where the WAL ends is read from the WAL itself (docs/ha.md "Divergence"; kept by
    // PgControl while nothing changes); a failure is kept as the reason.
    let walEnd: { timeline: number; endLsn: bigint } | undefined;
    let walEndError: string | undefined;
    try {
      walEnd = await pg.walEnd();
    } catch (e) {
      walEndError = String(e instanceof Error ? e.message : e)
        .replace(/\s+/g, ' ')
        .slice(0, 300);
    }
    const timeline = walEnd?.timeline ?? cd.checkpointTimeline;
    const history = await localHistory(pg, timeline);
    const marker = await promotedBy(pg, timeline);
    return {
      clusterState: cd.clusterState,
      timeline,
      checkpointLsn: cd.checkpointLsn,
      minRecoveryLsn: cd.minRecoveryLsn,
      ...(walEnd ? { walEndLsn: walEnd.endLsn } : {}),
      ...(walEndError ? { walEndError } : {}),
      ...(history ? { history } : {}),
      ...(marker ? { promotedBy: marker } : {}),
      // pg_rewind needs wal_log_hints or data checksums (unknown: let pg_rewind decide).
      ...(cd.walLogHints === false && (cd.dataChecksumVersion ?? 0) === 0 ? { rewindable: false } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The member whose promotion made `timeline`, when the data directory's marker records that timeline. */
async function promotedBy(pg: Pick<PgControl, 'readPromotion'>, timeline: number): Promise<string | undefined> {
  if (timeline <= 1) return undefined;
  const marker = await pg.readPromotion().catch(() => undefined);
  return marker?.timeline === timeline ? marker.member : undefined;
}

/** The local history file of `timeline` (above 1), parsed; undefined when absent or unreadable. */
async function localHistory(pg: Pick<PgControl, 'readTimelineHistory'>, timeline: number): Promise<HistoryLine[] | undefined> {
  if (timeline <= 1) return undefined;
  try {
    return parseHistoryFile(await pg.readTimelineHistory(timeline));
  } catch {
    return undefined;
  }
}
