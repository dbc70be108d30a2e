import { describe, expect, it } from 'vitest';
import { mapProbeRow, timelineOfWalFile, type ProbeRow } from '../../src/postgres/probe.ts';

const base: ProbeRow = {
  in_recovery: false,
  server_version: 150018,
  postmaster_start_time: '2026-11-21 13:02:31.123+00',
  flush_lsn: '0/3000148',
  wal_file: '000000020000000000000003',
  checkpoint_timeline: 1,
  receive_lsn: null,
  replay_lsn: null,
  replay_timestamp: null,
  replay_paused: null,
  archive_recovery: false,
  synchronous_standby_names: 'FIRST 1 ("node-2")',
  wal_receiver_status: null,
  received_timeline: null,
  latest_end_lsn: null,
  sender_host: null,
  replication: JSON.stringify([
    {
      usename: 'replicator',
      application_name: 'node-2',
      client_addr: '127.0.0.1',
      state: 'streaming',
      sync_state: 'async',
      sync_priority: 0,
      flush_lsn: 'FF/FFFFFFFF',
      replay_lsn: null,
    },
  ]),
  pending_restart: JSON.stringify({ max_connections: { old_value: '100', new_value: '150' } }),
  slots: JSON.stringify({ node_2: '0/3000000', unused: null }),
};

describe('mapProbeRow', () => {
  it('maps a primary: timeline from the WAL file, LSNs as bigint', () => {
    expect(mapProbeRow(base, 42)).toEqual({
      atMs: 42,
      inRecovery: false,
      serverVersion: 150018,
      postmasterStartTime: '2026-11-21 13:02:31.123+00',
      timeline: 2,
      flushLsn: 0x3000148n,
      synchronousStandbyNames: 'FIRST 1 ("node-2")',
      streaming: false,
      replication: [
        {
          usename: 'replicator',
          application_name: 'node-2',
          client_addr: '127.0.0.1',
          state: 'streaming',
          sync_state: 'async',
          sync_priority: 0,
          flush_lsn: 0xffffffffffn,
        },
      ],
      pendingRestart: { max_connections: { old_value: '100', new_value: '150' } },
      slots: { node_2: 0x3000000n, unused: 0n },
    });
  });

  it('maps a streaming replica: timeline from the WAL receiver', () => {
    const st = mapProbeRow(
      {
        ...base,
        in_recovery: true,
        flush_lsn: null,
        wal_file: null,
        receive_lsn: '0/5000000',
        replay_lsn: '0/4FFFF00',
        replay_timestamp: '2026-11-21 13:05:00+00',
        replay_paused: false,
        wal_receiver_status: 'streaming',
        received_timeline: 3,
        latest_end_lsn: '0/5000000',
        sender_host: '10.0.0.1',
        replication: '[]',
        pending_restart: '{}',
        slots: '{}',
      },
      1,
    );
    expect(st).toMatchObject({
      inRecovery: true,
      timeline: 3,
      receiveLsn: 0x5000000n,
      replayLsn: 0x4ffff00n,
      latestEndLsn: 0x5000000n,
      replayTimestamp: '2026-11-21 13:05:00+00',
      replayPaused: false,
      streaming: true,
      archiveRecovery: false,
      upstreamHost: '10.0.0.1',
    });
    expect(st.flushLsn).toBeUndefined();
  });

  it('falls back to the checkpoint timeline on a replica without a WAL receiver', () => {
    const st = mapProbeRow({ ...base, in_recovery: true, flush_lsn: null, wal_file: null, checkpoint_timeline: 4 }, 1);
    expect(st.timeline).toBe(4);
    expect(st.streaming).toBe(false);
  });

  it('reads the timeline from a WAL file name', () => {
    expect(timelineOfWalFile('0000000A0000000100000002')).toBe(10);
    expect(() => timelineOfWalFile('zz')).toThrow();
  });
});
