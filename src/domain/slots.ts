/**
 * Replication slots the agent manages (patroni.md §3.9, §4.2; docs/ha.md "Replication slots").
 * Pure: what the dynamic configuration asks for (`slots` and its aliases, `ignore_slots`,
 * `member_slots_ttl`), which slots to create, drop and advance, and the retention window of
 * absent members' slots. The leader (src/node/replication/leader-duties.ts) and the replicas
 * (src/node/replication/replica-slots.ts) act on these plans.
 */

/** PostgreSQL's slot name rule: `[a-z0-9_]{1,63}`. */
export const SLOT_NAME_RE = /^[a-z0-9_]{1,63}$/;

/** A permanent slot of the dynamic configuration. */
export type PermanentSlot = { type: 'physical' } | { type: 'logical'; database: string; plugin: string };

/** One entry of `ignore_slots`: every given field must match. */
export interface IgnoreSlotMatcher {
  name?: string;
  type?: 'physical' | 'logical';
  database?: string;
  plugin?: string;
}

/** A slot as pg_replication_slots lists it. LSNs in bytes. */
export interface SlotInfo {
  name: string;
  type: 'physical' | 'logical';
  /** Logical only. */
  database?: string;
  plugin?: string;
  active: boolean;
  restartLsn?: bigint;
  /** Logical only. */
  confirmedFlush?: bigint;
}

/** Default of `member_slots_ttl`, seconds (patroni.md §4.2). */
export const DEFAULT_MEMBER_SLOTS_TTL = 1800;

/** The keys naming the permanent slots, first present wins (patroni.md §4.2). */
export const PERMANENT_SLOTS_KEYS = ['slots', 'permanent_slots', 'permanent_replication_slots'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The permanent slots of a dynamic configuration (raw or with defaults). A value that is not a
 * mapping (`null`, `0`) or a mapping with `type: physical` is a physical slot; `type: logical`
 * needs `database` and `plugin` (entries lacking them, or with an invalid name, are left out: the
 * API refuses them, see src/config/dynamic-schema.ts).
 */
export function permanentSlots(config: Record<string, unknown> | undefined): Map<string, PermanentSlot> {
  const out = new Map<string, PermanentSlot>();
  if (!config) return out;
  const key = PERMANENT_SLOTS_KEYS.find((k) => config[k] !== undefined && config[k] !== null);
  const raw = key ? config[key] : undefined;
  if (!isObject(raw)) return out;
  for (const [name, v] of Object.entries(raw)) {
    if (!SLOT_NAME_RE.test(name)) continue;
    const type = isObject(v) ? (v['type'] ?? 'physical') : 'physical';
    if (type === 'physical') out.set(name, { type: 'physical' });
    else if (
      type === 'logical' &&
      isObject(v) &&
      typeof v['database'] === 'string' &&
      typeof v['plugin'] === 'string' &&
      v['database'] &&
      v['plugin']
    ) {
      out.set(name, { type: 'logical', database: v['database'], plugin: v['plugin'] });
    }
  }
  return out;
}

/** The `ignore_slots` matchers of a dynamic configuration (entries that are not mappings are left out). */
export function ignoreSlots(config: Record<string, unknown> | undefined): IgnoreSlotMatcher[] {
  const raw = config?.['ignore_slots'];
  if (!Array.isArray(raw)) return [];
  const out: IgnoreSlotMatcher[] = [];
  for (const e of raw) {
    if (!isObject(e)) continue;
    const m: IgnoreSlotMatcher = {};
    if (typeof e['name'] === 'string') m.name = e['name'];
    if (e['type'] === 'physical' || e['type'] === 'logical') m.type = e['type'];
    if (typeof e['database'] === 'string') m.database = e['database'];
    if (typeof e['plugin'] === 'string') m.plugin = e['plugin'];
    out.push(m);
  }
  return out;
}

/** `member_slots_ttl` in seconds (default 1800; a non-negative number, else the default). */
export function memberSlotsTtl(config: Record<string, unknown> | undefined): number {
  const v = config?.['member_slots_ttl'];
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : DEFAULT_MEMBER_SLOTS_TTL;
}

/** True when an `ignore_slots` entry matches the slot (every field the entry gives is equal). */
export function isIgnored(slot: Pick<SlotInfo, 'name' | 'type' | 'database' | 'plugin'>, matchers: IgnoreSlotMatcher[]): boolean {
  return matchers.some(
    (m) =>
      (m.name === undefined || m.name === slot.name) &&
      (m.type === undefined || m.type === slot.type) &&
      (m.database === undefined || m.database === slot.database) &&
      (m.plugin === undefined || m.plugin === slot.plugin),
  );
}

/** True when an existing slot is what the permanent definition asks for. */
export function slotMatches(slot: SlotInfo, want: PermanentSlot): boolean {
  if (slot.type !== want.type) return false;
  return want.type === 'physical' || (slot.database === want.database && slot.plugin === want.plugin);
}

/** What to do to the local slots. */
export interface SlotSyncPlan {
  createPhysical: string[];
  /** Logical slots to create here (primary) or to copy from the primary (replica). */
  createLogical: { name: string; database: string; plugin: string }[];
  /** Inactive slots to drop (unwanted, or a permanent name with the wrong type, database or plugin). */
  drop: string[];
  /** Existing wanted slots to advance to the position the leader published: name -> LSN. */
  advance: { name: string; lsn: bigint; database?: string }[];
}

/**
 * Plans the local slots.
 *
 * @param wantedPhysical physical slots to keep besides the permanent ones (member slots, retained
 *   slots of absent members).
 * @param permanent the permanent slots (`slots`).
 * @param ignore `ignore_slots`: never dropped.
 * @param opts.logical whether permanent logical slots are wanted here (false on a replica that
 *   must not keep them, e.g. `nofailover`).
 * @param opts.advanceTo on a replica, the positions the leader published (`status.slots`), capped
 *   by `opts.maxLsn` (the local replay position): permanent slots behind them are advanced.
 * @param opts.dropUnknown drop slots nobody asked for (not while paused).
 *
 * Active slots are never dropped (a walsender or a consumer uses them; PostgreSQL refuses).
 */
export function planSlotSync(
  existing: SlotInfo[],
  wantedPhysical: string[],
  permanent: Map<string, PermanentSlot>,
  ignore: IgnoreSlotMatcher[],
  opts: { logical: boolean; advanceTo?: Record<string, number>; maxLsn?: bigint; dropUnknown?: boolean } = { logical: true },
): SlotSyncPlan {
  const plan: SlotSyncPlan = { createPhysical: [], createLogical: [], drop: [], advance: [] };
  const want = new Map<string, PermanentSlot>();
  for (const n of wantedPhysical) want.set(n, { type: 'physical' });
  for (const [n, s] of permanent) if (s.type === 'physical' || opts.logical) want.set(n, s);
  const have = new Map(existing.map((s) => [s.name, s]));
  const dropUnknown = opts.dropUnknown ?? true;
  for (const s of existing) {
    const w = want.get(s.name);
    if (w && slotMatches(s, w)) continue;
    if (isIgnored(s, ignore) || s.active) continue;
    // A permanent slot not wanted here (logical on a member that does not keep them) is left alone.
    const p = permanent.get(s.name);
    if (!w && p && slotMatches(s, p)) continue;
    if (!w && !dropUnknown) continue;
    plan.drop.push(s.name);
  }
  for (const [n, w] of want) {
    const s = have.get(n);
    if (s && !plan.drop.includes(n)) {
      if (!slotMatches(s, w)) continue; // wrong kind, in use or ignored: left alone
      const target = opts.advanceTo?.[n];
      if (target === undefined || !permanent.has(n)) continue;
      let lsn = BigInt(Math.trunc(target));
      if (opts.maxLsn !== undefined && lsn > opts.maxLsn) lsn = opts.maxLsn;
      const cur = w.type === 'logical' ? s.confirmedFlush : s.restartLsn;
      if (cur !== undefined && lsn > cur) plan.advance.push({ name: n, lsn, ...(w.type === 'logical' ? { database: w.database } : {}) });
      continue;
    }
    if (s && isIgnored(s, ignore)) continue;
    if (w.type === 'physical') plan.createPhysical.push(n);
    else plan.createLogical.push({ name: n, database: w.database, plugin: w.plugin });
  }
  return plan;
}

/**
 * The retention of member slots (patroni.md §3.9, member_slots_ttl): the leader remembers when it
 * last saw each member's slot name (its members, itself included, and the `retain_slots` of the
 * `status` key it found, which is how a new leader learns of the members its predecessor saw) and
 * keeps the slot of an absent member until `ttl` seconds after that.
 */
export class SlotRetention {
  private readonly lastSeen = new Map<string, number>();

  /**
   * One round at `nowMs`. `present`: slot names of the members seen now (this node's own
   * included); `published`: the `retain_slots` found in the DCS. Returns the sorted names to
   * publish as `retain_slots` (empty when ttl is 0).
   */
  update(nowMs: number, present: string[], published: string[] | undefined, ttlSeconds: number): string[] {
    for (const n of published ?? []) if (!this.lastSeen.has(n)) this.lastSeen.set(n, nowMs);
    for (const n of present) this.lastSeen.set(n, nowMs);
    for (const [n, at] of this.lastSeen) if (at + ttlSeconds * 1000 <= nowMs) this.lastSeen.delete(n);
    return [...this.lastSeen.keys()].sort();
  }

  /** Forgets everything (this node stopped leading). */
  reset(): void {
    this.lastSeen.clear();
  }
}
