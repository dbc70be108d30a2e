/**
 * `hactl list` and `hactl topology`: the cluster as the DCS holds it, rendered like the reference
 * CLI (patroni.md §5). Roles, states and lags come from the node API's cluster document
 * (buildClusterDocument), built here from a ClusterView, so hactl and `GET /cluster` agree.
 */
import YAML from 'yaml';
import type { ClusterView } from '../domain/cluster.ts';
import { withDefaults } from '../domain/dynamic-config.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import { buildClusterDocument, type ClusterDocument, type ClusterMemberDocument, type LagValue } from '../domain/cluster-document.ts';
import { upstreamMember } from '../domain/upstream.ts';
import { renderPretty, renderTsv, type Cell } from './table.ts';

/** Output formats of `list` and `history`. */
export const LIST_FORMATS = ['pretty', 'json', 'yaml', 'tsv'] as const;
/** One of {@link LIST_FORMATS}. */
export type ListFormat = (typeof LIST_FORMATS)[number];

/** Options of list rendering. */
export interface ListOptions {
  format: ListFormat;
  /** Always show the pending/scheduled restart and tags columns. */
  extended: boolean;
  /** Members indented under the member they replicate from (`topology`). */
  topology?: boolean;
}

/** The cluster document of a view, as the node API would answer it (roles, states, lags). */
export function clusterDocumentOf(view: ClusterView, scope: string): ClusterDocument {
  const snapshot: NodeSnapshot = {
    name: '',
    scope,
    version: '',
    apiUrl: '',
    connUrl: '',
    tags: {},
    state: 'stopped',
    role: 'uninitialized',
    leaderUntilMs: 0,
    cluster: view,
    dcsLastSeenMs: 0,
    config: withDefaults(view.config?.value),
    lastLoopMs: 0,
  };
  return buildClusterDocument(snapshot);
}

/** The title of the table: `Cluster: <scope> (<system identifier | initializing | uninitialized>)`. */
export function clusterTitle(view: ClusterView, scope: string): string {
  const id = view.initialize === undefined ? 'uninitialized' : view.initialize === '' ? 'initializing' : view.initialize;
  return `Cluster: ${scope} (${id})`;
}

const ROLE_TEXT: Record<ClusterMemberDocument['role'], string> = {
  leader: 'Leader',
  standby_leader: 'Standby Leader',
  sync_standby: 'Sync Standby',
  quorum_standby: 'Quorum Standby',
  replica: 'Replica',
};

/** Lag in MB (rounded), undefined when unknown. */
function lagMb(lag: LagValue | undefined): number | undefined {
  return typeof lag === 'number' ? Math.round(lag / 1048576) : undefined;
}

/** `max_connections: 100->120, …` */
function reasonText(r: ClusterMemberDocument['pending_restart_reason']): string | undefined {
  if (!r) return undefined;
  return Object.entries(r)
    .map(([k, v]) => `${k}: ${v.old_value}->${v.new_value}`)
    .join(', ');
}

function tagsText(t: ClusterMemberDocument['tags']): string | undefined {
  if (!t || Object.keys(t).length === 0) return undefined;
  return Object.entries(t)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ');
}

/** Orders members for `topology`: each member followed by those replicating from it, with depth. */
function topologyOrder(doc: ClusterDocument, view: ClusterView): Array<{ m: ClusterMemberDocument; depth: number }> {
  const names = new Set(doc.members.map((m) => m.name));
  const leader = view.leader?.name !== undefined && names.has(view.leader.name) ? view.leader.name : undefined;
  // The member each one streams from, as the agents decide it (src/domain/upstream.ts): the
  // `replicatefrom` member while it runs and streams, else the leader.
  const upstreamOf = (m: ClusterMemberDocument): string | undefined => {
    if (m.name === leader) return undefined;
    const up = upstreamMember(view, m.name, leader !== undefined ? { leader } : {});
    return up !== undefined && names.has(up) && up !== m.name ? up : leader;
  };
  const out: Array<{ m: ClusterMemberDocument; depth: number }> = [];
  const seen = new Set<string>();
  const visit = (m: ClusterMemberDocument, depth: number) => {
    if (seen.has(m.name)) return;
    seen.add(m.name);
    out.push({ m, depth });
    for (const c of doc.members) if (upstreamOf(c) === m.name) visit(c, depth + 1);
  };
  for (const m of doc.members) if (upstreamOf(m) === undefined) visit(m, 0);
  for (const m of doc.members) visit(m, 0); // cycles of replicatefrom tags
  return out;
}

/** One output row as a record of column name → value (the json/yaml shape). */
export type ListRow = Record<string, string | number>;

/**
 * The rows of `list` (json/yaml/tsv keys: Cluster, Member, Host, Role, State, TL, Receive LSN,
 * Receive Lag, Replay LSN, Replay Lag, then Pending restart, Pending restart reason, Scheduled
 * restart, Tags when shown; Failure, the last failed database action, in json/yaml only). Lags in
 * MB. Absent values are left out.
 */
export function listRows(
  view: ClusterView,
  scope: string,
  opts: Pick<ListOptions, 'extended' | 'topology'> & { /** Epoch ms for "not streaming for N s"; default now. */ nowMs?: number },
): { columns: string[]; rows: ListRow[] } {
  const doc = clusterDocumentOf(view, scope);
  const ordered = opts.topology ? topologyOrder(doc, view) : doc.members.map((m) => ({ m, depth: 0 }));
  const ports = doc.members.map((m) => m.port);
  const hosts = doc.members.map((m) => m.host);
  const withPort = ports.some((p) => p !== undefined && p !== 5432) || new Set(hosts).size !== hosts.length;
  const anyPending = doc.members.some((m) => m.pending_restart === true);
  const anyScheduled = doc.members.some((m) => m.scheduled_restart !== undefined);
  const anyTags = doc.members.some((m) => tagsText(m.tags) !== undefined);
  const columns = ['Cluster', 'Member', 'Host', 'Role', 'State', 'TL', 'Receive LSN', 'Receive Lag', 'Replay LSN', 'Replay Lag'];
  if (opts.extended || anyPending) columns.push('Pending restart', 'Pending restart reason');
  if (opts.extended || anyScheduled) columns.push('Scheduled restart');
  if (opts.extended || anyTags) columns.push('Tags');
  const rows = ordered.map(({ m, depth }) => {
    const row: ListRow = {
      Cluster: scope,
      Member: depth > 0 ? `${'  '.repeat(depth - 1)}+ ${m.name}` : m.name,
      Host: m.host === undefined ? '' : withPort ? `${m.host}:${m.port}` : m.host,
      Role: ROLE_TEXT[m.role],
      State: stateText(m, opts.nowMs ?? Date.now()),
    };
    if (m.timeline !== undefined) row['TL'] = m.timeline;
    const set = (k: string, v: string | number | undefined) => {
      if (v !== undefined && v !== 'unknown') row[k] = v;
    };
    set('Receive LSN', m.receive_lsn);
    set('Receive Lag', lagMb(m.receive_lag));
    set('Replay LSN', m.replay_lsn);
    set('Replay Lag', lagMb(m.replay_lag));
    if (columns.includes('Pending restart')) {
      if (m.pending_restart) row['Pending restart'] = '*';
      set('Pending restart reason', reasonText(m.pending_restart_reason));
    }
    if (columns.includes('Scheduled restart')) set('Scheduled restart', m.scheduled_restart?.schedule);
    if (columns.includes('Tags')) set('Tags', tagsText(m.tags));
    // Not a column of the table (the footer names it there): json/yaml rows carry it.
    set('Failure', m.failure);
    return row;
  });
  return { columns, rows };
}

/**
 * Footer lines: maintenance mode, a scheduled switchover (from/to aligned under `at:`), and each
 * member's last failed database action with its reason (`failure`, issue 30 item 2).
 */
export function listFooter(view: ClusterView, scope: string): string[] {
  const doc = clusterDocumentOf(view, scope);
  const lines: string[] = [];
  for (const m of doc.members) if (m.failure !== undefined) lines.push(` ${m.name}: ${m.failure}`);
  if (doc.pause) lines.push(' Maintenance mode: on');
  const s = doc.scheduled_switchover;
  if (s) {
    const label = 'Switchover scheduled at:';
    lines.push(` ${label} ${s.at}`);
    if (s.from !== undefined) lines.push(` ${'from:'.padStart(label.length)} ${s.from}`);
    if (s.to !== undefined) lines.push(` ${'to:'.padStart(label.length)} ${s.to}`);
  }
  return lines;
}

/** Renders `list`/`topology` in the chosen format (lines without newlines). */
export function renderList(view: ClusterView, scope: string, opts: ListOptions): string[] {
  const { columns, rows } = listRows(view, scope, opts);
  switch (opts.format) {
    case 'json':
      return [JSON.stringify(rows)];
    case 'yaml':
      return rows.length === 0 ? ['[]'] : YAML.stringify(rows).trimEnd().split('\n');
    case 'tsv':
      return renderTsv(
        columns,
        rows.map((r) => columns.map((c) => r[c])),
      );
    case 'pretty': {
      const shown = columns.slice(1);
      const headers = shown.map((c) => (c === 'Receive Lag' || c === 'Replay Lag' ? 'Lag' : c));
      const cells: Cell[][] = rows.map((r) => shown.map((c) => r[c]));
      return [...renderPretty(headers, cells, clusterTitle(view, scope)), ...listFooter(view, scope)];
    }
  }
}

/**
 * The State column: the member's state, plus `, not streaming for N s` for a running replica whose
 * WAL receiver is down, `, diverged` for a member whose WAL diverged from the leader's timeline,
 * and the long operation under way (`creating replica, clone basebackup: copying from node1 1.2 GB
 * / 5.0 GB (24%)`; docs/backups.md "Progress").
 */
function stateText(m: { state: string; not_streaming_since?: string; diverged?: string; progress?: string }, nowMs: number): string {
  let text = m.state.replace(/_/g, ' ');
  const since = m.not_streaming_since !== undefined ? Date.parse(m.not_streaming_since) : NaN;
  if (Number.isFinite(since)) text += `, not streaming for ${Math.max(0, Math.round((nowMs - since) / 1000))} s`;
  if (m.diverged !== undefined) text += ', diverged';
  if (m.progress !== undefined) text += `, ${m.progress}`;
  return text;
}
