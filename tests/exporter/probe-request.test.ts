/**
 * Deciding a /probe request before anything connects: the allowlist, the probe configuration
 * and resolveProbe's table of answers (docs/exporter.md "Multi-target: /probe").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allowed, parseAllowEntry } from '../../src/exporter/allowlist.ts';
import { buildProbeConfig, DEFAULT_PROBE_LIMITS, parseDsn, type ProbeConfig } from '../../src/exporter/probe-config.ts';
import { resolveProbe, type ProbeParams } from '../../src/exporter/probe-request.ts';

const dir = mkdtempSync(join(tmpdir(), 'probe-cfg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('allowlist', () => {
  const list = ['db1.example.com', '*.pg.example.com:5432', '10.0.0.0/24', '192.168.1.7:6432', '[fd00::1]:5432', 'fd01::/16'].map(
    parseAllowEntry,
  );
  it.each([
    ['db1.example.com', 5432, true],
    ['DB1.Example.com', 9999, true],
    ['db2.example.com', 5432, false],
    ['a.pg.example.com', 5432, true],
    ['a.b.pg.example.com', 5432, true],
    ['pg.example.com', 5432, false],
    ['a.pg.example.com', 5433, false],
    ['xpg.example.com', 5432, false],
    ['10.0.0.200', 5432, true],
    ['10.0.1.1', 5432, false],
    ['192.168.1.7', 6432, true],
    ['192.168.1.7', 5432, false],
    ['fd00::1', 5432, true],
    ['fd00::1', 5433, false],
    ['fd01:2::9', 1, true],
    ['fd02::9', 1, false],
  ] as const)('%s:%d -> %s', (host, port, expected) => {
    expect(allowed(list, host, port)).toBe(expected);
  });

  it('does not let an address match a host name entry, nor a name match an address entry', () => {
    expect(allowed([parseAllowEntry('localhost')], '127.0.0.1', 5432)).toBe(false);
    expect(allowed([parseAllowEntry('127.0.0.1')], 'localhost', 5432)).toBe(false);
  });

  it.each(['', 'host:0', 'host:70000', '10.0.0.0/33', 'bad host', 'a:b', '[fd00::1]:x'])('rejects %j', (e) => {
    expect(() => parseAllowEntry(e)).toThrow(/allowlist entry/);
  });
});

describe('probe configuration', () => {
  it('reads auth modules (password, password_file, password_env), targets, allowlist and limits', () => {
    writeFileSync(join(dir, 'pw'), 'from-file\nignored\n');
    const cfg = buildProbeConfig(
      {
        auth_modules: {
          a: { type: 'userpass', userpass: { username: 'mon', password: 'inline' }, options: { sslmode: 'disable' } },
          b: { userpass: { username: 'mon2', password_file: 'pw' } },
          c: { userpass: { password_env: 'PW_C' } },
        },
        targets: {
          node1: { dsn: '127.0.0.1:5432/postgres', auth_module: 'a', tags: ['x'] },
          node2: { dsn: 'postgresql://viewer@db2:6432/app' },
        },
        allow_dsn: true,
        allowlist: ['10.0.0.0/8'],
        default_auth_module: 'b',
        limits: { max_targets: 5, pool_size: 1 },
      },
      join(dir, 'probe.yml'),
      { PW_C: 'from-env' },
    );
    expect(cfg.authModules.get('a')).toEqual({ name: 'a', username: 'mon', password: 'inline', options: { sslmode: 'disable' } });
    expect(cfg.authModules.get('b')?.password).toBe('from-file');
    expect(cfg.authModules.get('c')?.password).toBe('from-env');
    expect(cfg.targets.get('node1')).toEqual({ name: 'node1', url: 'postgres://127.0.0.1:5432/postgres', authModule: 'a', tags: ['x'] });
    expect(cfg.targets.get('node2')?.url).toBe('postgres://viewer@db2:6432/app');
    expect(cfg.limits).toEqual({ ...DEFAULT_PROBE_LIMITS, maxTargets: 5, poolSize: 1 });
    expect(cfg.defaultAuthModule).toBe('b');
  });

  it.each([
    [{ targets: { t: { dsn: 'postgres://u:secret@h/db' } } }, /target t: a DSN must not hold a password/],
    [{ targets: { t: { dsn: 'h/db', auth_module: 'nope' } } }, /target t: auth module nope is not defined/],
    [{ allow_dsn: true }, /allow_dsn needs an allowlist/],
    [{ allowlist: ['not a host'] }, /allowlist entry not a host/],
    [{ auth_modules: { a: { userpass: { password: 'x', password_env: 'Y' } } } }, /give one of password, password_file, password_env/],
    [{ auth_modules: { a: { userpass: { password_env: 'UNSET_FOR_SURE' } } } }, /UNSET_FOR_SURE is not set/],
    [{ auth_modules: { a: { type: 'token' } } }, /type must be userpass/],
    [{ targets: { 'has space': { dsn: 'h' } } }, /names are letters/],
    [{ targets: { a: { dsn: 'h1' }, b: { dsn: 'h2' } }, limits: { max_targets: 1 } }, /2 targets are named but limits.max_targets is 1/],
    [{ limits: { pool_size: 0 } }, /must be >= 1/],
    [{ default_auth_module: 'ghost' }, /default_auth_module ghost is not defined/],
  ] as const)('rejects %j', (data, message) => {
    expect(() => buildProbeConfig(data, '/x/probe.yml', {})).toThrow(message);
    expect(() => buildProbeConfig(data, '/x/probe.yml', {})).toThrow(/^probe config \/x\/probe.yml: /);
  });

  it('parses DSNs in both forms and refuses credentials', () => {
    expect(parseDsn('h:5433/db').toString()).toBe('postgres://h:5433/db');
    expect(parseDsn('postgresql://H/db?sslmode=require').toString()).toBe('postgres://h/db?sslmode=require');
    expect(parseDsn('[::1]:5432/db').hostname).toBe('[::1]');
    expect(() => parseDsn('postgres://a:b@h/db')).toThrow(/password/);
    expect(() => parseDsn('h/db/x')).toThrow(/database name/);
  });
});

describe('resolveProbe', () => {
  const base = (over: Record<string, unknown> = {}): ProbeConfig =>
    buildProbeConfig(
      {
        auth_modules: {
          mon: { userpass: { username: 'monitor', password: 's3cret' }, options: { sslmode: 'disable' } },
          other: { userpass: { username: 'o', password: 'p' } },
        },
        targets: {
          node1: { dsn: 'postgres://ignored@10.0.0.1:5432/postgres', auth_module: 'mon', tags: ['nightly'] },
          bare: { dsn: 'viewer@10.0.0.2/app' },
        },
        ...over,
      },
      '/x/probe.yml',
      {},
    );
  const known = new Set(['pg_settings', 'pg_statements', 'pg_statements_13']);
  const tags = new Set(['cluster', 'primary']);
  const resolve = (p: ProbeParams, cfg = base()) => resolveProbe(p, cfg, known, tags);

  it('gives a named target its auth module credentials, never in the URL', () => {
    const r = resolve({ target: 'node1' });
    expect(r).toMatchObject({
      ok: true,
      spec: { key: 'name:node1', label: 'node1', username: 'monitor', password: 's3cret', tags: ['nightly'], named: true },
    });
    if (r.ok) {
      expect(r.spec.url).toBe('postgres://10.0.0.1:5432/postgres?sslmode=disable');
      expect(r.spec.url).not.toContain('s3cret');
    }
    expect(resolve({ target: 'bare' })).toMatchObject({ ok: true, spec: { username: 'viewer', url: 'postgres://10.0.0.2/app' } });
  });

  it('normalises an allowed DSN target and labels it host:port/db', () => {
    const cfg = base({ allow_dsn: true, allowlist: ['10.1.0.0/16', 'db.example.com'], default_auth_module: 'mon' });
    const a = resolve({ target: '10.1.2.3/app' }, cfg);
    const b = resolve({ target: 'postgres://10.1.2.3:5432/app' }, cfg);
    expect(a).toMatchObject({ ok: true, spec: { label: '10.1.2.3:5432/app', username: 'monitor', password: 's3cret', named: false } });
    expect(a.ok && b.ok && a.spec.key === b.spec.key).toBe(true);
    expect(resolve({ target: 'db.example.com' }, cfg)).toMatchObject({ ok: true, spec: { label: 'db.example.com:5432/postgres' } });
    const other = resolve({ target: '10.1.2.3/app', auth_module: 'other' }, cfg);
    expect(other).toMatchObject({ ok: true, spec: { label: '10.1.2.3:5432/app;auth_module=other', username: 'o' } });
    expect(other.ok && a.ok && other.spec.key !== a.spec.key).toBe(true);
    expect(resolve({ target: '10.1.2.3/app?sslmode=require' }, cfg)).toMatchObject({
      ok: true,
      spec: { url: 'postgres://10.1.2.3:5432/app?sslmode=require' },
    });
  });

  it.each<[string, ProbeParams, Record<string, unknown>, number, string, RegExp]>([
    ['no target', {}, {}, 400, 'bad_request', /target is required/],
    ['an over-long target', { target: 'x'.repeat(600) }, {}, 400, 'bad_request', /longer than 512/],
    ['an unknown name', { target: 'node9' }, {}, 404, 'unknown_target', /unknown target "node9"/],
    ['a DSN while DSNs are not allowed', { target: '10.0.0.1:5432/postgres' }, {}, 403, 'dsn_not_allowed', /allow_dsn is false/],
    [
      'a DSN outside the allowlist',
      { target: '10.9.0.1:5432/postgres' },
      { allow_dsn: true, allowlist: ['10.1.0.0/16'] },
      403,
      'not_in_allowlist',
      /10\.9\.0\.1:5432 is not in the allowlist/,
    ],
    [
      'an allowed host on another port',
      { target: '10.1.0.1:6000/postgres' },
      { allow_dsn: true, allowlist: ['10.1.0.0/16:5432'] },
      403,
      'not_in_allowlist',
      /10\.1\.0\.1:6000/,
    ],
    [
      'a bare word that is neither',
      { target: 'typo' },
      { allow_dsn: true, allowlist: ['10.1.0.0/16'] },
      404,
      'unknown_target',
      /unknown target "typo"/,
    ],
    [
      'a password in the DSN',
      { target: 'postgres://u:pw@10.1.0.1/db' },
      { allow_dsn: true, allowlist: ['10.1.0.0/16'] },
      400,
      'bad_request',
      /must not hold a password/,
    ],
    [
      'a user in the DSN',
      { target: 'postgres://u@10.1.0.1/db' },
      { allow_dsn: true, allowlist: ['10.1.0.0/16'] },
      400,
      'bad_request',
      /must not name a user/,
    ],
    [
      'a connection parameter',
      { target: '10.1.0.1/db?options=-c%20x%3Dy' },
      { allow_dsn: true, allowlist: ['10.1.0.0/16'] },
      400,
      'bad_request',
      /only carry sslmode, not "options"/,
    ],
    ['an unknown auth module', { target: 'bare', auth_module: 'nope' }, {}, 400, 'unknown_auth_module', /auth_module "nope" not found/],
    [
      'another auth module for a named target',
      { target: 'node1', auth_module: 'other' },
      {},
      400,
      'bad_request',
      /uses the auth module of its configuration/,
    ],
    [
      'an unknown collector',
      { target: 'node1', collectors: 'pg_settings,pg_nope' },
      {},
      400,
      'unknown_collector',
      /unknown collector "pg_nope"/,
    ],
    ['an unknown tag', { target: 'node1', tags: 'slow' }, {}, 400, 'unknown_collector', /no loaded collector has the tag "slow"/],
    [
      'too many collectors',
      { target: 'node1', collectors: Array.from({ length: 65 }, () => 'pg_settings').join(',') },
      {},
      400,
      'bad_request',
      /at most 64/,
    ],
  ])('refuses %s', (_what, params, over, status, reason, message) => {
    const r = resolve(params, base(over));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.status).toBe(status);
      expect(r.reason).toBe(reason);
      expect(r.message).toMatch(message);
      expect(r.message).not.toContain('s3cret');
    }
  });

  it('keeps the selection of collectors= and tags=', () => {
    expect(resolve({ target: 'node1', collectors: 'pg_statements, pg_settings', tags: 'primary' })).toMatchObject({
      ok: true,
      select: { collectors: ['pg_statements', 'pg_settings'], tags: ['primary'] },
    });
  });
});
