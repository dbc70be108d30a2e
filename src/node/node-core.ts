/**
 * What the node's modules share: the injected dependencies, the facts kept between cycles, and
 * the few services every module calls (the database machine, the leader lock, notices, wake-up).
 * HaNode builds one NodeCore and hands it to each module (docs/architecture.md "The node").
 * No I/O here: this file only names things.
 */
import type { Logger } from 'pino';
import type { Actor } from 'xstate';
import type { Dcs } from '../dcs/dcs.ts';
import type { DynamicConfig } from '../domain/dynamic-config.ts';
import type { Tags } from '../domain/member.ts';
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';
import type { PgStatus } from '../domain/pg-status.ts';
import type { databaseMachine } from '../machines/database.ts';
import type { PgControl } from '../postgres/types.ts';
import type { Clock } from './clock.ts';
import type { Journal } from '../journal/journal.ts';
import type { LeaderDuties } from './replication/leader-duties.ts';
import type { Fencing } from './lock/fencing.ts';
import type { LeaderLock } from './lock/leader-lock.ts';
import type { ScheduledWork } from './cycle/schedules.ts';
import type { ReplicationSource } from './replication/replication-source.ts';
import type { CycleTrackers } from './cycle/trackers.ts';
import type { RewindRecord } from './local/rewind-record.ts';
import type { SyncManager } from './replication/sync-manager.ts';

/** The node's injected dependencies (the composition root, src/node/agent/agent.ts, builds them). */
export interface NodeDeps {
  name: string;
  scope: string;
  /** Agent version (semver). */
  version: string;
  /** `http://<restapi.connect_address>/ha` */
  apiUrl: string;
  /** `postgres://<database.connect_address>/postgres` */
  connUrl: string;
  dcs: Dcs;
  pg: PgControl;
  journal: Journal;
  log: Logger;
  clock: Clock;
  /** Member status fetcher (GET <api_url>); undefined when unreachable. */
  fetchStatus: (apiUrl: string) => Promise<Record<string, unknown> | undefined>;
  /** Seed of the dynamic configuration (bootstrap.dcs), written once by the bootstrap winner. */
  bootstrapDcs: Record<string, unknown>;
  /** initdb options as `--key=value` strings. */
  initdbOptions: string[];
  /** Custom bootstrap command, when bootstrap.method names one. */
  customBootstrapCommand?: string;
  /** How long a start may take before start_failed, ms. */
  startTimeoutMs: number;
  /** The server's settings catalogue; undefined: parameters are written as given. */
  settingsCatalogue?: SettingsCatalogue;
}

/** Facts the node keeps between cycles (mutable; owned by the node's modules). */
export class NodeState {
  /** The effective dynamic configuration (validated, defaults filled). */
  config: DynamicConfig;
  /** Tags and local parameters of ha.yml (POST /reload replaces them). */
  tags: Tags;
  localParameters: Record<string, string | number | boolean>;
  /** This agent won the `initialize` race in this process lifetime. */
  initializedByMe = false;
  /** Stopped by this agent's demotion and not started since. */
  demoted = false;
  /** Epoch ms of the last completed HA cycle; 0 before the first. */
  lastLoopMs = 0;

  constructor(init: { config: DynamicConfig; tags: Tags; localParameters: Record<string, string | number | boolean> }) {
    this.config = init.config;
    this.tags = init.tags;
    this.localParameters = init.localParameters;
  }
}

/** The services every module of the node may call. */
export interface NodeCore {
  readonly deps: NodeDeps;
  readonly state: NodeState;
  readonly lock: LeaderLock;
  readonly duties: LeaderDuties;
  /** The fence of the local PostgreSQL (fencing.ts): armed and fed while this member leads. */
  readonly fencing: Fencing;
  /** Synchronous replication of the leader (synchronous_standby_names and the `sync` key). */
  readonly sync: SyncManager;
  /** Where this member clones and streams from (replication/replication-source.ts). */
  readonly source: ReplicationSource;
  /** The facts the cycle carries between cycles (cycle/trackers.ts). */
  readonly trackers: CycleTrackers;
  /** pg_rewind under way and the last that failed (local/rewind-record.ts). */
  readonly rewinds: RewindRecord;
  /** The database machine actor (defined once the node started). */
  db(): Actor<typeof databaseMachine>;
  /** The scheduled switchover and restart machines (defined once the node started). */
  schedules(): ScheduledWork | undefined;
  /** The latest probe while the database runs. */
  probe(): PgStatus | undefined;
  /** Probes the local database now (no-op while it does not run). */
  probeNow(): Promise<void>;
  /** A probe started at or after `tMs` (LocalWatch.probeStartedAfter). */
  probeStartedAfter(tMs: number): Promise<void>;
  /** Epoch ms. */
  now(): number;
  /** Logs (warn) and journals one node-level notice (journal machine `ha`, event `ha.<type>`). */
  notice(type: string, text: string): void;
  /** Tells observers that state, role or leadership changed. */
  emitChange(): void;
  /** Runs the HA cycle now. */
  wake(): void;
}
