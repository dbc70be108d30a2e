/**
 * Creates an XState actor whose every received event and every state change is appended to the
 * journal: the event-sourcing half of the node. The `start` entry records the input, so a replay
 * starts from the same initial snapshot.
 */
import { createActor, type AnyStateMachine, type Actor, type InputFrom, type AnyActorRef, type AnyMachineSnapshot } from 'xstate';
import { toJournalValue, type Journal, type Term } from './journal.ts';

/** Flattens a state value (`{ a: 'b' }` → `a.b`). */
export function stateName(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value)
      .map(([k, v]) => `${k}.${stateName(v)}`)
      .join(',');
  }
  return String(value);
}

/** Options of {@link startJournaledActor}. */
export interface JournaledActorOptions<M extends AnyStateMachine> {
  /** The machine's name in the journal (`machine` of each entry), e.g. `'database'`. */
  name: string;
  /** The machine's input, as for `createActor(machine, { input })`; journaled in the `start` entry. */
  input: InputFrom<M>;
  /** Where the entries go. */
  journal: Journal;
  /** The node's term, read at each transition and written into its entry. */
  term?: () => Term;
  /** A persisted snapshot to restore instead of starting from the initial state. */
  snapshot?: unknown;
}

/**
 * Starts `machine` as a journaled actor named `name`: a `start` entry with the input, an `event`
 * entry for every event the actor receives (errors as `{ message }`), a `transition` entry for
 * every change of state value (with the context's `reason`, or `lastError` after an actor's
 * error). `term()` is read at each transition. Returns the started actor.
 */
export function startJournaledActor<M extends AnyStateMachine>(machine: M, opts: JournaledActorOptions<M>): Actor<M> {
  const { journal, name } = opts;
  let root: AnyActorRef | undefined;
  let lastEvent = 'xstate.init';
  journal.append({ machine: name, kind: 'start', input: toJournalValue(opts.input) });
  const actor = createActor(machine, {
    input: opts.input,
    ...(opts.snapshot ? { snapshot: opts.snapshot as never } : {}),
    inspect: (ie) => {
      if (ie.type === '@xstate.event' && root && ie.actorRef === root) {
        lastEvent = ie.event.type;
        if (ie.event.type !== 'xstate.init')
          journal.append({ machine: name, kind: 'event', event: toJournalValue(ie.event) as Record<string, unknown> });
      }
    },
  });
  root = actor;
  let prev = stateName((actor.getSnapshot() as AnyMachineSnapshot).value);
  actor.subscribe((s) => {
    const snap = s as AnyMachineSnapshot;
    const to = stateName(snap.value);
    if (to !== prev) {
      const ctx = snap.context as { reason?: string; lastError?: string } | undefined;
      const reason = lastEvent.startsWith('xstate.error') ? ctx?.lastError : ctx?.reason;
      journal.append({
        machine: name,
        kind: 'transition',
        event: lastEvent,
        from: prev,
        to,
        ...(reason ? { reason } : {}),
        ...(opts.term ? { term: opts.term() } : {}),
      });
      prev = to;
    }
  });
  actor.start();
  return actor;
}
