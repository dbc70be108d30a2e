import { describe, expect, it } from 'vitest';
import { CycleTrackers } from '../../../src/node/cycle/trackers.ts';
import type { LocalPosition } from '../../../src/domain/timeline-history.ts';

const position = (over: Partial<LocalPosition> = {}): LocalPosition => ({
  clusterState: 'in production',
  timeline: 3,
  checkpointLsn: 1000n,
  minRecoveryLsn: 0n,
  walEndLsn: 5000n,
  ...over,
});

describe('CycleTrackers.observeStoppedWal (finding 28)', () => {
  it('keeps the stopped WAL end through starting, drops it once the database runs or the data is gone', () => {
    const t = new CycleTrackers({ notice: () => undefined });
    t.observeStoppedWal('stopped', true, position());
    expect(t.facts.stoppedWal).toEqual({ walBytes: 5000n, timeline: 3 });
    // Starting: nothing read (busy), the last read still stands.
    t.observeStoppedWal('starting', true, undefined);
    expect(t.facts.stoppedWal).toEqual({ walBytes: 5000n, timeline: 3 });
    t.observeStoppedWal('running', true, undefined);
    expect(t.facts.stoppedWal).toBeUndefined();
    t.observeStoppedWal('crashed', true, position({ walEndLsn: 7000n }));
    expect(t.facts.stoppedWal).toEqual({ walBytes: 7000n, timeline: 3 });
    t.observeStoppedWal('creating_replica', true, undefined);
    expect(t.facts.stoppedWal).toBeUndefined();
    t.observeStoppedWal('stopped', true, position());
    t.observeStoppedWal('stopped', false, undefined);
    expect(t.facts.stoppedWal).toBeUndefined();
  });

  it('falls back to the later of the checkpoint and the minimum recovery point when the WAL end could not be read', () => {
    const t = new CycleTrackers({ notice: () => undefined });
    const { walEndLsn: _none, ...unread } = position({ minRecoveryLsn: 4000n, walEndError: 'pg_waldump failed' });
    t.observeStoppedWal('stopped', true, unread);
    expect(t.facts.stoppedWal).toEqual({ walBytes: 4000n, timeline: 3 });
  });
});
