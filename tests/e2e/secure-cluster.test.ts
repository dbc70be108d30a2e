/**
 * A cluster secured everywhere (tests/e2e/support/secure-cluster.ts): etcd with TLS, client
 * certificates and authentication; the node API over TLS only, basic authentication on unsafe
 * requests, an allowlist, client certificates required on unsafe requests. Checks: plain HTTP
 * refused, 401/403 change nothing, an authenticated PATCH applies, hactl list and switchover
 * work over TLS with the node's credentials, certificates re-read on POST /reload, and no
 * configured password appears in any answer, log line, journal or process argument list.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as requestHttps } from 'node:https';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/processes.ts';
import { runHactl } from '../hactl/run-hactl.ts';
import { SECRETS, SecureCluster } from './support/secure-cluster.ts';

let cluster: SecureCluster;
let leader = '';

beforeAll(async () => {
  cluster = await SecureCluster.create(2);
  cluster.startAll();
  try {
    leader = await cluster.waitForLeader(120_000);
    await cluster.waitForStreaming(leader === 'node1' ? 'node2' : 'node1', 120_000);
  } catch (e) {
    throw new Error(`${String(e)}\n${cluster.logs()}`);
  }
});

afterAll(async () => {
  await cluster?.destroy();
});

const configOf = async (name: string) => JSON.parse((await cluster.request(name, 'GET', '/config')).body) as Record<string, unknown>;

describe('the node API over TLS', () => {
  it('answers GET /ha over https with the extra header and says authentication is on', async () => {
    const r = await cluster.request(leader, 'GET', '/ha', { clientCert: false });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ role: 'primary', authentication: 'basic' });
    expect(r.headers['strict-transport-security']).toBe('max-age=31536000');
  });

  it('refuses plain HTTP', async () => {
    const port = cluster.node(leader).apiPort;
    const outcome = await fetch(`http://127.0.0.1:${port}/ha`, { signal: AbortSignal.timeout(3000) }).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      (e: unknown) => ({ status: 0, body: String(e) }),
    );
    expect(outcome.status === 0 || outcome.status >= 400).toBe(true);
    expect(outcome.body).not.toContain('"role"');
  });

  it('answers 401 without or with wrong credentials, and changes nothing', async () => {
    const before = await configOf(leader);
    const none = await cluster.request(leader, 'PATCH', '/config', { body: { loop_wait: 1 } });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="ha"');
    const wrong = await cluster.request(leader, 'PATCH', '/config', {
      body: { loop_wait: 1 },
      auth: { username: 'admin', password: 'not-it' },
    });
    expect(wrong.status).toBe(401);
    const switchover = await cluster.request(leader, 'POST', '/switchover', { body: { leader } });
    expect(switchover.status).toBe(401);
    expect(await configOf(leader)).toEqual(before);
    expect(await cluster.leaderOf(leader)).toBe(leader);
  });

  it('answers 403 to an unsafe request from 127.0.0.2 (outside the allowlist), even with credentials', async () => {
    const before = await configOf(leader);
    const r = await cluster.request(leader, 'PATCH', '/config', { body: { loop_wait: 1 }, auth: cluster.auth, localAddress: '127.0.0.2' });
    expect(r.status).toBe(403);
    expect(r.body).toBe('Access is denied');
    expect((await cluster.request(leader, 'GET', '/ha', { localAddress: '127.0.0.2' })).status).toBe(200);
    expect(await configOf(leader)).toEqual(before);
  });

  it('answers 403 to an unsafe request without a client certificate from the CA (verify_client: optional)', async () => {
    const before = await configOf(leader);
    const r = await cluster.request(leader, 'PATCH', '/config', { body: { loop_wait: 1 }, auth: cluster.auth, clientCert: false });
    expect(r.status).toBe(403);
    expect(r.body).toBe('client certificate required');
    const rogue = await cluster.request(leader, 'PATCH', '/config', { body: { loop_wait: 1 }, auth: cluster.auth, clientCert: 'rogue' });
    expect(rogue.status).toBe(403);
    expect(await configOf(leader)).toEqual(before);
  });

  it('applies an authenticated PATCH', async () => {
    const r = await cluster.request(leader, 'PATCH', '/config', { body: { maximum_lag_on_failover: 2097152 }, auth: cluster.auth });
    expect(r.status, r.body).toBe(200);
    expect(await configOf(leader)).toMatchObject({ maximum_lag_on_failover: 2097152 });
  });

  it('answers 413 to a body over 64 KiB and 400 to JSON nested 10,000 levels', async () => {
    const big = await cluster.request(leader, 'PATCH', '/config', { body: { pad: 'x'.repeat(70_000) }, auth: cluster.auth });
    expect(big.status).toBe(413);
    const deep = await cluster.request(leader, 'PATCH', '/config', { body: '['.repeat(10_000) + ']'.repeat(10_000), auth: cluster.auth });
    expect(deep.status).toBe(400);
  });
});

describe('hactl over TLS with the node credentials', () => {
  it('lists the cluster', async () => {
    const r = await runHactl(['-c', cluster.node('node1').configPath, 'list', '-f', 'json'], { env: cluster.env });
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as { Member: string; Role: string }[];
    expect(rows.map((x) => x.Member).sort()).toEqual(['node1', 'node2']);
    expect(rows.find((x) => x.Role === 'Leader')?.Member).toBe(leader);
  });

  it('switches over', async () => {
    const candidate = leader === 'node1' ? 'node2' : 'node1';
    const r = await runHactl(['-c', cluster.node('node1').configPath, 'switchover', '--candidate', candidate, '--force'], {
      env: cluster.env,
    });
    expect(r.code, `${r.stdout}\n${r.stderr}\n${cluster.logs().slice(-4000)}`).toBe(0);
    leader = await cluster.waitForLeader(60_000, leader);
    expect(leader).toBe(candidate);
  });
});

describe('certificate rotation', () => {
  const serialOf = (name: string) =>
    new Promise<string>((resolveSerial, reject) => {
      const s = connect(
        { host: '127.0.0.1', port: cluster.node(name).apiPort, ca: readFileSync(cluster.certs.ca), servername: 'localhost' },
        () => {
          const serial = s.getPeerCertificate().serialNumber;
          s.end();
          resolveSerial(serial);
        },
      );
      s.on('error', reject);
    });

  /** Signs a new server certificate (same CA and key, new serial) over the configured file; its serial. */
  const rotate = (): string => {
    execFileSync('openssl', [
      'x509',
      '-req',
      '-in',
      `${cluster.certs.dir}/server.csr`,
      '-CA',
      cluster.certs.ca,
      '-CAkey',
      cluster.certs.caKey,
      '-CAcreateserial',
      '-days',
      '2',
      '-sha256',
      '-extfile',
      `${cluster.certs.dir}/server.ext`,
      '-out',
      cluster.certs.serverCert,
    ]);
    return new X509Certificate(readFileSync(cluster.certs.serverCert)).serialNumber;
  };

  it('serves a new certificate after POST /reload, without a restart', async () => {
    const before = await serialOf('node2');
    const pid = cluster.node('node2').proc?.pid;
    const expected = rotate();
    expect(expected).not.toBe(before);
    const r = await cluster.request('node2', 'POST', '/reload', { auth: cluster.auth });
    expect(r.status, r.body).toBe(200);
    await waitFor(async () => (await serialOf('node2')) === expected, 10_000, 'the new certificate');
    expect(cluster.node('node2').proc?.pid).toBe(pid);
  });

  it('serves a new certificate after SIGHUP', async () => {
    const expected = rotate();
    expect(await serialOf('node1')).not.toBe(expected);
    process.kill(cluster.node('node1').proc!.pid!, 'SIGHUP');
    await waitFor(async () => (await serialOf('node1')) === expected, 10_000, 'the new certificate after SIGHUP');
    expect((await cluster.request('node1', 'GET', '/ha')).status).toBe(200);
  });
});

describe('no secret in any answer, log, journal or process argument list', () => {
  const secrets = Object.entries(SECRETS);
  /** Fails naming the secret and the place where it was found. */
  const scan = (where: string, text: string) => {
    for (const [name, value] of secrets) {
      expect(text.includes(value), `${name} password found in ${where}`).toBe(false);
      expect(text.includes(Buffer.from(value).toString('base64')), `${name} password (base64) found in ${where}`).toBe(false);
    }
  };

  /** The first `ms` of /events/stream (Server-Sent Events never end by themselves). */
  const streamHead = (name: string, ms: number) =>
    new Promise<string>((resolveText) => {
      let text = '';
      const req = requestHttps(
        { host: '127.0.0.1', port: cluster.node(name).apiPort, path: '/events/stream', ca: readFileSync(cluster.certs.ca), agent: false },
        (res) => res.on('data', (d) => (text += d)),
      );
      req.on('error', () => resolveText(text));
      req.end();
      setTimeout(() => {
        req.destroy();
        resolveText(text);
      }, ms);
    });

  it('scans every GET answer, /events/stream, the logs, the journals and ps of a working cluster', async () => {
    const paths = [
      '/ha',
      '/',
      '/primary',
      '/replica',
      '/health',
      '/cluster',
      '/history',
      '/config',
      '/metrics',
      '/events',
      '/machines',
      '/ui',
      '/ui/cluster',
    ];
    for (const n of cluster.nodes) {
      for (const path of paths) {
        const r = await cluster.request(n.name, 'GET', path);
        expect(r.status, `${n.name} ${path}`).toBeGreaterThan(0);
        scan(`${n.name} GET ${path}`, r.body + JSON.stringify(r.headers));
      }
      const { machines } = JSON.parse((await cluster.request(n.name, 'GET', '/machines')).body) as { machines: { name: string }[] };
      expect(machines.length).toBeGreaterThan(0);
      for (const m of machines)
        scan(`${n.name} GET /machines/${m.name}`, (await cluster.request(n.name, 'GET', `/machines/${m.name}`)).body);
      const stream = await streamHead(n.name, 1500);
      expect(stream.length).toBeGreaterThan(0);
      scan(`${n.name} /events/stream`, stream);
      const journal = readFileSync(n.journalPath, 'utf8');
      expect(journal.length).toBeGreaterThan(0);
      scan(`${n.name} journal`, journal);
      expect(n.output.length).toBeGreaterThan(0);
      scan(`${n.name} log`, n.output);
      const pid = n.proc?.pid;
      if (pid) scan(`${n.name} agent argv`, readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    }
    // The scan does find a secret where there is one: the configuration file holds them all.
    expect(() => scan('ha.yml', readFileSync(cluster.node('node1').configPath, 'utf8'))).toThrow(/password found in ha.yml/);
    // Every process on the machine, the postmasters and their children included.
    scan('ps', execFileSync('ps', ['-eo', 'pid,args', '--no-headers'], { encoding: 'utf8' }));
  });
});
