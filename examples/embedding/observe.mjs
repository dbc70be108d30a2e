// @ts-check
/**
 * The observe routes around embedded machines: serves /ui, /machines and /events for the three
 * machines of `@ha/machines` driven by fake effects (no PostgreSQL, no etcd), moving them every
 * `--every` ms. The routes are the agent's own (`ha/observe`, the `ha` package's build).
 *
 * Plain JavaScript run by plain Node.js, importing both packages by name (in the repository: the
 * workspace link and the root package itself, after `npm run build`, which `npm ci` runs):
 *
 *   npm run build && node examples/embedding/observe.mjs [--port 8008] [--every 1000]
 *
 * Prints `listening on <url>` once ready; stops on SIGINT/SIGTERM.
 */
import { serve } from '@hono/node-server';
import { fromPromise } from 'xstate';
import { Journal, databaseMachine, restartMachine, startJournaledActor, switchoverMachine } from '@ha/machines';
import { createObserveRoutes } from 'ha/observe';

/**
 * A numeric `--name <value>` argument.
 * @param {string} name
 * @param {number} fallback
 * @returns {number}
 */
function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(v) ? v : fallback;
}
const port = arg('port', 8008);
const everyMs = arg('every', 1000);

/**
 * A fake effect that takes a little time, like a real one.
 * @returns {import('xstate').PromiseActorLogic<unknown, any>}
 */
const effect = () => fromPromise(() => new Promise((r) => setTimeout(r, Math.min(300, everyMs / 3))));
const database = databaseMachine.provide({
  actors: {
    initdb: effect(),
    customBootstrap: effect(),
    clone: effect(),
    start: effect(),
    stop: effect(),
    restart: effect(),
    promote: effect(),
  },
});

const journal = new Journal();
const term = () => ({ timeline: 1, leader: 'example' });
const db = startJournaledActor(database, { name: 'database', input: { at: Date.now() }, journal, term });
const switchover = startJournaledActor(switchoverMachine, { name: 'switchover', input: { loopWaitMs: 10_000 }, journal });
const restart = startJournaledActor(restartMachine, { name: 'restart', input: { loopWaitMs: 10_000 }, journal });

/**
 * One machine as the observe routes show it.
 * @param {string} name
 * @param {import('ha/observe').ObservedMachine['machine']} machine
 * @param {import('xstate').AnyActorRef} actor
 * @returns {import('ha/observe').ObservedMachine}
 */
const observed = (name, machine, actor) => ({ name, machine, snapshot: () => actor.getSnapshot() });
const machines = [
  observed('database', databaseMachine, db),
  observed('switchover', switchoverMachine, switchover),
  observed('restart', restartMachine, restart),
];
const cluster = () => ({
  scope: 'example',
  members: [
    { name: 'example', role: 'leader', state: String(db.getSnapshot().value), timeline: 1, host: '127.0.0.1', port: 5432 },
    { name: 'example-2', role: 'replica', state: 'streaming', timeline: 1, host: '127.0.0.1', port: 5433, lag: 0 },
  ],
});

/** One step of a scripted loop through the three machines. */
/** @type {(() => void)[]} */
const script = [
  () => db.send({ type: 'cmd.bootstrap', reason: 'no leader, bootstrapping', at: Date.now() }),
  () =>
    switchover.send({
      type: 'switchover.requested',
      leader: 'example',
      candidate: 'example-2',
      atMs: Date.now() + everyMs,
      now: Date.now(),
    }),
  () => switchover.send({ type: 'clock.tick', now: Date.now() + everyMs }),
  () => switchover.send({ type: 'switchover.succeeded', newLeader: 'example-2', now: Date.now() }),
  () => db.send({ type: 'cmd.demote', mode: 'fast', reason: 'switchover to example-2', at: Date.now() }),
  () => restart.send({ type: 'restart.scheduled', request: { atMs: Date.now() + everyMs }, now: Date.now() }),
  () => restart.send({ type: 'clock.tick', now: Date.now() + everyMs }),
  () => db.send({ type: 'cmd.restart', reason: 'scheduled restart', at: Date.now() }),
  () => restart.send({ type: 'restart.succeeded', now: Date.now() }),
  () => db.send({ type: 'pg.died', reason: 'postmaster is gone', at: Date.now() }),
  () => db.send({ type: 'cmd.stop', mode: 'fast', reason: 'stopping after crash', at: Date.now() }),
  () => {
    switchover.send({ type: 'switchover.reset', now: Date.now() });
    restart.send({ type: 'restart.reset', now: Date.now() });
  },
];
let step = 0;
const timer = setInterval(() => script[step++ % script.length]?.(), everyMs);

const app = createObserveRoutes({ journal, machines: () => machines, cluster });
const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => {
  console.log(`listening on http://127.0.0.1:${info.port}/ui`);
});

function shutdown() {
  clearInterval(timer);
  server.close();
  for (const a of [db, switchover, restart]) a.stop();
  // Open SSE connections would keep the process alive.
  setTimeout(() => process.exit(0), 200).unref();
}
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
