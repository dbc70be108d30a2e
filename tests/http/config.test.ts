import { describe, expect, it } from 'vitest';
import { mergeConfig } from '../../src/http/config-routes.ts';
import { appFor, clusterView, FakeCommands, primaryLeader, send, SETTINGS } from './fixtures.ts';

describe('GET /config', () => {
  it('answers the stored document of the cached view', async () => {
    const { app } = appFor(primaryLeader());
    const res = await app.request('/config');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ ttl: 30, loop_wait: 10, retry_timeout: 10 });
  });

  it('answers 503 with a message when the config key is missing', async () => {
    const { config: _c, ...cluster } = clusterView();
    const { app } = appFor(primaryLeader({ cluster }));
    const res = await app.request('/config');
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('config is not available in the DCS');
  });
});

describe('PATCH /config', () => {
  it('merges, writes with compare-and-set on the revision, wakes the loop and answers the merged document', async () => {
    const commands = new FakeCommands();
    commands.cluster = clusterView({
      config: {
        value: { ttl: 30, loop_wait: 10, pause: true, database: { parameters: { max_connections: 100, work_mem: '4MB' } } },
        revision: '41',
      },
    });
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PATCH', '/config', { pause: null, database: { parameters: { work_mem: '8MB', shared_buffers: '1GB' } } });
    expect(res.status).toBe(200);
    const merged = { ttl: 30, loop_wait: 10, database: { parameters: { max_connections: 100, work_mem: '8MB', shared_buffers: '1GB' } } };
    expect(await res.json()).toEqual(merged);
    expect(commands.calls).toEqual([
      { method: 'readCluster', args: [] },
      { method: 'writeConfig', args: [merged, '41'] },
      { method: 'wake', args: [] },
    ]);
  });

  it('answers 409 when the compare-and-set loses', async () => {
    const commands = new FakeCommands();
    commands.writeConfigResult = false;
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PATCH', '/config', { loop_wait: 5 });
    expect(res.status).toBe(409);
    expect(await res.text()).toBe('config modified concurrently');
    expect(commands.names()).not.toContain('wake');
  });

  it('answers 200 without writing when nothing changes', async () => {
    const { app, commands } = appFor(primaryLeader());
    const res = await send(app, 'PATCH', '/config', { ttl: 30 });
    expect(res.status).toBe(200);
    expect(commands.names()).toEqual(['readCluster']);
  });

  it('rejects a merged document breaking loop_wait + 2*retry_timeout <= ttl, naming the numbers', async () => {
    const { app, commands } = appFor(primaryLeader());
    const res = await send(app, 'PATCH', '/config', { retry_timeout: 15 });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain('loop_wait 10');
    expect(text).toContain('retry_timeout 15');
    expect(text).toContain('ttl 30');
    expect(commands.names()).toEqual(['readCluster']);
  });

  it.each([
    [{ ttl: 'thirty' }, 'ttl'],
    [{ pause: 'yes' }, 'pause'],
    [{ synchronous_mode: 'sometimes' }, 'synchronous_mode'],
    [{ database: { use_db_rewind: 1 } }, 'database.use_db_rewind'],
    [{ database: { remove_data_directory_on_rewind_failure: 'yes' } }, 'database.remove_data_directory_on_rewind_failure'],
  ])('rejects wrong types (%j) with a 400 naming %s', async (patch, field) => {
    const { app, commands } = appFor(primaryLeader());
    const res = await send(app, 'PATCH', '/config', patch);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(field);
    expect(commands.names()).not.toContain('writeConfig');
  });

  it.each([
    ['{"ttl": ', 'malformed JSON: '],
    ['', 'request body must be a non-empty JSON object'],
    ['{}', 'request body must be a non-empty JSON object'],
    ['[1,2]', 'request body must be a JSON object'],
    ['"pause"', 'request body must be a JSON object'],
  ])('rejects the body %j with 400', async (body, text) => {
    const { app, commands } = appFor(primaryLeader());
    const res = await app.request('/config', { method: 'PATCH', body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toContain(text);
    expect(commands.calls).toEqual([]);
  });

  it('answers 503 when the DCS cannot be read or the config key is missing', async () => {
    const commands = new FakeCommands();
    commands.cluster = new Error('etcd did not answer within 10000 ms');
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PATCH', '/config', { loop_wait: 5 });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('DCS is not reachable: etcd did not answer within 10000 ms');

    const { config: _c, ...noConfig } = clusterView();
    commands.cluster = noConfig;
    const missing = await send(app, 'PATCH', '/config', { loop_wait: 5 });
    expect(missing.status).toBe(503);
    expect(await missing.text()).toBe('config is not available in the DCS');
  });
});

describe('PUT /config', () => {
  it('replaces the document with compare-and-set on the revision read and answers the stored document', async () => {
    const { app, commands } = appFor(primaryLeader());
    const doc = { ttl: 40, loop_wait: 10, retry_timeout: 10, database: { use_slots: false, parameters: { hot_standby: true } } };
    const res = await send(app, 'PUT', '/config', doc);
    expect(res.status).toBe(200);
    const stored = { ...doc, database: { use_slots: false, parameters: { hot_standby: 'on' } } };
    expect(await res.json()).toEqual(stored);
    expect(res.headers.get('x-config-defaulted')).toBeNull();
    expect(commands.calls).toEqual([
      { method: 'readCluster', args: [] },
      { method: 'writeConfig', args: [stored, '11'] },
      { method: 'wake', args: [] },
    ]);
  });

  it('answers 409 when the document changed since it was read; creates the key when it is missing', async () => {
    const commands = new FakeCommands();
    commands.writeConfigResult = false;
    const { app } = appFor(primaryLeader(), commands);
    const lost = await send(app, 'PUT', '/config', { ttl: 30 });
    expect(lost.status).toBe(409);
    expect(await lost.text()).toBe('config modified concurrently');

    const { config: _c, ...noConfig } = clusterView();
    const fresh = new FakeCommands();
    fresh.cluster = noConfig;
    const created = await send(appFor(primaryLeader(), fresh).app, 'PUT', '/config', { ttl: 30 });
    expect(created.status).toBe(200);
    expect(fresh.calls).toContainEqual({ method: 'writeConfig', args: [{ ttl: 30 }, '0'] });
  });

  it('rejects an invalid document with 400 and writes nothing', async () => {
    const { app, commands } = appFor(primaryLeader());
    const res = await send(app, 'PUT', '/config', { ttl: 20, loop_wait: 10, retry_timeout: 10 });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('ttl 20');
    expect(commands.names()).toEqual(['readCluster']);
  });

  it('answers 503 when the write fails', async () => {
    const commands = new FakeCommands();
    commands.writeConfigResult = new Error('etcd unavailable');
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PUT', '/config', { ttl: 30 });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('failed to write config into DCS: etcd unavailable');
  });
});

describe('PATCH/PUT /config: database.parameters checked against the PostgreSQL settings catalogue', () => {
  const withParams = (parameters: Record<string, unknown>) =>
    clusterView({ config: { value: { ttl: 30, loop_wait: 10, retry_timeout: 10, database: { parameters } }, revision: '41' } });

  it('PATCH: refuses an unknown name with 400 naming the field, and writes nothing', async () => {
    const { app, commands } = appFor(primaryLeader(), new FakeCommands(), undefined, SETTINGS);
    const res = await send(app, 'PATCH', '/config', { database: { parameters: { no_such_param: '1' } } });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('invalid configuration: database.parameters.no_such_param: unknown PostgreSQL parameter');
    expect(commands.names()).toEqual(['readCluster']);
  });

  it.each([
    [{ max_connections: 'lots' }, 'database.parameters.max_connections: invalid value "lots" for integer parameter max_connections'],
    [{ max_connections: 300000000 }, 'database.parameters.max_connections: 300000000 is outside the range 1..262143'],
    [{ shared_buffers: '64kB' }, 'database.parameters.shared_buffers: 64kB = 8 × 8kB is outside the range 16..1073741823 × 8kB'],
    [
      { work_mem: '4mb' },
      'database.parameters.work_mem: invalid value "4mb" for integer parameter work_mem (valid units: B, kB, MB, GB, TB)',
    ],
    [{ fsync: 'maybe' }, 'database.parameters.fsync: invalid value "maybe" for boolean parameter fsync'],
    [
      { wal_level: 'full' },
      'database.parameters.wal_level: invalid value "full" for parameter wal_level (available values: minimal, replica, logical)',
    ],
  ])('PATCH: refuses the bad value %j with 400 saying why', async (parameters, text) => {
    const { app, commands } = appFor(primaryLeader(), new FakeCommands(), undefined, SETTINGS);
    const res = await send(app, 'PATCH', '/config', { database: { parameters } });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(text);
    expect(commands.names()).not.toContain('writeConfig');
  });

  it('PATCH: lists every bad parameter', async () => {
    const { app } = appFor(primaryLeader(), new FakeCommands(), undefined, SETTINGS);
    const res = await send(app, 'PATCH', '/config', { database: { parameters: { max_connections: 'lots', work_mem: '8MB', nope: 1 } } });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(
      'invalid configuration: database.parameters.max_connections: invalid value "lots" for integer parameter max_connections; database.parameters.nope: unknown PostgreSQL parameter',
    );
  });

  it('PATCH: accepts good values, custom names and booleans, and writes the merged document', async () => {
    const commands = new FakeCommands();
    commands.cluster = withParams({ max_connections: 100 });
    const { app } = appFor(primaryLeader(), commands, undefined, SETTINGS);
    const parameters = {
      work_mem: '8MB',
      shared_buffers: '1GB',
      wal_level: 'LOGICAL',
      fsync: true,
      search_path: '"$user", public',
      'pg_stat_statements.max': 'x',
      Max_Connections: '0x100',
    };
    const res = await send(app, 'PATCH', '/config', { database: { parameters } });
    expect(res.status).toBe(200);
    const merged = {
      ttl: 30,
      loop_wait: 10,
      retry_timeout: 10,
      database: { parameters: { max_connections: 100, ...parameters, fsync: 'on' } },
    };
    expect(await res.json()).toEqual(merged);
    expect(commands.calls).toContainEqual({ method: 'writeConfig', args: [merged, '41'] });
  });

  it('PATCH: checks the merged document, so a bad value already stored is named until it is fixed or deleted', async () => {
    const commands = new FakeCommands();
    commands.cluster = withParams({ max_connections: 'lots', work_mem: '4MB' });
    const { app } = appFor(primaryLeader(), commands, undefined, SETTINGS);
    const unrelated = await send(app, 'PATCH', '/config', { loop_wait: 5 });
    expect(unrelated.status).toBe(400);
    expect(await unrelated.text()).toContain('database.parameters.max_connections: invalid value "lots"');
    const fixed = await send(app, 'PATCH', '/config', { database: { parameters: { max_connections: null } } });
    expect(fixed.status).toBe(200);
    expect(await fixed.json()).toEqual({ ttl: 30, loop_wait: 10, retry_timeout: 10, database: { parameters: { work_mem: '4MB' } } });
  });

  it('PUT: refuses an unknown name or a bad value with 400 and writes nothing; accepts good ones', async () => {
    const { app, commands } = appFor(primaryLeader(), new FakeCommands(), undefined, SETTINGS);
    const bad = await send(app, 'PUT', '/config', { ttl: 30, database: { parameters: { no_such_param: '1', max_connections: 'lots' } } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe(
      'invalid configuration: database.parameters.no_such_param: unknown PostgreSQL parameter; database.parameters.max_connections: invalid value "lots" for integer parameter max_connections',
    );
    expect(commands.names()).toEqual(['readCluster']);

    const good = await send(app, 'PUT', '/config', { ttl: 30, database: { parameters: { max_connections: '200', hot_standby: true } } });
    expect(good.status).toBe(200);
    expect(await good.json()).toEqual({ ttl: 30, database: { parameters: { max_connections: '200', hot_standby: 'on' } } });
    expect(commands.names()).toEqual(['readCluster', 'readCluster', 'writeConfig', 'wake']);
  });

  it('does not check parameters when no catalogue could be loaded', async () => {
    const { app } = appFor(primaryLeader());
    const res = await send(app, 'PATCH', '/config', { database: { parameters: { no_such_param: '1', max_connections: 'lots' } } });
    expect(res.status).toBe(200);
  });
});

describe('mergeConfig', () => {
  it('deletes null keys, merges nested objects and replaces other values', () => {
    expect(
      mergeConfig({ a: 1, b: { c: 2, d: 3 }, e: [1], f: 'x' }, { a: null, b: { c: null, g: 4 }, e: [2], f: { h: null, i: 1 }, j: null }),
    ).toEqual({ b: { d: 3, g: 4 }, e: [2], f: { i: 1 } });
  });
});
