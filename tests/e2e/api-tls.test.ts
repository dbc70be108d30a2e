/**
 * The TLS pieces of the node API against a real HTTPS server built from ha.yml settings
 * (buildApiSecurity): `verify_client: required` refuses a handshake without a client
 * certificate from the CA; member calls (memberClientOf: the node's own certificate, the CA of
 * restapi.cafile) pass; a wrong CA fails; `insecure` skips verification; status reads never
 * carry credentials; unreadable certificate files are named.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type AgentConfig } from '../../src/config/index.ts';
import { requestApi } from '../../src/net/api-client.ts';
import { readTlsFiles } from '../../src/net/tls-files.ts';
import { buildApiSecurity, memberClientOf } from '../../src/node/agent/api-security.ts';
import { fetchStatusDocument } from '../../src/node/cycle/peers.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import { makeCerts, type TestCerts } from './support/certs.ts';

let dir = '';
let certs: TestCerts;
let config: AgentConfig;
let server: Server | undefined;
let url = '';
const seenAuth: (string | undefined)[] = [];

const yaml = (c: TestCerts, extra = '') => `
scope: t
name: n1
restapi:
  listen: 127.0.0.1:8008
  certfile: ${c.serverCert}
  keyfile: ${c.serverKey}
  cafile: ${c.ca}
  verify_client: required
  authentication: { username: admin, password: "pw-Z8x" }
${extra}
etcd3: { hosts: [127.0.0.1:2379] }
database:
  listen: 127.0.0.1:5432
  data_dir: /var/tmp/x/n1
  authentication: { superuser: { username: postgres }, replication: { username: r } }
`;

beforeAll(async () => {
  dir = await makeTempDir('ha-api-tls-');
  certs = await makeCerts(dir);
  config = parseConfig(yaml(certs), {});
  const security = await buildApiSecurity(config);
  expect(security.scheme).toBe('https');
  server = createServer(security.serverTls!, (req, res) => {
    seenAuth.push(req.headers.authorization);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ state: 'running', role: 'replica' }));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/ha`;
});

afterAll(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await removeTempDir(dir);
});

describe('verify_client: required and member calls', () => {
  it('a member call with the node own certificate and restapi.cafile passes', async () => {
    const r = await requestApi(url, { ...(await memberClientOf(config)), timeoutMs: 5000 });
    expect(r).toMatchObject({ reachable: true, status: 200 });
  });

  it('a client without a certificate fails the handshake', async () => {
    const r = await requestApi(url, { tls: await readTlsFiles({ ca: { key: 'ca', path: certs.ca } }), timeoutMs: 5000 });
    expect(r.reachable).toBe(false);
  });

  it('a client certificate from another CA fails the handshake', async () => {
    const tls = await readTlsFiles({
      ca: { key: 'ca', path: certs.ca },
      cert: { key: 'c', path: certs.rogueCert },
      key: { key: 'k', path: certs.rogueKey },
    });
    expect((await requestApi(url, { tls, timeoutMs: 5000 })).reachable).toBe(false);
  });

  it('the server certificate is verified: a client trusting another CA refuses it, insecure accepts it', async () => {
    const wrongCa = await readTlsFiles({
      ca: { key: 'ca', path: `${dir}/other-ca.pem` },
      cert: { key: 'c', path: certs.clientCert },
      key: { key: 'k', path: certs.clientKey },
    });
    const refused = await requestApi(url, { tls: wrongCa, timeoutMs: 5000 });
    expect(refused.reachable).toBe(false);
    if (!refused.reachable) expect(refused.error).toMatch(/certificate/i);
    expect(await requestApi(url, { tls: wrongCa, insecure: true, timeoutMs: 5000 })).toMatchObject({ reachable: true, status: 200 });
  });

  it('status reads parse the document and never send credentials; unsafe calls do when given', async () => {
    seenAuth.length = 0;
    const client = await memberClientOf(config);
    expect(client.auth).toEqual({ username: 'admin', password: 'pw-Z8x' });
    expect(await fetchStatusDocument(url, 5000, client)).toEqual({ state: 'running', role: 'replica' });
    expect(seenAuth).toEqual([undefined]);
    await requestApi(url, { ...client, method: 'POST', body: {}, timeoutMs: 5000 });
    expect(seenAuth[1]).toBe(`Basic ${Buffer.from('admin:pw-Z8x').toString('base64')}`);
    expect(await fetchStatusDocument(url, 5000, {})).toBeUndefined();
  });
});

describe('certificate files', () => {
  it('an unreadable file is named by its key and path', async () => {
    const bad = parseConfig(yaml(certs).replace(certs.serverCert, `${dir}/missing.pem`), {});
    await expect(buildApiSecurity(bad)).rejects.toThrow(`restapi.certfile: cannot read ${dir}/missing.pem (ENOENT)`);
  });

  it('ctl settings win over restapi for member calls', async () => {
    const c = parseConfig(
      yaml(
        certs,
        `ctl: { cacert: ${certs.ca}, certfile: ${certs.clientCert}, keyfile: ${certs.clientKey}, authentication: { username: op, password: op-pw } }`,
      ),
      {},
    );
    const client = await memberClientOf(c);
    expect(client.auth).toEqual({ username: 'op', password: 'op-pw' });
    expect(client.tls?.cert?.toString()).toContain('BEGIN CERTIFICATE');
    expect(await requestApi(url, { ...client, timeoutMs: 5000 })).toMatchObject({ reachable: true, status: 200 });
  });
});
