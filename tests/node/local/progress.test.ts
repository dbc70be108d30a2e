/**
 * Progress of long operations (docs/backups.md "Progress"): the tools' progress output read
 * (src/domain/progress.ts), the tracker the clone and rewind effects tell
 * (src/node/local/progress.ts), and how GET /ha shows it (src/domain/status-document.ts).
 */
import { describe, expect, it } from 'vitest';
import { progressText, readToolProgress } from '../../../src/domain/progress.ts';
import { buildStatusDocument } from '../../../src/domain/status-document.ts';
import { ProgressTracker } from '../../../src/node/local/progress.ts';
import { streamingReplica } from '../../http/fixtures.ts';

describe('progress of a tool', () => {
  it("reads pg_basebackup --progress, pgBackRest's percentages, and nothing from other output", () => {
    expect(readToolProgress('   20489/1048620 kB (1%), 0/1 tablespace\r  524288/1048620 kB (50%), 0/1 tablespace\r')).toEqual({
      bytesDone: 524288 * 1024,
      bytesTotal: 1048620 * 1024,
      percent: 50,
    });
    expect(readToolProgress('P00 DETAIL: restore file /data/base/1/1259 (88KB, 45.67%) checksum abc')).toEqual({ percent: 45.67 });
    expect(readToolProgress('WARN: --delta or --force specified but unable to find PG_VERSION')).toBeUndefined();
    expect(
      progressText({
        operation: 'clone',
        method: 'basebackup',
        phase: 'copying from node1',
        bytesDone: 1536,
        bytesTotal: 3072,
        percent: 50,
      }),
    ).toBe('clone basebackup: copying from node1 1.5 kB / 3.0 kB (50%)');
  });

  it('is tracked from begin to end and shown in GET /ha meanwhile', () => {
    let now = Date.parse('2026-11-27T12:00:00Z');
    const t = new ProgressTracker({ now: () => now });
    t.begin('clone', 'pgbackrest', 'restoring (delta)');
    now += 1000;
    t.output('restore file (1MB, 12.5%)');
    const p = t.current()!;
    expect(p).toMatchObject({ operation: 'clone', method: 'pgbackrest', phase: 'restoring (delta)', percent: 12.5 });
    const doc = buildStatusDocument({ ...streamingReplica(), progress: p }, now);
    expect(doc.progress).toEqual({
      operation: 'clone',
      method: 'pgbackrest',
      phase: 'restoring (delta)',
      percent: 12,
      started_at: '2026-11-27T12:00:00.000Z',
      text: 'clone pgbackrest: restoring (delta) 12%',
    });
    t.end();
    expect(t.current()).toBeUndefined();
    expect(buildStatusDocument(streamingReplica(), now).progress).toBeUndefined();
  });
});
