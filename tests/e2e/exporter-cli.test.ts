/**
 * The `db-exporter` CLI as a process: --dry-run, exit codes, start with the database down,
 * --web.config.file (TLS + bcrypt basic auth) and a real Prometheus scraping it with up == 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrometheus } from '../support/prometheus.ts';
import { freePort } from '../support/ports.ts';
import { startPostgres, type TestPostgres } from '../support/pg.ts';
import { stopPid, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import { DEFAULT_COLLECTORS, HAS_SHARED_CONFIG, REFERENCE_SKIP, sampleOf, SHARED_CONFIG } from './exporter-support.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
const CLI = join(repoRoot, 'src/cli/db-exporter.ts');
let pg: TestPostgres;
let tmp: string;
const children: ChildProcess[] = [];

function startCli(args: string[], env: Record<string, string> = {}): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}
function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (c) => r(c))));
}
async function httpText(url: string): Promise<{ status: number; text: string }> {
  const r = await fetch(url);
  return { status: r.status, text: await r.text() };
}
function httpsGet(url: string, ca: Buffer, auth?: string): Promise<{ status: number; text: string }> {
  return new Promise((res, rej) => {
    const req = httpsRequest(url, { ca, headers: auth ? { Authorization: `Basic ${Buffer.from(auth).toString('base64')}` } : {} }, (r) => {
      let t = '';
      r.on('data', (d) => (t += d));
      r.on('end', () => res({ status: r.statusCode ?? 0, text: t }));
    });
    req.on('error', rej);
    req.end();
  });
}

beforeAll(async () => {
  tmp = await makeTempDir('exporter-cli-');
  pg = await startPostgres();
});
afterAll(async () => {
  for (const c of children) if (c.pid) await stopPid(c.pid);
  await pg?.stop();
  if (tmp) await removeTempDir(tmp);
});

describe('db-exporter CLI', () => {
  it.skipIf(!HAS_SHARED_CONFIG)(`--dry-run prints every loaded branch and exits 0 without connecting ${REFERENCE_SKIP}`, async () => {
    const c = startCli(['--dry-run', '-c', SHARED_CONFIG, '--url', 'postgres://nobody@127.0.0.1:1/none']);
    expect(await exitOf(c)).toBe(0);
    expect(c.output()).toContain('pg_primary_only:\n');
    expect(c.output()).toContain('pgbouncer_list:\n');
  });

  it('exits 2 when no collector loads, and 2 with --fail-fast when the database is down', async () => {
    writeFileSync(join(tmp, 'broken.yml'), 'x: [');
    const c1 = startCli(['-c', join(tmp, 'broken.yml'), '--url', pg.url, '--web.listen-address', `127.0.0.1:${await freePort()}`]);
    expect(await exitOf(c1)).toBe(2);
    expect(c1.output()).toContain('broken.yml');
    const c2 = startCli([
      '-c',
      DEFAULT_COLLECTORS,
      '--url',
      `postgres://postgres@127.0.0.1:${await freePort()}/postgres`,
      '--fail-fast',
      '--web.listen-address',
      `127.0.0.1:${await freePort()}`,
    ]);
    expect(await exitOf(c2)).toBe(2);
    // The reason, not only "role down" (issue 30, item 8).
    expect(c2.output()).toMatch(/role down: .*(ECONNREFUSED|connect)/);
  });

  it('starts and serves db_up 0 while the database is down, with constant labels and namespace', async () => {
    const port = await freePort();
    const c = startCli(
      [
        '-c',
        DEFAULT_COLLECTORS,
        '--url',
        `postgres://postgres@127.0.0.1:${await freePort()}/postgres`,
        '--web.listen-address',
        `127.0.0.1:${port}`,
        '--namespace',
        'pgx',
        '--label',
        'env=test',
      ],
      {
        DB_EXPORTER_CONNECT_TIMEOUT: '300',
      },
    );
    const r = await waitFor(() => httpText(`http://127.0.0.1:${port}/metrics`).catch(() => undefined), 30_000, 'exporter to listen');
    expect(r.status).toBe(200);
    expect(sampleOf(r.text, 'pgx_up', 'env="test"')).toBe(0);
    expect(r.text).toMatch(/^pgx_exporter_build_info\{.*env="test".*\} 1$/m);
    expect((await httpText(`http://127.0.0.1:${port}/up`)).status).toBe(503);
    await stopPid(c.pid!);
  });

  it('applies --web.config.file: TLS and bcrypt basic auth on every route', async () => {
    const cert = join(tmp, 'cert.pem');
    const key = join(tmp, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const hash = bcrypt.hashSync('s3cret', 6);
    writeFileSync(
      join(tmp, 'web.yml'),
      `tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  alice: ${hash}\n`,
    );
    const port = await freePort();
    const c = startCli([
      '-c',
      DEFAULT_COLLECTORS,
      '--url',
      pg.url,
      '--web.listen-address',
      `127.0.0.1:${port}`,
      '--web.config.file',
      join(tmp, 'web.yml'),
    ]);
    const ca = readFileSync(cert);
    const base = `https://127.0.0.1:${port}`;
    await waitFor(() => httpsGet(`${base}/up`, ca).catch(() => undefined), 30_000, 'exporter to listen on TLS');
    for (const path of ['/metrics', '/up', '/primary', '/explain', '/stat']) {
      const none = await httpsGet(`${base}${path}`, ca);
      expect(none.status, path).toBe(401);
      const wrong = await httpsGet(`${base}${path}`, ca, 'alice:wrong');
      expect(wrong.status, path).toBe(401);
      expect(wrong.text).not.toContain('db_');
    }
    const good = await httpsGet(`${base}/metrics`, ca, 'alice:s3cret');
    expect(good.status).toBe(200);
    expect(sampleOf(good.text, 'db_up')).toBe(1);
    await expect(fetch(`http://127.0.0.1:${port}/up`)).rejects.toThrow();
    await stopPid(c.pid!);
  });

  it('is scraped by a real Prometheus server with up == 1', async () => {
    const port = await freePort();
    const c = startCli(['-c', DEFAULT_COLLECTORS, '--url', pg.url, '--web.listen-address', `127.0.0.1:${port}`]);
    await waitFor(
      () =>
        httpText(`http://127.0.0.1:${port}/up`)
          .then((r) => r.status === 200)
          .catch(() => false),
      30_000,
      'exporter up',
    );
    const prom = await startPrometheus('db', [`127.0.0.1:${port}`]);
    try {
      const up = await waitFor(
        async () => {
          const r = await prom.query('up{job="db"}');
          return r[0]?.value[1] === '1' ? r : undefined;
        },
        60_000,
        'prometheus to scrape the exporter',
        500,
      );
      expect(up).toHaveLength(1);
      expect((await prom.query('db_up'))[0]?.value[1]).toBe('1');
    } finally {
      await prom.stop();
      await stopPid(c.pid!);
    }
  });
});
