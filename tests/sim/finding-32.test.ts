/**
 * Finding 32 (open; docs/simulation.md): seed 930071962 of issue 28's 300,000-schedule scan,
 * `discarded-receipt`, asynchronous mode. A member's receipt for a discarded data directory
 * (timeline 2, WAL to 18,064,787) lists two commits, #38 and #39, that the new lineage kept: the
 * receipt over-states what was lost (no commit is lost that it does not list). It replays the
 * same on 63d3060 (round 5's scanned code): older than the quorum mode. Seed 930191046 of the
 * same scan (`true+strict`, the mode not drawn) is another: its receipt lists 26 commits the new
 * lineage kept; and seed 930236480 (asynchronous), 4.
 *
 * Kept as an open regression schedule: this asserts the violation is still there, so the test
 * turns red when a fix lands; then it must assert no violation instead.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 32 (open)', () => {
  it('seed 930191046 (true+strict): a receipt listing 26 commits the new lineage kept (still breaks discarded-receipt)', async () => {
    const faults: Fault[] = [
      { kind: 'pg-crash', at: 13, node: 'n1' },
      { kind: 'switchover', at: 19, node: 'n3' },
      { kind: 'freeze', at: 41, node: 'n3', steps: 24 },
      { kind: 'pg-crash', at: 47, node: 'n3' },
      { kind: 'freeze', at: 54, node: 'n1', steps: 27 },
    ];
    const { result } = await runSchedule(930191046, { nodes: 3, steps: 60, freeze: true, faults });
    expect([...new Set(result.violations.map((v) => v.invariant))]).toEqual(['discarded-receipt']);
  });

  it('seed 930236480: a receipt listing 4 commits the new lineage kept (still breaks discarded-receipt)', async () => {
    const faults: Fault[] = [
      { kind: 'switchover', at: 37, node: 'n3' },
      { kind: 'freeze', at: 38, node: 'n3', steps: 27 },
      { kind: 'pg-crash', at: 42, node: 'n3' },
      { kind: 'freeze', at: 47, node: 'n2', steps: 27 },
      { kind: 'heal', at: 57 },
    ];
    const { result } = await runSchedule(930236480, { nodes: 3, steps: 60, freeze: true, faults });
    expect([...new Set(result.violations.map((v) => v.invariant))]).toEqual(['discarded-receipt']);
  });

  it('seed 930071962: a receipt listing two commits the new lineage kept (still breaks discarded-receipt)', async () => {
    const faults: Fault[] = [
      { kind: 'net-delay', at: 12, node: 'n2', steps: 27, ms: 461 },
      { kind: 'freeze', at: 18, node: 'n1', steps: 17 },
      { kind: 'dcs-partition', at: 38, node: 'n3', steps: 8 },
      { kind: 'freeze', at: 40, node: 'n2', steps: 16 },
      { kind: 'pg-crash', at: 42, node: 'n2' },
      { kind: 'slow-loop', at: 51, node: 'n2', steps: 29, ms: 1154 },
    ];
    const { result } = await runSchedule(930071962, { nodes: 3, steps: 60, freeze: true, faults });
    expect(result.violations.map((v) => v.invariant)).toEqual(['discarded-receipt']);
  });
});
