import { describe, expect, it } from 'vitest';
import { readLocalFacts, type LocalFactsDeps } from '../../../src/node/cycle/local-facts.ts';

/** Deps of readLocalFacts around a database machine in `state`; records pg_controldata reads and the identifiers noted. */
function deps(state: string, opts: { sysid?: string; controlFails?: boolean } = {}) {
  const noted: string[] = [];
  let controlReads = 0;
  let sysid = opts.sysid;
  const d: LocalFactsDeps = {
    pg: {
      hasData: async () => true,
      controlData: async () => {
        controlReads++;
        if (opts.controlFails) throw new Error('pg_controldata: could not open file');
        return {
          systemIdentifier: '7300000000000000042',
          clusterState: 'in production',
          checkpointLsn: 0n,
          checkpointTimeline: 1,
          minRecoveryLsn: 0n,
        };
      },
      walEnd: async () => ({ timeline: 1, endLsn: 0n }),
      readTimelineHistory: async () => undefined,
      readPromotion: async () => undefined,
    } as unknown as LocalFactsDeps['pg'],
    db: () => ({ getSnapshot: () => ({ value: state, context: { role: 'primary', promoting: false } }) }),
    probeNow: async () => undefined,
    probe: () => undefined,
    trackers: {
      noteSystemIdentifier: (s: string) => {
        noted.push(s);
        sysid = s;
      },
      observeProbe: () => undefined,
      observeStoppedWal: () => undefined,
      get facts() {
        return { sysid, replicaTimeline: 0 } as never;
      },
    },
  };
  return { d, noted, controlReads: () => controlReads };
}

describe('readLocalFacts: the system identifier of a running database', () => {
  it('reads it once with pg_controldata when the database already ran when the agent met it (adopted postmaster)', async () => {
    const t = deps('running');
    await readLocalFacts(t.d, 0);
    expect(t.noted).toEqual(['7300000000000000042']);
    await readLocalFacts(t.d, 1000);
    expect(t.controlReads()).toBe(1);
  });

  it('does not read it again when it is known', async () => {
    const t = deps('running', { sysid: '7300000000000000042' });
    await readLocalFacts(t.d, 0);
    expect(t.controlReads()).toBe(0);
  });

  it('leaves it unknown when pg_controldata fails, and tries again next cycle', async () => {
    const t = deps('running', { controlFails: true });
    await readLocalFacts(t.d, 0);
    await readLocalFacts(t.d, 1000);
    expect(t.noted).toEqual([]);
    expect(t.controlReads()).toBe(2);
  });
});
