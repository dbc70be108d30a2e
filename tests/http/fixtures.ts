/**
 * Snapshot builders and a fake NodeCommands for the node API tests. All times are relative to
 * NOW (a fixed epoch ms); LSNs are bytes.
 */
import type { ClusterView, FailoverRequest } from '../../src/domain/cluster.ts';
import { DYNAMIC_DEFAULTS, type DynamicConfig } from '../../src/domain/dynamic-config.ts';
import type { Member, MemberData, ScheduledRestartData } from '../../src/domain/member.ts';
import { catalogueOf, type SettingsCatalogue } from '../../src/domain/pg-parameters.ts';
import type { PgStatus } from '../../src/domain/pg-status.ts';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { createNodeApp } from '../../src/http/app.ts';
import type { CommandOutcome, NodeCommands, ReinitializeOptions } from '../../src/http/commands.ts';

/** The fixed "now" of every test: 2026-01-15T12:00:00Z. */
export const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
/** Leader position published in the DCS `status` key. */
export const OPTIME = 0x3000060n;
export const MiB = 1024n * 1024n;

export function member(name: string, data: Partial<MemberData> = {}): Member {
  return {
    name,
    data: {
      conn_url: `postgres://10.0.0.${name.slice(-1)}:5432/postgres`,
      api_url: `http://10.0.0.${name.slice(-1)}:8008/ha`,
      state: 'running',
      role: 'replica',
      version: '0.1.0',
      ...data,
    },
  };
}

/** A three-member cluster led by pg-1, with the given extra keys. */
export function clusterView(extra: Partial<ClusterView> = {}): ClusterView {
  return {
    initialize: '7300000000000000001',
    config: { value: { ttl: 30, loop_wait: 10, retry_timeout: 10 }, revision: '11' },
    leader: { name: 'pg-1', leaseId: '7587', revision: '12', createRevision: '12' },
    members: [
      member('pg-1', { role: 'primary', xlog_location: Number(OPTIME), timeline: 2 }),
      member('pg-2', {
        xlog_location: Number(OPTIME),
        receive_lsn: Number(OPTIME),
        replay_lsn: Number(OPTIME),
        replication_state: 'streaming',
        timeline: 2,
      }),
      member('pg-3', {
        xlog_location: Number(OPTIME - 20n * MiB),
        receive_lsn: Number(OPTIME - 20n * MiB),
        replay_lsn: Number(OPTIME - 20n * MiB),
        replication_state: 'streaming',
        timeline: 2,
      }),
    ],
    status: { optime: Number(OPTIME) },
    history: [[1, 50331744, 'no recovery target specified', '2026-01-10T08:00:00+00:00', 'pg-1']],
    ...extra,
  };
}

export function config(extra: Partial<DynamicConfig> = {}): DynamicConfig {
  return { ...structuredClone(DYNAMIC_DEFAULTS), ...extra };
}

function pgPrimary(): PgStatus {
  return {
    atMs: NOW - 500,
    inRecovery: false,
    serverVersion: 150018,
    postmasterStartTime: '2026-01-15 11:00:00.250+00',
    timeline: 2,
    flushLsn: OPTIME,
    streaming: false,
    replication: [
      {
        usename: 'replicator',
        application_name: 'pg-2',
        client_addr: '10.0.0.2',
        state: 'streaming',
        sync_state: 'async',
        sync_priority: 0,
        flush_lsn: OPTIME,
        replay_lsn: OPTIME,
      },
    ],
    pendingRestart: {},
    slots: {},
  };
}

function pgReplica(replayLsn: bigint): PgStatus {
  return {
    atMs: NOW - 500,
    inRecovery: true,
    serverVersion: 150018,
    postmasterStartTime: '2026-01-15 11:00:00+00',
    timeline: 2,
    receiveLsn: replayLsn,
    replayLsn,
    replayTimestamp: '2026-01-15 11:59:59.5+00',
    replayPaused: false,
    streaming: true,
    archiveRecovery: false,
    latestEndLsn: replayLsn,
    replication: [],
    pendingRestart: {},
    slots: {},
  };
}

function base(overrides: Partial<NodeSnapshot>): NodeSnapshot {
  return {
    name: 'pg-2',
    scope: 'demo',
    version: '0.1.0',
    apiUrl: 'http://10.0.0.2:8008/ha',
    connUrl: 'postgres://10.0.0.2:5432/postgres',
    tags: {},
    state: 'running',
    role: 'replica',
    leaderUntilMs: 0,
    cluster: clusterView(),
    dcsLastSeenMs: NOW - 1000,
    config: config(),
    lastLoopMs: NOW - 2000,
    sysid: '7300000000000000001',
    ...overrides,
  };
}

/** pg-1: primary holding the leader lock, one streaming standby attached. */
export function primaryLeader(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  return base({
    name: 'pg-1',
    apiUrl: 'http://10.0.0.1:8008/ha',
    connUrl: 'postgres://10.0.0.1:5432/postgres',
    role: 'primary',
    pg: pgPrimary(),
    leaderUntilMs: NOW + 25_000,
    ...o,
  });
}

/** pg-2: replica streaming, caught up with the leader. */
export function streamingReplica(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  return base({ pg: pgReplica(OPTIME), ...o });
}

/** pg-3: replica streaming 20 MiB behind the leader. */
export function laggingReplica(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  return base({
    name: 'pg-3',
    apiUrl: 'http://10.0.0.3:8008/ha',
    connUrl: 'postgres://10.0.0.3:5432/postgres',
    pg: pgReplica(OPTIME - 20n * MiB),
    ...o,
  });
}

/** pg-2 streaming, tagged noloadbalance. */
export function noloadbalanceReplica(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  return streamingReplica({ tags: { noloadbalance: true }, ...o });
}

/** pg-2 with the database stopped (no probe). */
export function stoppedReplica(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  const { pg: _none, ...rest } = streamingReplica({ state: 'stopped', ...o });
  return rest;
}

/** pg-2 whose database crashed (no probe). */
export function crashedReplica(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  return stoppedReplica({ state: 'crashed', ...o });
}

/** pg-2 streaming, but the DCS was last seen two minutes ago (view older than ttl). */
export function noDcsReplica(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  return streamingReplica({ dcsLastSeenMs: NOW - 120_000, ...o });
}

/** pg-1 primary in a paused cluster whose DCS is unreachable (lock lease expired in memory). */
export function pausedPrimaryNoDcs(o: Partial<NodeSnapshot> = {}): NodeSnapshot {
  return primaryLeader({ config: config({ pause: true }), dcsLastSeenMs: NOW - 120_000, leaderUntilMs: NOW - 60_000, ...o });
}

/** A recorded call of the fake commands. */
export type Call = { method: string; args: unknown[] };

/** Fake NodeCommands: records calls, answers with configurable results. */
export class FakeCommands implements NodeCommands {
  calls: Call[] = [];
  cluster: ClusterView | Error = clusterView();
  writeConfigResult: boolean | Error = true;
  writeFailoverResult: boolean | Error = true;
  /** api_url -> status document (missing = unreachable). */
  memberStatus = new Map<string, Record<string, unknown>>();
  restartOutcome: CommandOutcome | Error = { ok: true };
  scheduleRestartResult = true;
  cancelRestartResult = true;
  reloadError: Error | undefined;
  reinitializeOutcome: CommandOutcome = { ok: true };
  /** Called after a successful writeFailover (e.g. to move the fake snapshot). */
  onWriteFailover: ((value: FailoverRequest) => void) | undefined;

  constructor() {
    for (const name of ['pg-1', 'pg-2', 'pg-3']) {
      this.memberStatus.set(`http://10.0.0.${name.slice(-1)}:8008/ha`, { state: 'running', role: 'replica', ha: { name } });
    }
  }

  names(): string[] {
    return this.calls.map((c) => c.method);
  }

  private record(method: string, ...args: unknown[]): void {
    this.calls.push({ method, args });
  }

  async readCluster(): Promise<ClusterView> {
    this.record('readCluster');
    if (this.cluster instanceof Error) throw this.cluster;
    return structuredClone(this.cluster);
  }
  async writeConfig(value: Record<string, unknown>, expectedRevision?: string): Promise<boolean> {
    this.record('writeConfig', value, expectedRevision);
    if (this.writeConfigResult instanceof Error) throw this.writeConfigResult;
    return this.writeConfigResult;
  }
  async writeFailover(value: FailoverRequest, expectedRevision?: string): Promise<boolean> {
    this.record('writeFailover', value, expectedRevision);
    if (this.writeFailoverResult instanceof Error) throw this.writeFailoverResult;
    if (this.writeFailoverResult) this.onWriteFailover?.(value);
    return this.writeFailoverResult;
  }
  async fetchMemberStatus(apiUrl: string): Promise<Record<string, unknown> | undefined> {
    this.record('fetchMemberStatus', apiUrl);
    return this.memberStatus.get(apiUrl);
  }
  wake(): void {
    this.record('wake');
  }
  async restart(timeoutMs?: number): Promise<CommandOutcome> {
    this.record('restart', timeoutMs);
    if (this.restartOutcome instanceof Error) throw this.restartOutcome;
    return this.restartOutcome;
  }
  async scheduleRestart(plan: ScheduledRestartData): Promise<boolean> {
    this.record('scheduleRestart', plan);
    return this.scheduleRestartResult;
  }
  async cancelRestart(): Promise<boolean> {
    this.record('cancelRestart');
    return this.cancelRestartResult;
  }
  async reload(): Promise<void> {
    this.record('reload');
    if (this.reloadError) throw this.reloadError;
  }
  async reinitialize(opts: ReinitializeOptions): Promise<CommandOutcome> {
    this.record('reinitialize', opts);
    return this.reinitializeOutcome;
  }
}

/** A small PostgreSQL 15 settings catalogue (as src/postgres/settings-catalogue.ts builds them). */
export const SETTINGS: SettingsCatalogue = catalogueOf(
  [
    { name: 'max_connections', vartype: 'integer', context: 'postmaster', unit: '', min: 1, max: 262143 },
    { name: 'shared_buffers', vartype: 'integer', context: 'postmaster', unit: '8kB', min: 16, max: 1073741823 },
    { name: 'work_mem', vartype: 'integer', context: 'user', unit: 'kB', min: 64, max: 2147483647 },
    { name: 'hot_standby', vartype: 'bool', context: 'postmaster' },
    { name: 'fsync', vartype: 'bool', context: 'sighup' },
    {
      name: 'wal_level',
      vartype: 'enum',
      context: 'postmaster',
      enumValues: ['minimal', 'replica', 'logical'],
      enumAliases: ['archive', 'hot_standby'],
    },
    { name: 'search_path', vartype: 'string', context: 'user' },
  ],
  '15.18',
);

/**
 * An app over a fixed snapshot (or a getter), fixed NOW, and a FakeCommands; `settings` is the
 * PostgreSQL settings catalogue handed to the API (default: none, parameters not checked).
 */
export function appFor(
  snapshot: NodeSnapshot | (() => NodeSnapshot),
  commands: FakeCommands = new FakeCommands(),
  poll?: { intervalMs?: number; timeoutMs?: number },
  settings?: SettingsCatalogue,
) {
  const get = typeof snapshot === 'function' ? snapshot : () => snapshot;
  const app = createNodeApp({
    snapshot: get,
    commands,
    now: () => NOW,
    ...(poll ? { switchoverPoll: poll } : {}),
    ...(settings ? { settingsCatalogue: () => settings } : {}),
  });
  return { app, commands };
}

/** JSON request helper. */
export function send(app: ReturnType<typeof appFor>['app'], method: string, path: string, body?: unknown | string) {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  return app.request(path, init);
}
