import { describe, expect, it } from 'vitest';
import { mergeConfig } from '../../src/http/config-routes.ts';
import { appFor, clusterView, FakeCommands, primaryLeader, send } from './fixtures.ts';

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
      config: { value: { ttl: 30, loop_wait: 10, pause: true, database: { parameters: { max_connections: 100, work_mem: '4MB' } } }, revision: '41' },
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
  it('replaces the document unconditionally and answers the stored document', async () => {
    const { app, commands } = appFor(primaryLeader());
    const doc = { ttl: 40, loop_wait: 10, retry_timeout: 10, database: { use_slots: false, parameters: { hot_standby: true } } };
    const res = await send(app, 'PUT', '/config', doc);
    expect(res.status).toBe(200);
    const stored = { ...doc, database: { use_slots: false, parameters: { hot_standby: 'on' } } };
    expect(await res.json()).toEqual(stored);
    expect(commands.calls).toEqual([
      { method: 'writeConfig', args: [stored, undefined] },
      { method: 'wake', args: [] },
    ]);
  });

  it('rejects an invalid document with 400 and writes nothing', async () => {
    const { app, commands } = appFor(primaryLeader());
    const res = await send(app, 'PUT', '/config', { ttl: 20, loop_wait: 10, retry_timeout: 10 });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('ttl 20');
    expect(commands.calls).toEqual([]);
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

describe('mergeConfig', () => {
  it('deletes null keys, merges nested objects and replaces other values', () => {
    expect(
      mergeConfig(
        { a: 1, b: { c: 2, d: 3 }, e: [1], f: 'x' },
        { a: null, b: { c: null, g: 4 }, e: [2], f: { h: null, i: 1 }, j: null },
      ),
    ).toEqual({ b: { d: 3, g: 4 }, e: [2], f: { i: 1 } });
  });
});
