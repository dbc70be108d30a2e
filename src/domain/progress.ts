/**
 * Progress of a long operation (issue 25; docs/backups.md "Progress"): a clone, a restore, a
 * rewind, a bootstrap's recovery or a backup, shown in /ha (`progress`), the member key and
 * `hactl list`, so an operator watching a 500 GB copy sees it move. The readers of the tools'
 * own progress output are here; they are pure. Units: bytes, percent 0..100, epoch ms.
 */

/** The operations that report progress. */
export type ProgressOperation = 'clone' | 'rewind' | 'bootstrap' | 'backup';

/** What an operation reports: its method and phase, and the bytes (or percent) done when known. */
export interface OperationProgress {
  operation: ProgressOperation;
  /** The method or tool: `basebackup`, a replica creation method's name, `pg_rewind`, a bootstrap method, `backup`. */
  method: string;
  /** What it does now, e.g. `copying`, `restoring`, `replaying WAL to the recovery target`, `stanza-create`. */
  phase: string;
  /** Bytes copied (or written into the data directory) so far. */
  bytesDone?: number;
  /** Bytes to copy in all, when the tool says. */
  bytesTotal?: number;
  /** Percent done as the tool says (0..100), or bytesDone / bytesTotal. */
  percent?: number;
  /** Epoch ms when the operation began. */
  startedAtMs: number;
}

/** What one reading of a tool's output tells. */
export interface ProgressReading {
  bytesDone?: number;
  bytesTotal?: number;
  percent?: number;
}

/** The last match of `re` (global) in `text`, or undefined. */
function lastMatch(re: RegExp, text: string): RegExpExecArray | undefined {
  let last: RegExpExecArray | undefined;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) last = m;
  return last;
}

/**
 * The latest progress in a chunk of a tool's output (stdout or stderr, lines ended by `\n` or
 * `\r`), undefined when it shows none:
 * - pg_basebackup `--progress`: `20489/1048620 kB (1%), 0/1 tablespace`;
 * - pg_rewind `--progress`: `1234/5678 kB (21%) copied`;
 * - pgBackRest at log level detail: `restore file … (1.2MB, 45.67%) checksum …`, `backup file …`;
 * - anything else printing `NN%` or `NN.NN%`: the last percentage.
 */
export function readToolProgress(chunk: string): ProgressReading | undefined {
  const kb = lastMatch(/(\d+)\/(\d+) kB \((\d+)%\)/g, chunk);
  if (kb) {
    const done = Number(kb[1]) * 1024;
    const total = Number(kb[2]) * 1024;
    return { bytesDone: done, bytesTotal: total, percent: Number(kb[3]) };
  }
  const pct = lastMatch(/(\d{1,3}(?:\.\d+)?)%/g, chunk);
  if (pct) {
    const p = Number(pct[1]);
    if (p >= 0 && p <= 100) return { percent: p };
  }
  return undefined;
}

/** Human size: `512 B`, `1.5 MB`, `12.3 GB` (1024-based). */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[u]}`;
}

/**
 * One line for `hactl list`: `clone pgbackrest: restoring 45%`, `clone basebackup: copying 1.2
 * GB / 5.0 GB (24%)`, `bootstrap pitr: replaying WAL to the recovery target`.
 */
export function progressText(
  p: Pick<OperationProgress, 'operation' | 'method' | 'phase' | 'bytesDone' | 'bytesTotal' | 'percent'>,
): string {
  const parts = [`${p.operation} ${p.method}: ${p.phase}`];
  if (p.bytesDone !== undefined && p.bytesTotal !== undefined) parts.push(`${formatBytes(p.bytesDone)} / ${formatBytes(p.bytesTotal)}`);
  else if (p.bytesDone !== undefined) parts.push(formatBytes(p.bytesDone));
  if (p.percent !== undefined) parts.push(p.bytesDone !== undefined ? `(${Math.floor(p.percent)}%)` : `${Math.floor(p.percent)}%`);
  return parts.join(' ');
}
