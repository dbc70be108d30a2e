/**
 * A real test cluster: one etcd, N agent processes (`node --import tsx src/cli/ha.ts run`), each
 * managing a real PostgreSQL 15, all on free loopback ports in a temp dir. `destroy()` stops every
 * process it started by PID (agents, postmasters, etcd) and removes the directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { startEtcd, type EtcdServer } from '../../support/etcd.ts';
import { pgBinDir } from '../../support/pg.ts';
import { freePorts } from '../../support/ports.ts';
import { isAlive, run, sleep, stopPid, waitFor } from '../../support/processes.ts';
import { makeTempDir, removeTempDir } from '../../support/tmp.ts';

const ROOT = resolve(import.meta.dirname, '../../..');

export interface TestNode {
  name: string;
  apiPort: number;
  pgPort: number;
  dataDir: string;
  configPath: string;
  logPath: string;
  proc?: ChildProcess;
  output: string;
}

export interface ClusterOptions {
  nodes?: number;
  ttl?: number;
  loopWait?: number;
  retryTimeout?: number;
  /** Extra YAML lines under `bootstrap.dcs` (indented by the caller as `key: value`). */
  dcsExtra?: string[];
  tags?: Record<string, Record<string, unknown>>;
}

export class TestCluster {
  readonly nodes: TestNode[] = [];
  etcd!: EtcdServer;
  dir!: string;
  readonly scope = 'e2e';

  static async create(opts: ClusterOptions = {}): Promise<TestCluster> {
    const c = new TestCluster();
    c.dir = await makeTempDir('ha-e2e-');
    c.etcd = await startEtcd();
    const n = opts.nodes ?? 3;
    const ports = await freePorts(n * 2);
    for (let i = 0; i < n; i++) {
      const name = `node${i + 1}`;
      const node: TestNode = {
        name,
        apiPort: ports[2 * i]!,
        pgPort: ports[2 * i + 1]!,
        dataDir: join(c.dir, name, 'data'),
        configPath: join(c.dir, `${name}.yml`),
        logPath: join(c.dir, `${name}.agent.log`),
        output: '',
      };
      const tags = opts.tags?.[name];
      await writeFile(
        node.configPath,
        [
          `scope: ${c.scope}`,
          `name: ${name}`,
          `restapi: { listen: "127.0.0.1:${node.apiPort}" }`,
          `etcd3: { hosts: ["${c.etcd.host}"] }`,
          'bootstrap:',
          '  dcs:',
          `    ttl: ${opts.ttl ?? 10}`,
          `    loop_wait: ${opts.loopWait ?? 2}`,
          `    retry_timeout: ${opts.retryTimeout ?? 3}`,
          ...(opts.dcsExtra ?? []).map((l) => `    ${l}`),
          'database:',
          `  listen: "127.0.0.1:${node.pgPort}"`,
          `  data_dir: ${node.dataDir}`,
          '  parameters: { fsync: "off", shared_buffers: "16MB" }',
          '  authentication:',
          '    superuser: { username: postgres, password: e2e-super }',
          '    replication: { username: replicator, password: e2e-repl }',
          ...(tags ? [`tags: ${JSON.stringify(tags)}`] : []),
          'log: { level: info }',
        ].join('\n'),
      );
      c.nodes.push(node);
    }
    return c;
  }

  node(name: string): TestNode {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node ${name}`);
    return n;
  }

  /** Starts the agent process of a node. */
  start(name: string): void {
    const n = this.node(name);
    // HA_AGENT_ENTRY (benchmarks): run a built agent, e.g. dist/src/cli/ha.js, instead of the sources.
    const entry = process.env['HA_AGENT_ENTRY'];
    const args = entry ? [join(ROOT, entry)] : ['--import', 'tsx', join(ROOT, 'src/cli/ha.ts')];
    const child = spawn(process.execPath, [...args, 'run', n.configPath], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    n.output = '';
    child.stdout?.on('data', (d) => (n.output += d));
    child.stderr?.on('data', (d) => (n.output += d));
    n.proc = child;
  }

  startAll(): void {
    for (const n of this.nodes) this.start(n.name);
  }

  /** GET a path on a node's API: {status, body}. Status 0 when unreachable. */
  async get(name: string, path: string): Promise<{ status: number; body: string; json: () => any }> {
    const n = this.node(name);
    try {
      const r = await fetch(`http://127.0.0.1:${n.apiPort}${path}`, { signal: AbortSignal.timeout(2000) });
      const body = await r.text();
      return { status: r.status, body, json: () => JSON.parse(body) };
    } catch {
      return { status: 0, body: '', json: () => undefined };
    }
  }

  /** The leader key's value in etcd (undefined when absent). */
  async leader(): Promise<string | undefined> {
    const out = await run('etcdctl', ['--endpoints', this.etcd.url, 'get', '--print-value-only', `/service/${this.scope}/leader`], {
      env: { ...process.env, ETCDCTL_API: '3' },
    });
    return out.trim() || undefined;
  }

  async waitForLeader(timeoutMs = 60_000, not?: string): Promise<string> {
    return waitFor(async () => {
      const l = await this.leader();
      return l && l !== not ? l : undefined;
    }, timeoutMs, 'a leader');
  }

  /** Runs SQL on a node over TCP as the superuser; stdout (tuples only). */
  psql(name: string, sql: string, timeoutMs = 5000): Promise<string> {
    const n = this.node(name);
    return run(join(pgBinDir(), 'psql'), ['-h', '127.0.0.1', '-p', String(n.pgPort), '-U', 'postgres', '-d', 'postgres', '-XAtq', '-c', sql], {
      env: { ...process.env, PGPASSWORD: 'e2e-super', PGCONNECT_TIMEOUT: String(Math.ceil(timeoutMs / 1000)) },
    });
  }

  /** Waits until every listed node runs as a streaming replica. */
  async waitForStreaming(names: string[], timeoutMs = 60_000): Promise<void> {
    for (const name of names) {
      await waitFor(async () => (await this.get(name, '/ha')).json()?.replication_state === 'streaming' || (await this.isStreaming(name)), timeoutMs, `${name} streaming`);
    }
  }

  private async isStreaming(name: string): Promise<boolean> {
    try {
      return (await this.psql(name, "select status from pg_stat_wal_receiver")).trim() === 'streaming';
    } catch {
      return false;
    }
  }

  /** PID of a node's postmaster, from postmaster.pid. */
  postmasterPid(name: string): number | undefined {
    const f = join(this.node(name).dataDir, 'postmaster.pid');
    if (!existsSync(f)) return undefined;
    const pid = Number(readFileSync(f, 'utf8').split('\n')[0]);
    return pid && isAlive(pid) ? pid : undefined;
  }

  /** kill -9 of the agent. */
  async killAgent(name: string): Promise<void> {
    const pid = this.node(name).proc?.pid;
    if (pid) await stopPid(pid, 'SIGKILL');
  }

  /** Graceful stop of the agent (SIGTERM) and wait for it to exit. */
  async stopAgent(name: string, timeoutMs = 60_000): Promise<void> {
    const pid = this.node(name).proc?.pid;
    if (pid) await stopPid(pid, 'SIGTERM', timeoutMs);
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

  /** Agent output of every node (for failure messages). */
  logs(): string {
    return this.nodes.map((n) => `==== ${n.name}\n${n.output.slice(-4000)}`).join('\n');
  }
}
