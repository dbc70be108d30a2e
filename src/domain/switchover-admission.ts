/**
 * Who a switchover or failover may go to, from the cluster view alone: one rule shared by the
 * REST API (rows 5 of patroni.md §1.8), hactl's candidate list and the leader's cycle
 * (decideSwitchover). The API then asks the members it keeps whether they can promote; the
 * cycle checks their lag and timeline on their status documents.
 */
import type { ClusterView } from './cluster.ts';
import type { DynamicConfig } from './dynamic-config.ts';
import { mayPromote, type Member } from './member.ts';
import { syncKeyOf, syncSettings } from './sync-standby.ts';

/** A switchover (from the leader) or a failover (an operator naming a candidate). */
export interface HandoverRequest {
  action: 'switchover' | 'failover';
  leader?: string;
  candidate?: string;
}

/** The outcome: the members still considered, or the reference's refusal message (HTTP 412). */
export type Admission = { ok: true; considered: Member[] } | { ok: false; refusal: string };

/**
 * The members synchronous mode allows a switchover to: the `sync` key's members while
 * `synchronous_mode` is true or quorum (the reference checks this for true only; quorum is ours:
 * the leader hands over only to a member the key shows holding every acknowledged commit);
 * undefined when any member will do (asynchronous, or a failover, which may name an asynchronous
 * member as in the reference).
 */
export function syncAllowed(
  view: ClusterView,
  config: Pick<DynamicConfig, 'synchronous_mode'>,
  action: HandoverRequest['action'],
): string[] | undefined {
  if (action === 'failover' || syncSettings(config).mode === 'off') return undefined;
  return view.sync ? syncKeyOf(view.sync.value).members : [];
}

/**
 * Rows 5 of patroni.md §1.8 on the view, in the reference's order: `leader` names the lock holder;
 * a switchover's candidate is in the sync key in synchronous mode; the candidate is a member;
 * without a candidate, synchronous mode needs a listed member and any mode needs another member
 * with an api_url. Returns the members to ask next.
 */
export function admitHandover(view: ClusterView, config: Pick<DynamicConfig, 'synchronous_mode'>, req: HandoverRequest): Admission {
  const { action, leader, candidate } = req;
  const allowed = syncAllowed(view, config, action);
  if (leader !== undefined && view.leader?.name !== leader) return { ok: false, refusal: 'leader name does not match' };
  if (candidate !== undefined) {
    if (allowed && !allowed.includes(candidate)) return { ok: false, refusal: 'candidate name does not match with sync_standby' };
    const considered = view.members.filter((m) => m.name === candidate);
    if (considered.length === 0) return { ok: false, refusal: 'candidate does not exists' };
    return { ok: true, considered };
  }
  if (allowed && allowed.length === 0) return { ok: false, refusal: `${action} is not possible: can not find sync_standby` };
  const considered = view.members.filter(
    (m) => m.name !== view.leader?.name && m.data.api_url !== '' && (!allowed || allowed.includes(m.name)),
  );
  if (considered.length === 0) return { ok: false, refusal: `${action} is not possible: cluster does not have members except leader` };
  return { ok: true, considered };
}

/** hactl's candidates for a switchover: members other than the leader that may promote and that synchronous mode allows. */
export function switchoverCandidates(view: ClusterView, config: Pick<DynamicConfig, 'synchronous_mode'>): string[] {
  const allowed = syncAllowed(view, config, 'switchover');
  return view.members
    .filter((m) => m.name !== view.leader?.name && mayPromote(m.data.tags) && (!allowed || allowed.includes(m.name)))
    .map((m) => m.name);
}
