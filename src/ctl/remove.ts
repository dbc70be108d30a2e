/**
 * `hactl remove CLUSTER`: deletes every key under `/<namespace>/<cluster>/` after the operator
 * types the cluster name, `Yes I am aware`, and (when the cluster has a leader) the leader's
 * name (patroni.md §5). Any other answer refuses with exit 1 and deletes nothing.
 */
import { CtlError, errorText } from './errors.ts';
import { renderList } from './list.ts';
import { readView, type Session } from './session.ts';

/** Runs `remove`. */
export async function runRemove(s: Session): Promise<void> {
  const view = await readView(s);
  for (const l of renderList(view, s.scope, { format: 'pretty', extended: false })) s.io.out(l);
  const name = await s.io.ask('Please confirm the cluster name to remove: ');
  if (name !== s.scope) throw new CtlError(`Cluster names specified do not match: expected ${s.scope}, got ${JSON.stringify(name ?? '')}`);
  const aware = await s.io.ask(`You are about to remove all information in DCS for ${s.scope}, please type: "Yes I am aware": `);
  if (aware !== 'Yes I am aware') throw new CtlError('You did not exactly type "Yes I am aware"');
  const leader = view.leader?.name;
  if (leader !== undefined) {
    const given = await s.io.ask('This cluster currently has a leader. Please specify the leader name to continue: ');
    if (given !== leader) throw new CtlError(`You did not specify the current leader of the cluster ${s.scope}`);
  }
  try {
    await s.dcs.deleteCluster();
  } catch (e) {
    throw new CtlError(`could not delete the keys of cluster ${s.scope}: ${errorText(e)}`);
  }
  s.io.out(`Cluster ${s.scope} removed from the DCS`);
}
