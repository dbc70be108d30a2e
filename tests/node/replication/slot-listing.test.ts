/** QuietSlotListing (src/node/replication/slot-listing.ts): when a replication slot listing may be skipped. */
import { describe, expect, it } from 'vitest';
import { isQuietPlan, QuietSlotListing, SLOT_LISTING_REUSE_MS } from '../../../src/node/replication/slot-listing.ts';

describe('QuietSlotListing', () => {
  it('reuses only a quiet listing, for the same key, younger than SLOT_LISTING_REUSE_MS', () => {
    const l = new QuietSlotListing();
    expect(l.reusable('k', 0)).toBe(false); // never listed
    l.listed('k', 1_000, false);
    expect(l.reusable('k', 2_000)).toBe(false); // the plan changed something: list again
    l.listed('k', 3_000, true);
    expect(l.reusable('k', 3_000 + SLOT_LISTING_REUSE_MS - 1)).toBe(true);
    expect(l.reusable('other', 4_000)).toBe(false); // an input moved…
    expect(l.reusable('k', 4_000)).toBe(false); // …and the old listing is forgotten
    l.listed('k', 5_000, true);
    expect(l.reusable('k', 5_000 + SLOT_LISTING_REUSE_MS)).toBe(false); // too old
  });

  it('isQuietPlan: no action now and no unwanted slot waiting on its consumer', () => {
    const none = { drop: [], createPhysical: [], createLogical: [], advance: [] };
    const a = { name: 'a', type: 'physical' as const, active: true };
    expect(isQuietPlan([], none, () => ({ drop: ['x'] }))).toBe(true); // nothing active: no replan
    expect(isQuietPlan([a], none, () => ({ drop: [] }))).toBe(true);
    expect(isQuietPlan([a], none, (inactive) => ({ drop: inactive.filter((s) => !s.active).map((s) => s.name) }))).toBe(false);
    expect(isQuietPlan([], { ...none, advance: [{}] }, () => ({ drop: [] }))).toBe(false);
    expect(isQuietPlan([], { ...none, createPhysical: ['b'] }, () => ({ drop: [] }))).toBe(false);
  });
});
