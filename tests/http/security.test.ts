import { describe, expect, it } from 'vitest';
import { createNodeApp } from '../../src/http/app.ts';
import { compileAllowlist } from '../../src/http/allowlist.ts';
import { openPolicy, type ApiGuardPolicy } from '../../src/http/api-guard.ts';
import { checkBasicAuth } from '../../src/http/basic-auth.ts';
import { jsonDepth } from '../../src/http/json-body.ts';
import { clusterView, FakeCommands, member, NOW, primaryLeader } from './fixtures.ts';

const CREDS = { username: 'admin', password: 's3cr3t-pw' };
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
/** The env @hono/node-server passes: the client's socket. */
const from = (address: string, extra: Record<string, unknown> = {}) => ({ incoming: { socket: { remoteAddress: address, ...extra } } });

function secured(policy: Partial<ApiGuardPolicy>, commands = new FakeCommands()) {
  const full: ApiGuardPolicy = { ...openPolicy(), ...policy };
  const app = createNodeApp({ snapshot: () => primaryLeader(), commands, now: () => NOW, guard: () => full });
  return { app, commands };
}

function patch(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'PATCH',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  };
}

describe('checkBasicAuth', () => {
  it.each([
    [undefined, 'missing'],
    ['', 'missing'],
    [basic('admin', 's3cr3t-pw'), 'ok'],
    [basic('admin', 's3cr3t-pX'), 'wrong'],
    [basic('admin', 's3cr3t-pw-longer'), 'wrong'],
    [basic('Admin', 's3cr3t-pw'), 'wrong'],
    ['Bearer abc', 'wrong'],
    ['Basic !!!', 'wrong'],
  ] as const)('%s -> %s', (header, verdict) => {
    expect(checkBasicAuth(header, CREDS)).toBe(verdict);
  });
});

describe('compileAllowlist', () => {
  it('matches addresses, CIDRs, resolved host names and IPv4-mapped IPv6 addresses', async () => {
    const list = await compileAllowlist(['10.1.2.3', '192.168.0.0/16', 'db.example', '::1'], false, async (h) =>
      h === 'db.example' ? ['172.16.0.9'] : [],
    );
    for (const ok of ['10.1.2.3', '192.168.44.1', '172.16.0.9', '::1', '::ffff:10.1.2.3']) expect(await list.allows(ok, [])).toBe(true);
    for (const no of ['10.1.2.4', '192.169.0.1', '127.0.0.1', undefined]) expect(await list.allows(no, [])).toBe(false);
  });

  it('includes the members hosts only when asked', async () => {
    const without = await compileAllowlist([], false);
    const withMembers = await compileAllowlist([], true, async (h) => (h === 'node2.example' ? ['10.9.9.2'] : []));
    expect(await without.allows('10.0.0.2', ['10.0.0.2'])).toBe(false);
    expect(await withMembers.allows('10.0.0.2', ['10.0.0.2'])).toBe(true);
    expect(await withMembers.allows('10.9.9.2', ['node2.example'])).toBe(true);
    expect(await withMembers.allows('10.9.9.3', ['node2.example'])).toBe(false);
  });

  it('refuses a malformed CIDR naming it', async () => {
    await expect(compileAllowlist(['10.0.0.0/33'], false)).rejects.toThrow('restapi.allowlist: "10.0.0.0/33" is not a CIDR');
  });
});

describe('jsonDepth', () => {
  it('counts nesting outside strings', () => {
    expect(jsonDepth('{"a":[1,{"b":"[[[{"}]}')).toBe(3);
    expect(jsonDepth('"\\"[["')).toBe(0);
  });
});

describe('node API access control', () => {
  it('answers 401 with WWW-Authenticate to an unsafe request without credentials and changes nothing', async () => {
    const { app, commands } = secured({ authentication: CREDS });
    const res = await app.request('/config', patch({ pause: true }));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="ha"');
    expect(await res.text()).toBe('no auth header received');
    expect(commands.calls).toEqual([]);
  });

  it('answers 401 to wrong credentials and changes nothing', async () => {
    const { app, commands } = secured({ authentication: CREDS });
    const res = await app.request('/switchover', {
      method: 'POST',
      body: '{"leader":"pg-1"}',
      headers: { authorization: basic('admin', 'nope') },
    });
    expect(res.status).toBe(401);
    expect(await res.text()).toBe('not authenticated');
    expect(commands.calls).toEqual([]);
  });

  it('applies an authenticated PATCH', async () => {
    const { app, commands } = secured({ authentication: CREDS });
    const res = await app.request('/config', patch({ loop_wait: 5 }, { authorization: basic('admin', 's3cr3t-pw') }));
    expect(res.status).toBe(200);
    expect(commands.names()).toContain('writeConfig');
  });

  it('keeps GETs and health checks open', async () => {
    const { app } = secured({ authentication: CREDS, allowlist: await compileAllowlist(['10.0.0.1'], false) });
    for (const path of ['/ha', '/primary', '/cluster', '/config', '/metrics']) {
      expect((await app.request(path, {}, from('203.0.113.7'))).status).toBe(200);
    }
  });

  it('answers 403 to an unsafe request from outside the allowlist, before checking credentials', async () => {
    const { app, commands } = secured({ authentication: CREDS, allowlist: await compileAllowlist(['127.0.0.1/32'], false) });
    const denied = await app.request('/config', patch({ pause: true }, { authorization: basic('admin', 's3cr3t-pw') }), from('127.0.0.2'));
    expect(denied.status).toBe(403);
    expect(await denied.text()).toBe('Access is denied');
    expect(commands.calls).toEqual([]);
    const allowed = await app.request('/config', patch({ pause: true }, { authorization: basic('admin', 's3cr3t-pw') }), from('127.0.0.1'));
    expect(allowed.status).toBe(200);
  });

  it('admits the members api_url hosts with allowlist_include_members', async () => {
    const snapshot = primaryLeader({ cluster: clusterView({ members: [member('pg-1'), member('pg-2')] }) });
    const policy: ApiGuardPolicy = { ...openPolicy(), allowlist: await compileAllowlist([], true) };
    const app = createNodeApp({ snapshot: () => snapshot, commands: new FakeCommands(), now: () => NOW, guard: () => policy });
    expect((await app.request('/config', patch({ pause: true }), from('10.0.0.2'))).status).toBe(200);
    expect((await app.request('/config', patch({ pause: true }), from('10.0.0.9'))).status).toBe(403);
  });

  it('refuses unsafe requests without a verified client certificate when verify_client is optional', async () => {
    const { app } = secured({ verifyClient: 'optional' });
    expect((await app.request('/config', patch({ pause: true }), from('127.0.0.1', { authorized: false }))).status).toBe(403);
    const cert = { authorized: true, getPeerCertificate: () => ({ subject: { CN: 'client' } }) };
    expect((await app.request('/config', patch({ pause: true }), from('127.0.0.1', cert))).status).toBe(200);
  });

  it('answers 413 to a body over the limit before any work', async () => {
    const { app, commands } = secured({ maxBodyBytes: 1024 });
    const res = await app.request('/config', patch({ pad: 'x'.repeat(2000) }));
    expect(res.status).toBe(413);
    expect(commands.calls).toEqual([]);
  });

  it('answers 400, not 500, to JSON nested 10,000 levels deep', async () => {
    const { app, commands } = secured({});
    const deep = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
    const res = await app.request('/config', patch(deep));
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('request body nested deeper than 64 levels');
    expect(commands.calls).toEqual([]);
  });

  it('answers 503 beyond the bound of unsafe requests in flight', async () => {
    const commands = new FakeCommands();
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const realRead = commands.readCluster.bind(commands);
    commands.readCluster = async () => {
      await gate;
      return realRead();
    };
    const { app } = secured({ maxUnsafeRequests: 1 }, commands);
    const first = app.request('/config', patch({ loop_wait: 5 }));
    await new Promise((r) => setTimeout(r, 20));
    const second = await app.request('/config', patch({ loop_wait: 5 }));
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).toBe('1');
    release();
    expect((await first).status).toBe(200);
    expect((await app.request('/config', patch({ loop_wait: 5 }))).status).toBe(200);
  });

  it('adds the extra headers to every answer, refusals included', async () => {
    const { app } = secured({ authentication: CREDS, extraHeaders: { 'X-Frame-Options': 'DENY' } });
    expect((await app.request('/ha')).headers.get('x-frame-options')).toBe('DENY');
    expect((await app.request('/nope')).headers.get('x-frame-options')).toBe('DENY');
    expect((await app.request('/config', patch({ a: 1 }))).headers.get('x-frame-options')).toBe('DENY');
  });

  it('says in the status document whether authentication is configured', async () => {
    const authOf = async (p: Partial<ApiGuardPolicy>) =>
      ((await (await secured(p).app.request('/ha')).json()) as { authentication?: string }).authentication;
    expect(await authOf({})).toBe('none');
    expect(await authOf({ authentication: CREDS })).toBe('basic');
  });
});
