/**
 * The line protocol between the agent and its fence process (src/watchdog/fence-process.ts):
 * one JSON object per line, agent → fence on the fence's stdin, fence → agent on its stdout.
 * No imports: the fence process loads this file and nothing heavier.
 *
 * Times are CLOCK_MONOTONIC milliseconds (`monoNowMs`, shared by every process of the machine)
 * plus the remaining time as the agent computed it when it wrote the line; the fence takes the
 * earlier of "received + remainingMs" and `deadlineMonoMs`, so a line that waited in the pipe
 * never moves the deadline later.
 */

/** Agent → fence. */
export type ToFence =
  /**
   * Arm for postmaster `pid` (0: none runs) and, when given, for whichever postmaster runs in
   * `dataDir` when the fence fires (postmaster.pid): fire unless fed before the deadline.
   */
  | { op: 'arm'; pid: number; dataDir?: string; remainingMs: number; deadlineMonoMs: number }
  /** A successful leader-lock renewal: the new deadline. */
  | { op: 'feed'; remainingMs: number; deadlineMonoMs: number }
  /** Disarm; the process stays, idle, ready for the next `arm`. */
  | { op: 'disarm' }
  /** Disarm (when armed) and exit: the agent shuts down. */
  | { op: 'exit' };

/** Fence → agent. */
export type FromFence =
  /** The process runs and reads its stdin. */
  | { ev: 'ready'; pid: number }
  /** Armed for `pid` (its start time read from /proc; 0: on the data directory only). */
  | { ev: 'armed'; pid: number; remainingMs: number }
  /** Arming refused (no such process, not a postgres process). */
  | { ev: 'refused'; reason: string }
  /** Fired: why, what it sent, and whether the postmaster is gone. */
  | { ev: 'fired'; reason: 'deadline' | 'agent gone'; lateMs: number; signals: string[]; stopped: boolean; tookMs: number }
  /** Disarmed on request (`disarm`: the process stays idle; `exit`: it exits). */
  | { ev: 'disarmed' };

/** CLOCK_MONOTONIC in ms (the same clock in every process of the machine). */
export function monoNowMs(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

/** Parses one line; undefined when it is not a JSON object with `op` or `ev`. */
export function parseLine<T extends ToFence | FromFence>(line: string): T | undefined {
  try {
    const x: unknown = JSON.parse(line);
    if (typeof x !== 'object' || x === null) return undefined;
    if (!('op' in x) && !('ev' in x)) return undefined;
    return x as T;
  } catch {
    return undefined;
  }
}
