/**
 * Finding 32 (fixed; docs/simulation.md): seeds 930071962, 930191046 (`true+strict`) and 930236480
 * of issue 28's 300,000-schedule scan broke `discarded-receipt`: a receipt listed commits (2, 26
 * and 4) that the new lineage kept. The replica, not streaming, read the leader's position to
 * look for a same-number fork (src/node/cycle/leader-read.ts); the leader's agent had been frozen
 * and answered from a probe taken before the freeze, while its PostgreSQL had written on and
 * streamed to the replica. The replica took its own WAL, past that stale position, for another
 * lineage's and re-cloned (a needless re-clone, with a receipt for commits the leader had). The
 * read now dates the leader's position by the document's `probe_age_ms` (finding 30's dating): it
 * counts only when probed after the replica stopped streaming.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../src/sim/run.ts';
import type { Fault } from '../../src/sim/world.ts';

describe('finding 32', () => {
  it('seed 930191046 (true+strict): a receipt listing 26 commits the new lineage kept (fixed: the leader position is dated by its probe_age_ms)', async () => {
    const faults: Fault[] = [
      { kind: 'pg-crash', at: 13, node: 'n1' },
      { kind: 'switchover', at: 19, node: 'n3' },
      { kind: 'freeze', at: 41, node: 'n3', steps: 24 },
      { kind: 'pg-crash', at: 47, node: 'n3' },
      { kind: 'freeze', at: 54, node: 'n1', steps: 27 },
    ];
    const { result } = await runSchedule(930191046, { nodes: 3, steps: 60, freeze: true, faults });
    expect(result.violations).toEqual([]);
  });

  it('seed 930236480: a receipt listing 4 commits the new lineage kept (fixed: the leader position is dated by its probe_age_ms)', async () => {
    const faults: Fault[] = [
      { kind: 'switchover', at: 37, node: 'n3' },
      { kind: 'freeze', at: 38, node: 'n3', steps: 27 },
      { kind: 'pg-crash', at: 42, node: 'n3' },
      { kind: 'freeze', at: 47, node: 'n2', steps: 27 },
      { kind: 'heal', at: 57 },
    ];
    const { result } = await runSchedule(930236480, { nodes: 3, steps: 60, freeze: true, faults });
    expect(result.violations).toEqual([]);
  });

  it('seed 930071962: a receipt listing two commits the new lineage kept (fixed: the leader position is dated by its probe_age_ms)', async () => {
    const faults: Fault[] = [
      { kind: 'net-delay', at: 12, node: 'n2', steps: 27, ms: 461 },
      { kind: 'freeze', at: 18, node: 'n1', steps: 17 },
      { kind: 'dcs-partition', at: 38, node: 'n3', steps: 8 },
      { kind: 'freeze', at: 40, node: 'n2', steps: 16 },
      { kind: 'pg-crash', at: 42, node: 'n2' },
      { kind: 'slow-loop', at: 51, node: 'n2', steps: 29, ms: 1154 },
    ];
    const { result } = await runSchedule(930071962, { nodes: 3, steps: 60, freeze: true, faults });
    expect(result.violations).toEqual([]);
  });
});
