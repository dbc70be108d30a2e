/**
 * A real etcd with TLS and client certificates (`--client-cert-auth`) or with authentication
 * enabled (`etcdctl user add root`, `auth enable`), on free loopback ports in a temp dir,
 * stopped by PID. Companion of tests/support/etcd.ts.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get } from 'node:https';
import { freePorts } from '../../support/ports.ts';
import { singleNodeEtcdArgs } from '../../support/etcd.ts';
import { run, stopPid, waitFor } from '../../support/processes.ts';
import { makeTempDir, removeTempDir } from '../../support/tmp.ts';
import type { TestCerts } from './certs.ts';

export interface SecureEtcd {
  /** `127.0.0.1:<port>` */
  host: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** GET https://…/health with the CA and a client certificate; true on 200. */
function healthyTls(url: string, certs: TestCerts): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get(
      `${url}/health`,
      { ca: readFileSync(certs.ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey), timeout: 2000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

/**
 * Starts etcd: with `tls`, https only and client certificates required (signed by `tls.ca`);
 * with `rootPassword`, authentication enabled for user `root` (both may be given).
 */
export async function startSecureEtcd(opts: { tls?: TestCerts; rootPassword?: string }): Promise<SecureEtcd> {
  const dir = await makeTempDir('ha-etcd-sec-');
  const [client, peer] = await freePorts(2);
  const scheme = opts.tls ? 'https' : 'http';
  const url = `${scheme}://127.0.0.1:${client}`;
  const tlsArgs = opts.tls
    ? ['--client-cert-auth', '--trusted-ca-file', opts.tls.ca, '--cert-file', opts.tls.serverCert, '--key-file', opts.tls.serverKey]
    : [];
  const child = spawn('etcd', [...singleNodeEtcdArgs(dir, url, peer!), ...tlsArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  const pid = child.pid!;
  try {
    await waitFor(
      async () => (opts.tls ? healthyTls(url, opts.tls) : (await fetch(`${url}/health`)).ok),
      15000,
      `etcd on ${url} (${stderr})`,
    );
    if (opts.rootPassword !== undefined) {
      const env = { ...process.env, ETCDCTL_API: '3' };
      const tls = opts.tls ? ['--cacert', opts.tls.ca, '--cert', opts.tls.clientCert, '--key', opts.tls.clientKey] : [];
      await run('etcdctl', ['--endpoints', url, ...tls, 'user', 'add', 'root', '--new-user-password', opts.rootPassword], { env });
      await run('etcdctl', ['--endpoints', url, ...tls, 'auth', 'enable'], { env });
    }
  } catch (e) {
    await stopPid(pid, 'SIGKILL');
    await removeTempDir(dir);
    throw e;
  }
  return {
    host: `127.0.0.1:${client}`,
    url,
    pid,
    async stop() {
      await stopPid(pid, 'SIGTERM', 5000);
      await removeTempDir(dir);
    },
  };
}
