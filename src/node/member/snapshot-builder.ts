/**
 * The node snapshot the HTTP handlers and metrics read (src/domain/snapshot.ts). The same object
 * is handed out until one of its inputs changes (XState snapshots, probes, DCS views and configs
 * are new objects on every change), so the API can reuse what it rendered for it (src/http/app.ts).
 */
import type { NodeSnapshot } from '../../domain/snapshot.ts';
import type { DatabaseState } from '../../domain/states.ts';
import { publishedRole, standbyClusterOf } from '../../domain/standby-cluster.ts';
import { effectiveTags } from './member-data.ts';
import type { Failsafe } from '../lock/failsafe.ts';
import type { MemberKey } from './member-key.ts';
import type { NodeCore } from '../node-core.ts';
import type { ReceiptSummary } from '../local/receipts.ts';

export class SnapshotBuilder {
  private memo: { inputs: unknown[]; snapshot: NodeSnapshot } | undefined;

  constructor(
    private readonly core: NodeCore,
    private readonly memberKey: MemberKey,
    /** False before the node started (no machine yet). */
    private readonly started: () => boolean,
    /** Failsafe mode (src/node/lock/failsafe.ts): `failsafe_mode_is_active`, and the leader's term while it keeps a primary running. */
    private readonly failsafe?: Failsafe,
    /** The receipts of discarded transactions kept so far (src/node/local/receipts.ts). */
    private readonly discarded?: () => ReceiptSummary,
  ) {}

  /** The snapshot now. Synchronous and cheap. */
  snapshot(): NodeSnapshot {
    const { core } = this;
    const { deps, state: st } = core;
    const t = core.trackers.facts;
    const snap = this.started() ? core.db().getSnapshot() : undefined;
    const view = deps.dcs.view();
    const probe = core.probe();
    const inputs = [snap, probe, view, st.config, st.tags, t.sysid, core.lock.untilMs, deps.dcs.lastSeenMs(), st.lastLoopMs, core.schedules()?.restart.getSnapshot(), t.divergedReason, t.notStreamingSinceMs, t.ghostLeader, core.sync.current(), this.failsafe?.version, this.discarded?.(), ...fenceInputs(core)];
    const memo = this.memo;
    if (memo && memo.inputs.every((v, i) => v === inputs[i])) return memo.snapshot;
    const running = snap?.value === 'running';
    const discarded = this.discarded?.();
    const scheduled = this.memberKey.scheduledRestart();
    const snapshot: NodeSnapshot = {
      name: deps.name,
      scope: deps.scope,
      version: deps.version,
      apiUrl: deps.apiUrl,
      connUrl: deps.connUrl,
      tags: effectiveTags(st.tags),
      state: (snap?.value ?? 'stopped') as DatabaseState,
      role: publishedRole(snap?.context.role ?? 'uninitialized', core.lock.held, standbyClusterOf(st.config) !== undefined),
      ...(running && probe ? { pg: probe } : {}),
      ...(t.sysid ? { sysid: t.sysid } : {}),
      leaderUntilMs: Math.max(core.lock.untilMs, this.failsafe?.leaderUntilMs() ?? 0),
      ...(t.divergedReason ? { diverged: t.divergedReason } : {}),
      ...(t.ghostLeader ? { ghostLeader: t.ghostLeader.name } : {}),
      watchdog: core.fencing.status(),
      ...(core.sync.current()?.degraded ? { syncDegraded: core.sync.current()!.degraded! } : {}),
      ...(t.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: t.notStreamingSinceMs } : {}),
      cluster: view,
      dcsLastSeenMs: deps.dcs.lastSeenMs(),
      config: st.config,
      lastLoopMs: st.lastLoopMs,
      ...(this.failsafe?.active() ? { failsafeActive: true } : {}),
      ...(discarded && discarded.receipts > 0 ? { discarded } : {}),
      ...(scheduled ? { scheduledRestart: scheduled } : {}),
    };
    this.memo = { inputs, snapshot };
    return snapshot;
  }
}

/** The fence's status as memo inputs (fencing.ts hands out a new object on every call). */
function fenceInputs(core: NodeCore): unknown[] {
  const f = core.fencing.status();
  return [f.mode, f.armed, f.failed];
}
