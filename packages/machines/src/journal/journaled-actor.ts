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

/**
 * Starts `machine` as a journaled actor named `name`. `term()` is read at each transition.
 * Returns the started actor.
 */
export function startJournaledActor<M extends AnyStateMachine>(
  machine: M,
  opts: { name: string; input: InputFrom<M>; journal: Journal; term?: () => Term; snapshot?: unknown },
): Actor<M> {
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
        if (ie.event.type !== 'xstate.init') journal.append({ machine: name, kind: 'event', event: toJournalValue(ie.event) as Record<string, unknown> });
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
