/**
 * `ha demo`: a cluster of real PostgreSQL instances on one machine, coordinated through the
 * in-process DCS, on free loopback ports, with data in a temporary directory. Prints members,
 * roles and URLs as they change. `stop()` shuts every node down and removes the directory.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseConfig } from '../config/index.ts';
import { InMemoryStore } from '../dcs/memory.ts';
import { freePorts } from '../net/free-port.ts';
import { startAgent, type RunningAgent } from '../node/agent/agent.ts';
import { detectBinDir } from '../postgres/bin-dir.ts';

/** A running demo. */
export interface Demo {
  agents: RunningAgent[];
  dir: string;
  stop(): Promise<void>;
}

/** YAML of one demo node. */
export function demoNodeYaml(o: {
  name: string;
  dir: string;
  apiPort: number;
  pgPort: number;
  ttl: number;
  loopWait: number;
  retryTimeout: number;
}): string {
  return [
    'scope: demo',
    `name: ${o.name}`,
    `restapi: { listen: "127.0.0.1:${o.apiPort}" }`,
    'etcd3: { hosts: ["127.0.0.1:2379"] }',
    'bootstrap:',
    `  dcs: { ttl: ${o.ttl}, loop_wait: ${o.loopWait}, retry_timeout: ${o.retryTimeout} }`,
    'database:',
    `  listen: "127.0.0.1:${o.pgPort}"`,
    `  data_dir: ${join(o.dir, o.name, 'data')}`,
    '  authentication:',
    '    superuser: { username: postgres, password: demo-superuser }',
    '    replication: { username: replicator, password: demo-replication }',
    'log: { level: warn }',
  ].join('\n');
}

/** Starts the demo cluster. Rejects with an install hint when PostgreSQL's binaries are missing. */
export async function runDemo(opts: { nodes: number; out: (line: string) => void }): Promise<Demo> {
  try {
    detectBinDir(undefined);
  } catch (e) {
    throw new Error(`${(e as Error).message}\nThe demo runs real PostgreSQL: install it with  apt-get install postgresql-15`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'ha-demo-'));
  await chmod(dir, 0o755);
  const store = new InMemoryStore();
  const ports = await freePorts(opts.nodes * 2);
  const agents: RunningAgent[] = [];
  const table = new Map<string, string>();
  const print = () => opts.out(`-- ${[...table.values()].join(' | ')}`);
  const log = pino({ level: 'warn' });
  for (let i = 0; i < opts.nodes; i++) {
    const name = `node${i + 1}`;
    const config = parseConfig(
      demoNodeYaml({ name, dir, apiPort: ports[2 * i]!, pgPort: ports[2 * i + 1]!, ttl: 10, loopWait: 2, retryTimeout: 3 }),
      {},
      `demo ${name}`,
    );
    const agent = await startAgent(config, { memoryStore: store, log: log.child({ member: name }) });
    agents.push(agent);
    opts.out(
      `${name}: API ${agent.apiBase}/ha  UI ${agent.apiBase}/ui  PostgreSQL postgres://postgres:demo-superuser@127.0.0.1:${ports[2 * i + 1]}/postgres`,
    );
    agent.node.onChange((c) => {
      table.set(c.name, `${c.name} ${c.leader ? 'leader' : c.role} ${c.state}`);
      print();
    });
  }
  opts.out(`data in ${dir}; Ctrl-C stops everything`);
  return {
    agents,
    dir,
    async stop() {
      // Replicas first, so the leader's shutdown does not trigger a failover on the way out.
      for (const a of [...agents].reverse()) await a.stop().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
