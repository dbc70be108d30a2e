/**
 * The leader's synchronous replication (docs/ha.md "Synchronous replication"): keeps
 * `synchronous_standby_names` and the `sync` key in the order src/domain/sync-standby.ts
 * decides, one step at a time, several steps per cycle. Remembers what it wrote, since when it is
 * in force (the primary's flush position then) and which earlier sets are not yet covered.
 *
 * Replicas and a primary with synchronous mode off are not touched beyond the parameter value
 * `configureOptions` writes (parameterValue).
 */
import type { ClusterView } from '../../domain/cluster.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import {
  decideSyncStep,
  formatSyncSet,
  parseSyncSet,
  sameSyncSet,
  STRICT_PLACEHOLDER,
  syncCandidates,
  syncKeyOf,
  syncSettings,
  syncStateOf,
  type SyncKey,
  type SyncSet,
  type SyncSettings,
  type SyncStep,
} from '../../domain/sync-standby.ts';
import { standbyClusterOf } from '../../domain/standby-cluster.ts';
import { fenceOf, quorumFailoverSettings } from '../../domain/quorum-failover.ts';
import type { Logger } from 'pino';
import type { Dcs } from '../../dcs/dcs.ts';
import type { DynamicConfig } from '../../domain/dynamic-config.ts';
import { sleepOn, type Clock } from '../clock.ts';

/** Steps one cycle may take (each GUC change waits for its reload, each key write re-reads the DCS). */
const MAX_STEPS_PER_CYCLE = 6;
/** Re-probes after a reload before the next cycle tries again; ms between them. */
const RELOAD_PROBES = 5;
const RELOAD_PROBE_GAP_MS = 100;

/** What /ha and the metrics show of the synchronous state of a primary. */
export interface SyncStatus {
  /** `synchronous_standby_names` this agent wrote. */
  standbyNames: string;
  /** Why commits are not acknowledged by a synchronous standby, when they are not. */
  degraded?: string;
}

/** What the synchronous-replication manager reads and calls (HaNode wires it). */
export interface SyncManagerDeps {
  /** This member's name. */
  name: string;
  dcs: Pick<Dcs, 'setSync' | 'setSyncUnderLeader' | 'refresh'>;
  log: Pick<Logger, 'warn'>;
  clock: Clock;
  /** The effective dynamic configuration and whether this agent won the bootstrap race (NodeState). */
  state: Readonly<{ config: DynamicConfig; initializedByMe: boolean }>;
  /** Logs and journals a node notice (`sync.*`). */
  notice(type: string, text: string): void;
  /** Probes the local database now; `probe()` is then the newest status. */
  probeNow(): Promise<void>;
  probe(): PgStatus | undefined;
}

/** The leader's synchronous replication, one step at a time (see the module comment). */
export class SyncManager {
  /** The set this agent wrote or found; undefined while it does not manage one (not leader, mode off). */
  private configured: SyncSet | undefined;
  /** The primary's flush position when `configured` was seen in force. */
  private mark: bigint | undefined;
  private uncovered: SyncSet[] = [];
  /** Who fences this primary, as last noticed (quorum failover); undefined when nobody does. */
  private fencedBy: string | undefined;
  private lastDegraded: string | undefined;
  private status: SyncStatus | undefined;

  constructor(private readonly deps: SyncManagerDeps) {}

  /** The synchronous status of this primary while it manages synchronous replication. */
  current(): SyncStatus | undefined {
    return this.status;
  }

  /**
   * The value `configureOptions` writes for synchronous_standby_names while synchronous mode is
   * on; undefined when off (the user's own parameter stands). A replica gets what a promoted
   * member must start with: the strict placeholder (commits wait until the leader picks a
   * standby) or empty (asynchronous until then, as the reference). A primary gets the set this
   * manager wrote. The bootstrap winner's first start gets empty (it must create the replication
   * role before any standby can connect).
   */
  parameterValue(role: 'primary' | 'replica'): string | undefined {
    const core = this.deps;
    const s = syncSettings(core.state.config);
    if (s.mode === 'off') return undefined;
    // A new cluster's first primary acknowledged nothing yet and must create its roles before
    // any standby can connect: no synchronous standby until it leads.
    if (core.state.initializedByMe) return '';
    if (role === 'primary' && this.configured && this.configured.kind !== 'unknown') return formatSyncSet(this.configured);
    // A primary this manager does not manage yet (lock lost and taken again, an adopted lock):
    // the `sync` key may still list standbys, so commits wait until run() has made the key
    // protect the set (an empty value would acknowledge commits the listed members may lack:
    // docs/simulation.md, finding "asynchronous restart under a sync key").
    if (role === 'primary' && this.configured === undefined) return STRICT_PLACEHOLDER;
    return s.strict ? STRICT_PLACEHOLDER : '';
  }

  /**
   * This member is about to be promoted by this agent: it starts with the set of a replica
   * (parameterValue('replica')) and nothing uncovered (whatever the former primary acknowledged,
   * the key that let this member win says who holds it).
   */
  promoting(): void {
    const text = this.parameterValue('replica');
    this.configured = text === undefined ? undefined : parseSyncSet(text);
    this.mark = undefined;
    this.uncovered = [];
  }

  /** Forgets the managed set (no longer leader). */
  reset(): void {
    this.configured = undefined;
    this.mark = undefined;
    this.uncovered = [];
    this.status = undefined;
    this.lastDegraded = undefined;
  }

  /**
   * The `sync` key a member writes right before it promotes (patroni.md §3.8): this member as
   * leader; in strict mode `true` the former key's other members stay (they hold every commit
   * the former primary acknowledged, and this primary acknowledges nothing before its first
   * standby is synchronous); otherwise no member. Undefined when synchronous mode is off.
   */
  keyBeforePromotion(view: ClusterView): SyncKey | undefined {
    const core = this.deps;
    const s = syncSettings(core.state.config);
    if (s.mode === 'off') return undefined;
    const name = core.name;
    const old = view.sync ? syncKeyOf(view.sync.value) : undefined;
    const keep = s.mode === 'on' && s.strict && old ? old.members.filter((m) => m !== name) : [];
    return { leader: name, members: keep, quorum: 0 };
  }

  /**
   * One round on the running primary that holds the lock. `rewrite` writes the configuration
   * (with parameterValue('primary')) and reloads. DCS failures reject (the cycle logs them).
   * Phases: nothing in a standby cluster; mode off (set and key cleared); a fenced primary changes
   * nothing (heldByFence); otherwise the protocol's steps, at most MAX_STEPS_PER_CYCLE: key writes
   * (under this member's leader key) and set changes. Kept in one body: each phase's await points
   * are part of how its rounds interleave with the rest of the agent, which the simulator's
   * scanned runs depend on.
   */
  async run(view: ClusterView, probe: PgStatus, rewrite: () => Promise<void>): Promise<void> {
    const core = this.deps;
    // Synchronous mode is ignored in a standby cluster (patroni.md §3.8): nothing is touched.
    if (standbyClusterOf(core.state.config)) return;
    const { dcs } = core;
    const settings = syncSettings(core.state.config);
    if (settings.mode === 'off') {
      if (this.configured !== undefined) {
        this.reset();
        core.notice('sync.off', 'synchronous mode is off: synchronous_standby_names back to the configured value');
        await rewrite();
      }
      if (view.sync) {
        if (await dcs.setSync(null, view.sync.revision)) core.notice('sync.key', 'synchronous mode is off: deleted the sync key');
      }
      return;
    }
    if (this.heldByFence(view)) return;
    let pg = probe;
    let v = view;
    const stale = this.staleInForce(this.adoptRunning(probe), pg);
    if (stale !== undefined) {
      await rewrite();
      pg = await this.probeUntil(stale, pg);
    }
    for (let n = 0; n < MAX_STEPS_PER_CYCLE; n++) {
      const configured = this.adoptRunning(pg);
      const step = this.nextStep(configured, settings, v, pg);
      if (step.kind === 'none') return;
      if (step.kind === 'writeKey') {
        // Only while the leader key is still this member's, as this view shows it: a leader whose
        // key was taken meanwhile (quorum failover) or expired, and that has not yet noticed, must
        // not rewrite the key of its successor (ha simulate seed 224850351: the deposed leader
        // named itself with no standby, and nobody else could take over; docs/simulation.md).
        const lock = v.leader;
        const ok =
          lock?.name === core.name &&
          (await dcs.setSyncUnderLeader(syncStateOf(step.key), v.sync?.revision ?? '0', { name: lock.name, revision: lock.revision }));
        if (!ok) {
          core.log.warn('the sync key or the leader key changed under this leader: re-reading them next cycle');
          await dcs.refresh().catch(() => undefined);
          return;
        }
        core.notice('sync.key', step.reason);
        v = await dcs.refresh();
        continue;
      }
      // setGuc
      if (!sameSyncSet(configured, { kind: 'blocked' })) this.uncovered = [...this.uncovered, configured];
      this.configured = step.set;
      this.mark = undefined;
      core.notice('sync.standby_names', step.reason);
      await rewrite();
      pg = await this.probeUntil(formatSyncSet(step.set), pg);
    }
  }

  /**
   * Quorum failover: standbys have fenced this primary. It changes neither the key nor
   * synchronous_standby_names from then on: relaxing them could let it acknowledge again, and the
   * fence was judged on this key (docs/ha.md "Quorum failover"). True while fenced.
   */
  private heldByFence(view: ClusterView): boolean {
    const core = this.deps;
    const fence = quorumFailoverSettings(core.state.config) ? fenceOf(view.sync?.value.fence) : undefined;
    if (fence?.leader === core.name && Object.keys(fence.members).length > 0) {
      const who = Object.keys(fence.members).sort().join(', ');
      if (this.fencedBy !== who) {
        this.fencedBy = who;
        core.notice('sync.fenced', `fenced by ${who} (quorum failover): the synchronous set and the sync key stay as they are`);
      }
      return true;
    }
    this.fencedBy = undefined;
    return false;
  }

  /**
   * The managed set. Leading without having promoted in this process (agent restart, adopted
   * lock): what runs (`probe`) is known, what came before it is not; the key grows again only
   * once the set in force is known to hold everything (uncovered until then).
   */
  private adoptRunning(probe: PgStatus): SyncSet {
    if (this.configured === undefined) {
      this.configured = parseSyncSet(probe.synchronousStandbyNames ?? '');
      this.mark = undefined;
      this.uncovered = [{ kind: 'unknown' }];
    }
    return this.configured;
  }

  /**
   * The set this agent wrote is still not in force at the next round (a reload that failed or was
   * slower than the re-probes, a value written by hand): what runs is not protected by the key's
   * growth until the written set holds every commit again, and it is written once more. The
   * decision alone would wait for it forever: it only steps on a set that differs from the target
   * (CI, tests/e2e/sync-rules.test.ts). Returns the text to write again, undefined when in force.
   */
  private staleInForce(configured: SyncSet, pg: PgStatus): string | undefined {
    if (
      configured.kind === 'unknown' ||
      pg.synchronousStandbyNames === undefined ||
      pg.synchronousStandbyNames === formatSyncSet(configured)
    )
      return undefined;
    const running = parseSyncSet(pg.synchronousStandbyNames);
    if (!this.uncovered.some((u) => sameSyncSet(u, running))) this.uncovered = [...this.uncovered, running];
    this.mark = undefined;
    const text = formatSyncSet(configured);
    this.deps.notice(
      'sync.standby_names',
      `synchronous_standby_names in force is ${JSON.stringify(pg.synchronousStandbyNames)}, not ${JSON.stringify(text)} as written: writing it again`,
    );
    return text;
  }

  /**
   * One step of the managed set on the probe `pg` and the view `v`: what is in force since when
   * (the mark), which earlier sets it now covers, which standbys caught up, then decideSyncStep.
   * A step 'none' is settled here (status, degraded notices).
   */
  private nextStep(configured: SyncSet, settings: SyncSettings, v: ClusterView, pg: PgStatus): SyncStep {
    const name = this.deps.name;
    const effective = configured.kind === 'unknown' || (pg.synchronousStandbyNames ?? '') === formatSyncSet(configured);
    if (effective && this.mark === undefined) this.mark = pg.flushLsn ?? 0n;
    const rows = pg.replication;
    const mark = this.mark;
    const caughtUp = effective && mark !== undefined ? this.covered(configured, rows, mark) : [];
    const key = v.sync ? syncKeyOf(v.sync.value) : undefined;
    const step = decideSyncStep({
      settings,
      self: name,
      key,
      configured,
      effective,
      uncovered: this.uncovered,
      caughtUp,
      candidates: syncCandidates({ self: name, members: v.members, replication: rows, settings, inKey: key?.members ?? [] }),
    });
    if (step.kind === 'none') this.settle(configured, step);
    return step;
  }

  /**
   * The set in force since `mark` (the primary's flush position then): the earlier sets are
   * covered once enough of its members hold `mark`; returns its members that are synchronous
   * (sync or quorum) and hold `mark` (caught up).
   */
  private covered(configured: SyncSet, rows: PgStatus['replication'], mark: bigint): string[] {
    const row = (m: string) => rows.find((r) => r.application_name.toLowerCase() === m.toLowerCase());
    if (configured.kind === 'async') this.uncovered = [];
    else if (configured.kind === 'first' || configured.kind === 'any') {
      const holding = configured.members.filter((m) => (row(m)?.flush_lsn ?? -1n) >= mark).length;
      if (holding >= configured.num) this.uncovered = [];
    }
    if (configured.kind !== 'first' && configured.kind !== 'any') return [];
    return configured.members.filter((m) => {
      const r = row(m);
      return !!r && (r.sync_state === 'sync' || r.sync_state === 'quorum') && (r.flush_lsn ?? -1n) >= mark;
    });
  }

  /** Nothing to change: the status /ha shows, and the degraded notices once per change. */
  private settle(configured: SyncSet, step: Extract<SyncStep, { kind: 'none' }>): void {
    const status: SyncStatus = {
      standbyNames: configured.kind === 'unknown' ? (configured.text ?? '') : formatSyncSet(configured),
      ...(step.degraded ? { degraded: step.degraded } : {}),
    };
    if (JSON.stringify(status) !== JSON.stringify(this.status)) this.status = status;
    if (step.degraded !== this.lastDegraded) {
      if (step.degraded) this.deps.notice('sync.degraded', step.degraded);
      else if (this.lastDegraded) this.deps.notice('sync.restored', `commits wait for ${formatSyncSet(step.target)} again`);
      this.lastDegraded = step.degraded;
    }
  }

  /** Re-probes until the server reports `text` for synchronous_standby_names (a few tries), returning the last probe. */
  private async probeUntil(text: string, last: PgStatus): Promise<PgStatus> {
    const core = this.deps;
    let pg = last;
    for (let i = 0; i < RELOAD_PROBES; i++) {
      await sleepOn(core.clock, RELOAD_PROBE_GAP_MS);
      await core.probeNow();
      pg = core.probe() ?? pg;
      if ((pg.synchronousStandbyNames ?? '') === text) break;
    }
    return pg;
  }
}
