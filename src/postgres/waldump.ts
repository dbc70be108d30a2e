/**
 * Reading a stopped data directory's own WAL with `pg_waldump` (PostgreSQL docs, "pg_waldump"):
 * where its valid WAL ends (the divergence check of a former primary that did not shut down
 * cleanly, docs/ha.md "Divergence"), and what a range of it holds (the receipt of the
 * transactions a rewind or a re-clone throws away, docs/ha.md "Receipts").
 *
 * Nothing here writes to the data directory: pg_waldump only reads `pg_wal/`.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { formatLsn, parseLsn } from '../domain/lsn.ts';
import { parseHistoryFile } from '../domain/timeline-history.ts';
import type { WalRecord } from '../domain/discarded.ts';
import { pgOsUser } from './os-user.ts';
import { toolEnv } from './run-as-pg.ts';

/** Size of a WAL page header (XLogPageHeaderData, MAXALIGNed): every page but a segment's first. */
const SHORT_PAGE_HEADER = 24n;
/** Size of the long page header (XLogLongPageHeaderData, MAXALIGNed): the first page of a segment. */
const LONG_PAGE_HEADER = 40n;
/** MAXALIGN on the 64-bit platforms PostgreSQL 15 runs on. */
const MAXALIGN = 8n;

/** Where the valid WAL of a data directory ends. */
export interface WalEnd {
  /** The timeline whose WAL files were read (the newest one the data directory holds WAL of). */
  timeline: number;
  /** Start of the last valid record, bytes. */
  lastRecordLsn: bigint;
  /**
   * Where the next record would start (xlogreader's EndRecPtr of the last valid record: its end,
   * MAXALIGNed, past page headers; a WAL switch record ends at its segment's end), bytes. This is
   * how far PostgreSQL replays this WAL, and what a standby promoted from it writes as the switch
   * point of its new timeline.
   */
  endLsn: bigint;
}

/** WAL geometry of a cluster (pg_controldata "WAL block size", "Bytes per WAL segment"). */
export interface WalGeometry {
  blockBytes: bigint;
  segmentBytes: bigint;
}

/** PostgreSQL's default WAL geometry: 8 KiB pages, 16 MiB segments. */
export const DEFAULT_WAL_GEOMETRY: WalGeometry = { blockBytes: 8192n, segmentBytes: 16n * 1024n * 1024n };

function maxAlign(n: bigint): bigint {
  return (n + MAXALIGN - 1n) & ~(MAXALIGN - 1n);
}

/**
 * The end (xlogreader's NextRecPtr) of a record starting at `start` with `totalBytes` (pg_waldump's
 * "tot" length): the record's bytes are laid out page by page, each page after the first
 * beginning with its header (40 bytes on a segment's first page, 24 elsewhere), and the end is
 * MAXALIGNed; a WAL switch record (`isSwitch`) ends at the end of its segment (xlogreader.c
 * XLogDecodeNextRecord).
 */
export function recordEnd(start: bigint, totalBytes: number, geometry: WalGeometry = DEFAULT_WAL_GEOMETRY, isSwitch = false): bigint {
  const { blockBytes, segmentBytes } = geometry;
  let remaining = BigInt(totalBytes);
  const firstPageLeft = blockBytes - (start % blockBytes);
  let end: bigint;
  if (remaining <= firstPageLeft) {
    end = start + maxAlign(remaining);
  } else {
    remaining -= firstPageLeft;
    let page = start - (start % blockBytes) + blockBytes;
    for (;;) {
      const header = page % segmentBytes === 0n ? LONG_PAGE_HEADER : SHORT_PAGE_HEADER;
      const room = blockBytes - header;
      if (remaining <= room) {
        end = page + header + maxAlign(remaining);
        break;
      }
      remaining -= room;
      page += blockBytes;
    }
  }
  if (isSwitch) {
    const offset = end % segmentBytes;
    if (offset !== 0n) end += segmentBytes - offset;
  }
  return end;
}

const RECORD_RE =
  /^rmgr: (\S+)\s+len \(rec\/tot\):\s*(\d+)\/\s*(\d+), tx:\s*(\d+), lsn: ([0-9A-Fa-f]+\/[0-9A-Fa-f]+), prev ([0-9A-Fa-f]+\/[0-9A-Fa-f]+), desc: (.*)$/;

/**
 * One line of pg_waldump's default output (PostgreSQL 15):
 * `rmgr: Heap len (rec/tot): 59/ 59, tx: 724, lsn: 0/01519E60, prev 0/01519E20, desc: INSERT off 98 …, blkref #0: rel 1663/5/16384 blk 0`.
 * Undefined for any other line.
 */
export function parseWaldumpLine(line: string): WalRecord | undefined {
  const m = RECORD_RE.exec(line);
  if (!m) return undefined;
  return { rmgr: m[1]!, totalBytes: Number(m[3]), xid: Number(m[4]), lsn: parseLsn(m[5]!), description: m[7]! };
}

/** True for the record that ends a WAL segment early (pg_switch_wal, archive_timeout). */
function isSwitchRecord(r: WalRecord): boolean {
  return r.rmgr === 'XLOG' && /^SWITCH\b/.test(r.description);
}

/** The start of the last valid record, from pg_waldump's closing error: `error in WAL record at X/Y: …`. */
export function lastRecordFromError(stderr: string): bigint | undefined {
  const m = /error in WAL record at ([0-9A-Fa-f]+\/[0-9A-Fa-f]+)/.exec(stderr);
  return m ? parseLsn(m[1]!) : undefined;
}

/** Options shared by the pg_waldump runs. */
export interface WaldumpTarget {
  /** Directory of the PostgreSQL binaries (pg_waldump). */
  binDir: string;
  dataDir: string;
  /** Kill pg_waldump after this many ms. Default 120 s. */
  timeoutMs?: number;
}

/**
 * Runs pg_waldump as the PostgreSQL OS user, calling `onRecord` for every record line of its
 * output (streamed, never held in memory whole). pg_waldump ends with exit code 1 and an error
 * when it reaches the end of the valid WAL without an end position: that is its normal end here,
 * so both exit codes 0 and 1 resolve, with its stderr.
 * @throws Error when it cannot be started, is killed (timeout), or exits with another code.
 */
export function runWaldump(
  t: WaldumpTarget,
  args: string[],
  onRecord?: (r: WalRecord) => void,
): Promise<{ exitCode: number; stderr: string }> {
  const user = pgOsUser();
  const timeoutMs = t.timeoutMs ?? 120_000;
  return new Promise((resolve, reject) => {
    const child = spawn(join(t.binDir, 'pg_waldump'), ['-p', join(t.dataDir, 'pg_wal'), ...args], {
      cwd: '/',
      env: toolEnv({ LC_ALL: 'C', LANG: 'C' }),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(user.switchUser ? { uid: user.uid, gid: user.gid } : {}),
    });
    let stderr = '';
    let timedOut = false;
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += d.toString();
    });
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      if (!onRecord) return;
      const r = parseWaldumpLine(line);
      if (r) onRecord(r);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return reject(new Error(`pg_waldump timed out after ${timeoutMs} ms`));
      if (signal) return reject(new Error(`pg_waldump killed by ${signal}`));
      if (code !== 0 && code !== 1) return reject(new Error(`pg_waldump exited ${code}: ${stderr.trim().slice(-2000)}`));
      resolve({ exitCode: code ?? 1, stderr });
    });
  });
}

/** Timeline of a WAL segment file name (`TTTTTTTTXXXXXXXXYYYYYYYY`), undefined for other names. */
export function segmentTimeline(name: string): number | undefined {
  return /^[0-9A-F]{24}$/.test(name) ? parseInt(name.slice(0, 8), 16) : undefined;
}

/** What readWalEnd needs of pg_controldata. */
export interface WalEndStart {
  /** "Latest checkpoint's REDO location": crash recovery starts reading there. */
  redoLsn: bigint;
  /** "Latest checkpoint's TimeLineID". */
  checkpointTimeline: number;
  geometry?: WalGeometry;
}

/**
 * Where the valid WAL of the stopped data directory ends, read without changing anything:
 * - the timeline: the newest one `pg_wal/` holds segment files of (a primary promoted after its
 *   last checkpoint writes its WAL on a timeline newer than the checkpoint's; a replica that
 *   followed a new timeline receives it there);
 * - from the latest checkpoint's REDO location (where crash recovery starts), or, on a timeline
 *   newer than the checkpoint's, from where that timeline begins (the last line of its history
 *   file), `pg_waldump --quiet` reads to the first invalid record and names the last valid one
 *   ("error in WAL record at X/Y"); when its closing error does not name it (the WAL ends at the
 *   end of the last segment file), the records are read to find it;
 * - `pg_waldump -n 1` at that record gives its length, and recordEnd() its end.
 * @throws Error (never a guess) when pg_wal cannot be listed, the history file of a newer
 *         timeline is missing, or pg_waldump cannot read a single record from the start point.
 */
export async function readWalEnd(t: WaldumpTarget, start: WalEndStart): Promise<WalEnd> {
  const names = await readdir(join(t.dataDir, 'pg_wal'));
  let timeline = start.checkpointTimeline;
  for (const n of names) {
    const tl = segmentTimeline(n);
    if (tl !== undefined && tl > timeline) timeline = tl;
  }
  let from = start.redoLsn;
  if (timeline > start.checkpointTimeline) {
    const file = `${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
    let text: string;
    try {
      text = await readFile(join(t.dataDir, 'pg_wal', file), 'utf8');
    } catch (e) {
      throw new Error(`pg_wal holds WAL of timeline ${timeline} but not its history file ${file}: ${String(e)}`);
    }
    const lines = parseHistoryFile(text);
    const begins = lines[lines.length - 1]?.switchLsn;
    if (begins === undefined) throw new Error(`history file ${file} names no switch point`);
    if (begins > from) from = begins;
  }
  const tlArg = ['-t', String(timeline)];
  const quiet = await runWaldump(t, ['-q', ...tlArg, '-s', formatLsn(from)]);
  let last = lastRecordFromError(quiet.stderr);
  if (last === undefined) {
    await runWaldump(t, [...tlArg, '-s', formatLsn(from)], (r) => {
      last = r.lsn;
    });
  }
  if (last === undefined) {
    throw new Error(`pg_waldump found no valid record on timeline ${timeline} from ${formatLsn(from)}: ${quiet.stderr.trim().slice(-500)}`);
  }
  let record: WalRecord | undefined;
  await runWaldump(t, [...tlArg, '-s', formatLsn(last), '-n', '1'], (r) => {
    record ??= r;
  });
  if (!record || record.lsn !== last)
    throw new Error(`pg_waldump could not read the last valid record at ${formatLsn(last)} on timeline ${timeline}`);
  return { timeline, lastRecordLsn: last, endLsn: recordEnd(last, record.totalBytes, start.geometry, isSwitchRecord(record)) };
}

/**
 * Every record of timeline `timeline` in [fromLsn, toLsn), in order (the receipt of a discarded
 * range); without `toLsn`, to the end of the valid WAL. pg_waldump starts at the first valid
 * record at or after `fromLsn` and stops after the last record that starts before `toLsn`.
 * @throws Error when pg_waldump cannot run, or reads nothing from a range that holds WAL.
 */
export async function readWalRange(
  t: WaldumpTarget,
  timeline: number,
  fromLsn: bigint,
  toLsn: bigint | undefined,
  onRecord: (r: WalRecord) => void,
): Promise<void> {
  if (toLsn !== undefined && toLsn <= fromLsn) return;
  let seen = 0;
  const args = ['-t', String(timeline), '-s', formatLsn(fromLsn), ...(toLsn !== undefined ? ['-e', formatLsn(toLsn)] : [])];
  const run = await runWaldump(t, args, (r) => {
    if (toLsn === undefined || r.lsn < toLsn) {
      seen++;
      onRecord(r);
    }
  });
  if (seen === 0 && toLsn !== undefined && run.exitCode !== 0) {
    throw new Error(
      `pg_waldump read nothing on timeline ${timeline} in [${formatLsn(fromLsn)}, ${formatLsn(toLsn)}): ${run.stderr.trim().slice(-500)}`,
    );
  }
}
