/**
 * The one failure of a rewind the agent may simply try again: pg_rewind (or the agent's steps
 * before it) stopped before it changed anything in the target data directory (the leader could
 * not be reached, a postmaster still held the directory). A failure after pg_rewind began to copy
 * leaves the directory unusable (PostgreSQL docs, pg_rewind: "take a new fresh backup"), and is
 * never retried on the same data (docs/ha.md "Rewind").
 */

/** Error code of RewindNotStartedError. */
export const REWIND_NOT_STARTED = 'pg_rewind_not_started';

/** A rewind that failed before it changed the target data directory. `code` is 'pg_rewind_not_started'. */
export class RewindNotStartedError extends Error {
  readonly code = REWIND_NOT_STARTED;
  constructor(message: string) {
    super(message);
    this.name = 'RewindNotStartedError';
  }
}

/** True for an error that says the rewind did not change the target (any object with `code: 'pg_rewind_not_started'`). */
export function isRewindNotStarted(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === REWIND_NOT_STARTED;
}

/**
 * Did pg_rewind's output (PostgreSQL 15, with --progress) get as far as changing the target? It
 * changes nothing before it has compared both file lists and says how much it will copy ("need to
 * copy N MB"); "creating backup label and updating control file", "syncing target data directory"
 * and "Done!" come after.
 */
export function pgRewindTouchedTarget(output: string): boolean {
  return /need to copy|creating backup label|updating control file|syncing target data directory|Done!/.test(output);
}

/**
 * A pg_rewind failure worth trying again on the same data: it changed nothing
 * (pgRewindTouchedTarget false) and it failed on the source (connection refused, timed out or
 * lost; the source still in recovery right after its promotion). Failures that would repeat
 * (different systems, no common ancestor, an unclean target, neither wal_log_hints nor checksums)
 * are not.
 */
export function pgRewindMayRetry(output: string): boolean {
  if (pgRewindTouchedTarget(output)) return false;
  return /could not connect|connection to server|server closed the connection|timeout expired|Connection refused|No route to host|could not translate host name|could not receive data|source server must not be in recovery mode/i.test(
    output,
  );
}
