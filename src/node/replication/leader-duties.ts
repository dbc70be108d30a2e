/**
 * The leader's per-cycle work besides renewing the lock: the `status` key (optime, slot
 * positions and `retain_slots`, written only when changed), one physical replication slot per
 * member streaming from it (kept member_slots_ttl after the member left), the permanent slots
 * of the dynamic config (docs/ha.md "Replication slots"), and the
 * `history` key after a promotion (from the timeline history file, dcs-layout.md).
 */
import type { Logger } from 'pino';
import type { ClusterView, LeaderStatus } from '../../domain/cluster.ts';
import { ignoreSlots, memberSlotsTtl, permanentSlots, planSlotSync, SlotRetention } from '../../domain/slots.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import { historyEntries, parseHistoryFile } from '../../domain/timeline-history.ts';
import type { Dcs } from '../../dcs/dcs.ts';
import { slotNameForMember } from '../../postgres/slots.ts';
import { slotMembers } from '../../domain/upstream.ts';
import type { PgControl } from '../../postgres/types.ts';
import { isQuietPlan, QuietSlotListing } from './slot-listing.ts';
import { dropAndCreatePhysical } from './slot-changes.ts';

/** What the leader's duties read and call (HaNode wires them). */
export interface LeaderDutiesDeps {
  dcs: Pick<Dcs, 'setStatus' | 'setHistory'>;
  pg: Pick<PgControl, 'syncSlots' | 'listSlots' | 'createPhysicalSlot' | 'createLogicalSlot' | 'dropSlot' | 'readTimelineHistory'>;
  /** This member's name. */
  name: string;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Epoch ms. */
  now: () => number;
}

/** The leader's per-cycle duties: status, slots, history. */
export class LeaderDuties {
  private readonly listing = new QuietSlotListing();
  private lastStatusJson = '';
  private lastStatus: LeaderStatus | undefined;
  private readonly retention = new SlotRetention();
  /** The last error creating each permanent logical slot (logged once, not every cycle). */
  private readonly lastLogicalError = new Map<string, string>();
  private historyTimeline = 0;

  constructor(private readonly deps: LeaderDutiesDeps) {}

  /** The history key is known to describe `timeline` (e.g. `[]` written at bootstrap for 1). */
  historyWritten(timeline: number): void {
    this.historyTimeline = timeline;
  }

  /** One round on a running primary whose probe is `probe`. DCS failures reject. */
  async run(view: ClusterView, probe: PgStatus, useSlots: boolean): Promise<void> {
    const { dcs, now } = this.deps;
    const slots: Record<string, number> = {};
    for (const [k, v] of Object.entries(probe.slots)) slots[k] = Number(v);
    let retain: string[] = [];
    if (useSlots) {
      const r = await this.syncSlots(view, probe.inRecovery, Object.keys(probe.slots));
      retain = r.retain;
      for (const [k, v] of Object.entries(r.logical)) slots[k] = v;
    } else this.retention.update(now(), [], undefined, 0);
    const status = {
      optime: Number(probe.flushLsn ?? 0n),
      ...(Object.keys(slots).length ? { slots } : {}),
      ...(retain.length ? { retain_slots: retain } : {}),
    };
    this.lastStatus = status;
    const json = JSON.stringify(status);
    if (json !== this.lastStatusJson) {
      await dcs.setStatus(status);
      this.lastStatusJson = json;
    }
    if (probe.timeline > 1 && (this.historyTimeline !== probe.timeline || !view.history?.some((e) => e[0] === probe.timeline - 1))) {
      await this.writeHistory(view, probe.timeline);
    }
  }

  /**
   * The `status` to write when this leader stops: its final checkpoint as optime, the slot
   * positions and `retain_slots` it last published (the next leader keeps and advances from them).
   */
  finalStatus(optime: number): LeaderStatus {
    const last = this.lastStatus;
    return { optime, ...(last?.slots ? { slots: last.slots } : {}), ...(last?.retain_slots ? { retain_slots: last.retain_slots } : {}) };
  }

  /**
   * The leader's slots (docs/ha.md "Replication slots"): a physical slot for every member streaming
   * from it, the retained slots of absent members (member_slots_ttl), the permanent slots
   * (physical and logical); other inactive slots are dropped unless `ignore_slots` matches them
   * or the cluster is paused. Returns `retain_slots` and the confirmed_flush of the permanent
   * logical slots (for `status.slots`). Failures are logged; the next cycle tries again.
   *
   * `probedPhysical`: the physical slots the cycle's probe saw. The listing is skipped (for up
   * to SLOT_LISTING_REUSE_MS, slot-listing.ts) when the last one was quiet (isQuietPlan) and
   * none of its inputs moved: the same probed physical slots, wanted and retained slots, slot
   * settings and role, and no permanent logical slot (their confirmed positions are read from
   * the listing every cycle).
   */
  private async syncSlots(
    view: ClusterView,
    inRecovery: boolean,
    probedPhysical: string[],
  ): Promise<{ retain: string[]; logical: Record<string, number> }> {
    const { pg, name, log, now } = this.deps;
    const cfg = view.config?.value;
    const permanent = permanentSlots(cfg);
    const own = slotNameForMember(name);
    // Every member streaming from this leader; cascading replicas' slots live on their upstream.
    const memberSlots = slotMembers(view, name, { leader: name }).map(slotNameForMember);
    const presentNames = new Set(view.members.map((m) => slotNameForMember(m.name)));
    const present = view.members.filter((m) => m.data.tags?.['nostream'] !== true).map((m) => slotNameForMember(m.name));
    const retain = this.retention
      .update(now(), [...present, own], view.status?.retain_slots, memberSlotsTtl(cfg))
      .filter((n) => !permanent.has(n));
    // Absent members' slots are kept until member_slots_ttl after they were last seen.
    const retained = retain.filter((n) => n !== own && !presentNames.has(n));
    const wanted = [...new Set([...memberSlots, ...retained])];
    const logical: Record<string, number> = {};
    if (!pg.listSlots) {
      const physical = [...wanted, ...[...permanent].filter(([, s]) => s.type === 'physical').map(([n]) => n)];
      await pg.syncSlots([...new Set(physical)]).catch((e) => log.warn({ err: String(e) }, 'syncing slots failed'));
      return { retain, logical };
    }
    const hasLogical = [...permanent.values()].some((p) => p.type === 'logical');
    const key = JSON.stringify([
      wanted,
      [...permanent],
      cfg?.['ignore_slots'] ?? null,
      cfg?.['pause'] === true,
      inRecovery,
      [...probedPhysical].sort(),
    ]);
    if (!hasLogical && this.listing.reusable(key, now())) return { retain, logical };
    try {
      const listedAtMs = now();
      const existing = await pg.listSlots();
      const opts = { logical: !inRecovery, dropUnknown: cfg?.['pause'] !== true };
      const plan = planSlotSync(existing, wanted, permanent, ignoreSlots(cfg), opts);
      this.listing.listed(
        key,
        listedAtMs,
        isQuietPlan(existing, plan, (inactive) => planSlotSync(inactive, wanted, permanent, ignoreSlots(cfg), opts)),
      );
      await this.applySlotPlan(plan);
      for (const s of existing) {
        const p = permanent.get(s.name);
        if (p?.type === 'logical' && s.type === 'logical' && s.confirmedFlush !== undefined) logical[s.name] = Number(s.confirmedFlush);
      }
    } catch (e) {
      log.warn({ err: String(e) }, 'syncing slots failed');
    }
    return { retain, logical };
  }

  /** Carries out a slot plan: drops, physical creations, logical creations (a failed logical creation logged once per error). */
  private async applySlotPlan(plan: ReturnType<typeof planSlotSync>): Promise<void> {
    const { pg, log } = this.deps;
    await dropAndCreatePhysical(pg, log, plan);
    for (const s of plan.createLogical) {
      try {
        await pg.createLogicalSlot?.(s.name, s.database, s.plugin);
        log.info({ slot: s.name, database: s.database, plugin: s.plugin }, `created permanent logical slot ${s.name}`);
        this.lastLogicalError.delete(s.name);
      } catch (e) {
        const err = String(e);
        if (this.lastLogicalError.get(s.name) !== err) log.warn({ slot: s.name, err }, `could not create permanent logical slot ${s.name}`);
        this.lastLogicalError.set(s.name, err);
      }
    }
  }

  /** Writes `history` from `pg_wal/<TLI>.history` of the current timeline. Logs (never throws) on failure. */
  private async writeHistory(view: ClusterView, timeline: number): Promise<void> {
    const { dcs, pg, name, log, now } = this.deps;
    try {
      const lines = parseHistoryFile(await pg.readTimelineHistory(timeline));
      const entries = historyEntries(lines, {
        ...(view.history ? { previous: view.history } : {}),
        now: new Date(now()).toISOString(),
        newLeader: name,
      });
      await dcs.setHistory(entries);
      this.historyTimeline = timeline;
      log.info({ timeline, entries: entries.length }, `wrote the history key for timeline ${timeline}`);
    } catch (e) {
      log.warn({ err: String(e), timeline }, 'could not write the history key');
    }
  }
}
