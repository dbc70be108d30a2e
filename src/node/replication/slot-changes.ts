/**
 * The first steps of a slot plan the leader and the replicas share (src/domain/slots.ts
 * planSlotSync): drop the unwanted slots (each logged), create the missing physical ones. The
 * callers go on with what is theirs (logical slots on the leader, advancing on a replica).
 */
import type { Logger } from 'pino';
import type { PgControl } from '../../postgres/types.ts';

/** Drops `plan.drop` and creates `plan.createPhysical`, in order; a failure rejects (the caller logs it). */
export async function dropAndCreatePhysical(
  pg: Pick<PgControl, 'dropSlot' | 'createPhysicalSlot'>,
  log: Pick<Logger, 'info'>,
  plan: { drop: string[]; createPhysical: string[] },
): Promise<void> {
  for (const n of plan.drop) {
    await pg.dropSlot?.(n);
    log.info({ slot: n }, `dropped replication slot ${n}`);
  }
  for (const n of plan.createPhysical) await pg.createPhysicalSlot?.(n);
}
