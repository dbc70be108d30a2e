/**
 * `hactl pause` / `hactl resume`: PATCH /config `{"pause": true}` / `{"pause": null}` on the first
 * member that answers (leader first); `--wait` polls the member keys until every member reports
 * the new mode (patroni.md §5).
 */
import { timingOf, withDefaults } from '../domain/dynamic-config.ts';
import { CtlError } from './errors.ts';
import { callMember, unreachableText } from './member-api.ts';
import { readView, requireMembers, type Session } from './session.ts';

/** Runs `pause` (`paused` true) or `resume` (false). */
export async function runPause(s: Session, paused: boolean, o: { wait: boolean; waitTimeoutMs?: number }): Promise<void> {
  const view = await readView(s);
  const members = requireMembers(view, s.scope);
  const config = withDefaults(view.config?.value);
  if (paused && config.pause === true) throw new CtlError('Cluster is already paused');
  if (!paused && config.pause !== true) throw new CtlError('Cluster is not paused');
  const leader = view.leader?.name;
  const order = [...members].sort((a, b) => (a.name === leader ? -1 : b.name === leader ? 1 : 0));
  let done = false;
  for (const m of order) {
    const r = await callMember(m, 'PATCH', '/config', { pause: paused ? true : null });
    if (!r.reachable) {
      s.io.err(unreachableText(m, r.error));
      continue;
    }
    if (r.status !== 200)
      throw new CtlError(`Failed: ${paused ? 'pause' : 'resume'} on member ${m.name}, status code=${r.status}, (${r.text})`);
    done = true;
    break;
  }
  if (!done) throw new CtlError(`Can not find accessible cluster member of cluster ${s.scope}`);
  const word = paused ? 'paused' : 'resumed';
  if (o.wait) {
    s.io.out(`Waiting for cluster to become ${paused ? 'paused' : 'unpaused'} ...`);
    const t = timingOf(config);
    const deadline = s.now() + (o.waitTimeoutMs ?? Math.max(60_000, 3 * t.loopWaitMs + t.ttlMs));
    for (;;) {
      const v = await readView(s);
      const behind = v.members.filter((m) => (m.data.pause === true) !== paused).map((m) => m.name);
      if (behind.length === 0) break;
      if (s.now() > deadline) throw new CtlError(`Timed out waiting for members ${behind.join(', ')} to report the cluster ${word}`);
      await s.sleep(500);
    }
  }
  s.io.out(`Success: cluster management is ${word}`);
}
