import { describe, expect, it } from 'vitest';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { appFor, clusterView, config, FakeCommands, primaryLeader, send, streamingReplica } from './fixtures.ts';

async function call(
  method: string,
  path: string,
  body?: unknown,
  snapshot: NodeSnapshot = streamingReplica(),
  commands = new FakeCommands(),
) {
  const { app } = appFor(snapshot, commands);
  const res = await send(app, method, path, body);
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type'), commands };
}

const pending = () => {
  const s = streamingReplica();
  return streamingReplica({ pg: { ...s.pg!, pendingRestart: { max_connections: { old_value: '100', new_value: '200' } } } });
};

describe('POST /restart', () => {
  it('restarts now when no condition is given (empty body)', async () => {
    const r = await call('POST', '/restart');
    expect(r.status).toBe(200);
    expect(r.text).toBe('restarted successfully');
    expect(r.commands.calls).toEqual([{ method: 'restart', args: [undefined] }]);
  });

  it('passes the timeout in ms and restarts when every condition holds', async () => {
    const r = await call(
      'POST',
      '/restart',
      { role: 'replica', restart_pending: true, database_version: '16.1', timeout: '90s' },
      pending(),
    );
    expect(r.status).toBe(200);
    expect(r.commands.calls).toEqual([{ method: 'restart', args: [90_000] }]);
  });

  it.each([
    ['role mismatch', { role: 'primary' }, streamingReplica()],
    ['nothing pending', { restart_pending: true }, streamingReplica()],
    ['version not newer', { database_version: '15.18' }, streamingReplica()],
  ])('answers 503 "restart conditions are not satisfied" on %s', async (_n, body, s) => {
    const r = await call('POST', '/restart', body, s);
    expect(r.status).toBe(503);
    expect(r.text).toBe('restart conditions are not satisfied');
    expect(r.commands.calls).toEqual([]);
  });

  it.each([
    [{ role: 'master' }, 400, 'database role should be either primary, standby_leader, or replica'],
    [{ database_version: '10' }, 400, 'Invalid database version format: X.Y or X.Y.Z is accepted: 10'],
    [{ timeout: -5 }, 400, 'Timeout should be a positive number of seconds'],
    [{ restart_pending: 'yes' }, 400, 'restart_pending should be true or false'],
    [{ when: 'now' }, 400, 'Unknown filter for the scheduled restart: when'],
    [{ schedule: '2026-01-15T13:00:00' }, 400, 'Timezone information is mandatory for the scheduled restart'],
    [{ schedule: '2026-01-15T11:00:00Z' }, 422, 'Cannot schedule restart in the past'],
    [{ schedule: 'soon' }, 422, 'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601'],
    ['[1]', 400, 'request body must be a JSON object'],
    ['{"role":', 400, 'malformed JSON: '],
  ])('rejects %j with %i', async (body, status, text) => {
    const r = await call('POST', '/restart', body);
    expect(r.status).toBe(status);
    expect(r.type).toBe('text/plain; charset=utf-8');
    if (body === '{"role":') expect(r.text.startsWith(text)).toBe(true);
    else expect(r.text).toBe(text);
    expect(r.commands.calls).toEqual([]);
  });

  it('schedules a restart with its conditions and answers 202', async () => {
    const r = await call('POST', '/restart', { schedule: '2026-01-15T15:00:00+01:00', role: 'replica', timeout: 30 });
    expect(r.status).toBe(202);
    expect(r.text).toBe('Restart scheduled');
    expect(r.commands.calls).toEqual([
      {
        method: 'scheduleRestart',
        args: [{ schedule: '2026-01-15T14:00:00+00:00', role: 'replica', timeout: 30, postmaster_start_time: '2026-01-15 11:00:00+00' }],
      },
    ]);
  });

  it('answers 409 when a restart is already scheduled', async () => {
    const already = streamingReplica({ scheduledRestart: { schedule: '2026-01-15T14:00:00+00:00' } });
    const r = await call('POST', '/restart', { schedule: '2026-01-15T15:00:00Z' }, already);
    expect(r.status).toBe(409);
    expect(r.text).toBe('Another restart is already scheduled');
    expect(r.commands.calls).toEqual([]);

    const commands = new FakeCommands();
    commands.scheduleRestartResult = false;
    const raced = await call('POST', '/restart', { schedule: '2026-01-15T15:00:00Z' }, streamingReplica(), commands);
    expect(raced.status).toBe(409);
    expect(raced.text).toBe('Another restart is already scheduled');
  });

  it('refuses to schedule while paused with 409, before looking at the timestamp', async () => {
    const r = await call('POST', '/restart', { schedule: 'garbage' }, streamingReplica({ config: config({ pause: true }) }));
    expect(r.status).toBe(409);
    expect(r.text).toBe("Can't schedule restart in the paused state");
  });

  it('answers 503 with the node reason when the restart does not happen, and "restart failed" when it throws', async () => {
    const commands = new FakeCommands();
    commands.restartOutcome = { ok: false, reason: 'restart already in progress' };
    const refused = await call('POST', '/restart', {}, streamingReplica(), commands);
    expect(refused.status).toBe(503);
    expect(refused.text).toBe('restart already in progress');
    commands.restartOutcome = new Error('pg_ctl exited with 1');
    const failed = await call('POST', '/restart', {}, streamingReplica(), commands);
    expect(failed.status).toBe(503);
    expect(failed.text).toBe('restart failed');
  });
});

describe('DELETE /restart', () => {
  it('answers 200 when a scheduled restart was cancelled', async () => {
    const r = await call('DELETE', '/restart');
    expect(r.status).toBe(200);
    expect(r.text).toBe('scheduled restart deleted');
    expect(r.commands.names()).toEqual(['cancelRestart']);
  });

  it('answers 404 when none is scheduled', async () => {
    const commands = new FakeCommands();
    commands.cancelRestartResult = false;
    const r = await call('DELETE', '/restart', undefined, streamingReplica(), commands);
    expect(r.status).toBe(404);
    expect(r.text).toBe('no restarts are scheduled');
  });
});

describe('POST /reload', () => {
  it('re-reads the configuration and answers 200', async () => {
    const r = await call('POST', '/reload');
    expect(r.status).toBe(200);
    expect(r.text).toBe('reloaded');
    expect(r.commands.names()).toEqual(['reload']);
  });

  it('answers 500 with the reason when the file cannot be applied', async () => {
    const commands = new FakeCommands();
    commands.reloadError = new Error('ha.yml: restapi.listen: must be host:port');
    const r = await call('POST', '/reload', undefined, streamingReplica(), commands);
    expect(r.status).toBe(500);
    expect(r.text).toBe('reload failed: ha.yml: restapi.listen: must be host:port');
  });
});

describe('POST /reinitialize', () => {
  it('starts a reinitialize on a replica (body optional)', async () => {
    const r = await call('POST', '/reinitialize');
    expect(r.status).toBe(200);
    expect(r.text).toBe('reinitialize started');
    expect(r.commands.calls).toEqual([{ method: 'reinitialize', args: [{ force: false, fromLeader: false }] }]);
  });

  it.each([
    [
      { force: true, 'from-leader': true },
      { force: true, fromLeader: true },
    ],
    [{ from_leader: true }, { force: false, fromLeader: true }],
  ])('passes the options %j', async (body, opts) => {
    const r = await call('POST', '/reinitialize', body);
    expect(r.commands.calls).toEqual([{ method: 'reinitialize', args: [opts] }]);
  });

  it('refuses on the leader', async () => {
    const r = await call('POST', '/reinitialize', {}, primaryLeader());
    expect(r.status).toBe(503);
    expect(r.text).toBe('I am the leader, can not reinitialize');
    expect(r.commands.calls).toEqual([]);
  });

  it('refuses when the cluster has no leader', async () => {
    const { leader: _l, ...cluster } = clusterView();
    const r = await call('POST', '/reinitialize', {}, streamingReplica({ cluster }));
    expect(r.status).toBe(503);
    expect(r.text).toBe('Cluster has no leader, can not reinitialize');
  });

  it.each([
    [{ force: 'yes' }, 'force must be true or false'],
    [{ fromleader: true }, 'Unknown option for reinitialize: fromleader'],
  ])('rejects %j with 400', async (body, text) => {
    const r = await call('POST', '/reinitialize', body);
    expect(r.status).toBe(400);
    expect(r.text).toBe(text);
    expect(r.commands.calls).toEqual([]);
  });

  it('answers 503 with the node reason when it does not start', async () => {
    const commands = new FakeCommands();
    commands.reinitializeOutcome = { ok: false, reason: 'reinitialize already in progress' };
    const r = await call('POST', '/reinitialize', {}, streamingReplica(), commands);
    expect(r.status).toBe(503);
    expect(r.text).toBe('reinitialize already in progress');
  });
});
