import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseControlData } from '../../src/postgres/controldata.ts';

const sample = readFileSync(join(import.meta.dirname, 'controldata-sample.txt'), 'utf8');

describe('parseControlData', () => {
  it('parses the fields the agent uses from PostgreSQL 15 output', () => {
    expect(parseControlData(sample)).toEqual({
      systemIdentifier: '7710610197798742148',
      clusterState: 'shut down',
      checkpointLsn: 0x1500718n,
      checkpointTimeline: 1,
      minRecoveryLsn: 0n,
      redoLsn: 0x1500718n,
      minRecoveryTimeline: 0,
      walGeometry: { blockBytes: 8192n, segmentBytes: 16777216n },
      walLogHints: false,
      dataChecksumVersion: 0,
    });
  });

  it('reads wal_log_hints and the data checksum version (what pg_rewind needs)', () => {
    const text = sample
      .replace(/wal_log_hints setting:.*/, 'wal_log_hints setting:                on')
      .replace(/Data page checksum version:.*/, 'Data page checksum version:           1');
    expect(parseControlData(text)).toMatchObject({ walLogHints: true, dataChecksumVersion: 1 });
  });

  it('handles high LSNs and multi-word states', () => {
    const text = sample
      .replace(/Database cluster state:.*/, 'Database cluster state:               in archive recovery')
      .replace(/Latest checkpoint location:.*/, 'Latest checkpoint location:           1F/A0000028')
      .replace(/Latest checkpoint's TimeLineID:.*/, "Latest checkpoint's TimeLineID:       3")
      .replace(/Minimum recovery ending location:.*/, 'Minimum recovery ending location:     1F/A1000000');
    expect(parseControlData(text)).toMatchObject({
      clusterState: 'in archive recovery',
      checkpointLsn: (0x1fn << 32n) | 0xa0000028n,
      checkpointTimeline: 3,
      minRecoveryLsn: (0x1fn << 32n) | 0xa1000000n,
    });
  });

  it('throws on output without the fields (e.g. translated)', () => {
    expect(() => parseControlData('Datenbanksystemidentifikation: 1\n')).toThrow(/pg_controldata output lacks/);
  });
});
