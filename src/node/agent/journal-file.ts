/**
 * The agent's journal file: JSON lines appended beside the data directory, bounded in size (when
 * a line would pass `maxBytes`, the file is renamed to `<file>.1` — one predecessor kept — and a
 * new one started). Appends are synchronous so the file order is the order of events.
 */
import { appendFileSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { JournalSink } from '@ha/machines';

/**
 * A JournalSink writing to `path` (its directory created when missing). `maxBytes`: rotation
 * size, default 8 MiB. fs errors are thrown to the caller of `Journal.append`.
 */
export function fileJournalSink(path: string, maxBytes = 8 * 1024 * 1024): JournalSink {
  mkdirSync(dirname(path), { recursive: true });
  let size = existsSync(path) ? statSync(path).size : 0;
  return {
    path,
    write(line: string): void {
      const bytes = Buffer.byteLength(line);
      if (size + bytes > maxBytes && size > 0) {
        renameSync(path, `${path}.1`);
        size = 0;
      }
      appendFileSync(path, line);
      size += bytes;
    },
  };
}
