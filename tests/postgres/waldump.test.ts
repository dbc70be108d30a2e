/** pg_waldump output parsing and the record end arithmetic (src/postgres/waldump.ts); the real tool: tests/e2e/waldump.test.ts. */
import { describe, expect, it } from 'vitest';
import { parseLsn } from '../../src/domain/lsn.ts';
import { lastRecordFromError, parseWaldumpLine, recordEnd, segmentTimeline } from '../../src/postgres/waldump.ts';

describe('parseWaldumpLine', () => {
  it('reads PostgreSQL 15 record lines, block references included', () => {
    expect(
      parseWaldumpLine(
        'rmgr: Heap        len (rec/tot):     59/    59, tx:        724, lsn: 0/01519E60, prev 0/01519E20, desc: INSERT off 98 flags 0x00, blkref #0: rel 1663/5/16384 blk 0',
      ),
    ).toEqual({
      rmgr: 'Heap',
      totalBytes: 59,
      xid: 724,
      lsn: parseLsn('0/01519E60'),
      description: 'INSERT off 98 flags 0x00, blkref #0: rel 1663/5/16384 blk 0',
    });
    const commit = parseWaldumpLine(
      'rmgr: Transaction len (rec/tot):     34/    34, tx:        725, lsn: 0/030047C0, prev 0/03004780, desc: COMMIT 2026-11-27 03:09:44.718084 UTC',
    );
    expect(commit).toMatchObject({ rmgr: 'Transaction', totalBytes: 34, xid: 725, description: 'COMMIT 2026-11-27 03:09:44.718084 UTC' });
    expect(
      parseWaldumpLine(
        'rmgr: XLOG        len (rec/tot):    114/   114, tx:          0, lsn: 1F/A0000028, prev 1F/9FFFFF80, desc: CHECKPOINT_SHUTDOWN redo 1F/A0000028',
      ),
    ).toMatchObject({
      rmgr: 'XLOG',
      xid: 0,
      lsn: 0x1fa0000028n,
    });
  });

  it('ignores other lines (errors, statistics, blank)', () => {
    expect(
      parseWaldumpLine('pg_waldump: error: error in WAL record at 0/1519F20: invalid record length at 0/151A0D0: wanted 24, got 0'),
    ).toBeUndefined();
    expect(parseWaldumpLine('')).toBeUndefined();
  });
});

describe('lastRecordFromError', () => {
  it('names the last valid record of the closing error', () => {
    expect(
      lastRecordFromError('pg_waldump: error: error in WAL record at 0/30047C0: invalid record length at 0/30047E8: wanted 24, got 0\n'),
    ).toBe(parseLsn('0/30047C0'));
    expect(
      lastRecordFromError('pg_waldump: error: could not find file "000000010000000000000004": No such file or directory'),
    ).toBeUndefined();
  });
});

describe('recordEnd (xlogreader NextRecPtr)', () => {
  it('a record inside one page ends MAXALIGNed', () => {
    // The last COMMIT of a crashed primary, as pg_waldump showed it: the error then names 0/30047E8.
    expect(recordEnd(parseLsn('0/30047C0'), 34)).toBe(parseLsn('0/30047E8'));
    expect(recordEnd(0x3000028n, 8)).toBe(0x3000030n);
  });

  it('a record crossing into the next page skips that page header (24 bytes)', () => {
    // Seen on a real crash: COMMIT at 0/1519F20, 405 bytes, crossing the page at 0/151A000; the
    // next record was tried at 0/151A0D0.
    expect(recordEnd(parseLsn('0/1519F20'), 405)).toBe(parseLsn('0/151A0D0'));
  });

  it('a record crossing into a new segment skips the long header (40 bytes)', () => {
    const segment = 16n * 1024n * 1024n;
    // 16 bytes left in the segment's last page, 100 bytes of record: 84 go after the 40-byte header.
    expect(recordEnd(segment - 16n, 100)).toBe(segment + 40n + 88n);
  });

  it('a record spanning several pages skips every header', () => {
    // Starts 8 bytes before a page end, 8 + (8192 - 24) + 10 bytes long: ends on the second next page.
    expect(recordEnd(0x2000n - 8n, 8 + (8192 - 24) + 10)).toBe(0x4000n + 24n + 16n);
  });

  it('a record ending exactly at a page end ends there (the next page header comes with the next record)', () => {
    expect(recordEnd(0x1ff0n, 16)).toBe(0x2000n);
  });

  it('a WAL switch record ends at the end of its segment', () => {
    const segment = 16n * 1024n * 1024n;
    expect(recordEnd(0x3000100n, 24, undefined, true)).toBe(0x3000000n + segment);
  });

  it('honours another geometry (pg_controldata)', () => {
    const g = { blockBytes: 16384n, segmentBytes: 64n * 1024n * 1024n };
    expect(recordEnd(0x3ff0n, 32, g)).toBe(0x4000n + 24n + 16n);
  });
});

describe('segmentTimeline', () => {
  it('reads the timeline of segment file names only', () => {
    expect(segmentTimeline('000000020000000000000003')).toBe(2);
    expect(segmentTimeline('0000000A0000000100000003')).toBe(10);
    expect(segmentTimeline('00000002.history')).toBeUndefined();
    expect(segmentTimeline('000000010000000000000003.partial')).toBeUndefined();
    expect(segmentTimeline('archive_status')).toBeUndefined();
  });
});
