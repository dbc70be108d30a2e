// @ts-check
/**
 * Embedding the HA machines: drives the database lifecycle, scheduled switchover and scheduled
 * restart machines of `@ha/machines` with fake effects and a fake clock (no PostgreSQL, no
 * etcd), and prints every transition as `machine: from -> to (event) reason`.
 *
 * Plain JavaScript run by plain Node.js: it imports the package by name, as any project that
 * installed it would (here the repository's workspace link to packages/machines, whose dist/ is
 * built by `npm run build`, which `npm ci` runs):
 *
 *   npm run build -w @ha/machines && node examples/embedding/run.mjs
 *
 * Exits 0 when every machine ended where the script expects, 1 otherwise.
 */
import { fromPromise, waitFor } from 'xstate';
import { BUSY_STATES, Journal, databaseMachine, replayMachine, restartMachine, startJournaledActor, switchoverMachine } from '@ha/machines';

/** The example's own clock: time only moves when the script says so. */
let clockMs = Date.parse('2026-05-01T10:00:00Z');
const now = () => clockMs;
/** @param {number} ms */
const advance = (ms) => (clockMs += ms);

/**
 * A fake effect: resolves (or rejects) on a later turn of the event loop, as real I/O would.
 * @template I
 * @param {string} name
 * @param {(input: I) => boolean} [fail]
 * @returns {import('xstate').PromiseActorLogic<unknown, I>}
 */
function fake(name, fail = () => false) {
  return fromPromise(async ({ input }) => {
    await new Promise((r) => setImmediate(r));
    if (fail(input)) throw new Error(`${name} failed (fake)`);
    return undefined;
  });
}

let startAttempts = 0;
const database = databaseMachine.provide({
  actors: {
    initdb: fake('initdb'),
    customBootstrap: fake('customBootstrap'),
    clone: fake('clone'),
    // The first start as a replica fails, to show a failed effect becoming a state.
    start: fake('start', (/** @type {import('@ha/machines').StartInput} */ i) => i.role === 'replica' && ++startAttempts === 1),
    stop: fake('stop'),
    restart: fake('restart'),
    promote: fake('promote'),
  },
});

const journal = new Journal({ now });
journal.subscribe((e) => {
  if (e.kind === 'transition') console.log(`${e.machine}: ${e.from} -> ${e.to} (${e.event})${e.reason ? ` ${e.reason}` : ''}`);
});

/** @type {Set<string>} */
const busy = new Set(BUSY_STATES);
const db = startJournaledActor(database, {
  name: 'database',
  input: { at: now() },
  journal,
  term: () => ({ timeline: 1, leader: 'example' }),
});
/**
 * Sends a command and waits until the effect it started has finished.
 * @param {import('@ha/machines').DatabaseEvent} event
 * @returns {Promise<string>} the state it settled in
 */
async function command(event) {
  db.send(event);
  const s = await waitFor(db, (snap) => !busy.has(String(snap.value)), { timeout: 5000 });
  return String(s.value);
}

/** @type {Record<string, string>} */
const results = {};
results.bootstrap = await command({ type: 'cmd.bootstrap', reason: 'no leader, bootstrapping', at: advance(1000) });
results.restart = await command({ type: 'cmd.restart', reason: 'restart requested', at: advance(1000) });
results.demote = await command({ type: 'cmd.demote', mode: 'fast', reason: 'lost the leader lock', at: advance(1000) });
// A demoted database stays stopped: the caller checks its WAL against the new leader, then starts it.
results.startAfterDemote = await command({ type: 'cmd.start', role: 'replica', reason: 'starting as a secondary', at: advance(1000) });
results.retryStart = await command({ type: 'cmd.start', role: 'replica', reason: 'retrying start as replica', at: advance(1000) });
db.send({ type: 'pg.died', reason: 'postmaster is gone', at: advance(1000) });
results.afterCrash = await command({ type: 'cmd.start', role: 'replica', reason: 'starting after crash', at: advance(1000) });

// Scheduled switchover: requested for 30 s ahead; the caller's ticks decide when it runs.
const loopWaitMs = 10_000;
const switchover = startJournaledActor(switchoverMachine, { name: 'switchover', input: { loopWaitMs }, journal });
switchover.send({ type: 'switchover.requested', leader: 'node1', candidate: 'node2', atMs: now() + 30_000, now: now() });
switchover.send({ type: 'clock.tick', now: advance(10_000) }); // too early: stays scheduled
switchover.send({ type: 'clock.tick', now: advance(20_000) }); // due: executing
results.switchoverAt = String(switchover.getSnapshot().value);
switchover.send({ type: 'switchover.succeeded', newLeader: 'node2', now: advance(2000) });
switchover.send({ type: 'switchover.reset', now: now() });

// Scheduled restart: same shape; the executor reports the outcome.
const restart = startJournaledActor(restartMachine, { name: 'restart', input: { loopWaitMs }, journal });
restart.send({ type: 'restart.scheduled', request: { atMs: now() + 60_000, restartPending: true }, now: now() });
restart.send({ type: 'clock.tick', now: advance(60_000) });
results.restartAt = String(restart.getSnapshot().value);
restart.send({ type: 'restart.succeeded', now: advance(3000) });

// The journal is enough to rebuild every machine's state.
const entries = journal.recent(10_000).reverse();
const replayed = {
  database: String(replayMachine(databaseMachine, 'database', entries)?.value),
  switchover: String(replayMachine(switchoverMachine, 'switchover', entries)?.value),
  restart: String(replayMachine(restartMachine, 'restart', entries)?.value),
};
console.log(`replayed: database=${replayed.database} switchover=${replayed.switchover} restart=${replayed.restart}`);

db.stop();
switchover.stop();
restart.stop();

/** @type {Record<string, string>} */
const expected = {
  bootstrap: 'running',
  restart: 'running',
  demote: 'stopped',
  startAfterDemote: 'start_failed',
  retryStart: 'running',
  afterCrash: 'running',
  switchoverAt: 'executing',
  restartAt: 'executing',
};
const wrong = Object.entries(expected).filter(([k, v]) => results[k] !== v);
const replayOk = replayed.database === 'running' && replayed.switchover === 'idle' && replayed.restart === 'done';
if (wrong.length > 0 || !replayOk) {
  console.error(`unexpected: ${JSON.stringify({ results, replayed })}`);
  process.exit(1);
}
