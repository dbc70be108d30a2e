import { describe, expect, it } from 'vitest';
import { planSlots, slotNameForMember } from '../../src/postgres/slots.ts';

describe('slotNameForMember (patroni.md §3.9)', () => {
  it('lower-cases and maps - and . to _', () => {
    expect(slotNameForMember('Node-1.dc1')).toBe('node_1_dc1');
    expect(slotNameForMember('pg_2')).toBe('pg_2');
  });
  it('replaces other characters by u + 4-digit decimal code point', () => {
    expect(slotNameForMember('a b')).toBe('au0032b');
    expect(slotNameForMember('nöde')).toBe('nu0246de');
    expect(slotNameForMember('x@y')).toBe('xu0064y');
    expect(slotNameForMember('😀')).toBe('u128512');
  });
  it('cuts to 63 characters', () => {
    expect(slotNameForMember('n'.repeat(80))).toHaveLength(63);
  });
});

describe('planSlots', () => {
  it('creates missing, drops unwanted inactive, keeps unwanted active', () => {
    expect(
      planSlots(
        [
          { name: 'keep', active: true },
          { name: 'old', active: false },
          { name: 'busy', active: true },
        ],
        ['keep', 'new'],
      ),
    ).toEqual({ create: ['new'], drop: ['old'] });
  });
});
