/**
 * The node snapshot the HTTP handlers and metrics read (src/domain/snapshot.ts). The same object
 * is handed out until one of its inputs changes (XState snapshots, probes, DCS views and configs
 * are new objects on every change), so the API can reuse what it rendered for it (src/http/app.ts).
 */
import type { NodeSnapshot } from '../../domain/snapshot.ts';
import type { DatabaseState } from '../../domain/states.ts';
import { publishedRole, standbyClusterOf } from '../../domain/standby-cluster.ts';
import type { Dcs } from '../../dcs/dcs.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { CycleFacts } from '../cycle/trackers.ts';
import type { ScheduledWork } from '../cycle/schedules.ts';
import type { Failsafe } from '../lock/failsafe.ts';
import type { Fencing } from '../lock/fencing.ts';
import type { LeaderLock } from '../lock/leader-lock.ts';
import type { ReceiptSummary } from '../local/receipts.ts';
import type { OperationProgress } from '../../domain/progress.ts';
import type { DatabaseView, NodeDeps, NodeState } from '../node-core.ts';
import type { SyncManager } from '../replication/sync-manager.ts';
import { effectiveTags } from './member-data.ts';
import type { MemberKey } from './member-key.ts';

/** What the snapshot is built from (HaNode wires it). */
export interface SnapshotDeps extends Pick<NodeDeps, 'name' | 'scope' | 'version' | 'apiUrl' | 'connUrl'> {
  dcs: Pick<Dcs, 'view' | 'lastSeenMs'>;
  state: Readonly<Pick<NodeState, 'config' | 'tags' | 'lastLoopMs'>>;
  /** The cycle's facts: system identifier, divergence, not streaming since, ghost leader. */
  facts: Pick<CycleFacts, 'sysid' | 'divergedReason' | 'notStreamingSinceMs' | 'ghostLeader' | 'stoppedWal'>;
  lock: Pick<LeaderLock, 'held' | 'untilMs'>;
  fencing: Pick<Fencing, 'status'>;
  sync: Pick<SyncManager, 'current'>;
  memberKey: Pick<MemberKey, 'scheduledRestart'>;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseView;
  /** False before the node started (no machine yet). */
  started(): boolean;
  /** The latest probe while the database runs. */
  probe(): PgStatus | undefined;
  /** Clock time (epoch ms) the last completed probe started; undefined before the first. */
  probedAtMs?(): number | undefined;
  /** The scheduled machines (defined once the node started). */
  schedules(): Pick<ScheduledWork, 'restart'> | undefined;
  /** Failsafe mode (src/node/lock/failsafe.ts): `failsafe_mode_is_active`, and the leader's term while it keeps a primary running. */
  failsafe?: Pick<Failsafe, 'version' | 'leaderUntilMs' | 'active'>;
  /** The receipts of discarded transactions kept so far (src/node/local/receipts.ts). */
  discarded?(): ReceiptSummary;
  /** The long operation under way (src/node/local/progress.ts), when the node tracks them. */
  progress?(): OperationProgress | undefined;
}

/** The node snapshot the API and the metrics read, the same object while nothing in it changed. */
export class SnapshotBuilder {
  private memo: { inputs: unknown[]; snapshot: NodeSnapshot } | undefined;

  constructor(private readonly d: SnapshotDeps) {}

  /** The snapshot now. Synchronous and cheap. */
  snapshot(): NodeSnapshot {
    const core = this.d;
    const deps = core;
    const { state: st, facts: t } = core;
    const snap = core.started() ? core.db().getSnapshot() : undefined;
    const view = deps.dcs.view();
    const probe = core.probe();
    const probedAtMs = core.probedAtMs?.();
    const inputs = [
      snap,
      probe,
      probedAtMs,
      view,
      st.config,
      st.tags,
      t.sysid,
      core.lock.untilMs,
      deps.dcs.lastSeenMs(),
      st.lastLoopMs,
      core.schedules()?.restart.getSnapshot(),
      t.divergedReason,
      t.notStreamingSinceMs,
      t.ghostLeader,
      t.stoppedWal,
      core.sync.current(),
      core.failsafe?.version,
      core.discarded?.(),
      core.progress?.(),
      ...fenceInputs(core),
    ];
    const memo = this.memo;
    if (memo && memo.inputs.every((v, i) => v === inputs[i])) return memo.snapshot;
    const running = snap?.value === 'running';
    const discarded = core.discarded?.();
    const progress = core.progress?.();
    const scheduled = core.memberKey.scheduledRestart();
    const snapshot: NodeSnapshot = {
      name: deps.name,
      scope: deps.scope,
      version: deps.version,
      apiUrl: deps.apiUrl,
      connUrl: deps.connUrl,
      tags: effectiveTags(st.tags),
      state: (snap?.value ?? 'stopped') as DatabaseState,
      role: publishedRole(snap?.context.role ?? 'uninitialized', core.lock.held, standbyClusterOf(st.config) !== undefined),
      ...(running && probe ? { pg: probe, ...(probedAtMs !== undefined ? { pgProbedAtMs: probedAtMs } : {}) } : {}),
      ...(t.sysid ? { sysid: t.sysid } : {}),
      leaderUntilMs: Math.max(core.lock.untilMs, core.failsafe?.leaderUntilMs() ?? 0),
      ...(t.divergedReason ? { diverged: t.divergedReason } : {}),
      ...(!running && t.stoppedWal ? { stoppedWal: t.stoppedWal } : {}),
      ...(t.ghostLeader ? { ghostLeader: t.ghostLeader.name } : {}),
      watchdog: core.fencing.status(),
      ...(core.sync.current()?.degraded ? { syncDegraded: core.sync.current()!.degraded! } : {}),
      ...(t.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: t.notStreamingSinceMs } : {}),
      cluster: view,
      dcsLastSeenMs: deps.dcs.lastSeenMs(),
      config: st.config,
      lastLoopMs: st.lastLoopMs,
      ...(core.failsafe?.active() ? { failsafeActive: true } : {}),
      ...(discarded && discarded.receipts > 0 ? { discarded } : {}),
      ...(scheduled ? { scheduledRestart: scheduled } : {}),
      ...(progress ? { progress } : {}),
    };
    this.memo = { inputs, snapshot };
    return snapshot;
  }
}

/** The fence's status as memo inputs (fencing.ts hands out a new object on every call). */
function fenceInputs(core: Pick<SnapshotDeps, 'fencing'>): unknown[] {
  const f = core.fencing.status();
  return [f.mode, f.armed, f.failed];
}
