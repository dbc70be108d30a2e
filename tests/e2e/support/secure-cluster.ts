/**
 * A test cluster secured everywhere: etcd over TLS with client certificates and authentication,
 * agents serving their API over TLS only (verify_client: optional), basic authentication on
 * unsafe requests, an allowlist of 127.0.0.1 plus the members. Certificates are made with
 * openssl in the cluster's temp dir. `destroy()` stops every process it started by PID and
 * removes the directory. (Companion of cluster.ts, which stays plain.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join, resolve } from 'node:path';
import { freePorts } from '../../support/ports.ts';
import { isAlive, sleep, stopPid, waitFor } from '../../support/processes.ts';
import { makeTempDir, removeTempDir } from '../../support/tmp.ts';
import { makeCerts, type TestCerts } from './certs.ts';
import { startSecureEtcd, type SecureEtcd } from './secure-etcd.ts';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Every secret the cluster is configured with (scanned for in answers, logs, journals, ps). */
export const SECRETS = {
  api: 'api-pw-Q7v2kXz9',
  etcd: 'etcd-pw-M4n8pLr1',
  superuser: 'su-pw-T6c3wHy5',
  replication: 'repl-pw-B9d1sKe4',
} as const;
export const API_USER = 'admin';

export interface SecureNode {
  name: string;
  apiPort: number;
  pgPort: number;
  dataDir: string;
  configPath: string;
  journalPath: string;
  proc?: ChildProcess;
  output: string;
}

/** One HTTPS answer; status 0 and `error` when the request failed. */
export interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  error?: string;
}

export class SecureCluster {
  readonly nodes: SecureNode[] = [];
  readonly scope = 'sec';
  dir!: string;
  certs!: TestCerts;
  etcd!: SecureEtcd;

  /** Environment of agents and hactl: the etcd password travels in HA_ETCD3_PASSWORD, not in the file. */
  get env(): NodeJS.ProcessEnv {
    return { ...process.env, NODE_OPTIONS: '', HA_ETCD3_PASSWORD: SECRETS.etcd };
  }

  static async create(n = 2): Promise<SecureCluster> {
    const c = new SecureCluster();
    c.dir = await makeTempDir('ha-e2e-sec-');
    try {
      c.certs = await makeCerts(c.dir);
      c.etcd = await startSecureEtcd({ tls: c.certs, rootPassword: SECRETS.etcd });
      const ports = await freePorts(n * 2);
      for (let i = 0; i < n; i++) {
        const name = `node${i + 1}`;
        const dataDir = join(c.dir, name, 'data');
        const node: SecureNode = {
          name,
          apiPort: ports[2 * i]!,
          pgPort: ports[2 * i + 1]!,
          dataDir,
          configPath: join(c.dir, `${name}.yml`),
          journalPath: join(c.dir, name, `${name}.journal.jsonl`),
          output: '',
        };
        await writeFile(node.configPath, c.configText(node), { mode: 0o600 });
        c.nodes.push(node);
      }
    } catch (e) {
      await c.destroy();
      throw e;
    }
    return c;
  }

  private configText(node: SecureNode): string {
    const k = this.certs;
    return [
      `scope: ${this.scope}`,
      `name: ${node.name}`,
      'restapi:',
      `  listen: "127.0.0.1:${node.apiPort}"`,
      `  certfile: ${k.serverCert}`,
      `  keyfile: ${k.serverKey}`,
      `  cafile: ${k.ca}`,
      '  verify_client: optional',
      `  authentication: { username: ${API_USER}, password: "${SECRETS.api}" }`,
      '  allowlist: ["127.0.0.1/32"]',
      '  allowlist_include_members: true',
      '  https_extra_headers: { Strict-Transport-Security: max-age=31536000 }',
      'etcd3:',
      `  hosts: ["${this.etcd.host}"]`,
      `  cacert: ${k.ca}`,
      `  cert: ${k.clientCert}`,
      `  key: ${k.clientKey}`,
      '  username: root',
      'bootstrap:',
      '  dcs: { ttl: 10, loop_wait: 2, retry_timeout: 3 }',
      'database:',
      `  listen: "127.0.0.1:${node.pgPort}"`,
      `  data_dir: ${node.dataDir}`,
      '  parameters: { fsync: "off", shared_buffers: "16MB" }',
      '  authentication:',
      `    superuser: { username: postgres, password: "${SECRETS.superuser}" }`,
      `    replication: { username: replicator, password: "${SECRETS.replication}" }`,
      'log: { level: debug }',
    ].join('\n');
  }

  node(name: string): SecureNode {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node ${name}`);
    return n;
  }

  start(name: string): void {
    const n = this.node(name);
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/ha.ts'), 'run', n.configPath], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: this.env,
    });
    n.output = '';
    child.stdout?.on('data', (d) => (n.output += d));
    child.stderr?.on('data', (d) => (n.output += d));
    n.proc = child;
  }

  startAll(): void {
    for (const n of this.nodes) this.start(n.name);
  }

  /**
   * One HTTPS request to a node's API, verifying its certificate against the test CA.
   * @param o.auth basic credentials; o.clientCert present the CA-signed client certificate
   *   (default true), or `'rogue'` one signed by another CA; o.localAddress source address (e.g. 127.0.0.2)
   */
  request(
    name: string,
    method: string,
    path: string,
    o: {
      body?: unknown;
      auth?: { username: string; password: string };
      clientCert?: boolean | 'rogue';
      localAddress?: string;
      timeoutMs?: number;
    } = {},
  ): Promise<Answer> {
    const n = this.node(name);
    const payload = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    const headers: Record<string, string> = {};
    if (payload !== undefined) headers['content-type'] = 'application/json';
    if (o.auth) headers['authorization'] = `Basic ${Buffer.from(`${o.auth.username}:${o.auth.password}`).toString('base64')}`;
    const cert =
      o.clientCert === false
        ? {}
        : o.clientCert === 'rogue'
          ? { cert: readFileSync(this.certs.rogueCert), key: readFileSync(this.certs.rogueKey) }
          : { cert: readFileSync(this.certs.clientCert), key: readFileSync(this.certs.clientKey) };
    return new Promise((resolveAnswer) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: n.apiPort,
          method,
          path,
          headers,
          ca: readFileSync(this.certs.ca),
          ...cert,
          ...(o.localAddress ? { localAddress: o.localAddress } : {}),
          timeout: o.timeoutMs ?? 30_000,
          agent: false,
        },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, body, headers: res.headers }));
        },
      );
      req.on('error', (e) => resolveAnswer({ status: 0, body: '', headers: {}, error: e.message }));
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end(payload);
    });
  }

  /** Credentials of the API. */
  get auth(): { username: string; password: string } {
    return { username: API_USER, password: SECRETS.api };
  }

  /** The leader named by a node's /cluster (over HTTPS), or undefined. */
  async leaderOf(name: string): Promise<string | undefined> {
    const r = await this.request(name, 'GET', '/cluster', { timeoutMs: 2000 });
    if (r.status !== 200) return undefined;
    const doc = JSON.parse(r.body) as { members: { name: string; role: string }[] };
    return doc.members.find((m) => m.role === 'leader')?.name;
  }

  async waitForLeader(timeoutMs = 90_000, not?: string): Promise<string> {
    return waitFor(
      async () => {
        for (const n of this.nodes) {
          const l = await this.leaderOf(n.name);
          if (l && l !== not) return l;
        }
        return undefined;
      },
      timeoutMs,
      'a leader',
    );
  }

  /** Waits until `name` reports itself streaming in /ha. */
  async waitForStreaming(name: string, timeoutMs = 90_000): Promise<void> {
    await waitFor(
      async () => {
        const r = await this.request(name, 'GET', '/ha', { timeoutMs: 2000 });
        return r.status === 200 && (JSON.parse(r.body) as { replication_state?: string }).replication_state === 'streaming';
      },
      timeoutMs,
      `${name} streaming`,
    );
  }

  postmasterPid(name: string): number | undefined {
    const f = join(this.node(name).dataDir, 'postmaster.pid');
    if (!existsSync(f)) return undefined;
    const pid = Number(readFileSync(f, 'utf8').split('\n')[0]);
    return pid && isAlive(pid) ? pid : undefined;
  }

  logs(): string {
    return this.nodes.map((n) => `--- ${n.name}\n${n.output}`).join('\n');
  }

  /** Stops everything this cluster started and removes its directory. */
  async destroy(): Promise<void> {
    for (const n of this.nodes) if (n.proc?.pid) await stopPid(n.proc.pid, 'SIGKILL');
    for (const n of this.nodes) {
      const pid = this.postmasterPid(n.name);
      if (pid) await stopPid(pid, 'SIGQUIT', 3000);
    }
    await this.etcd?.stop();
    await sleep(50);
    if (this.dir) await removeTempDir(this.dir);
  }
}
