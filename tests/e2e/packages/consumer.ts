// A TypeScript consumer of the installed @ha/machines, type-checked by tests/e2e/packages.test.ts
// with `tsc --noEmit` under strict settings and moduleResolution bundler and node16. The
// expect-error directives below prove the types are real (an `any` would let those lines through,
// and the unused directives would fail the check).
import { createActor, fromPromise, waitFor } from 'xstate';
import {
  BUSY_STATES,
  DATABASE_STATES,
  Journal,
  databaseMachine,
  databaseStateNumber,
  renderChart,
  restartMachine,
  scheduledSwitchoverOf,
  startJournaledActor,
  switchoverMachine,
  type DatabaseEvent,
  type DatabaseState,
  type JournalEntry,
  type StartInput,
  type StopInput,
} from '@ha/machines';
import { dotToSvg, type ChartModel } from '@ha/machines/svg';

const ok = <I>() => fromPromise<unknown, I>(async () => undefined);
const machine = databaseMachine.provide({
  actors: {
    initdb: ok(),
    customBootstrap: ok(),
    clone: ok(),
    start: ok<StartInput>(),
    stop: ok<StopInput>(),
    restart: ok<StartInput>(),
    promote: ok(),
  },
});

export async function run(): Promise<DatabaseState> {
  const journal = new Journal({ now: () => 0, keep: 10 });
  const seen: JournalEntry[] = [];
  journal.subscribe((e) => void seen.push(e));
  const db = startJournaledActor(machine, { name: 'database', input: { at: 0 }, journal });
  const start: DatabaseEvent = { type: 'cmd.start', role: 'primary', reason: 'typed', at: 1 };
  db.send(start);
  const s = await waitFor(db, (x) => x.value === 'running');
  // @ts-expect-error: 'cmd.start' needs a role
  db.send({ type: 'cmd.start', reason: 'no role', at: 2 });
  // @ts-expect-error: no such event
  db.send({ type: 'cmd.explode', reason: 'x', at: 3 });
  // @ts-expect-error: not one of the 15 states
  const wrong: DatabaseState = 'exploded';
  void wrong;
  const sw = createActor(switchoverMachine, { input: { loopWaitMs: 10_000 } }).start();
  sw.send({ type: 'switchover.requested', candidate: 'node2', atMs: 10, now: 0 });
  const summary: { at: string } | undefined = scheduledSwitchoverOf(sw.getSnapshot());
  void summary;
  createActor(restartMachine, { input: { loopWaitMs: 10_000 } });
  const n: number = databaseStateNumber(DATABASE_STATES[0]);
  const busy: readonly string[] = BUSY_STATES;
  const text: string = await renderChart(databaseMachine, 'svg', { dotToSvg });
  const model: ChartModel | undefined = undefined;
  void [n, busy, text, model];
  return s.value;
}
