/**
 * Sample machines for the chart exporter tests. Together they cover: nested compound states, a
 * parallel state, named and not()/and() guards, inline guards, `always`, `after` with a named and
 * a numeric delay, invoke with onDone/onError, final states, a state's own onDone, self and
 * re-entering transitions, targetless transitions, root-level events, history, tags, descriptions.
 */
import { and, assign, fromPromise, not, setup } from 'xstate';

export const lifecycle = setup({
  types: {} as {
    context: { attempts: number };
    events:
      | { type: 'pg.crashed' }
      | { type: 'pg.started' }
      | { type: 'lock.acquired' }
      | { type: 'lock.lost' }
      | { type: 'tick' }
      | { type: 'shutdown' }
      | { type: 'retry' };
  },
  guards: {
    hasLock: () => true,
    canRetry: ({ context }) => context.attempts < 3,
    isHealthy: () => true,
  },
  delays: { loopWait: 10_000 },
  actions: { logCrash: () => {}, notify: () => {} },
  actors: { startPostgres: fromPromise(async () => 'ok'), promote: fromPromise(async () => 'ok') },
}).createMachine({
  id: 'lifecycle',
  initial: 'starting',
  context: { attempts: 0 },
  on: { shutdown: '.stopped' },
  states: {
    starting: {
      description: 'pg_ctl start',
      tags: ['busy'],
      invoke: { id: 'start-pg', src: 'startPostgres', onDone: 'running', onError: 'crashed' },
    },
    running: {
      initial: 'replica',
      on: {
        'pg.crashed': { target: 'crashed', actions: 'logCrash' },
        tick: { actions: assign({ attempts: 0 }) },
      },
      states: {
        replica: {
          on: {
            'lock.acquired': [
              { target: 'promoting', guard: 'hasLock' },
              { target: 'replica', reenter: true, guard: not('hasLock') },
            ],
          },
          after: { loopWait: { target: 'replica', reenter: true } },
        },
        promoting: {
          invoke: { id: 'promote', src: 'promote', onDone: 'primary', onError: '#lifecycle.crashed' },
        },
        primary: {
          on: { 'lock.lost': { target: 'demoted', guard: and(['isHealthy', not('hasLock')]) } },
        },
        demoted: { type: 'final' },
      },
      onDone: 'starting',
    },
    crashed: {
      always: [{ target: 'starting', guard: 'canRetry' }, { target: 'stopped' }],
      after: { 5000: 'starting' },
      on: { retry: { target: 'starting', guard: ({ context }) => context.attempts < 10 } },
    },
    stopped: { type: 'final' },
  },
});

export const monitor = setup({
  types: {} as {
    events:
      | { type: 'lag.high' }
      | { type: 'lag.ok' }
      | { type: 'conn.lost' }
      | { type: 'conn.ok' }
      | { type: 'pause' }
      | { type: 'resume' };
  },
  guards: { paused: () => false },
}).createMachine({
  id: 'monitor-x',
  type: 'parallel',
  on: { pause: { actions: () => {} } },
  states: {
    lag: {
      initial: 'ok',
      states: {
        ok: { on: { 'lag.high': { target: 'high', guard: not('paused') } } },
        high: { on: { 'lag.ok': 'ok' } },
        hist: { type: 'history', history: 'deep' },
      },
    },
    connection: {
      initial: 'up',
      states: {
        up: { on: { 'conn.lost': 'down' } },
        down: { on: { 'conn.ok': 'up', resume: '#monitor-x.lag.hist' } },
      },
    },
  },
});

export const SAMPLE_MACHINES = { lifecycle, monitor } as const;
