/**
 * Commands that act on members through their REST API, one member at a time, printing one line
 * per member as the answers come: `restart`, `reload`, `reinit`, `flush` (patroni.md §5), and
 * `backup` (ours, docs/backups.md "Backups").
 * A member that cannot be reached is reported by name; any failure makes the command exit 1
 * after all members were tried.
 */
import type { ClusterView } from '../domain/cluster.ts';
import type { Member } from '../domain/member.ts';
import { withDefaults } from '../domain/dynamic-config.ts';
import { CtlError, usageError } from './errors.ts';
import { confirm } from './io.ts';
import { renderList } from './list.ts';
import { callMember, unreachableText } from './member-api.ts';
import { findMember, leaderMember, readView, requireMembers, timestamp, type Session } from './session.ts';
import { parseWhen } from './when.ts';

/** Role filters of `restart`/`reload`: the leader (`leader`, `primary`, `standby-leader`), the others (`replica`), or `any`. */
export const ROLE_FILTERS = ['leader', 'primary', 'standby-leader', 'replica', 'any'] as const;
/** One of {@link ROLE_FILTERS}. */
export type RoleFilter = (typeof ROLE_FILTERS)[number];

/**
 * The members a command acts on: the named ones (each must exist), else all; then filtered by
 * role. Sorted replicas first, the leader last (a restart-only parameter such as max_connections
 * must reach the standbys before the primary). Throws CtlError when nothing is left.
 */
export function selectMembers(view: ClusterView, scope: string, names: string[], role: RoleFilter = 'any'): Member[] {
  const all = requireMembers(view, scope);
  const chosen = names.length > 0 ? [...new Set(names)].map((n) => findMember(view, scope, n)) : [...all];
  const leader = view.leader?.name;
  const filtered = chosen.filter((m) => {
    if (role === 'any') return true;
    const isLeader = m.name === leader;
    if (role === 'replica') return !isLeader;
    if (role === 'standby-leader') return isLeader && m.data.role === 'standby_leader';
    return isLeader && m.data.role !== 'standby_leader';
  });
  if (filtered.length === 0)
    throw new CtlError(`No ${role} members found in cluster ${scope}${names.length ? ` among ${names.join(', ')}` : ''}`);
  const rank = (m: Member) => (m.name === leader ? 1 : 0);
  return filtered.sort((a, b) => rank(a) - rank(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

async function confirmMembers(s: Session, view: ClusterView, verb: string, members: Member[]): Promise<void> {
  for (const l of renderList(view, s.scope, { format: 'pretty', extended: false })) s.io.out(l);
  if (!(await confirm(s.io, `Are you sure you want to ${verb} members ${members.map((m) => m.name).join(', ')}?`))) {
    throw new CtlError(`Aborting ${verb}`);
  }
}

function failedOn(action: string, names: string[]): CtlError {
  return new CtlError(`${action} failed on member${names.length > 1 ? 's' : ''} ${names.join(', ')}`);
}

/** Options of `restart`. */
export interface RestartOptions {
  members: string[];
  role: RoleFilter;
  /** Restart one member (chosen at random) of those selected. */
  any: boolean;
  scheduled?: string;
  pending: boolean;
  pgVersion?: string;
  timeout?: string;
  force: boolean;
}

/** Runs `restart`: POST /restart on each selected member. */
export async function runRestart(s: Session, o: RestartOptions): Promise<void> {
  const view = await readView(s);
  let members = selectMembers(view, s.scope, o.members, o.role);
  if (o.any) members = [members[Math.floor(Math.random() * members.length)]!];
  if (o.pending) {
    for (const m of members.filter((x) => x.data.pending_restart !== true)) s.io.out(`Skipped: no pending restart on member ${m.name}`);
    members = members.filter((x) => x.data.pending_restart === true);
    if (members.length === 0) {
      s.io.out('No member has a pending restart');
      return;
    }
  }
  const schedule = parseWhen(o.scheduled, s.now(), 'restart');
  if (schedule !== undefined && withDefaults(view.config?.value).pause === true)
    throw new CtlError("Can't schedule restart in the paused state");
  const body: Record<string, unknown> = {};
  if (o.pending) body['restart_pending'] = true;
  if (o.pgVersion !== undefined) body['database_version'] = o.pgVersion;
  if (o.timeout !== undefined) body['timeout'] = /^\d+(\.\d+)?$/.test(o.timeout) ? Number(o.timeout) : o.timeout;
  if (schedule !== undefined) body['schedule'] = schedule;
  if (!o.force) await confirmMembers(s, view, 'restart', members);
  const timeoutMs = ((typeof body['timeout'] === 'number' ? body['timeout'] : 60) + 60) * 1000;
  const failed: string[] = [];
  for (const m of members) {
    if (schedule !== undefined && o.force && m.data.scheduled_restart !== undefined) {
      const del = await callMember(m, 'DELETE', '/restart');
      if (!del.reachable || (del.status !== 200 && del.status !== 404)) {
        s.io.out(`Failed: flush scheduled restart on member ${m.name}: ${del.reachable ? `${del.status}, ${del.text}` : del.error}`);
      }
    }
    const r = await callMember(m, 'POST', '/restart', body, timeoutMs);
    if (!r.reachable) {
      s.io.out(`Failed: ${unreachableText(m, r.error)}`);
      failed.push(m.name);
    } else if (r.status === 200) s.io.out(`Success: restart on member ${m.name}`);
    else if (r.status === 202) s.io.out(`Success: restart scheduled on member ${m.name}`);
    else if (r.status === 409 && /already scheduled/.test(r.text)) {
      s.io.out(`Failed: another restart is already scheduled on member ${m.name}`);
      failed.push(m.name);
    } else {
      s.io.out(`Failed: restart for member ${m.name}, status code=${r.status}, (${r.text})`);
      failed.push(m.name);
    }
  }
  if (failed.length > 0) throw failedOn('restart', failed);
}

/** Options of `reload`. */
export interface ReloadOptions {
  members: string[];
  role: RoleFilter;
  force: boolean;
}

/** Runs `reload`: POST /reload on each selected member. */
export async function runReload(s: Session, o: ReloadOptions): Promise<void> {
  const view = await readView(s);
  const members = selectMembers(view, s.scope, o.members, o.role);
  if (!o.force) await confirmMembers(s, view, 'reload', members);
  const failed: string[] = [];
  for (const m of members) {
    const r = await callMember(m, 'POST', '/reload', undefined, 30_000);
    if (!r.reachable) {
      s.io.out(`Failed: ${unreachableText(m, r.error)}`);
      failed.push(m.name);
    } else if (r.status === 200) s.io.out(`Success: reload on member ${m.name}`);
    else if (r.status === 202) s.io.out(`Reload request received for member ${m.name} and will be processed within loop_wait seconds`);
    else {
      s.io.out(`Failed: reload for member ${m.name}, status code=${r.status}, (${r.text})`);
      failed.push(m.name);
    }
  }
  if (failed.length > 0) throw failedOn('reload', failed);
}

/** Options of `reinit`. */
export interface ReinitOptions {
  members: string[];
  fromLeader: boolean;
  wait: boolean;
  force: boolean;
  /** Bound of `--wait`, ms (default 10 minutes). */
  waitTimeoutMs?: number;
}

/** Runs `reinit`: POST /reinitialize on each named member; `--wait` polls GET /ha until each runs again. */
export async function runReinit(s: Session, o: ReinitOptions): Promise<void> {
  if (o.members.length === 0) throw usageError('reinit needs at least one MEMBER');
  const view = await readView(s);
  const members = selectMembers(view, s.scope, o.members);
  const leader = leaderMember(view);
  if (leader && members.some((m) => m.name === leader.name)) {
    throw new CtlError(`Member ${leader.name} is the leader of cluster ${s.scope} and can not be reinitialized`);
  }
  if (!o.force) await confirmMembers(s, view, 'reinitialize', members);
  const started: Member[] = [];
  const failed: string[] = [];
  for (const m of members) {
    const body: Record<string, boolean> = o.fromLeader ? { 'from-leader': true } : {};
    let r = await callMember(m, 'POST', '/reinitialize', body, 30_000);
    if (r.reachable && r.status === 503 && /already in progress/.test(r.text)) {
      const again = o.force || (await confirm(s.io, `${r.text} on member ${m.name}. Do you want to cancel it and reinitialize anyway?`));
      if (again) r = await callMember(m, 'POST', '/reinitialize', { ...body, force: true }, 30_000);
    }
    if (!r.reachable) {
      s.io.out(`Failed: ${unreachableText(m, r.error)}`);
      failed.push(m.name);
    } else if (r.status === 200) {
      s.io.out(`Success: reinitialize for member ${m.name}`);
      started.push(m);
    } else {
      s.io.out(`Failed: reinitialize for member ${m.name}, status code=${r.status}, (${r.text})`);
      failed.push(m.name);
    }
  }
  if (o.wait && started.length > 0) {
    s.io.out(`Waiting for reinitialize to complete on: ${started.map((m) => m.name).join(', ')}`);
    const deadline = s.now() + (o.waitTimeoutMs ?? 600_000);
    const begun = s.now();
    const pending = new Map(started.map((m) => [m.name, { m, left: false }]));
    while (pending.size > 0) {
      for (const [name, p] of pending) {
        const r = await callMember(p.m, 'GET', '/ha', undefined, 3000);
        const state = r.reachable && r.status === 200 ? (JSON.parse(r.text) as { state?: string }).state : undefined;
        if (state !== undefined && state !== 'running') p.left = true;
        if (state === 'running' && (p.left || s.now() - begun > 5000)) {
          s.io.out(`Reinitialize is completed on: ${name}`);
          pending.delete(name);
        }
      }
      if (pending.size === 0) break;
      if (s.now() > deadline) throw new CtlError(`Reinitialize did not complete in time on: ${[...pending.keys()].join(', ')}`);
      await s.sleep(500);
    }
  }
  if (failed.length > 0) throw failedOn('reinitialize', failed);
}

/** Options of `backup`. */
export interface BackupOptions {
  /** The member to run it on; absent: a running replica (the first by name), else the leader. */
  member?: string;
  /** Run the member's `backup.create` first (pgBackRest's stanza-create). */
  create: boolean;
  /** How long to wait for the backup, ms (default 6 h). */
  timeoutMs?: number;
}

/**
 * The member `backup` runs on: the named one; else a running replica (least load on the primary,
 * the first by name; pgBackRest needs `backup-standby` for it), else the leader.
 * @throws CtlError when the named member does not exist or the cluster has no member.
 */
export function backupMember(view: ClusterView, scope: string, name: string | undefined): Member {
  if (name !== undefined) return findMember(view, scope, name);
  const all = requireMembers(view, scope);
  const leader = view.leader?.name;
  const replicas = all.filter((m) => m.name !== leader && m.data.state === 'running').sort((a, b) => (a.name < b.name ? -1 : 1));
  return replicas[0] ?? leaderMember(view) ?? all[0]!;
}

/** Runs `backup`: POST /backup on one member, waiting for it to end; exits 1 when it failed. */
export async function runBackup(s: Session, o: BackupOptions): Promise<void> {
  const view = await readView(s);
  const m = backupMember(view, s.scope, o.member);
  s.io.out(`Running the backup on member ${m.name}${o.create ? ' (creating the stanza first)' : ''}`);
  const r = await callMember(m, 'POST', '/backup', o.create ? { create: true } : {}, o.timeoutMs ?? 6 * 3600_000);
  if (!r.reachable) {
    s.io.out(`Failed: ${unreachableText(m, r.error)}`);
    throw failedOn('backup', [m.name]);
  }
  if (r.status === 200) {
    s.io.out(`Success: ${r.text} on member ${m.name}`);
    return;
  }
  s.io.out(`Failed: backup on member ${m.name}, status code=${r.status}, (${r.text})`);
  throw failedOn('backup', [m.name]);
}

/** Runs `flush restart` (DELETE /restart on members with a scheduled restart). */
export async function runFlushRestart(s: Session, names: string[]): Promise<void> {
  const view = await readView(s);
  const members = selectMembers(view, s.scope, names);
  const failed: string[] = [];
  for (const m of members) {
    if (m.data.scheduled_restart === undefined) {
      s.io.out(`No scheduled restart for member ${m.name}`);
      continue;
    }
    const r = await callMember(m, 'DELETE', '/restart');
    if (!r.reachable) {
      s.io.out(`Failed: ${unreachableText(m, r.error)}`);
      failed.push(m.name);
    } else if (r.status === 200) s.io.out(`Success: flush scheduled restart for member ${m.name}`);
    else {
      s.io.out(`Failed: flush scheduled restart for member ${m.name}, status code=${r.status}, (${r.text})`);
      failed.push(m.name);
    }
  }
  if (failed.length > 0) throw failedOn('flush restart', failed);
}

/**
 * Runs `flush switchover`: DELETE /switchover on the leader (then the other members); when none
 * answers, clears the `failover` key with compare-and-set.
 */
export async function runFlushSwitchover(s: Session): Promise<void> {
  const view = await readView(s);
  const plan = view.failover;
  if (plan?.value.scheduled_at === undefined) {
    s.io.out('No pending scheduled switchover');
    return;
  }
  const leader = view.leader?.name;
  const order = [...view.members].sort((a, b) => (a.name === leader ? -1 : b.name === leader ? 1 : 0));
  for (const m of order) {
    const r = await callMember(m, 'DELETE', '/switchover');
    if (!r.reachable) {
      s.io.err(unreachableText(m, r.error));
      continue;
    }
    if (r.status === 200) return void s.io.out(`Success: ${r.text}`);
    if (r.status === 404) return void s.io.out(`Failed: ${r.text}`);
    s.io.out(`Failed: member=${m.name}, status_code=${r.status}, (${r.text})`);
  }
  s.io.out(`${timestamp(s.now())} Could not find any accessible member of cluster ${s.scope}; clearing the failover key`);
  if (!(await s.dcs.setFailover({}, plan.revision))) throw new CtlError('the failover key was modified concurrently; nothing flushed');
  s.io.out('Success: scheduled switchover deleted');
}
