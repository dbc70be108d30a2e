/**
 * A running replica's replication slots (docs/ha.md "Replication slots", patroni.md §3.9), each
 * cycle it follows a leader:
 * - a physical slot for each member cascading from it (`replicatefrom`, slotMembers);
 * - the permanent physical slots of `slots`, advanced to the positions the leader publishes in
 *   `status.slots` (capped by the local replay position), so they exist after a failover;
 * - the permanent logical slots, the reference's way on PostgreSQL < 17 (no slot synchronisation
 *   in the server, and PostgreSQL 15 cannot create a logical slot on a standby): the slot's state
 *   file is read from the primary (`pg_read_binary_file('pg_replslot/<name>/state')`), written
 *   into the local `pg_replslot/<name>/`, and PostgreSQL is restarted to load it (it reads slot
 *   files only at startup); from then on the slot is advanced with `pg_replication_slot_advance`
 *   to the confirmed_flush the leader publishes. A slot is copied only when the local WAL still
 *   holds its restart_lsn and the replica has replayed past its confirmed_flush. Replicas keeping
 *   logical slots run with hot_standby_feedback on (src/node/local/config-apply.ts), so the primary
 *   keeps the catalog rows their slots need.
 * - anything else inactive and not matched by `ignore_slots` is dropped (not while paused).
 * Failures are logged; the next cycle tries again.
 */
import type { ClusterView } from '../../domain/cluster.ts';
import { timingOf } from '../../domain/dynamic-config.ts';
import { formatLsn } from '../../domain/lsn.ts';
import { ignoreSlots, permanentSlots, planSlotSync, type PermanentSlot } from '../../domain/slots.ts';
import { slotMembers } from '../../domain/upstream.ts';
import { slotNameForMember } from '../../postgres/slots.ts';
import { memberHostPort } from '../../domain/member.ts';
import { isQuietPlan, QuietSlotListing } from './slot-listing.ts';
import type { Logger } from 'pino';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { PgControl } from '../../postgres/types.ts';
import type { DatabaseCommands, NodeState, Notice } from '../node-core.ts';
import type { ReplicationSource } from './replication-source.ts';
import { dropAndCreatePhysical } from './slot-changes.ts';

/** What a replica's slot work reads and calls (HaNode wires it). */
export interface ReplicaSlotsDeps {
  /** This member's name. */
  name: string;
  pg: Pick<
    PgControl,
    'syncSlots' | 'listSlots' | 'dropSlot' | 'createPhysicalSlot' | 'advanceSlot' | 'readPrimarySlots' | 'writeSlotState' | 'oldestWalLsn'
  >;
  log: Pick<Logger, 'info' | 'warn'>;
  state: Readonly<Pick<NodeState, 'config' | 'tags'>>;
  source: Pick<ReplicationSource, 'followsRemote'>;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseCommands;
  /** The latest probe while the database runs. */
  probe(): PgStatus | undefined;
  /** Epoch ms. */
  now(): number;
  notice: Notice;
}

/** Least time between two copies of logical slots from the primary (each restarts PostgreSQL), ms. */
const COPY_INTERVAL_MS = 30_000;
/** Longest wait between copies of a slot that did not load, ms. */
const MAX_COPY_INTERVAL_MS = 30 * 60_000;

/** True when the dynamic config names a permanent logical slot (replicas then need hot_standby_feedback). */
export function hasPermanentLogicalSlots(config: Record<string, unknown> | undefined): boolean {
  return [...permanentSlots(config).values()].some((s) => s.type === 'logical');
}

/** A running replica's slots, each cycle it follows a leader. */
export class ReplicaSlots {
  private nextCopyAtMs = 0;
  private copyInterval = COPY_INTERVAL_MS;
  /** Slots this agent copied (a copy that did not show up after the restart makes the next wait longer). */
  private readonly copied = new Set<string>();
  /** Last message logged per subject (each logged once until it changes). */
  private readonly said = new Map<string, string>();
  private readonly listing = new QuietSlotListing();

  constructor(private readonly d: ReplicaSlotsDeps) {}

  /** One round on a running replica following `leader`. Never rejects. */
  async run(view: ClusterView): Promise<void> {
    const deps = this.d;
    const { state, pg, log, name } = deps;
    if (!state.config.database.use_slots) return;
    const cascade = slotMembers(view, name).map(slotNameForMember);
    if (!pg.listSlots) {
      await pg.syncSlots(cascade).catch((e) => log.warn({ err: String(e) }, 'syncing the slots of cascading replicas failed'));
      return;
    }
    const probe = this.d.probe();
    if (!probe?.inRecovery) return;
    const cfg = (view.config?.value ?? state.config) as Record<string, unknown>;
    const permanent = permanentSlots(cfg);
    // The reference keeps no permanent logical slots on members that may never be promoted, nor in
    // a standby cluster (its leader is a standby too: nothing to copy from).
    const logical = state.tags['nofailover'] !== true && !this.d.source.followsRemote;
    // Without permanent slots (nothing to copy or advance) a quiet listing is reused while the
    // cascading members, the probed physical slots and the settings are unchanged (slot-listing.ts).
    const key = JSON.stringify([cascade, cfg['ignore_slots'] ?? null, cfg['pause'] === true, logical, Object.keys(probe.slots).sort()]);
    if (permanent.size === 0 && this.listing.reusable(key, this.d.now())) return;
    try {
      const listedAtMs = this.d.now();
      const existing = await pg.listSlots();
      for (const x of existing) this.copied.delete(x.name);
      const opts = {
        logical,
        ...(view.status?.slots ? { advanceTo: view.status.slots } : {}),
        ...(probe.replayLsn !== undefined ? { maxLsn: probe.replayLsn } : {}),
        dropUnknown: cfg['pause'] !== true,
      };
      const plan = planSlotSync(existing, cascade, permanent, ignoreSlots(cfg), opts);
      this.listing.listed(
        key,
        listedAtMs,
        isQuietPlan(existing, plan, (inactive) => planSlotSync(inactive, cascade, permanent, ignoreSlots(cfg), opts)),
      );
      await dropAndCreatePhysical(pg, log, plan);
      for (const a of plan.advance) {
        try {
          await pg.advanceSlot?.(a.name, a.lsn, a.database);
          this.said.delete(`advance:${a.name}`);
        } catch (e) {
          this.once(`advance:${a.name}`, String(e), `could not advance slot ${a.name} to ${formatLsn(a.lsn)}`);
        }
      }
      if (plan.createLogical.length > 0) await this.copyLogical(view, plan.createLogical, probe.replayLsn);
    } catch (e) {
      this.once('sync', String(e), 'syncing the replica slots failed');
    }
  }

  /**
   * Copies missing permanent logical slots from the primary and restarts PostgreSQL to load them
   * (at most once per COPY_INTERVAL_MS).
   */
  private async copyLogical(
    view: ClusterView,
    wanted: { name: string; database: string; plugin: string }[],
    replayLsn: bigint | undefined,
  ): Promise<void> {
    const deps = this.d;
    const { state, pg, log } = deps;
    const now = deps.now();
    if (!pg.readPrimarySlots || !pg.writeSlotState || now < this.nextCopyAtMs || replayLsn === undefined) return;
    if (this.d.db().getSnapshot().value !== 'running') return;
    const leader = view.leader?.name;
    const conn = view.members.find((m) => m.name === leader)?.data.conn_url;
    const hp = conn ? memberHostPort(conn) : undefined;
    if (!leader || !hp || leader === deps.name || this.d.source.followsRemote) return;
    const up = { host: hp.host, port: hp.port, name: leader };
    // A slot copied before and still missing (PostgreSQL did not load it): back off, doubling up to
    // MAX_COPY_INTERVAL_MS, so a slot file the server refuses cannot restart it every cycle.
    const again = wanted.some((w) => this.copied.has(w.name));
    this.copyInterval = again
      ? Math.min(this.copyInterval * 2, MAX_COPY_INTERVAL_MS)
      : Math.max(COPY_INTERVAL_MS, 5 * timingOf(state.config).loopWaitMs);
    this.nextCopyAtMs = now + this.copyInterval;
    const byName = new Map<string, PermanentSlot>(wanted.map((w) => [w.name, { type: 'logical', database: w.database, plugin: w.plugin }]));
    const rows = await pg.readPrimarySlots(up, [...byName.keys()]);
    const oldest = await pg.oldestWalLsn?.();
    const copy: string[] = [];
    for (const r of rows) {
      const w = byName.get(r.name);
      if (!w || w.type !== 'logical' || w.database !== r.database || w.plugin !== r.plugin) continue;
      if (oldest !== undefined && r.restartLsn < oldest) {
        this.once(
          `copy:${r.name}`,
          'wal',
          `not copying logical slot ${r.name}: its restart_lsn ${formatLsn(r.restartLsn)} is older than the local WAL (${formatLsn(oldest)})`,
        );
        continue;
      }
      if (r.confirmedFlush > replayLsn) {
        this.once(
          `copy:${r.name}`,
          'replay',
          `not copying logical slot ${r.name} yet: its confirmed_flush ${formatLsn(r.confirmedFlush)} is ahead of the local replay ${formatLsn(replayLsn)}`,
        );
        continue;
      }
      await pg.writeSlotState(r.name, r.state);
      copy.push(r.name);
      this.copied.add(r.name);
      log.info(
        { slot: r.name, restartLsn: formatLsn(r.restartLsn), confirmedFlush: formatLsn(r.confirmedFlush) },
        `copied logical slot ${r.name} from ${up.name}`,
      );
    }
    if (copy.length === 0) return;
    this.d.notice(
      'slots.copied',
      `copied logical slot${copy.length > 1 ? 's' : ''} ${copy.join(', ')} from ${up.name}: restarting to load ${copy.length > 1 ? 'them' : 'it'}`,
    );
    this.d.db().send({ type: 'cmd.restart', reason: `loading logical slots copied from ${up.name}`, at: now });
  }

  private once(key: string, value: string, msg: string): void {
    if (this.said.get(key) === value) return;
    this.said.set(key, value);
    this.d.log.warn({ err: value }, msg);
  }
}
