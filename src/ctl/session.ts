/**
 * What every hactl command works with: the cluster name, a read-only Dcs, the terminal, a clock;
 * plus lookups that fail with messages naming the member or the cluster.
 */
import type { ClusterView } from '../domain/cluster.ts';
import type { Member } from '../domain/member.ts';
import type { Dcs } from '../dcs/index.ts';
import { CtlError, errorText } from './errors.ts';
import type { CtlIo } from './io.ts';

/** The context of one hactl command. */
export interface Session {
  scope: string;
  dcs: Dcs;
  io: CtlIo;
  /** Epoch ms. */
  now: () => number;
  /** Pause between polls (`--wait`, `--watch`), ms. */
  sleep: (ms: number) => Promise<void>;
}

/** A linearizable read of the cluster; CtlError when the DCS cannot be reached. */
export async function readView(s: Session): Promise<ClusterView> {
  try {
    return await s.dcs.refresh();
  } catch (e) {
    throw new CtlError(`DCS is not reachable: ${errorText(e)}`);
  }
}

/** The view's members, or CtlError when the cluster has none (wrong name, or not bootstrapped). */
export function requireMembers(view: ClusterView, scope: string): Member[] {
  if (view.members.length === 0) {
    throw new CtlError(`cluster "${scope}" has no members in the DCS${view.initialize === undefined ? ' (no such cluster?)' : ''}`);
  }
  return view.members;
}

/** The member called `name`, or CtlError `Member X does not exist in cluster C`. */
export function findMember(view: ClusterView, scope: string, name: string): Member {
  const m = view.members.find((x) => x.name === name);
  if (!m) throw new CtlError(`Member ${name} does not exist in cluster ${scope}`);
  return m;
}

/** The leader's member entry, undefined when there is no leader (or its member key is gone). */
export function leaderMember(view: ClusterView): Member | undefined {
  const name = view.leader?.name;
  return name === undefined ? undefined : view.members.find((m) => m.name === name);
}

/** Local time as `YYYY-MM-DD HH:MM:SS` (the prefix of progress messages). */
export function timestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
