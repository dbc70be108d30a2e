/**
 * What the node's modules share by name: the injected dependencies (NodeDeps), the few facts kept
 * between cycles that are nobody's room (NodeState: each field has one writer, named on it), and
 * the types of the node-wide services (Notice, DatabaseActor). Modules take narrow deps objects
 * (their own interfaces, often Picks of these); node-parts.ts wires them. No I/O here: this file
 * only names things.
 */
import { BASEBACKUP, type ReplicaMethodsConfig } from '../domain/replica-methods.ts';
import type { Logger } from 'pino';
import type { Actor } from 'xstate';
import type { Dcs } from '../dcs/dcs.ts';
import type { DynamicConfig } from '../domain/dynamic-config.ts';
import type { Tags } from '../domain/member.ts';
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';
import type { DatabaseContext, DatabaseEvent, databaseMachine } from '@ha/machines';
import type { PgControl } from '../postgres/types.ts';
import type { Clock } from './clock.ts';
import type { Journal } from '@ha/machines';

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

/**
 * Facts the node keeps between cycles that no room owns alone (mutable). Each field has exactly
 * one writer, named below; every other module reads it through a Readonly Pick. The cycle's own
 * facts are cycle/trackers.ts's, the stream source replication/replication-source.ts's, the
 * rewind record local/rewind-record.ts's.
 */
export class NodeState {
  /** The effective dynamic configuration (validated, defaults filled). Writer: local/config-apply.ts. */
  config: DynamicConfig;
  /** Tags of ha.yml (POST /reload replaces them). Writer: local/config-apply.ts. */
  tags: Tags;
  /** database.parameters of ha.yml (POST /reload replaces them). Writer: local/config-apply.ts. */
  localParameters: Record<string, string | number | boolean>;
  /**
   * database.recovery_conf of ha.yml (restore_command, archive_cleanup_command,
   * recovery_min_apply_delay), written for every replica (docs/backups.md "The WAL archive").
   * POST /reload replaces it. Writer: local/config-apply.ts.
   */
  recoveryConf: Record<string, string | number>;
  /**
   * database.create_replica_methods and the method sections of ha.yml (docs/backups.md "Replica
   * creation"). POST /reload replaces them. Writer: local/config-apply.ts.
   */
  replicaMethods: ReplicaMethodsConfig;
  /** This agent won the `initialize` race in this process lifetime. Writer: cycle/executor.ts. */
  initializedByMe = false;
  /** Stopped by this agent's demotion and not started since. Writer: cycle/executor.ts. */
  demoted = false;
  /** Epoch ms of the last completed HA cycle; 0 before the first. Writer: node-parts.ts (the loop's afterCycle). */
  lastLoopMs = 0;

  constructor(init: {
    config: DynamicConfig;
    tags: Tags;
    localParameters: Record<string, string | number | boolean>;
    recoveryConf?: Record<string, string | number>;
    replicaMethods?: ReplicaMethodsConfig;
  }) {
    this.config = init.config;
    this.tags = init.tags;
    this.localParameters = init.localParameters;
    this.recoveryConf = init.recoveryConf ?? {};
    this.replicaMethods = init.replicaMethods ?? { list: [BASEBACKUP], sections: {} };
  }
}

/** Logs (at warn, or at `level`: routine events) and journals one node-level notice (journal machine `ha`, event `ha.<type>`). */
export type Notice = (type: string, text: string, level?: 'info') => void;

/** The database machine actor (HaNode starts it; the admin commands wait on it). */
export type DatabaseActor = Actor<typeof databaseMachine>;

/** The database machine as most modules read it: its state, the role and whether a promotion runs (the actor is one). */
export interface DatabaseView {
  getSnapshot(): { value: unknown; context: Pick<DatabaseContext, 'role' | 'promoting'> };
}

/** The database machine as the modules that command it see it (the actor is one). */
export interface DatabaseCommands extends DatabaseView {
  send(event: DatabaseEvent): void;
}
