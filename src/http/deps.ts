/**
 * What the node API is built from: a snapshot getter, the command interface, a clock, the
 * switchover polling settings (injectable for tests) and the PostgreSQL settings catalogue.
 */
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';
import type { NodeSnapshot } from '../domain/snapshot.ts';
import type { NodeCommands } from './commands.ts';

/** Polling of an immediate switchover/failover (patroni.md §1.8 polls the DCS every 1 s). */
export interface SwitchoverPollOptions {
  /** Interval between two reads of snapshot().cluster, ms. Default 25. */
  intervalMs?: number;
  /** Give up after this long, ms. Default 2 × max(10, loop_wait) seconds. */
  timeoutMs?: number;
}

/** Dependencies of createNodeApp. */
export interface NodeAppDeps {
  /** The latest node snapshot; called once per request (more than once while polling). */
  snapshot: () => NodeSnapshot;
  /** Write operations, carried out by the node. */
  commands: NodeCommands;
  /** Clock, epoch ms. Default Date.now. */
  now?: () => number;
  /** Switchover polling settings. */
  switchoverPoll?: SwitchoverPollOptions;
  /**
   * The local server's catalogue of PostgreSQL settings (loaded once at agent start, never by a
   * handler), against which PATCH/PUT /config check `database.parameters`. Absent, or answering
   * undefined (catalogue not loadable): parameters are not checked.
   */
  settingsCatalogue?: () => SettingsCatalogue | undefined;
  /**
   * Freshness of the probe data behind the snapshot (HaNode.freshProbe): called before answering
   * a request that shows it (PROBE_READERS in app.ts); undefined when it is fresh enough, else a
   * promise (never rejecting, bounded) to await before reading the snapshot. Default: always fresh.
   */
  fresh?: () => Promise<void> | undefined;
}

/** NodeAppDeps with the defaults filled in. */
export interface ResolvedDeps {
  snapshot: () => NodeSnapshot;
  commands: NodeCommands;
  now: () => number;
  switchoverPoll: SwitchoverPollOptions;
  settingsCatalogue: () => SettingsCatalogue | undefined;
}
