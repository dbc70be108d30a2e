/**
 * Composition of one node agent from its validated configuration: LocalPostgres, the DCS
 * adapter, the journal, the HA node, and the Hono API served on restapi.listen. The one place
 * that wires real adapters into actors (style.md "A layout that shows the architecture").
 */
import { serve, type ServerType } from '@hono/node-server';
import { dirname, join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { AgentConfig } from '../config/index.ts';
import { parseHostPort } from '../config/index.ts';
import { createDcs, type Dcs } from '../dcs/index.ts';
import type { InMemoryStore } from '../dcs/memory.ts';
import { buildClusterDocument, createNodeApp } from '../http/app.ts';
import { createObserveRoutes } from '../observe/app.ts';
import { detectBinDir } from '../postgres/bin-dir.ts';
import { LocalPostgres } from '../postgres/local.ts';
import { loadSettingsCatalogue } from '../postgres/settings-catalogue.ts';
import { VERSION } from '../version.ts';
import { nodeCommands } from './commands.ts';
import { HaNode } from './ha-node.ts';
import { Journal } from './journal.ts';

/** A running agent. */
export interface RunningAgent {
  node: HaNode;
  dcs: Dcs;
  /** Base URL of the node API. */
  apiBase: string;
  /** Stops the HA loop (graceful shutdown), then the HTTP server. */
  stop(): Promise<void>;
}

/** Options beyond the configuration file. */
export interface AgentOptions {
  /** Use this in-process store instead of etcd (demo, embedding, tests). */
  memoryStore?: InMemoryStore;
  log?: Logger;
  /** Re-reads the configuration (POST /reload). */
  reloadConfig?: () => Promise<AgentConfig>;
}

/** Starts an agent; resolves once the HTTP API listens and the HA loop runs. */
export async function startAgent(config: AgentConfig, opts: AgentOptions = {}): Promise<RunningAgent> {
  const log = opts.log ?? pino({ level: config.log.level, base: { member: config.name } });
  const dbListen = parseHostPort(config.database.listen);
  const binDir = detectBinDir(config.database.bin_dir);
  const pg = new LocalPostgres({
    name: config.name,
    scope: config.scope,
    dataDir: config.database.data_dir,
    binDir,
    listen: { host: dbListen.host, port: dbListen.port },
    socketDir: config.database.socket_dir,
    superuser: { username: config.database.authentication.superuser.username, password: config.database.authentication.superuser.password ?? '' },
    replication: { username: config.database.authentication.replication.username, password: config.database.authentication.replication.password ?? '' },
    pgHba: [...config.bootstrap.pg_hba, ...config.database.pg_hba],
    log,
  });
  const ttlSeconds = config.bootstrap.dcs.ttl;
  const retryTimeoutMs = config.bootstrap.dcs.retry_timeout * 1000;
  const dcsBase = { namespace: config.namespace, scope: config.scope, name: config.name, ttlSeconds, retryTimeoutMs };
  const dcs = opts.memoryStore
    ? createDcs({ kind: 'memory', store: opts.memoryStore, ...dcsBase })
    : createDcs({ kind: 'etcd3', hosts: config.etcd3.hosts, ...dcsBase });
  const journal = new Journal({ path: join(dirname(config.database.data_dir), `${config.name}.journal.jsonl`) });
  // The server's settings catalogue, read once (`postgres --describe-config`, no server needed):
  // PATCH/PUT /config check database.parameters against it, and the node drops invalid ones
  // that reach it from the DCS or ha.yml before writing postgresql.conf; unloadable → not checked.
  const settingsCatalogue = await loadSettingsCatalogue(binDir).catch((e: unknown) => {
    log.warn({ err: e instanceof Error ? e.message : String(e) }, 'PostgreSQL settings catalogue not loadable: database.parameters will not be checked');
    return undefined;
  });
  const connect = parseHostPort(config.database.connect_address);
  const method = config.bootstrap.method;
  const node = new HaNode({
    name: config.name,
    scope: config.scope,
    version: VERSION,
    apiUrl: `http://${config.restapi.connect_address}/ha`,
    connUrl: `postgres://${connect.host}:${connect.port}/postgres`,
    tags: config.tags,
    bootstrapDcs: config.bootstrap.dcs as unknown as Record<string, unknown>,
    initdbOptions: config.bootstrap.initdb,
    ...(method !== 'initdb' && config.bootstrap.methods[method] ? { customBootstrapCommand: config.bootstrap.methods[method].command } : {}),
    localParameters: config.database.parameters,
    dcs,
    pg,
    journal,
    log,
    ...(settingsCatalogue ? { settingsCatalogue } : {}),
  });
  const reload = async () => {
    if (!opts.reloadConfig) return;
    const next = await opts.reloadConfig();
    node.applyLocalConfig(next.tags, next.database.parameters);
  };
  const app = createNodeApp({
    snapshot: () => node.snapshot(),
    commands: nodeCommands(node, dcs, reload),
    settingsCatalogue: () => settingsCatalogue,
  });
  app.route(
    '/',
    createObserveRoutes({
      journal,
      machines: () => node.observedMachines(),
      cluster: () => buildClusterDocument(node.snapshot()),
      // Charts are laid out on the first /ui request, not at start: Graphviz (WASM) costs ~20 MB.
      prewarmCharts: false,
    }),
  );
  const listen = parseHostPort(config.restapi.listen);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: listen.port, hostname: listen.host }, () => resolve(s));
  });
  try {
    await node.start();
  } catch (e) {
    server.close();
    throw e;
  }
  return {
    node,
    dcs,
    apiBase: `http://${config.restapi.connect_address}`,
    async stop() {
      await node.stop();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
