/**
 * Whether the database machine is carrying out an effect (initdb, clone, start, stop, restart…):
 * read by the cycle (no decision acts while one runs), the admin commands (one at a time) and
 * the agent's shutdown (waits for it). The busy states are the machine's (BUSY_STATES).
 */
import { BUSY_STATES } from '@ha/machines';

/** True while `state` (a database machine state) is one in which an effect runs. */
export function isBusy(state: string): boolean {
  return (BUSY_STATES as readonly string[]).includes(state);
}
