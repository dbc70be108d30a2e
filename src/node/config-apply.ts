/**
 * Applying configuration: the dynamic configuration from the DCS (validated and adjusted by
 * sanitizeDynamicConfig, docs/ha.md "Configuration from the DCS"), the local configuration
 * re-read on POST /reload, and the options PostgreSQL is configured with (role, upstream, slot,
 * parameters filtered through the server's catalogue).
 */
import { sanitizeDynamicConfig } from '../config/dynamic-sanitize.ts';
import type { ClusterView } from '../domain/cluster.ts';
import type { Tags } from '../domain/member.ts';
import { filterParameters } from '../domain/pg-parameters.ts';
import { slotNameForMember } from '../postgres/slots.ts';
import type { ConfigureOptions } from '../postgres/types.ts';
import type { NodeCore } from './node-core.ts';

export class ConfigApplier {
  private lastProblem = '';
  private lastDropped = '';

  constructor(
    private readonly core: NodeCore,
    /** Re-publishes the member key (after a lease change). */
    private readonly republish: () => Promise<void>,
  ) {}

  /**
   * Applies the dynamic configuration the DCS holds, through the same validation as the API:
   * garbage keeps the last good config, impossible timing is adjusted as the reference adjusts
   * it; both are logged and journaled once per distinct problem. A changed loop_wait reaches the
   * scheduled machines, a changed ttl re-grants the lease, changed parameters are written and
   * PostgreSQL reloaded.
   */
  applyDynamic(view: ClusterView): void {
    if (!view.config) return;
    const { state, deps } = this.core;
    const prev = state.config;
    const { config: next, problems, adjustments } = sanitizeDynamicConfig(view.config.value, prev);
    const problem = [...problems, ...adjustments].join('; ');
    if (problem !== this.lastProblem) {
      this.lastProblem = problem;
      if (problems.length) this.core.notice('config.rejected', `dynamic configuration in the DCS is invalid, keeping the last good one: ${problem}`);
      else if (adjustments.length) this.core.notice('config.adjusted', `dynamic configuration in the DCS adjusted: ${problem}`);
    }
    if (next === prev) return;
    state.config = next;
    if (next.loop_wait !== prev.loop_wait) this.core.schedules()?.setLoopWait(next.loop_wait * 1000);
    if (next.ttl !== prev.ttl) {
      void deps.dcs.setTtl(next.ttl).then(
        () => this.republish(),
        (e) => deps.log.warn({ err: String(e) }, 'changing the lease TTL failed'),
      );
    }
    if (JSON.stringify(next.database.parameters) !== JSON.stringify(prev.database.parameters)) this.reconfigureRunning('applying parameters failed');
  }

  /**
   * Applies a re-read local configuration (POST /reload): tags and local parameters. Parameters
   * are written and PostgreSQL reloaded; those needing a restart show as pending_restart.
   */
  applyLocal(tags: Tags, parameters: Record<string, string | number | boolean>): void {
    this.core.state.tags = tags;
    this.core.state.localParameters = parameters;
    this.reconfigureRunning('applying the reloaded configuration failed');
    this.core.wake();
  }

  /**
   * What PostgreSQL is configured with for `role`: local parameters, then the dynamic ones (which
   * win), minus those the server's catalogue refuses (noticed once per distinct set); a replica
   * gets its upstream and, with use_slots, its slot name.
   */
  configureOptions(role: 'primary' | 'replica'): ConfigureOptions {
    const { state, deps } = this.core;
    let parameters: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(state.localParameters)) parameters[k] = typeof v === 'boolean' ? (v ? 'on' : 'off') : v;
    Object.assign(parameters, state.config.database.parameters);
    if (deps.settingsCatalogue) {
      const { kept, dropped } = filterParameters(parameters, deps.settingsCatalogue);
      const text = dropped.join('; ');
      if (text !== this.lastDropped) {
        this.lastDropped = text;
        if (text) this.core.notice('parameters.dropped', `PostgreSQL parameters refused by the server's catalogue, not written: ${text}`);
      }
      parameters = kept;
    }
    return {
      role,
      ...(role === 'replica' && state.upstream ? { upstream: state.upstream } : {}),
      ...(role === 'replica' && state.config.database.use_slots ? { slotName: slotNameForMember(deps.name) } : {}),
      parameters,
    };
  }

  /** Rewrites the configuration of a running database for its role and reloads it. */
  private reconfigureRunning(failure: string): void {
    const s = this.core.db().getSnapshot();
    if (s.value !== 'running') return;
    const { pg, log } = this.core.deps;
    void pg
      .configure(this.configureOptions(s.context.role === 'primary' ? 'primary' : 'replica'))
      .then(() => pg.reload())
      .catch((e) => log.warn({ err: String(e) }, failure));
  }
}
