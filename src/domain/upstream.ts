/**
 * Cascading replication (patroni.md §3.9, tag `replicatefrom`): which member a replica streams
 * from, and which members this one keeps a physical replication slot for. Pure; the node calls
 * `upstreamMember` for itself when it follows (src/domain/ha-cycle.ts decideFollow), and
 * `slotMembers` for the slots it keeps (leader duties on the primary, src/node/cycle/executor.ts on a
 * replica); hactl topology draws the same tree.
 *
 * Rule: a replica tagged `replicatefrom: X` streams from X when X's member key shows it running as
 * a replica that streams itself, and the `replicatefrom` tags from X upwards do not lead back to
 * the replica (a loop); otherwise it streams from the leader. The fall-back makes a cascading
 * replica keep up while X is down, re-cloned or lagging without a WAL receiver; it points back at
 * X once X streams again.
 */
import type { ClusterView } from './cluster.ts';
import type { Member, Tags } from './member.ts';

/** The `replicatefrom` tag of a member's tags, when it names a member (a non-empty string). */
export function replicateFromTag(tags: Tags | undefined): string | undefined {
  const v = tags?.['replicatefrom'];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** True when the member key shows a running replica whose WAL receiver streams. */
function streamsItself(m: Member): boolean {
  return m.data.state === 'running' && m.data.role === 'replica' && m.data.replication_state === 'streaming';
}

/**
 * The member `name` streams from: the member its `replicatefrom` tag names when that one runs and
 * streams and the tags do not loop back, else the leader. Undefined for the leader itself and when
 * there is no leader and no usable `replicatefrom` member.
 *
 * @param opts.tags `name`'s own tags (the node passes its current ones; default: its member key's).
 * @param opts.leader the leader's name (default: the view's leader key).
 */
export function upstreamMember(view: ClusterView, name: string, opts: { tags?: Tags; leader?: string } = {}): string | undefined {
  const leader = opts.leader ?? view.leader?.name;
  if (name === leader) return undefined;
  const tagsOf = (n: string): Tags | undefined => (n === name && opts.tags ? opts.tags : view.members.find((m) => m.name === n)?.data.tags);
  const from = replicateFromTag(tagsOf(name));
  if (from === undefined || from === name || from === leader) return leader;
  const target = view.members.find((m) => m.name === from);
  if (!target || !streamsItself(target)) return leader;
  // Walk the tags upwards from the target: reaching `name` again is a loop (fall back to the leader).
  const seen = new Set([name]);
  let cur: string | undefined = from;
  while (cur !== undefined && cur !== leader) {
    if (seen.has(cur)) return leader;
    seen.add(cur);
    cur = replicateFromTag(tagsOf(cur));
  }
  return from;
}

/** True when `name` streams from a member other than the leader (synchronous standby candidates exclude it). */
export function isCascading(view: ClusterView, name: string, opts: { tags?: Tags; leader?: string } = {}): boolean {
  const leader = opts.leader ?? view.leader?.name;
  const up = upstreamMember(view, name, opts);
  return up !== undefined && up !== leader;
}

/**
 * The members `me` keeps a physical replication slot for: those that stream from `me` by
 * {@link upstreamMember}. On the leader that is every other member except the cascading ones (a
 * slot nobody consumes would keep WAL forever); on a replica, the members cascading from it.
 *
 * @param opts.leader the leader's name (the leader passes its own name: it holds the lock even when
 * the view it acts on is a little behind).
 */
export function slotMembers(view: ClusterView, me: string, opts: { leader?: string } = {}): string[] {
  const leader = opts.leader ?? view.leader?.name;
  return view.members
    .filter((m) => m.name !== me && upstreamMember(view, m.name, leader !== undefined ? { leader } : {}) === me)
    .map((m) => m.name);
}
