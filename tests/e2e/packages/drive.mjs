// A consumer's drive of the database machine, for tests/e2e/packages.test.ts: plain JavaScript
// importing the installed @ha/machines by name, run by plain node and, bundled by esbuild, in a
// browser. start -> running -> crashed -> starting with fake effects (the caller's), and the
// restart after the crash held in `starting` until the test lets its fake start finish.
import { createActor, fromPromise, waitFor } from 'xstate';
import {
  DATABASE_STATES,
  Journal,
  databaseMachine,
  databaseStateNumber,
  renderChart,
  replayMachine,
  startJournaledActor,
} from '@ha/machines';

/**
 * Runs the drive; resolves with what a test compares: the state values in order, the effects
 * called, the state seen while the second start was held, the state numbers and a replay.
 */
export async function drive() {
  let clock = Date.UTC(2026, 4, 1, 10, 0, 0);
  const calls = [];
  /** @type {Promise<void> | undefined} */
  let gate;
  /** @type {() => void} */
  let release = () => {};
  const effect = (name) =>
    fromPromise(async ({ input }) => {
      calls.push(input && input.role ? `${name}:${input.role}` : name);
      if (name === 'start' && gate) await gate;
    });
  const machine = databaseMachine.provide({
    actors: {
      initdb: effect('initdb'),
      customBootstrap: effect('customBootstrap'),
      clone: effect('clone'),
      start: effect('start'),
      stop: effect('stop'),
      restart: effect('restart'),
      promote: effect('promote'),
    },
  });
  const journal = new Journal({ now: () => clock });
  const actor = startJournaledActor(machine, { name: 'database', input: { at: clock }, journal });
  const states = [String(actor.getSnapshot().value)];
  actor.subscribe((s) => {
    if (states.at(-1) !== String(s.value)) states.push(String(s.value));
  });

  actor.send({ type: 'cmd.start', role: 'primary', reason: 'no leader', at: (clock += 1000) });
  await waitFor(actor, (s) => s.value === 'running', { timeout: 5000 });
  actor.send({ type: 'pg.died', reason: 'postmaster is gone', at: (clock += 1000) });
  const afterCrash = String(actor.getSnapshot().value);
  gate = new Promise((r) => (release = r));
  actor.send({ type: 'cmd.start', role: 'primary', reason: 'starting after crash', at: (clock += 1000) });
  await new Promise((r) => setTimeout(r, 20));
  const held = String(actor.getSnapshot().value);
  release();
  await waitFor(actor, (s) => s.value === 'running', { timeout: 5000 });
  actor.stop();

  const replayed = replayMachine(databaseMachine, 'database', journal.recent(1000).reverse());
  const chart = await renderChart(databaseMachine, 'mermaid');
  return {
    states,
    calls,
    afterCrash,
    held,
    numbers: { crashed: databaseStateNumber('crashed'), starting: databaseStateNumber('starting'), count: DATABASE_STATES.length },
    replayed: replayed ? String(replayed.value) : null,
    chartStartsWith: chart.split('\n')[0],
  };
}
