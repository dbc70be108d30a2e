/**
 * Rebuilds machine states from a journal: for each machine, start from the input recorded in its
 * last `start` entry and feed the `event` entries that follow through XState's pure
 * `transition()` (actions are not executed, actors are not started).
 */
import { initialTransition, transition, type AnyStateMachine, type AnyMachineSnapshot } from 'xstate';
import type { JournalEntry } from './journal.ts';

/** Replays one machine's events from `entries` (oldest first). Undefined when it never started. */
export function replayMachine(machine: AnyStateMachine, name: string, entries: JournalEntry[]): AnyMachineSnapshot | undefined {
  let snap: AnyMachineSnapshot | undefined;
  for (const e of entries) {
    if (e.machine !== name) continue;
    if (e.kind === 'start') [snap] = initialTransition(machine, e.input);
    else if (e.kind === 'event' && snap) [snap] = transition(machine, snap, e.event as never);
  }
  return snap;
}

/** Parses JSONL text into entries, skipping blank lines; throws naming the line on bad JSON. */
export function parseJournal(text: string): JournalEntry[] {
  const out: JournalEntry[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      out.push(JSON.parse(line) as JournalEntry);
    } catch (e) {
      throw new Error(`journal line ${i + 1}: ${(e as Error).message}`);
    }
  });
  return out;
}
