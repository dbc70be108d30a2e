/**
 * Replicas follow a new leader as soon as it runs as primary (issue 30, item 5): the cycle of a
 * replica that saw the leader key change before the new leader's member key said `primary`
 * answers "waiting for leader X to run as primary before following it" and, without a wake,
 * would wait a whole loop_wait for its next cycle. The reference re-points in the same cycle.
 * LeaderReadyWatch watches the DCS events and says when the leader became one this member can
 * follow (leaderReady of decideCycle: running as primary, or as the standby leader of a standby
 * cluster): once per leader, so the leader's own key refreshes (every loop_wait) wake no one.
 */
import type { ClusterView } from '../../domain/cluster.ts';
import type { DynamicConfig } from '../../domain/dynamic-config.ts';
import { leaderReady } from '../../domain/ha-cycle.ts';
import { standbyClusterOf } from '../../domain/standby-cluster.ts';

export class LeaderReadyWatch {
  /** The leader last seen ready to be followed; undefined while none is. One writer: observe. */
  private readyLeader: string | undefined;

  /** `name`: this member (its own leadership never wakes it). */
  constructor(private readonly name: string) {}

  /**
   * Call on every change of the leader key or of a member key, with the view after it. True
   * exactly when the leader (another member) has just become ready to be followed: wake the loop.
   */
  observe(view: ClusterView, config: DynamicConfig): boolean {
    const leader = view.leader?.name;
    if (leader === undefined || leader === this.name || !leaderReady(view, standbyClusterOf(config) !== undefined)) {
      this.readyLeader = undefined;
      return false;
    }
    if (this.readyLeader === leader) return false;
    this.readyLeader = leader;
    return true;
  }
}
