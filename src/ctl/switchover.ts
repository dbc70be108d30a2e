/**
 * `hactl switchover` and `hactl failover` (patroni.md §5): checks against a fresh DCS read, the
 * reference's prompts (leader, candidate, time, confirmation) unless `--force`, then
 * POST /switchover or POST /failover to the leader, printing the API's answer as it comes.
 * When the leader's API cannot be reached, a switchover is written into the `failover` key
 * directly (compare-and-set), as the reference does.
 */
import { mayPromote, type Member } from '../domain/member.ts';
import { timingOf, withDefaults, type DynamicConfig } from '../domain/dynamic-config.ts';
import { switchoverCandidates, syncAllowed } from '../domain/switchover-admission.ts';
import { CtlError } from './errors.ts';
import { askWithDefault, confirm } from './io.ts';
import { renderList } from './list.ts';
import { callMember, unreachableText, type MemberReply } from './member-api.ts';
import { leaderMember, readView, requireMembers, timestamp, type Session } from './session.ts';
import { parseWhen } from './when.ts';

/** Options of `switchover`. */
export interface SwitchoverOptions {
  leader?: string;
  candidate?: string;
  scheduled?: string;
  force: boolean;
}

/** Options of `failover`. */
export interface FailoverOptions {
  candidate?: string;
  force: boolean;
}

/** Timeout of an immediate switchover/failover call, ms: the API polls up to 2 × max(10 s, loop_wait), plus 30 s. */
function actionTimeoutMs(config: DynamicConfig): number {
  return 2 * Math.max(10_000, timingOf(config).loopWaitMs) + 30_000;
}

function aborted(action: string): CtlError {
  return new CtlError(`Aborting ${action}`);
}

/** Prints the API's answer; throws CtlError for anything but 2xx. */
function report(s: Session, action: string, reply: Extract<MemberReply, { reachable: true }>): void {
  if (reply.status >= 200 && reply.status < 300) {
    s.io.out(`${timestamp(s.now())} ${reply.text}`);
    return;
  }
  throw new CtlError(`${action[0]!.toUpperCase()}${action.slice(1)} failed, details: ${reply.status}, ${reply.text}`);
}

/** Runs `switchover`. Throws CtlError (exit 1) when refused or failed. */
export async function runSwitchover(s: Session, o: SwitchoverOptions): Promise<void> {
  const view = await readView(s);
  const members = requireMembers(view, s.scope);
  const leader = view.leader?.name;
  if (leader === undefined) throw new CtlError('This cluster has no leader');
  let from = o.leader;
  if (from === undefined && !o.force) {
    from = await askWithDefault(s.io, 'Primary', leader);
    if (from === undefined) throw aborted('switchover');
  }
  from ??= leader;
  if (from !== leader) throw new CtlError(`Member ${from} is not the leader of cluster ${s.scope}`);
  const candidates = switchoverCandidates(view, withDefaults(view.config?.value));
  if (candidates.length === 0) throw new CtlError('No candidates found to switchover to');
  let candidate = o.candidate;
  if (candidate === undefined && !o.force) {
    candidate = await askWithDefault(s.io, `Candidate ${JSON.stringify(candidates)}`, '');
    if (candidate === undefined) throw aborted('switchover');
  }
  if (candidate === '') candidate = undefined;
  if (candidate !== undefined) {
    if (candidate === leader) throw new CtlError(`Member ${candidate} is already the leader of cluster ${s.scope}`);
    if (!candidates.includes(candidate)) {
      const synchronous = syncAllowed(view, withDefaults(view.config?.value), 'switchover');
      if (synchronous && members.some((m) => m.name === candidate && mayPromote(m.data.tags))) {
        throw new CtlError(
          `Member ${candidate} is not a synchronous standby of cluster ${s.scope} (sync key: ${synchronous.join(', ') || 'none'})`,
        );
      }
      throw new CtlError(`Member ${candidate} does not exist in cluster ${s.scope} or is tagged as nofailover`);
    }
  }
  let when = o.scheduled;
  if (when === undefined && !o.force) {
    when = await askWithDefault(s.io, 'When should the switchover take place (e.g. 2030-01-01T14:30)', 'now');
    if (when === undefined) throw aborted('switchover');
  }
  const scheduledAt = parseWhen(when, s.now(), 'switchover');
  const config = withDefaults(view.config?.value);
  if (scheduledAt !== undefined && config.pause === true) throw new CtlError("Can't schedule switchover in the paused state");
  if (!o.force) {
    s.io.out('Current cluster topology');
    for (const l of renderList(view, s.scope, { format: 'pretty', extended: false })) s.io.out(l);
    if (!(await confirm(s.io, `Are you sure you want to switchover cluster ${s.scope}, demoting current leader ${leader}?`))) {
      throw aborted('switchover');
    }
  }
  const body: Record<string, string> = { leader };
  if (candidate !== undefined) body['candidate'] = candidate;
  if (scheduledAt !== undefined) body['scheduled_at'] = scheduledAt;
  const target = leaderMember(view);
  const reply: MemberReply = target
    ? await callMember(target, 'POST', '/switchover', body, actionTimeoutMs(config))
    : { reachable: false, error: 'the leader has no member key' };
  if (reply.reachable) return report(s, 'switchover', reply);
  s.io.err(`${target ? unreachableText(target, reply.error) : reply.error}; writing the failover key in the DCS instead`);
  const ok = await s.dcs.setFailover(
    {
      leader,
      ...(candidate !== undefined ? { member: candidate } : {}),
      ...(scheduledAt !== undefined ? { scheduled_at: scheduledAt } : {}),
    },
    view.failover?.revision ?? '0',
  );
  if (!ok) throw new CtlError('Switchover failed: the failover key was modified concurrently');
  s.io.out(`${timestamp(s.now())} Switchover ${scheduledAt !== undefined ? 'scheduled' : 'requested'} through the DCS key failover`);
}

/** Runs `failover`. Throws CtlError (exit 1) when refused or failed. */
export async function runFailover(s: Session, o: FailoverOptions): Promise<void> {
  const view = await readView(s);
  const members = requireMembers(view, s.scope);
  const leader = view.leader?.name;
  const candidates = members.filter((m) => m.name !== leader && mayPromote(m.data.tags)).map((m) => m.name);
  let candidate = o.candidate;
  if (candidate === undefined && !o.force) {
    candidate = await askWithDefault(s.io, `Candidate ${JSON.stringify(candidates)}`, '');
    if (candidate === undefined) throw aborted('failover');
  }
  if (candidate === undefined || candidate === '') throw new CtlError('Failover could be performed only to a specific candidate');
  if (candidate === leader) throw new CtlError(`Member ${candidate} is already the leader of cluster ${s.scope}`);
  const target: Member | undefined = members.find((m) => m.name === candidate);
  if (!target || !candidates.includes(candidate)) {
    throw new CtlError(`Member ${candidate} does not exist in cluster ${s.scope} or is tagged as nofailover`);
  }
  const config = withDefaults(view.config?.value);
  if (!o.force) {
    const synchronous = syncAllowed(view, config, 'switchover');
    if (synchronous && !synchronous.includes(candidate)) {
      if (!(await confirm(s.io, `Are you sure you want to failover to the asynchronous node ${candidate}?`))) throw aborted('failover');
    }
    s.io.out('Current cluster topology');
    for (const l of renderList(view, s.scope, { format: 'pretty', extended: false })) s.io.out(l);
    const demoting = leader !== undefined ? `, demoting current leader ${leader}` : '';
    if (!(await confirm(s.io, `Are you sure you want to failover cluster ${s.scope}${demoting}?`))) throw aborted('failover');
  }
  const timeoutMs = actionTimeoutMs(config);
  const lead = leaderMember(view);
  let reply: MemberReply = lead
    ? await callMember(lead, 'POST', '/failover', { candidate }, timeoutMs)
    : { reachable: false, error: 'no leader' };
  if (!reply.reachable) {
    if (lead) s.io.err(`${unreachableText(lead, reply.error)}; asking ${candidate} instead`);
    reply = await callMember(target, 'POST', '/failover', { candidate }, timeoutMs);
    if (!reply.reachable) throw new CtlError(`Failover failed: ${unreachableText(target, reply.error)}`);
  }
  report(s, 'failover', reply);
}
