/** Physical replication slot names and their synchronisation on the primary. */

/** PostgreSQL's limit on a slot name (NAMEDATALEN - 1). */
export const MAX_SLOT_NAME_LENGTH = 63;

/**
 * Slot name of a member (patroni.md §3.9): lower-case; `-` and `.` become `_`; any other character
 * outside `[a-z0-9_]` becomes `u` + its code point as at least 4 decimal digits; cut to 63 chars.
 * E.g. `Node-1.dc` -> `node_1_dc`, `nöde` -> `nu0246de`.
 */
export function slotNameForMember(name: string): string {
  let out = '';
  for (const ch of name.toLowerCase()) {
    if (/^[a-z0-9_]$/.test(ch)) out += ch;
    else if (ch === '-' || ch === '.') out += '_';
    else out += 'u' + String(ch.codePointAt(0) ?? 0).padStart(4, '0');
  }
  return out.slice(0, MAX_SLOT_NAME_LENGTH);
}

/** A physical slot as listed by pg_replication_slots. */
export interface PhysicalSlot {
  name: string;
  active: boolean;
}

/** What to do to reach the wanted set of physical slots. */
export interface SlotPlan {
  create: string[];
  /** Unwanted, inactive slots (active ones cannot be dropped and are kept until inactive). */
  drop: string[];
}

/** Plans slot creation/removal: create wanted slots that are missing, drop inactive unwanted ones. */
export function planSlots(existing: PhysicalSlot[], wanted: string[]): SlotPlan {
  const have = new Set(existing.map((s) => s.name));
  const want = new Set(wanted);
  return {
    create: [...want].filter((n) => !have.has(n)),
    drop: existing.filter((s) => !want.has(s.name) && !s.active).map((s) => s.name),
  };
}
