/**
 * Applying configuration: the dynamic configuration from the DCS (validated and adjusted by
 * sanitizeDynamicConfig, docs/ha.md "Configuration from the DCS"), the local configuration
 * re-read on POST /reload, and the options PostgreSQL is configured with (role, upstream, slot,
 * parameters filtered through the server's catalogue).
 */
import { sanitizeDynamicConfig } from '../../config/dynamic-sanitize.ts';
import type { ClusterView } from '../../domain/cluster.ts';
import { timingOf, type DynamicConfig } from '../../domain/dynamic-config.ts';
import type { Tags } from '../../domain/member.ts';
import { filterParameters } from '../../domain/pg-parameters.ts';
import { quorumFailoverSettings } from '../../domain/quorum-failover.ts';
import { syncSettings } from '../../domain/sync-standby.ts';
import { remoteUpstream, standbyClusterOf, standbyLeaderParameters } from '../../domain/standby-cluster.ts';
import { slotNameForMember } from '../../postgres/slots.ts';
import type { ConfigureOptions, TargetedRecovery } from '../../postgres/types.ts';
import { hasPermanentLogicalSlots } from '../replication/replica-slots.ts';
import type { Logger } from 'pino';
import type { Dcs } from '../../dcs/dcs.ts';
import type { SettingsCatalogue } from '../../domain/pg-parameters.ts';
import type { PgControl } from '../../postgres/types.ts';
import type { ScheduledWork } from '../cycle/schedules.ts';
import type { DatabaseView, NodeState } from '../node-core.ts';
import type { ReplicationSource } from '../replication/replication-source.ts';
import type { SyncManager } from '../replication/sync-manager.ts';
import type { RewindRecord } from './rewind-record.ts';

/** The dynamic settings that decide what a diverged member does (a change forgets a failed rewind). */
function rewindSettings(c: DynamicConfig): string {
  const db = c.database;
  return `${db.use_db_rewind}/${db.remove_data_directory_on_rewind_failure}/${db.remove_data_directory_on_diverged_timelines}`;
}

/** What configuration is applied with and to (HaNode wires it). */
export interface ConfigApplierDeps {
  /** This member's name (its slot name). */
  name: string;
  dcs: Pick<Dcs, 'setRetryTimeout' | 'setTtl'>;
  pg: Pick<PgControl, 'configure' | 'reload'>;
  log: Pick<Logger, 'warn'>;
  /** The server's settings catalogue; undefined: parameters are written as given. */
  settingsCatalogue?: SettingsCatalogue;
  /** The node's configuration facts: this module is their one writer (config, tags, local parameters). */
  state: Pick<NodeState, 'config' | 'tags' | 'localParameters'> & Partial<Pick<NodeState, 'recoveryConf' | 'replicaMethods'>>;
  /** Logs and journals a node notice (`config.*`, `parameters.dropped`). */
  notice(type: string, text: string): void;
  /** Runs the HA cycle now. */
  wake(): void;
  /** The scheduled machines, which take a changed loop_wait (defined once the node started). */
  schedules(): Pick<ScheduledWork, 'setLoopWait'> | undefined;
  sync: Pick<SyncManager, 'parameterValue'>;
  source: Pick<ReplicationSource, 'followsRemote' | 'upstream'>;
  rewinds: Pick<RewindRecord, 'forget'>;
  /** The database machine: whether it runs and in which role. */
  db(): DatabaseView;
  /** Re-publishes the member key (after a lease change). */
  republish(): Promise<void>;
}

/** The dynamic and local configuration applied, and PostgreSQL's configuration written (one write at a time). */
export class ConfigApplier {
  private lastProblem = '';
  private lastDropped = '';
  /**
   * The ttl the lease was granted with and the bound the DCS client uses: at construction those
   * of the configuration the node was built with (bootstrap.dcs, what the agent created the DCS
   * client with), then whatever applyDynamic gave it. Compared with every applied configuration,
   * not with the previous one: the stored configuration read at start (a ttl changed by PATCH
   * /config before this agent started) is applied too.
   */
  private leaseTtl: number;
  private clientRetryTimeout: number;
  private ttlChanging = false;
  /** The mod revision of the stored dynamic configuration last validated, and the config that gave. */
  private lastRevision: string | undefined;
  private lastApplied: DynamicConfig | undefined;
  /** The last configuration write in flight (write()), settled; the next one starts after it. */
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly d: ConfigApplierDeps) {
    this.leaseTtl = d.state.config.ttl;
    this.clientRetryTimeout = d.state.config.retry_timeout;
  }

  /**
   * Applies the dynamic configuration the DCS holds, through the same validation as the API:
   * garbage keeps the last good config, impossible timing is adjusted as the reference adjusts
   * it; both are logged and journaled once per distinct problem. A changed loop_wait reaches the
   * scheduled machines, a changed ttl re-grants the lease, changed parameters are written and
   * PostgreSQL reloaded.
   */
  applyDynamic(view: ClusterView): void {
    if (!view.config) return;
    const { state } = this.d;
    const prev = state.config;
    // The same stored value (same mod revision) as last time, already applied: nothing to
    // validate again (an idle agent's cycle, issue 13). A reload of the local configuration
    // replaces state.config, so the check is also against what this call applied.
    if (view.config.revision === this.lastRevision && prev === this.lastApplied) {
      this.applyTiming(prev);
      return;
    }
    const { config: next, problems, adjustments } = sanitizeDynamicConfig(view.config.value, prev);
    this.lastRevision = view.config.revision;
    const problem = [...problems, ...adjustments].join('; ');
    if (problem !== this.lastProblem) {
      this.lastProblem = problem;
      if (problems.length)
        this.d.notice('config.rejected', `dynamic configuration in the DCS is invalid, keeping the last good one: ${problem}`);
      else if (adjustments.length) this.d.notice('config.adjusted', `dynamic configuration in the DCS adjusted: ${problem}`);
    }
    this.applyTiming(next);
    this.lastApplied = next;
    if (next === prev) return;
    state.config = next;
    // A failed pg_rewind is tried again after the operator changes the rewind settings (docs/ha.md "Rewind").
    if (rewindSettings(next) !== rewindSettings(prev)) this.d.rewinds.forget();
    if (next.loop_wait !== prev.loop_wait) this.d.schedules()?.setLoopWait(timingOf(next).loopWaitMs);
    const syncChanged = JSON.stringify(syncSettings(next)) !== JSON.stringify(syncSettings(prev));
    if (syncChanged || JSON.stringify(next.database.parameters) !== JSON.stringify(prev.database.parameters)) {
      this.reconfigureRunning('applying parameters failed');
    }
    if (syncChanged) this.d.wake();
  }

  /**
   * At start, before the database machine exists: the dynamic configuration the DCS holds becomes
   * the effective one (validated; garbage keeps the bootstrap seed, silently: the first cycle's
   * applyDynamic notices it). Nothing else is applied yet (the lease and the timers follow).
   */
  adoptStored(view: ClusterView): void {
    const stored = view.config?.value;
    if (stored) this.d.state.config = sanitizeDynamicConfig(stored, this.d.state.config).config;
  }

  /**
   * retry_timeout reaches the DCS client's bound of every call; a ttl other than the lease's
   * re-grants the lease (the member and leader keys move to it: republished now, the leader key
   * at the next renewal). A failed re-grant is tried again at the next cycle.
   */
  private applyTiming(c: DynamicConfig): void {
    const { dcs, log } = this.d;
    if (c.retry_timeout !== this.clientRetryTimeout) {
      this.clientRetryTimeout = c.retry_timeout;
      dcs.setRetryTimeout(timingOf(c).retryTimeoutMs);
    }
    if (c.ttl === this.leaseTtl || this.ttlChanging) return;
    const ttl = c.ttl;
    this.ttlChanging = true;
    void dcs
      .setTtl(ttl)
      .then(
        () => {
          this.ttlChanging = false;
          this.leaseTtl = ttl;
          return this.d.republish();
        },
        (e) => {
          this.ttlChanging = false;
          log.warn({ err: String(e) }, 'changing the lease TTL failed');
        },
      )
      .catch((e) => log.warn({ err: String(e) }, 'publishing the member key after a lease change failed'));
  }

  /**
   * Applies a re-read local configuration (POST /reload): tags, local parameters and, when given,
   * the archive settings (database.recovery_conf, the replica creation methods). Parameters are
   * written and PostgreSQL reloaded; those needing a restart show as pending_restart.
   */
  applyLocal(
    tags: Tags,
    parameters: Record<string, string | number | boolean>,
    archive?: Pick<NodeState, 'recoveryConf' | 'replicaMethods'>,
  ): void {
    this.d.state.tags = tags;
    this.d.state.localParameters = parameters;
    if (archive) {
      this.d.state.recoveryConf = archive.recoveryConf;
      this.d.state.replicaMethods = archive.replicaMethods;
    }
    this.reconfigureRunning('applying the reloaded configuration failed');
    this.d.wake();
  }

  /**
   * What PostgreSQL is configured with for `role`: local parameters, then the dynamic ones (which
   * win), minus those the server's catalogue refuses (noticed once per distinct set); a replica
   * gets its upstream, with use_slots its slot name, and database.recovery_conf (restore_command,
   * … : docs/backups.md "The WAL archive"; the standby leader takes standby_cluster's instead, as
   * the reference, patroni.md §3.9).
   */
  configureOptions(role: 'primary' | 'replica'): ConfigureOptions {
    const { state } = this.d;
    let parameters: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(state.localParameters)) parameters[k] = typeof v === 'boolean' ? (v ? 'on' : 'off') : v;
    Object.assign(parameters, state.config.database.parameters);
    if (this.d.settingsCatalogue) {
      const { kept, dropped } = filterParameters(parameters, this.d.settingsCatalogue);
      const text = dropped.join('; ');
      if (text !== this.lastDropped) {
        this.lastDropped = text;
        if (text) this.d.notice('parameters.dropped', `PostgreSQL parameters refused by the server's catalogue, not written: ${text}`);
      }
      parameters = kept;
    }
    // pg_rewind needs wal_log_hints (or data checksums): on whenever use_db_rewind is (docs/ha.md "Rewind").
    if (state.config.database.use_db_rewind) parameters['wal_log_hints'] = 'on';
    // Replicas keeping permanent logical slots report their slots' catalog_xmin to the primary (docs/ha.md "Replication slots").
    if (role === 'replica' && hasPermanentLogicalSlots(state.config)) parameters['hot_standby_feedback'] = 'on';
    // Quorum failover: a replica's WAL receiver gives up on a silent upstream (a partition, where no
    // connection is closed) after the window, unless the operator set the timeout (docs/ha.md
    // "Quorum failover"). Not in a standby cluster, where synchronous mode and the mode are ignored.
    const quorum = role === 'replica' && !standbyClusterOf(state.config) ? quorumFailoverSettings(state.config) : undefined;
    if (quorum && !Object.keys(parameters).some((k) => k.toLowerCase() === 'wal_receiver_timeout'))
      parameters['wal_receiver_timeout'] = quorum.windowMs;
    // Synchronous mode on: the synchronous-replication manager owns synchronous_standby_names.
    const sync = this.d.sync.parameterValue(role);
    if (sync !== undefined) parameters['synchronous_standby_names'] = sync;
    // The standby leader (docs/ha.md "Standby cluster"): the remote upstream, its slot, its recovery settings.
    const sc = role === 'replica' && this.d.source.followsRemote ? standbyClusterOf(state.config) : undefined;
    if (sc) {
      Object.assign(parameters, standbyLeaderParameters(sc));
      const upstream = remoteUpstream(sc);
      return {
        role,
        ...(upstream ? { upstream } : {}),
        ...(upstream && sc.primary_slot_name ? { slotName: sc.primary_slot_name } : {}),
        parameters,
      };
    }
    if (role === 'replica' && state.recoveryConf) Object.assign(parameters, state.recoveryConf);
    return {
      role,
      ...(role === 'replica' && this.d.source.upstream ? { upstream: this.d.source.upstream } : {}),
      ...(role === 'replica' && state.config.database.use_slots ? { slotName: slotNameForMember(this.d.name) } : {}),
      parameters,
    };
  }

  /**
   * Writes the configuration for `role` (configureOptions, computed when this write's turn comes,
   * not when it was asked for). Every write of the agent goes through here, one at a time in the
   * order asked: two writes in flight could otherwise land out of order and leave PostgreSQL
   * with the older options, e.g. a reconfiguration started by a dynamic-configuration change
   * landing after the synchronous-replication manager wrote a newer synchronous_standby_names
   * (CI, tests/e2e/sync-rules.test.ts: the set stayed FIRST 2 after the key shrank to one member).
   * Rejects when PgControl.configure does; a failed write does not stop the next one.
   * `targeted`: a custom bootstrap's targeted recovery, for the first start after it only.
   */
  write(role: 'primary' | 'replica' | (() => 'primary' | 'replica' | undefined), targeted?: TargetedRecovery): Promise<void> {
    const run = async () => {
      const r = typeof role === 'function' ? role() : role;
      if (r !== undefined) await this.d.pg.configure({ ...this.configureOptions(r), ...(targeted ? { targetedRecovery: targeted } : {}) });
    };
    const next = this.writing.then(run, run);
    this.writing = next.catch(() => undefined);
    return next;
  }

  /** Writes the configuration for `role` and reloads PostgreSQL (awaited; rejects on failure). */
  async writeAndReload(role: 'primary' | 'replica'): Promise<void> {
    await this.write(role);
    await this.d.pg.reload();
  }

  /** Rewrites the configuration of a running database for its role and reloads it. */
  private reconfigureRunning(failure: string): void {
    const { pg, log } = this.d;
    // The role is read when the write's turn comes: a database no longer running is not touched.
    const role = () => {
      const s = this.d.db().getSnapshot();
      return s.value === 'running' ? (s.context.role === 'primary' ? 'primary' : 'replica') : undefined;
    };
    if (role() === undefined) return;
    void this.write(role)
      .then(() => (role() === undefined ? undefined : pg.reload()))
      .catch((e) => log.warn({ err: String(e) }, failure));
  }
}
