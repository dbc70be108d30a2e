/**
 * The leader's per-cycle work besides renewing the lock: the `status` key (optime and slot
 * positions, written only when changed), one physical replication slot per other member, and the
 * `history` key after a promotion (from the timeline history file, dcs-layout.md).
 */
import type { Logger } from 'pino';
import type { ClusterView } from '../domain/cluster.ts';
import type { PgStatus } from '../domain/pg-status.ts';
import { historyEntries, parseHistoryFile } from '../domain/timeline-history.ts';
import type { Dcs } from '../dcs/dcs.ts';
import { slotNameForMember } from '../postgres/slots.ts';
import { slotMembers } from '../domain/upstream.ts';
import type { PgControl } from '../postgres/types.ts';

export class LeaderDuties {
  private lastStatusJson = '';
  private historyTimeline = 0;

  constructor(private readonly deps: { dcs: Dcs; pg: PgControl; name: string; log: Logger; now: () => number }) {}

  /** The history key is known to describe `timeline` (e.g. `[]` written at bootstrap for 1). */
  historyWritten(timeline: number): void {
    this.historyTimeline = timeline;
  }

  /** One round on a running primary whose probe is `probe`. DCS failures reject. */
  async run(view: ClusterView, probe: PgStatus, useSlots: boolean): Promise<void> {
    const { dcs, pg, name, log } = this.deps;
    // Every member streaming from this leader; cascading replicas' slots live on their upstream.
    const others = slotMembers(view, name, { leader: name }).map(slotNameForMember);
    if (useSlots) await pg.syncSlots(others).catch((e) => log.warn({ err: String(e) }, 'syncing slots failed'));
    const slots: Record<string, number> = {};
    for (const [k, v] of Object.entries(probe.slots)) slots[k] = Number(v);
    const status = { optime: Number(probe.flushLsn ?? 0n), ...(Object.keys(slots).length ? { slots } : {}) };
    const json = JSON.stringify(status);
    if (json !== this.lastStatusJson) {
      await dcs.setStatus(status);
      this.lastStatusJson = json;
    }
    if (probe.timeline > 1 && (this.historyTimeline !== probe.timeline || !view.history?.some((e) => e[0] === probe.timeline - 1))) {
      await this.writeHistory(view, probe.timeline);
    }
  }

  /** Writes `history` from `pg_wal/<TLI>.history` of the current timeline. Logs (never throws) on failure. */
  private async writeHistory(view: ClusterView, timeline: number): Promise<void> {
    const { dcs, pg, name, log, now } = this.deps;
    try {
      const lines = parseHistoryFile(await pg.readTimelineHistory(timeline));
      const entries = historyEntries(lines, { ...(view.history ? { previous: view.history } : {}), now: new Date(now()).toISOString(), newLeader: name });
      await dcs.setHistory(entries);
      this.historyTimeline = timeline;
      log.info({ timeline, entries: entries.length }, `wrote the history key for timeline ${timeline}`);
    } catch (e) {
      log.warn({ err: String(e), timeline }, 'could not write the history key');
    }
  }
}
