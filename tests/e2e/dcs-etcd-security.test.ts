/**
 * The agent's DCS client against a secured etcd: one with TLS and client certificates
 * (`--client-cert-auth`), one with authentication enabled. With the right settings the DCS
 * starts, writes and reads; without them every call fails with a clear DcsError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Etcd3Config } from '../../src/config/index.ts';
import { DcsError } from '../../src/dcs/dcs.ts';
import { etcdBackendOf } from '../../src/dcs/etcd-settings.ts';
import { createDcs, type Dcs } from '../../src/dcs/index.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import { makeCerts, type TestCerts } from './support/certs.ts';
import { startSecureEtcd, type SecureEtcd } from './support/secure-etcd.ts';

const ROOT_PASSWORD = 'etcd-root-pw-7f3a';
let dir = '';
let certs: TestCerts;
let tlsEtcd: SecureEtcd | undefined;
let authEtcd: SecureEtcd | undefined;
const opened: Dcs[] = [];

beforeAll(async () => {
  dir = await makeTempDir('ha-etcd-certs-');
  certs = await makeCerts(dir);
  tlsEtcd = await startSecureEtcd({ tls: certs });
  authEtcd = await startSecureEtcd({ rootPassword: ROOT_PASSWORD });
});

afterAll(async () => {
  for (const d of opened) await d.close().catch(() => {});
  await tlsEtcd?.stop();
  await authEtcd?.stop();
  await removeTempDir(dir);
});

async function dcsFor(etcd3: Etcd3Config, name: string): Promise<Dcs> {
  const dcs = createDcs({
    kind: 'etcd3',
    ...(await etcdBackendOf(etcd3)),
    namespace: '/sec/',
    scope: 'sec',
    name,
    ttlSeconds: 10,
    retryTimeoutMs: 2000,
  });
  opened.push(dcs);
  return dcs;
}

/** Starts the DCS, writes the config key and reads it back through a fresh read. */
async function roundTrip(dcs: Dcs, value: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
  await dcs.start({ watch: false });
  expect(await dcs.setConfig(value)).toBe(true);
  return (await dcs.refresh()).config?.value;
}

describe('etcd with TLS and client certificates', () => {
  it('works with protocol https, the CA and a client certificate', async () => {
    const dcs = await dcsFor(
      { hosts: [tlsEtcd!.host], protocol: 'https', cacert: certs.ca, cert: certs.clientCert, key: certs.clientKey },
      'tls-ok',
    );
    expect(await roundTrip(dcs, { ttl: 30, marker: 'tls' })).toMatchObject({ marker: 'tls' });
  });

  it('fails with dcs_unavailable without a client certificate', async () => {
    const dcs = await dcsFor({ hosts: [tlsEtcd!.host], protocol: 'https', cacert: certs.ca }, 'tls-nocert');
    const err = await dcs.start({ watch: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DcsError);
    // The open circuit breaker does not hide the reason: etcd refused the handshake.
    expect((err as Error).message).toMatch(/bad certificate/);
    expect((err as DcsError).code).toBe('dcs_unavailable');
  });

  it('fails with dcs_unavailable over plain http', async () => {
    const dcs = await dcsFor({ hosts: [tlsEtcd!.host] }, 'tls-plain');
    const err = await dcs.start({ watch: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    console.log(`over plain http: ${(err as Error).message}`);
    expect((err as Error).message).toMatch(/^etcd \S.* failed: /);
    expect((err as Error).message).not.toMatch(/Resolution note|circuit breaker|^\d+ [A-Z_]+:/);
    expect(err).toBeInstanceOf(DcsError);
  });

  it('fails with a client certificate from another CA', async () => {
    const dcs = await dcsFor(
      { hosts: [tlsEtcd!.host], protocol: 'https', cacert: certs.ca, cert: certs.rogueCert, key: certs.rogueKey },
      'tls-rogue',
    );
    const err = await dcs.start({ watch: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DcsError);
    expect((err as Error).message).toMatch(/certificate|unknown ca/i);
  });
});

describe('etcd with authentication enabled', () => {
  it('works with the etcd user and password', async () => {
    const dcs = await dcsFor({ hosts: [authEtcd!.host], username: 'root', password: ROOT_PASSWORD }, 'auth-ok');
    expect(await roundTrip(dcs, { ttl: 30, marker: 'auth' })).toMatchObject({ marker: 'auth' });
  });

  it('fails clearly without credentials or with a wrong password', async () => {
    const cases: [string, Etcd3Config][] = [
      ['auth-none', { hosts: [authEtcd!.host] }],
      ['auth-wrong', { hosts: [authEtcd!.host], username: 'root', password: 'wrong' }],
    ];
    for (const [name, etcd3] of cases) {
      const dcs = await dcsFor(etcd3, name);
      const err = await dcs.start({ watch: false }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, name).toBeInstanceOf(DcsError);
      expect((err as Error).message, name).toMatch(/authentication failed|user name is empty|permission denied|invalid auth token/i);
      expect((err as Error).message).not.toContain(ROOT_PASSWORD);
    }
  });
});
