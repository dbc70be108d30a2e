import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDcsUrl, resolveTarget } from '../../src/ctl/context.ts';
import { parseWhen } from '../../src/ctl/when.ts';

describe('--dcs-url', () => {
  it('accepts http, etcd3 and bare host:port, several separated by commas', () => {
    expect(parseDcsUrl('http://127.0.0.1:2379')).toEqual(['127.0.0.1:2379']);
    expect(parseDcsUrl('etcd3://a:1, b:2/')).toEqual(['a:1', 'b:2']);
    expect(parseDcsUrl('https://h:2379')).toEqual(['https://h:2379']);
  });

  it('refuses a missing port or an empty list with a usage error', () => {
    expect(() => parseDcsUrl('http://host')).toThrow(/invalid --dcs-url "http:\/\/host"/);
    expect(() => parseDcsUrl(' , ')).toThrow(/empty/);
  });
});

describe('target resolution', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hactl-unit-'));
    await writeFile(join(dir, 'client.yml'), 'scope: alpha\nnamespace: /ns/\netcd3: { hosts: ["10.0.0.1:2379", "10.0.0.2:2379"] }\n');
    await writeFile(join(dir, 'nohosts.yml'), 'scope: alpha\n');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a client-only file gives hosts, namespace and scope; CLUSTER and --scope override the scope', async () => {
    const file = join(dir, 'client.yml');
    expect(await resolveTarget({ config: file }, undefined, {})).toEqual({
      hosts: ['10.0.0.1:2379', '10.0.0.2:2379'],
      namespace: '/ns/',
      scope: 'alpha',
      client: { tls: {} },
    });
    expect((await resolveTarget({ config: file, scope: 'beta' }, undefined, {})).scope).toBe('beta');
    expect((await resolveTarget({ config: file, scope: 'beta' }, 'gamma', {})).scope).toBe('gamma');
  });

  it('HACTL_CONFIG names the file; --dcs-url replaces its hosts', async () => {
    const t = await resolveTarget({ dcsUrl: 'http://127.0.0.1:1' }, undefined, { HACTL_CONFIG: join(dir, 'client.yml') });
    expect(t).toEqual({ hosts: ['127.0.0.1:1'], namespace: '/ns/', scope: 'alpha', client: { tls: {} } });
  });

  it('a client-only file carries its ctl credentials and etcd TLS; an unreadable certificate is a usage error naming the key', async () => {
    await writeFile(
      join(dir, 'secure.yml'),
      'scope: alpha\netcd3: { hosts: ["10.0.0.1:2379"], cacert: ' +
        JSON.stringify(join(dir, 'client.yml')) +
        ' }\nctl: { insecure: true, authentication: { username: op, password: pw } }\n',
    );
    const t = await resolveTarget({ config: join(dir, 'secure.yml') }, undefined, {});
    expect(t.hosts).toEqual(['https://10.0.0.1:2379']);
    expect(t.client).toEqual({ tls: {}, insecure: true, auth: { username: 'op', password: 'pw' } });
    await writeFile(join(dir, 'badca.yml'), 'scope: alpha\netcd3: { hosts: ["10.0.0.1:2379"], cacert: /nonexistent/ca.pem }\n');
    await expect(resolveTarget({ config: join(dir, 'badca.yml') }, undefined, {})).rejects.toMatchObject({
      exitCode: 2,
      message: 'etcd3.cacert: cannot read /nonexistent/ca.pem (ENOENT)',
    });
  });

  it("an agent's file with an error is reported, never read as a client-only file (which would drop its TLS and credentials)", async () => {
    await writeFile(
      join(dir, 'agent-bad.yml'),
      'scope: alpha\nname: n1\netcd3: { hosts: ["10.0.0.1:2379"] }\nrestapi: { listen: "127.0.0.1:8008", authentication: { username: op, password: pw } }\ndatabase: { listen: "127.0.0.1:5432", data_dir: /x, no_such_key: 1 }\n',
    );
    await expect(resolveTarget({ config: join(dir, 'agent-bad.yml') }, undefined, {})).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/no_such_key[\s\S]*as an agent's file, since it has restapi, database/),
    });
  });

  it('usage errors: no DCS, no cluster name, an unreadable or hostless file', async () => {
    await expect(resolveTarget({}, undefined, {})).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/no DCS/) });
    await expect(resolveTarget({ dcsUrl: 'h:1' }, undefined, {})).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/no cluster name/),
    });
    await expect(resolveTarget({ config: join(dir, 'missing.yml') }, undefined, {})).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/missing\.yml/),
    });
    await expect(resolveTarget({ config: join(dir, 'nohosts.yml') }, undefined, {})).rejects.toMatchObject({ exitCode: 2 });
  });
});

describe('--scheduled', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  it('now and empty mean immediately', () => {
    expect(parseWhen(undefined, now, 'switchover')).toBeUndefined();
    expect(parseWhen('now', now, 'switchover')).toBeUndefined();
    expect(parseWhen(' ', now, 'switchover')).toBeUndefined();
  });

  it('ISO 8601 with an offset is sent as UTC; without an offset it is local time', () => {
    expect(parseWhen('2030-01-01T12:00:00+02:00', now, 'switchover')).toBe('2030-01-01T10:00:00+00:00');
    const local = new Date(2030, 5, 1, 14, 30).getTime();
    expect(Date.parse(parseWhen('2030-06-01T14:30', now, 'restart')!)).toBe(local);
  });

  it('garbage is a usage error; the past is refused', () => {
    expect(() => parseWhen('tomorrow', now, 'switchover')).toThrow(expect.objectContaining({ exitCode: 2 }));
    expect(() => parseWhen('2030-02-30T10:00', now, 'switchover')).toThrow(expect.objectContaining({ exitCode: 2 }));
    expect(() => parseWhen('2029-12-31T23:00:00Z', now, 'restart')).toThrow(
      expect.objectContaining({ exitCode: 1, message: expect.stringMatching(/Cannot schedule restart in the past/) }),
    );
  });
});
