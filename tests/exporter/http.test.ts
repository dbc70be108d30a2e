import { EventEmitter } from 'node:events';
import bcrypt from 'bcryptjs';
import { describe, expect, it, vi } from 'vitest';
import { buildInfo } from '../../src/exporter/build-info.ts';
import { createExporterApp, ROLE_ROUTES, type ExporterApi } from '../../src/exporter/http.ts';
import type { Role } from '../../src/exporter/role-probe.ts';
import { listen } from '../../src/exporter/serve.ts';
import { basicAuthMiddleware } from '../../src/exporter/web-config.ts';
import { freePort } from '../support/ports.ts';

function fakeExporter(role: Role, reloadOk = true) {
  let collects = 0;
  const api: ExporterApi & { collects: () => number } = {
    role,
    build: buildInfo(),
    collects: () => collects,
    async collect() {
      collects++;
      return 'db_up 1\n';
    },
    async reload() {
      return reloadOk ? { ok: true as const } : { ok: false as const, error: 'fail loading config x: broken' };
    },
    explain: () => '##\n',
    stat: () => 'name\n',
  };
  return api;
}

const expected: Record<keyof typeof ROLE_ROUTES, Record<Role, number>> = {
  up: { primary: 200, replica: 200, down: 503, starting: 503, unknown: 503 },
  primary: { primary: 200, replica: 404, down: 503, starting: 503, unknown: 503 },
  replica: { primary: 404, replica: 200, down: 503, starting: 503, unknown: 503 },
};

describe('exporter HTTP API', () => {
  for (const check of Object.keys(ROLE_ROUTES) as (keyof typeof ROLE_ROUTES)[]) {
    for (const path of ROLE_ROUTES[check]) {
      it(`${path} follows the seed's verdict table`, async () => {
        for (const role of ['primary', 'replica', 'down', 'starting', 'unknown'] as Role[]) {
          const exp = fakeExporter(role);
          const res = await createExporterApp(exp).request(path);
          expect(res.status, `${path} ${role}`).toBe(expected[check][role]);
          expect(await res.text()).toBe(role);
          expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
          expect(exp.collects()).toBe(0);
        }
      });
    }
  }

  it('serves metrics on the telemetry path, and 404 on unknown paths', async () => {
    const app = createExporterApp(fakeExporter('primary'), { telemetryPath: '/m' });
    const m = await app.request('/m');
    expect(m.status).toBe(200);
    expect(await m.text()).toBe('db_up 1\n');
    expect(m.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect((await app.request('/metrics')).status).toBe(404);
    expect((await app.request('/nope')).status).toBe(404);
    const landing = await app.request('/');
    expect(await landing.text()).toContain("<a href='/m'>Metrics</a>");
  });

  it('reloads on GET and POST, 405 with Allow otherwise, 500 with the reason on failure', async () => {
    const app = createExporterApp(fakeExporter('primary'));
    for (const method of ['GET', 'POST']) {
      const r = await app.request('/reload', { method });
      expect(r.status).toBe(200);
      expect(await r.text()).toBe('server reloaded');
    }
    const put = await app.request('/reload', { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    const bad = await createExporterApp(fakeExporter('primary', false)).request('/reload', { method: 'POST' });
    expect(bad.status).toBe(500);
    expect(await bad.text()).toMatch(/^fail to reload: /);
  });

  it('serves /explain, /stat and /version as text', async () => {
    const app = createExporterApp(fakeExporter('primary'));
    expect(await (await app.request('/explain')).text()).toBe('##\n');
    expect((await app.request('/stat')).headers.get('content-type')).toBe('text/plain; charset=UTF-8');
    const v = await (await app.request('/version')).text();
    expect(v).toMatch(/^db_exporter version v/);
  });

  it('over HTTP, answers a large /metrics text exactly, in one piece for HEAD and GET alike, behind its auth', async () => {
    let text = '';
    for (let i = 0; i < 30_000; i++) text += `pg_table_size{relname="t_${i}_é_😀"} ${i * 8192}\n`;
    const hash = bcrypt.hashSync('s3cret', 4);
    const exp = { ...fakeExporter('primary'), collect: async () => text };
    const app = createExporterApp(exp, { middleware: [basicAuthMiddleware({ alice: hash })!] });
    const port = await freePort();
    const server = await listen(app, { host: '127.0.0.1', port });
    try {
      const url = `http://127.0.0.1:${port}/metrics`;
      const auth = { Authorization: `Basic ${Buffer.from('alice:s3cret').toString('base64')}` };
      expect((await fetch(url)).status).toBe(401);
      const get = await fetch(url, { headers: auth });
      expect(get.status).toBe(200);
      expect(get.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(get.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
      expect(await get.text()).toBe(text);
      const head = await fetch(url, { method: 'HEAD', headers: auth });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
      expect(await head.text()).toBe('');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('over HTTP, concurrent and successive scrapes of different sizes each get their own text intact (pooled answer buffers)', async () => {
    const textFor = (k: number) => {
      let t = `scrape ${k}\n`;
      for (let i = 0; i < 10_000 + (k % 3) * 7_000; i++) t += `pg_x{k="${k}",i="${i}_é"} ${i}\n`;
      return t;
    };
    let calls = 0;
    const exp = { ...fakeExporter('primary'), collect: async () => textFor(calls++) };
    const app = createExporterApp(exp);
    const port = await freePort();
    const server = await listen(app, { host: '127.0.0.1', port });
    try {
      const url = `http://127.0.0.1:${port}/metrics`;
      const check = async () => {
        const body = await (await fetch(url)).text();
        const k = Number(/^scrape (\d+)\n/.exec(body)?.[1]);
        expect(body === textFor(k), `scrape ${k} intact`).toBe(true);
      };
      for (let round = 0; round < 3; round++) await Promise.all([check(), check(), check(), check()]);
      for (let i = 0; i < 4; i++) await check();
      expect(calls).toBe(16);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("under node-server, reuses an answer's buffer only after the response emitted finish", async () => {
    const texts = ['a{x="1"} 1\n'.repeat(5000), 'b{x="2"} 2\n'.repeat(5000), 'c{x="3"} 3\n'.repeat(5000)];
    let calls = 0;
    const app = createExporterApp({ ...fakeExporter('primary'), collect: async () => texts[calls++]! });
    /** The node-server response the handler writes to: keeps the bytes, as a socket still sending them does. */
    class Outgoing extends EventEmitter {
      status = 0;
      bytes: Buffer | undefined;
      writeHead(status: number) {
        this.status = status;
      }
      end(bytes: Buffer) {
        this.bytes = bytes;
      }
    }
    const scrape = async () => {
      const out = new Outgoing();
      await app.fetch(new Request('http://x/metrics'), { outgoing: out, incoming: {} });
      expect(out.status).toBe(200);
      return out;
    };
    const first = await scrape();
    const second = await scrape();
    // The first answer is still being sent: the second is encoded elsewhere, the first intact.
    expect(second.bytes!.buffer).not.toBe(first.bytes!.buffer);
    expect(first.bytes!.toString()).toBe(texts[0]);
    expect(second.bytes!.toString()).toBe(texts[1]);
    first.emit('finish');
    const third = await scrape();
    expect(third.bytes!.buffer).toBe(first.bytes!.buffer);
    expect(third.bytes!.toString()).toBe(texts[2]);
    expect(second.bytes!.toString()).toBe(texts[1]);
  });

  it('requires basic auth on every route when users are configured', async () => {
    const hash = bcrypt.hashSync('s3cret', 4);
    const app = createExporterApp(fakeExporter('primary'), { middleware: [basicAuthMiddleware({ alice: hash })!] });
    const auth = (u: string, p: string) => ({ headers: { Authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` } });
    for (const path of ['/metrics', '/up', '/explain']) {
      const none = await app.request(path);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toContain('Basic');
      const wrong = await app.request(path, auth('alice', 'nope'));
      expect(wrong.status).toBe(401);
      expect(await wrong.text()).not.toContain('db_up');
      expect((await app.request(path, auth('alice', 's3cret'))).status).toBe(200);
    }
    expect((await app.request('/up', auth('bob', 's3cret'))).status).toBe(401);
  });

  it('spends a bcrypt comparison on an unknown user too (no user-name timing oracle)', async () => {
    const hash = bcrypt.hashSync('s3cret', 4);
    const app = createExporterApp(fakeExporter('primary'), { middleware: [basicAuthMiddleware({ alice: hash })!] });
    const spy = vi.spyOn(bcrypt, 'compare');
    try {
      const res = await app.request('/up', { headers: { Authorization: `Basic ${Buffer.from('mallory:s3cret').toString('base64')}` } });
      expect(res.status).toBe(401);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('answers 413 to a body over the limit before the handler runs', async () => {
    let reloads = 0;
    const exp = fakeExporter('primary');
    exp.reload = async () => {
      reloads++;
      return { ok: true as const };
    };
    const app = createExporterApp(exp, { maxBodyBytes: 1024 });
    const res = await app.request('/reload', { method: 'POST', body: 'x'.repeat(4096) });
    expect(res.status).toBe(413);
    expect(reloads).toBe(0);
    expect((await app.request('/reload', { method: 'POST' })).status).toBe(200);
    expect(reloads).toBe(1);
  });
});
