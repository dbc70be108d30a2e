import { describe, expect, it } from 'vitest';
import {
  ignoreSlots,
  isIgnored,
  memberSlotsTtl,
  permanentSlots,
  planSlotSync,
  SlotRetention,
  type SlotInfo,
} from '../../src/domain/slots.ts';
import { validateDynamicConfig } from '../../src/config/dynamic-schema.ts';

const phys = (name: string, extra: Partial<SlotInfo> = {}): SlotInfo => ({
  name,
  type: 'physical',
  active: false,
  restartLsn: 100n,
  ...extra,
});
const logi = (name: string, extra: Partial<SlotInfo> = {}): SlotInfo => ({
  name,
  type: 'logical',
  database: 'postgres',
  plugin: 'test_decoding',
  active: false,
  restartLsn: 50n,
  confirmedFlush: 100n,
  ...extra,
});

describe('permanent slots config', () => {
  it('reads slots and its aliases, physical by default', () => {
    const p = permanentSlots({
      slots: { a: null, b: { type: 'physical' }, c: { type: 'logical', database: 'db', plugin: 'pgoutput' }, d: 0 },
    });
    expect([...p]).toEqual([
      ['a', { type: 'physical' }],
      ['b', { type: 'physical' }],
      ['c', { type: 'logical', database: 'db', plugin: 'pgoutput' }],
      ['d', { type: 'physical' }],
    ]);
    expect([...permanentSlots({ permanent_slots: { x: {} } }).keys()]).toEqual(['x']);
    expect([...permanentSlots({ permanent_replication_slots: { y: {} } }).keys()]).toEqual(['y']);
    expect(permanentSlots({ slots: { 'Bad-Name': {}, l: { type: 'logical' } } }).size).toBe(0);
  });

  it('ignore_slots matchers and member_slots_ttl', () => {
    const m = ignoreSlots({ ignore_slots: [{ name: 'keep' }, { type: 'logical', plugin: 'wal2json' }] });
    expect(isIgnored(phys('keep'), m)).toBe(true);
    expect(isIgnored(logi('x', { plugin: 'wal2json' }), m)).toBe(true);
    expect(isIgnored(logi('x'), m)).toBe(false);
    expect(memberSlotsTtl({})).toBe(1800);
    expect(memberSlotsTtl({ member_slots_ttl: 0 })).toBe(0);
  });

  it('the API refuses bad slot definitions, naming the field', () => {
    const bad = (doc: unknown) => {
      const r = validateDynamicConfig(doc);
      return r.ok ? [] : r.problems;
    };
    expect(bad({ slots: { cdc: { type: 'logical', database: 'postgres' } } }).join()).toMatch(/^slots.*plugin/);
    expect(bad({ slots: { cdc: { type: 'logical', plugin: 'x' } } }).join()).toMatch(/database/);
    expect(bad({ slots: { 'Bad-Name': { type: 'physical' } } }).join()).toMatch(/^slots.*"Bad-Name"/);
    expect(bad({ slots: { a: { type: 'other' } } }).join()).toMatch(/^slots/);
    expect(bad({ ignore_slots: [{ nme: 'x' }] }).join()).toMatch(/^ignore_slots/);
    expect(bad({ member_slots_ttl: -1 }).join()).toMatch(/^member_slots_ttl/);
    expect(
      bad({
        slots: { cdc: { type: 'logical', database: 'postgres', plugin: 'pgoutput' }, p: { type: 'physical' } },
        ignore_slots: [{ name: 'k', type: 'logical' }],
        member_slots_ttl: 60,
      }),
    ).toEqual([]);
    expect(bad({ permanent_slots: { 'x y': null } }).join()).toMatch(/^permanent_slots/);
  });
});

describe('planSlotSync', () => {
  const permanent = permanentSlots({
    slots: { cdc: { type: 'logical', database: 'postgres', plugin: 'test_decoding' }, pp: { type: 'physical' } },
  });

  it('creates missing member and permanent slots, drops unknown inactive ones, keeps ignored and active ones', () => {
    const plan = planSlotSync(
      [phys('old'), phys('busy', { active: true }), logi('stray'), logi('kept')],
      ['node2'],
      permanent,
      [{ name: 'kept' }],
      { logical: true },
    );
    expect(plan.createPhysical.sort()).toEqual(['node2', 'pp']);
    expect(plan.createLogical).toEqual([{ name: 'cdc', database: 'postgres', plugin: 'test_decoding' }]);
    expect(plan.drop.sort()).toEqual(['old', 'stray']);
  });

  it('recreates a permanent slot of the wrong kind; nothing dropped while paused', () => {
    const plan = planSlotSync([logi('cdc', { plugin: 'pgoutput' }), phys('x')], [], permanent, [], { logical: true });
    expect(plan.drop.sort()).toEqual(['cdc', 'x']);
    expect(plan.createLogical.map((s) => s.name)).toEqual(['cdc']);
    expect(planSlotSync([phys('x')], [], permanent, [], { logical: true, dropUnknown: false }).drop).toEqual([]);
  });

  it('advances permanent slots on a replica to the published positions, capped by replay', () => {
    const plan = planSlotSync([logi('cdc'), phys('pp', { restartLsn: 10n }), phys('node3')], ['node3'], permanent, [], {
      logical: true,
      advanceTo: { cdc: 500, pp: 5, node3: 900 },
      maxLsn: 300n,
    });
    expect(plan.advance).toEqual([{ name: 'cdc', lsn: 300n, database: 'postgres' }]);
    expect(plan.drop).toEqual([]);
  });

  it('a member without logical slots neither creates nor drops the permanent logical ones', () => {
    const plan = planSlotSync([logi('cdc')], [], permanent, [], { logical: false });
    expect(plan.drop).toEqual([]);
    expect(plan.createLogical).toEqual([]);
    expect(planSlotSync([], [], permanent, [], { logical: false }).createLogical).toEqual([]);
  });
});

describe('SlotRetention', () => {
  it('keeps an absent member until member_slots_ttl after it was last seen', () => {
    const r = new SlotRetention();
    expect(r.update(0, ['node1', 'node2', 'node3'], undefined, 60)).toEqual(['node1', 'node2', 'node3']);
    expect(r.update(30_000, ['node1', 'node2'], undefined, 60)).toEqual(['node1', 'node2', 'node3']);
    expect(r.update(59_999, ['node1', 'node2'], undefined, 60)).toEqual(['node1', 'node2', 'node3']);
    expect(r.update(60_000, ['node1', 'node2'], undefined, 60)).toEqual(['node1', 'node2']);
  });

  it('a new leader starts the window of the published retain_slots from now; ttl 0 retains nothing', () => {
    const r = new SlotRetention();
    expect(r.update(1000, ['node2'], ['node1', 'node3'], 10)).toEqual(['node1', 'node2', 'node3']);
    expect(r.update(11_000, ['node2'], ['node1', 'node3'], 10)).toEqual(['node2']);
    expect(new SlotRetention().update(0, ['a'], ['b'], 0)).toEqual([]);
  });
});
