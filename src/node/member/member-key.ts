/**
 * This member's key (`members/<name>`, dcs-layout.md "Member data"): built from the database
 * machine, the latest probe and the node's facts, and published when its content changed, when
 * it is missing from the view, or when forced after a lease change.
 */
import type { MemberData, ScheduledRestartData } from '../../domain/member.ts';
import type { DatabaseState } from '../../domain/states.ts';
import { publishedRole, standbyClusterOf } from '../../domain/standby-cluster.ts';
import type { Dcs } from '../../dcs/dcs.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { CycleFacts } from '../cycle/trackers.ts';
import type { ScheduledWork } from '../cycle/schedules.ts';
import { progressText, type OperationProgress } from '../../domain/progress.ts';
import type { HandoverRefusals } from '../cycle/handover-refusal.ts';
import type { FailureRecord } from '../local/failure-record.ts';
import type { LeaderLock } from '../lock/leader-lock.ts';
import type { DatabaseView, NodeDeps, NodeState } from '../node-core.ts';
import { buildMemberData } from './member-data.ts';

/** What the member key is built from (HaNode wires it). */
export interface MemberKeyDeps extends Pick<NodeDeps, 'name' | 'connUrl' | 'apiUrl' | 'version'> {
  dcs: Pick<Dcs, 'view' | 'touchMember'>;
  state: Readonly<Pick<NodeState, 'config' | 'tags'>>;
  /** The cycle's facts: not streaming since, divergence. */
  facts: Pick<CycleFacts, 'notStreamingSinceMs' | 'divergedReason'>;
  lock: Pick<LeaderLock, 'held'>;
  /** The last failed database action (`failure` in the key). */
  failures: Pick<FailureRecord, 'text'>;
  /** The last handover this leader refused (`switchover_refused` in the key). */
  refusals: Pick<HandoverRefusals, 'last'>;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseView;
  /** The latest probe while the database runs. */
  probe(): PgStatus | undefined;
  /** The scheduled machines (defined once the node started). */
  schedules(): Pick<ScheduledWork, 'scheduledRestart'> | undefined;
  /** The long operation under way (src/node/local/progress.ts), when the node tracks them. */
  progress?(): OperationProgress | undefined;
}

/** This member's key, built and published when it changed. */
export class MemberKey {
  private lastJson = '';

  constructor(private readonly d: MemberKeyDeps) {}

  /** Publishes the member key when changed (or `force`). DCS failures reject. */
  async publish(force = false): Promise<void> {
    const { dcs, name } = this.d;
    const data = this.data();
    const json = JSON.stringify(data);
    const inView = dcs.view().members.some((m) => m.name === name);
    if (!force && json === this.lastJson && inView) return;
    await dcs.touchMember(data);
    this.lastJson = json;
  }

  /** The member key's value now. */
  data(): MemberData {
    const deps = this.d;
    const { state, facts: t } = deps;
    const snap = deps.db().getSnapshot();
    const scheduled = this.scheduledRestart();
    const probe = this.d.probe();
    const failure = this.d.failures.text;
    const refused = this.d.refusals.last;
    const progress = this.d.progress?.();
    return buildMemberData({
      connUrl: deps.connUrl,
      apiUrl: deps.apiUrl,
      version: deps.version,
      state: snap.value as DatabaseState,
      role: publishedRole(snap.context.role, this.d.lock.held, standbyClusterOf(state.config) !== undefined),
      ...(snap.value === 'running' && probe ? { probe } : {}),
      tags: state.tags,
      ...(scheduled ? { scheduledRestart: scheduled } : {}),
      paused: state.config.pause === true,
      ...(t.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: t.notStreamingSinceMs } : {}),
      ...(t.divergedReason ? { diverged: t.divergedReason } : {}),
      ...(failure !== undefined ? { failure } : {}),
      ...(refused ? { switchoverRefused: refused } : {}),
      ...(progress ? { progress: progressText(progress) } : {}),
    });
  }

  /** The scheduled restart with the postmaster start time it was planned against. */
  scheduledRestart(): ScheduledRestartData | undefined {
    const plan = this.d.schedules()?.scheduledRestart();
    if (!plan) return undefined;
    const probe = this.d.probe();
    return { ...plan, ...(probe ? { postmaster_start_time: probe.postmasterStartTime } : {}) };
  }
}
