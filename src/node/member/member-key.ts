/**
 * This member's key (`members/<name>`, dcs-layout.md "Member data"): built from the database
 * machine, the latest probe and the node's facts, and published when its content changed, when
 * it is missing from the view, or when forced after a lease change.
 */
import type { MemberData, ScheduledRestartData } from '../../domain/member.ts';
import type { DatabaseState } from '../../domain/states.ts';
import { publishedRole, standbyClusterOf } from '../../domain/standby-cluster.ts';
import { buildMemberData } from './member-data.ts';
import type { NodeCore } from '../node-core.ts';

export class MemberKey {
  private lastJson = '';

  constructor(private readonly core: NodeCore) {}

  /** Publishes the member key when changed (or `force`). DCS failures reject. */
  async publish(force = false): Promise<void> {
    const { dcs, name } = this.core.deps;
    const data = this.data();
    const json = JSON.stringify(data);
    const inView = dcs.view().members.some((m) => m.name === name);
    if (!force && json === this.lastJson && inView) return;
    await dcs.touchMember(data);
    this.lastJson = json;
  }

  /** The member key's value now. */
  data(): MemberData {
    const { deps, state } = this.core;
    const t = this.core.trackers.facts;
    const snap = this.core.db().getSnapshot();
    const scheduled = this.scheduledRestart();
    const probe = this.core.probe();
    return buildMemberData({
      connUrl: deps.connUrl,
      apiUrl: deps.apiUrl,
      version: deps.version,
      state: snap.value as DatabaseState,
      role: publishedRole(snap.context.role, this.core.lock.held, standbyClusterOf(state.config) !== undefined),
      ...(snap.value === 'running' && probe ? { probe } : {}),
      tags: state.tags,
      ...(scheduled ? { scheduledRestart: scheduled } : {}),
      paused: state.config.pause === true,
      ...(t.notStreamingSinceMs !== undefined ? { notStreamingSinceMs: t.notStreamingSinceMs } : {}),
      ...(t.divergedReason ? { diverged: t.divergedReason } : {}),
    });
  }

  /** The scheduled restart with the postmaster start time it was planned against. */
  scheduledRestart(): ScheduledRestartData | undefined {
    const plan = this.core.schedules()?.scheduledRestart();
    if (!plan) return undefined;
    const probe = this.core.probe();
    return { ...plan, ...(probe ? { postmaster_start_time: probe.postmasterStartTime } : {}) };
  }
}
