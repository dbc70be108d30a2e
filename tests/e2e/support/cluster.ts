/**
 * A real test cluster: one etcd, N agent processes (`node --import tsx src/cli/ha.ts run`), each
 * managing a real PostgreSQL 15, all on free loopback ports in a temp dir. `destroy()` stops every
 * process it started by PID (agents, postmasters, etcd) and removes the directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { startEtcd, startEtcdCluster, type EtcdServer } from '../../support/etcd.ts';
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
  /** Address its API and PostgreSQL listen on and are reached at (ClusterOptions.hosts); absent: 127.0.0.1. */
  host?: string;
  /** Command prefix of its agent (ClusterOptions.wrapCommand), e.g. `ip netns exec <ns>`. */
  wrap?: string[];
}

export interface ClusterOptions {
  nodes?: number;
  ttl?: number;
  loopWait?: number;
  retryTimeout?: number;
  /** Extra YAML lines under `bootstrap.dcs` (indented by the caller as `key: value`). */
  dcsExtra?: string[];
  tags?: Record<string, Record<string, unknown>>;
  /** Extra keys of the `restapi` section (e.g. `{ max_unsafe_requests: 256 }`). */
  restapi?: Record<string, unknown>;
  /** `database.callbacks` of every node (e.g. `{ on_start: '/path/cb.sh' }`), or per node name. */
  callbacks?: Record<string, string | string[]> | ((node: string) => Record<string, string | string[]>);
  /** Members of the test etcd (default 1); with more, every agent lists every endpoint (`etcd3.hosts`). */
  etcdMembers?: number;
  /** The `watchdog` section (docs/ha.md "Fencing"), e.g. `{ mode: 'off' }`; absent: the default (automatic). */
  watchdog?: Record<string, unknown>;
  /**
   * Network-namespace tests: per node, the address its API and PostgreSQL listen on and are
   * reached at (default 127.0.0.1), e.g. an address of a veth inside a namespace.
   */
  hosts?: Record<string, string>;
  /** Per node: a prefix of its agent's command line, e.g. `['ip', 'netns', 'exec', 'ha-n1']`. */
  wrapCommand?: Record<string, string[]>;
  /** More client listen hosts of the (one-member) test etcd, on its port, e.g. a veth address. */
  etcdListenHosts?: string[];
  /** The `etcd3.hosts` the agents get instead of the test etcd's own (given the etcd's client port). */
  etcdHosts?: (port: number) => string[];
  /** `database.pg_hba` lines of every node (e.g. scram over a private namespace subnet). */
  pgHba?: string[];
  /** The cluster's scope (default `e2e`). */
  scope?: string;
  /** Node names are `<namePrefix>1…` (default `node`). */
  namePrefix?: string;
  /** More `database.parameters` of a node (merged over `fsync: off, shared_buffers: 16MB`). */
  parameters?: (node: TestNode) => Record<string, string | number>;
  /** More lines under `database:` of a node, each `key: value` (e.g. recovery_conf, create_replica_methods). */
  databaseExtra?: (node: TestNode) => string[];
  /** More top-level lines of a node's file (e.g. `backup: {…}`). */
  topExtra?: (node: TestNode) => string[];
  /** Use this (another cluster's) etcd instead of starting one; destroy() leaves it running. */
  etcd?: EtcdServer & { hosts?: string[]; urls?: string[] };
}

export class TestCluster {
  readonly nodes: TestNode[] = [];
  etcd!: EtcdServer & { hosts?: string[]; urls?: string[] };
  dir!: string;
  scope = 'e2e';
  /** False when the etcd belongs to another cluster (ClusterOptions.etcd). */
  private ownEtcd = true;

  static async create(opts: ClusterOptions = {}): Promise<TestCluster> {
    const c = new TestCluster();
    if (opts.scope) c.scope = opts.scope;
    if (opts.etcd) c.ownEtcd = false;
    c.dir = await makeTempDir('ha-e2e-');
    c.etcd = opts.etcd
      ? opts.etcd
      : (opts.etcdMembers ?? 1) > 1
        ? await startEtcdCluster(opts.etcdMembers)
        : await startEtcd(opts.etcdListenHosts ? { extraHosts: opts.etcdListenHosts } : {});
    const etcdHosts = opts.etcdHosts ? opts.etcdHosts(Number(c.etcd.host.split(':').at(-1))) : (c.etcd.hosts ?? [c.etcd.host]);
    const n = opts.nodes ?? 3;
    const ports = await freePorts(n * 2);
    for (let i = 0; i < n; i++) {
      const name = `${opts.namePrefix ?? 'node'}${i + 1}`;
      const node: TestNode = {
        name,
        apiPort: ports[2 * i]!,
        pgPort: ports[2 * i + 1]!,
        dataDir: join(c.dir, name, 'data'),
        configPath: join(c.dir, `${name}.yml`),
        logPath: join(c.dir, `${name}.agent.log`),
        output: '',
        ...(opts.hosts?.[name] ? { host: opts.hosts[name] } : {}),
        ...(opts.wrapCommand?.[name] ? { wrap: opts.wrapCommand[name] } : {}),
      };
      const host = node.host ?? '127.0.0.1';
      const tags = opts.tags?.[name];
      await writeFile(
        node.configPath,
        [
          `scope: ${c.scope}`,
          `name: ${name}`,
          `restapi: ${JSON.stringify({ listen: `${host}:${node.apiPort}`, ...(opts.restapi ?? {}) })}`,
          `etcd3: { hosts: ${JSON.stringify(etcdHosts)} }`,
          'bootstrap:',
          '  dcs:',
          `    ttl: ${opts.ttl ?? 10}`,
          `    loop_wait: ${opts.loopWait ?? 2}`,
          `    retry_timeout: ${opts.retryTimeout ?? 3}`,
          ...(opts.dcsExtra ?? []).map((l) => `    ${l}`),
          'database:',
          `  listen: "${host}:${node.pgPort}"`,
          `  data_dir: ${node.dataDir}`,
          `  parameters: ${JSON.stringify({ fsync: 'off', shared_buffers: '16MB', ...(opts.parameters?.(node) ?? {}) })}`,
          '  authentication:',
          '    superuser: { username: postgres, password: e2e-super }',
          '    replication: { username: replicator, password: e2e-repl }',
          ...(opts.pgHba ? [`  pg_hba: ${JSON.stringify(opts.pgHba)}`] : []),
          ...(opts.databaseExtra?.(node) ?? []).map((l) => `  ${l}`),
          ...(opts.callbacks
            ? [`  callbacks: ${JSON.stringify(typeof opts.callbacks === 'function' ? opts.callbacks(name) : opts.callbacks)}`]
            : []),
          ...(tags ? [`tags: ${JSON.stringify(tags)}`] : []),
          ...(opts.watchdog ? [`watchdog: ${JSON.stringify(opts.watchdog)}`] : []),
          ...(opts.topExtra?.(node) ?? []),
          'log: { level: info }',
        ].join('\n'),
      );
      c.nodes.push(node);
    }
    return c;
  }

  /** etcdctl's --endpoints: every member of the test etcd. */
  endpoints(): string {
    return (this.etcd.urls ?? [this.etcd.url]).join(',');
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
    const cmd = [...(n.wrap ?? []), process.execPath, ...args, 'run', n.configPath];
    const child = spawn(cmd[0]!, cmd.slice(1), {
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
      const r = await fetch(`http://${n.host ?? '127.0.0.1'}:${n.apiPort}${path}`, { signal: AbortSignal.timeout(2000) });
      const body = await r.text();
      return { status: r.status, body, json: () => JSON.parse(body) };
    } catch {
      return { status: 0, body: '', json: () => undefined };
    }
  }

  /** The leader key's value in etcd (undefined when absent). */
  async leader(): Promise<string | undefined> {
    const out = await run('etcdctl', ['--endpoints', this.endpoints(), 'get', '--print-value-only', `/service/${this.scope}/leader`], {
      env: { ...process.env, ETCDCTL_API: '3' },
    });
    return out.trim() || undefined;
  }

  async waitForLeader(timeoutMs = 60_000, not?: string): Promise<string> {
    return waitFor(
      async () => {
        const l = await this.leader();
        return l && l !== not ? l : undefined;
      },
      timeoutMs,
      'a leader',
    );
  }

  /** Runs SQL on a node over TCP as the superuser; stdout (tuples only). */
  psql(name: string, sql: string, timeoutMs = 5000): Promise<string> {
    const n = this.node(name);
    return run(
      join(pgBinDir(), 'psql'),
      ['-h', n.host ?? '127.0.0.1', '-p', String(n.pgPort), '-U', 'postgres', '-d', 'postgres', '-XAtq', '-c', sql],
      {
        env: { ...process.env, PGPASSWORD: 'e2e-super', PGCONNECT_TIMEOUT: String(Math.ceil(timeoutMs / 1000)) },
      },
    );
  }

  /** Waits until every listed node runs as a streaming replica. */
  async waitForStreaming(names: string[], timeoutMs = 60_000): Promise<void> {
    for (const name of names) {
      await waitFor(
        async () => (await this.get(name, '/ha')).json()?.replication_state === 'streaming' || (await this.isStreaming(name)),
        timeoutMs,
        `${name} streaming`,
      );
    }
  }

  /**
   * Waits until GET /ha of `name` shows a running replica streaming (polled every 100 ms); returns
   * epoch ms then. The error carries the tail of the node's agent output.
   */
  async streamingAt(name: string, timeoutMs: number): Promise<number> {
    await waitFor(
      async () => {
        const doc = (await this.get(name, '/ha')).json();
        return doc?.state === 'running' && doc?.role === 'replica' && doc?.replication_state === 'streaming';
      },
      timeoutMs,
      `${name} streaming`,
      100,
    ).catch((e) => {
      throw new Error(`${String(e)}\n==== ${name}\n${this.node(name).output.slice(-6000)}`);
    });
    return Date.now();
  }

  private async isStreaming(name: string): Promise<boolean> {
    try {
      return (await this.psql(name, 'select status from pg_stat_wal_receiver')).trim() === 'streaming';
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
    if (this.ownEtcd) await this.etcd?.stop();
    await sleep(50);
    if (this.dir) await removeTempDir(this.dir);
  }

  /** Runs etcdctl (API v3) against this cluster's etcd; resolves with stdout. */
  etcdctl(args: string[]): Promise<string> {
    return run('etcdctl', ['--endpoints', this.endpoints(), ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
  }

  /** Full etcd key of a cluster key (`leader` → `/service/<scope>/leader`). */
  key(k: string): string {
    return `/service/${this.scope}/${k}`;
  }

  /** Value of a cluster key (`config`, `failover`, …), undefined when absent. */
  async etcdGet(k: string): Promise<string | undefined> {
    const out = await this.etcdctl(['get', '-w', 'json', this.key(k)]);
    const kv = JSON.parse(out).kvs?.[0];
    return kv ? Buffer.from(kv.value ?? '', 'base64').toString('utf8') : undefined;
  }

  /** Writes a cluster key with `etcdctl put` (no lease: as an operator would). */
  async etcdPut(k: string, value: string): Promise<void> {
    await this.etcdctl(['put', this.key(k), '--', value]);
  }

  /** Deletes a cluster key. */
  async etcdDel(k: string): Promise<void> {
    await this.etcdctl(['del', this.key(k)]);
  }

  /**
   * Watches one cluster key from its current value on (`etcdctl watch -w json` from the revision
   * after the initial read, so no change is missed). `events[0]` is the initial value; a deletion
   * or lease expiry is an event with `value: undefined`. `stop()` ends the etcdctl process.
   */
  async watchKey(k: string): Promise<KeyWatch> {
    const first = JSON.parse(await this.etcdctl(['get', '-w', 'json', this.key(k)]));
    const kv = first.kvs?.[0];
    const events: KeyEvent[] = [
      {
        at: Date.now(),
        value: kv ? Buffer.from(kv.value ?? '', 'base64').toString('utf8') : undefined,
        revision: Number(first.header.revision),
      },
    ];
    const child = spawn(
      'etcdctl',
      ['--endpoints', this.endpoints(), 'watch', '-w', 'json', `--rev=${Number(first.header.revision) + 1}`, this.key(k)],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, ETCDCTL_API: '3' },
      },
    );
    let buf = '';
    child.stdout?.on('data', (d) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        try {
          const msg = JSON.parse(line);
          for (const e of msg.Events ?? []) {
            const deleted = e.type === 1 || e.type === 'DELETE';
            events.push({
              at: Date.now(),
              value: deleted ? undefined : Buffer.from(e.kv?.value ?? '', 'base64').toString('utf8'),
              revision: Number(e.kv?.mod_revision ?? 0),
            });
          }
        } catch {
          /* a partial or foreign line: ignored */
        }
      }
    });
    return {
      events,
      async stop() {
        if (child.pid) await stopPid(child.pid, 'SIGTERM', 2000);
      },
    };
  }

  /** POST a JSON body to a node's API: {status, body}; status 0 (and `error`) when unreachable or timed out. */
  async post(name: string, path: string, body: unknown, timeoutMs = 30_000): Promise<{ status: number; body: string; error?: string }> {
    const n = this.node(name);
    try {
      const r = await fetch(`http://${n.host ?? '127.0.0.1'}:${n.apiPort}${path}`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
      });
      return { status: r.status, body: await r.text() };
    } catch (e) {
      return { status: 0, body: '', error: String(e) };
    }
  }

  /** Names of the members whose GET /primary answers 200 (asked in parallel, 2 s timeout each). */
  async primaries(): Promise<string[]> {
    const answers = await Promise.all(
      this.nodes.map(async (n) => ((await this.get(n.name, '/primary')).status === 200 ? n.name : undefined)),
    );
    return answers.filter((x): x is string => x !== undefined);
  }

  /** PID of a node's agent process (undefined when not started or exited). */
  agentPid(name: string): number | undefined {
    const p = this.node(name).proc;
    return p?.pid && p.exitCode === null && p.signalCode === null ? p.pid : undefined;
  }

  /**
   * PIDs of a node's PostgreSQL auxiliary processes whose title contains `kind` (e.g.
   * `walsender`, `walreceiver`, `checkpointer`): children of its postmaster, read from /proc.
   */
  postgresChildren(name: string, kind: string): number[] {
    const pm = this.postmasterPid(name);
    if (!pm) return [];
    const out: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid !== pm) continue;
        const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
        if (title.includes(kind)) out.push(Number(entry));
      } catch {
        /* the process went away */
      }
    }
    return out;
  }

  /** CPU time (user + system) a process has used so far, in seconds, from /proc/<pid>/stat. */
  cpuSeconds(pid: number): number {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the command: state(0) ppid(1) … utime(11) stime(12), in clock ticks (100 Hz on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  /** The first agent log line (pino JSON, parsed) of `name` at or after `sinceMs` whose message matches `re`. */
  firstLogLine(name: string, re: RegExp, sinceMs = 0): Record<string, unknown> | undefined {
    for (const raw of this.node(name).output.split('\n')) {
      if (!raw.startsWith('{')) continue;
      try {
        const j = JSON.parse(raw) as { time?: number; msg?: string };
        if ((j.time ?? 0) >= sinceMs && re.test(String(j.msg ?? ''))) return j;
      } catch {
        /* not JSON */
      }
    }
    return undefined;
  }

  /**
   * The agents' log lines (pino JSON) whose message matches `re`, as `<time> <node> <msg> <extra>`,
   * optionally only those at or after `sinceMs` (for failure messages and reports).
   */
  logsMatching(re: RegExp, sinceMs = 0): string[] {
    const out: { t: number; line: string }[] = [];
    for (const n of this.nodes) {
      for (const raw of n.output.split('\n')) {
        if (!raw.startsWith('{')) {
          if (raw.trim() && re.test(raw)) out.push({ t: 0, line: `${n.name} ${raw}` });
          continue;
        }
        try {
          const j = JSON.parse(raw);
          const t = Number(j.time ?? 0);
          if (t < sinceMs || !re.test(String(j.msg ?? ''))) continue;
          const { level: _l, time: _t, pid: _p, hostname: _h, member: _m, msg, ...rest } = j;
          out.push({
            t,
            line: `${new Date(t).toISOString().slice(11, 23)} ${n.name} ${msg}${Object.keys(rest).length ? ' ' + JSON.stringify(rest) : ''}`,
          });
        } catch {
          /* not JSON */
        }
      }
    }
    return out.sort((a, b) => a.t - b.t).map((x) => x.line);
  }

  /**
   * Waits for a settled cluster: one member answers 200 on /primary and holds the leader key, every
   * other member answers 200 on /readiness (streaming, not lagging). Returns the leader. On time-out
   * throws with every member's /ha and the agents' log lines matching `logRe` (when given).
   */
  async settled(timeoutMs = 90_000, logRe?: RegExp): Promise<string> {
    try {
      return await waitFor(
        async () => {
          const l = await this.leader();
          if (!l) return undefined;
          const p = await this.primaries();
          if (p.length !== 1 || p[0] !== l) return undefined;
          for (const n of this.nodes) if (n.name !== l && (await this.get(n.name, '/readiness')).status !== 200) return undefined;
          return l;
        },
        timeoutMs,
        'a settled cluster (one primary holding the key, every replica ready)',
        250,
      );
    } catch (e) {
      const states = await Promise.all(this.nodes.map(async (n) => `${n.name}: ${(await this.get(n.name, '/ha')).body}`));
      const lines = logRe ? this.logsMatching(logRe, Date.now() - timeoutMs).slice(-40) : [];
      throw new Error(`${String(e)}\n${states.join('\n')}\n${lines.join('\n')}`);
    }
  }

  /** Agent output of every node (for failure messages). */
  logs(): string {
    return this.nodes.map((n) => `==== ${n.name}\n${n.output.slice(-4000)}`).join('\n');
  }
}

/** One change of a watched key: `value` undefined for a deletion (or lease expiry). */
export interface KeyEvent {
  /** Epoch ms when the test saw it. */
  at: number;
  value: string | undefined;
  revision: number;
}

/** A running `etcdctl watch` on one key. */
export interface KeyWatch {
  /** The initial value first, then every change in order. */
  readonly events: KeyEvent[];
  stop(): Promise<void>;
}
