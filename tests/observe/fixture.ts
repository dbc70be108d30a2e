/** Three journaled machines over an in-memory journal with a fixed clock, and their observe routes. */
import { fromPromise, type AnyActorRef } from 'xstate';
import {
  Journal,
  databaseMachine,
  restartMachine,
  startJournaledActor,
  switchoverMachine,
  type StartInput,
  type StopInput,
} from '@ha/machines';
import { createObserveRoutes, type ObservedMachine } from '../../src/observe/app.ts';

export const T0 = Date.UTC(2026, 4, 1, 10, 0, 0);

/** Builds the fixture; the database machine is adopted as running (`pg.found`), no effect runs. */
export function fixture(opts: { heartbeatMs?: number } = {}) {
  let clock = T0;
  const now = () => clock;
  const journal = new Journal({ now });
  const noop = <I>() => fromPromise<unknown, I>(async () => undefined);
  const db = startJournaledActor(
    databaseMachine.provide({
      actors: {
        initdb: noop(),
        customBootstrap: noop(),
        clone: noop(),
        start: noop<StartInput>(),
        stop: noop<StopInput>(),
        restart: noop<StartInput>(),
        promote: noop(),
      },
    }),
    { name: 'database', input: { at: now() }, journal },
  );
  const switchover = startJournaledActor(switchoverMachine, { name: 'switchover', input: { loopWaitMs: 10_000 }, journal });
  const restart = startJournaledActor(restartMachine, { name: 'restart', input: { loopWaitMs: 10_000 }, journal });
  const observed = (name: string, machine: ObservedMachine['machine'], actor: AnyActorRef): ObservedMachine => ({
    name,
    machine,
    snapshot: () => actor.getSnapshot() as { value: unknown; context: unknown },
  });
  const machines = [
    observed('database', databaseMachine, db),
    observed('switchover', switchoverMachine, switchover),
    observed('restart', restartMachine, restart),
  ];
  const cluster = { scope: 'demo', members: [{ name: 'node1', role: 'leader', state: 'running', timeline: 1 }] };
  const app = createObserveRoutes({
    journal,
    machines: () => machines,
    cluster: () => cluster,
    now,
    prewarmCharts: false,
    ...(opts.heartbeatMs !== undefined ? { heartbeatMs: opts.heartbeatMs } : {}),
  });
  const advance = (ms: number) => (clock += ms);
  const stop = () => {
    db.stop();
    switchover.stop();
    restart.stop();
  };
  return { app, journal, db, switchover, restart, advance, now, stop };
}
