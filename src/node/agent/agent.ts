/**
 * Composition of one node agent from its validated configuration: LocalPostgres, the DCS
 * adapter, the journal, the HA node, and the Hono API served on restapi.listen. The one place
 * that wires real adapters into actors (style.md "A layout that shows the architecture").
 */
import { serve, type ServerType } from '@hono/node-server';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { dirname, join } from 'node:path';
import { connect as netConnect } from 'node:net';
import type { Hono } from 'hono';
import { pino, type Logger } from 'pino';
import type { AgentConfig, CustomBootstrapMethod } from '../../config/index.ts';
import type { ReplicaMethodsConfig } from '../../domain/replica-methods.ts';
import type { BootstrapPlan } from '../local/effects.ts';
import type { TargetedRecovery } from '../../postgres/types.ts';
import { parseHostPort } from '../../config/index.ts';
import { createDcs, type Dcs } from '../../dcs/index.ts';
import { etcdBackendOf } from '../../dcs/etcd-settings.ts';
import type { InMemoryStore } from '../../dcs/memory.ts';
import { buildClusterDocument } from '../../domain/cluster-document.ts';
import { timingOf } from '../../domain/dynamic-config.ts';
import { createNodeApp } from '../../http/app.ts';
import { createObserveRoutes } from '../../observe/app.ts';
import { detectBinDir } from '../../postgres/bin-dir.ts';
import { LocalPostgres } from '../../postgres/local.ts';
import { loadSettingsCatalogue } from '../../postgres/settings-catalogue.ts';
import type { SettingsCatalogue } from '../../domain/pg-parameters.ts';
import { VERSION } from '../../version.ts';
import { buildApiSecurity, type ApiSecurity } from './api-security.ts';
import { nodeCommands } from './commands.ts';
import { FileReceiptStore } from '../local/receipts.ts';
import { BackupRunner } from '../local/backup.ts';
import { HaNode } from '../ha-node.ts';
import { Journal } from '@ha/machines';
import { fileJournalSink } from './journal-file.ts';
import { fetchStatusDocument } from '../cycle/peers.ts';
import { ProcessFence, takeFenceLog } from '../../watchdog/process-fence.ts';
import { requestApi } from '../../net/api-client.ts';

/** A running agent. */
export interface RunningAgent {
  node: HaNode;
  dcs: Dcs;
  /** Base URL of the node API. */
  apiBase: string;
  /** Stops the HA loop (graceful shutdown), then the HTTP server. */
  stop(): Promise<void>;
  /**
   * Applies a re-read configuration (SIGHUP, POST /reload): certificates (server.setSecureContext),
   * API credentials, allowlist, extra headers, limits, member-call TLS, tags, local parameters.
   * Rejects (nothing applied) when a certificate cannot be read or the allowlist is invalid.
   * Listen address, TLS on/off and verify_client need a restart.
   */
  reload(next: AgentConfig): Promise<void>;
}

/** Options beyond the configuration file. */
export interface AgentOptions {
  /** Use this in-process store instead of etcd (demo, embedding, tests). */
  memoryStore?: InMemoryStore;
  log?: Logger;
  /** Re-reads the configuration (POST /reload). */
  reloadConfig?: () => Promise<AgentConfig>;
}

/** A warning when the node API takes writes from anyone (no restapi.authentication). */
function warnIfOpen(config: AgentConfig, log: Logger): void {
  if (config.restapi.authentication) return;
  log.warn(
    { listen: config.restapi.listen },
    'restapi.authentication is not set: anyone who can reach the node API may change the cluster (POST, PUT, PATCH, DELETE); see docs/security.md',
  );
}

/** Starts the node; when that throws, closes the API server and the fence and rethrows. */
async function startOrClose(node: HaNode, listening: ServerType, fence: { close(): Promise<unknown> } | undefined): Promise<void> {
  try {
    await node.start();
  } catch (e) {
    listening.close();
    void fence?.close();
    throw e;
  }
}

/** Starts an agent; resolves once the HTTP API listens and the HA loop runs. */
export async function startAgent(config: AgentConfig, opts: AgentOptions = {}): Promise<RunningAgent> {
  const log = opts.log ?? pino({ level: config.log.level, base: { member: config.name } });
  const binDir = detectBinDir(config.database.bin_dir);
  const pg = localPostgres(config, binDir, log);
  let security: ApiSecurity = await buildApiSecurity(config);
  warnIfOpen(config, log);
  const dcs = await dcsOf(config, opts.memoryStore);
  const fetchStatus = (apiUrl: string) => fetchStatusDocument(apiUrl, 2000, security.memberClient);
  const journal = new Journal({ sink: fileJournalSink(join(dirname(config.database.data_dir), `${config.name}.journal.jsonl`)) });
  const fence = startFence(config, journal, log);
  const settingsCatalogue = await catalogueOf(binDir, log);
  const node = haNode(config, {
    dcs,
    pg,
    journal,
    log,
    fetchStatus,
    security: () => security,
    ...(settingsCatalogue ? { settingsCatalogue } : {}),
    ...(fence ? { fence } : {}),
  });
  let server: ServerType | undefined;
  // POST /backup runs the backup section in force (a reload replaces it).
  let backupConfig = config.backup;
  const backups = new BackupRunner({
    pg,
    config: () => backupConfig,
    notice: (type, text, level) => {
      log[level ?? 'warn']({ notice: type }, text);
      journal.append({ machine: 'ha', kind: 'event', event: { type: `ha.${type}`, reason: text, at: Date.now() } });
    },
    now: () => Date.now(),
  });
  const applyConfig = async (next: AgentConfig): Promise<void> => {
    const nextSecurity = await buildApiSecurity(next);
    if (nextSecurity.serverTls && security.serverTls && server) {
      // New certificate, key and CA for the next handshakes; open connections keep theirs.
      (server as HttpsServer).setSecureContext(nextSecurity.serverTls);
    } else if (Boolean(nextSecurity.serverTls) !== Boolean(security.serverTls)) {
      log.warn('restapi.certfile was added or removed: TLS on or off takes effect at the next start');
    }
    security = nextSecurity;
    node.applyLocalConfig(next.tags, next.database.parameters, archiveSettings(next));
    node.setCallbacks(next.database.callbacks ?? {});
    backupConfig = next.backup;
  };
  const reload = async () => {
    if (!opts.reloadConfig) return;
    await applyConfig(await opts.reloadConfig());
  };
  const app = nodeApp(node, journal, {
    commands: { ...nodeCommands(node, dcs, reload, fetchStatus), backup: (o) => backups.run(o) },
    settingsCatalogue: () => settingsCatalogue,
    guard: () => security.policy,
  });
  const listening = await listen(app, config.restapi.listen, security.serverTls);
  server = listening;
  await startOrClose(node, listening, fence);
  return {
    node,
    dcs,
    apiBase: `${security.scheme}://${config.restapi.connect_address}`,
    reload: applyConfig,
    async stop() {
      await node.stop();
      await new Promise<void>((r) => listening.close(() => r()));
    },
  };
}

/**
 * The server's settings catalogue, read once (`postgres --describe-config`, no server needed):
 * PATCH/PUT /config check database.parameters against it, and the node drops invalid ones that
 * reach it from the DCS or ha.yml before writing postgresql.conf; unloadable → not checked.
 */
async function catalogueOf(binDir: string, log: Logger): Promise<SettingsCatalogue | undefined> {
  return loadSettingsCatalogue(binDir).catch((e: unknown) => {
    log.warn(
      { err: e instanceof Error ? e.message : String(e) },
      'PostgreSQL settings catalogue not loadable: database.parameters will not be checked',
    );
    return undefined;
  });
}

/** The local PostgreSQL of `config.database` (LocalPostgres). */
function localPostgres(config: AgentConfig, binDir: string, log: Logger): LocalPostgres {
  const dbListen = parseHostPort(config.database.listen);
  return new LocalPostgres({
    name: config.name,
    scope: config.scope,
    dataDir: config.database.data_dir,
    binDir,
    listen: { host: dbListen.host, port: dbListen.port },
    socketDir: config.database.socket_dir,
    ...(config.database.pgpass !== undefined ? { passfile: config.database.pgpass } : {}),
    superuser: {
      username: config.database.authentication.superuser.username,
      password: config.database.authentication.superuser.password ?? '',
    },
    replication: {
      username: config.database.authentication.replication.username,
      password: config.database.authentication.replication.password ?? '',
    },
    pgHba: [...config.bootstrap.pg_hba, ...config.database.pg_hba],
    log,
  });
}

/** The DCS client: etcd (`etcd3`), or the in-process `memoryStore` when given. */
async function dcsOf(config: AgentConfig, memoryStore: InMemoryStore | undefined): Promise<Dcs> {
  const ttlSeconds = config.bootstrap.dcs.ttl;
  const { retryTimeoutMs } = timingOf(config.bootstrap.dcs);
  const dcsBase = { namespace: config.namespace, scope: config.scope, name: config.name, ttlSeconds, retryTimeoutMs };
  return memoryStore
    ? createDcs({ kind: 'memory', store: memoryStore, ...dcsBase })
    : createDcs({ kind: 'etcd3', ...(await etcdBackendOf(config.etcd3)), ...dcsBase });
}

/**
 * The fence (docs/ha.md "Fencing"): a separate process, armed while this member leads; none with
 * watchdog.mode off. Firings it logged while no agent listened (this agent was killed) are
 * journaled first. Started now, idle (and again whenever it ends): arming it before the leader
 * race is then one line on its pipe, not a process start. A failure here is retried at the first
 * arming.
 */
function startFence(config: AgentConfig, journal: Journal, log: Logger): ProcessFence | undefined {
  const fenceLog = join(dirname(config.database.data_dir), `${config.name}.fence.jsonl`);
  for (const f of takeFenceLog(fenceLog)) {
    const at = (f as { at?: string }).at ?? 'an unknown time';
    const text = `the fence stopped PostgreSQL at ${at} while no agent listened (${f.reason}): ${f.signals.join(' then ') || 'no signal needed'}, ${f.stopped ? 'stopped' : 'NOT stopped'} in ${f.tookMs} ms`;
    log.warn({ notice: 'watchdog.firedWhileAway' }, text);
    journal.append({ machine: 'ha', kind: 'event', event: { type: 'ha.watchdog.firedWhileAway', reason: text, at: Date.now() } });
  }
  const fence =
    config.watchdog.mode !== 'off'
      ? new ProcessFence({ dataDir: config.database.data_dir, logFile: fenceLog, warn: (text) => log.warn(text) })
      : undefined;
  fence?.start().catch((e: unknown) => log.warn({ err: e instanceof Error ? e.message : String(e) }, 'the fence process did not start'));
  return fence;
}

/** What the node is built with besides the configuration. */
interface NodeWiring {
  dcs: Dcs;
  pg: LocalPostgres;
  journal: Journal;
  log: Logger;
  fetchStatus: (apiUrl: string) => Promise<Record<string, unknown> | undefined>;
  /** The API security in force (replaced on reload). */
  security: () => ApiSecurity;
  settingsCatalogue?: SettingsCatalogue;
  fence?: ProcessFence;
}

/**
 * The archive settings of `config` as the node takes them: database.recovery_conf (written for
 * every replica) and the replica creation methods (docs/backups.md).
 */
function archiveSettings(config: AgentConfig): { recoveryConf: Record<string, string | number>; replicaMethods: ReplicaMethodsConfig } {
  const recoveryConf: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(config.database.recovery_conf)) if (v !== undefined) recoveryConf[k] = v;
  return {
    recoveryConf,
    replicaMethods: { list: config.database.create_replica_methods, sections: config.database.replica_methods },
  };
}

/** A custom bootstrap method section as it runs: `no_params`, and every other key but the options as `--key=value`. */
function bootstrapPlan(name: string, m: CustomBootstrapMethod, restoreCommand: string | undefined): BootstrapPlan {
  const args: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(m)) {
    if (['command', 'no_params', 'keep_existing_recovery_conf', 'recovery_conf'].includes(k)) continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') args[k] = v;
  }
  const recovery = targetedRecovery(m, restoreCommand);
  return {
    name,
    command: m.command,
    ...(m.no_params ? { noParams: true } : {}),
    ...(Object.keys(args).length ? { args } : {}),
    ...(recovery ? { recovery } : {}),
  };
}

/**
 * A custom bootstrap method's targeted recovery (patroni.md §3.10; docs/backups.md "Restoring to
 * a point in time"): its `recovery_conf` as PostgreSQL parameters, booleans as on/off, with
 * `recovery_target_action` promote unless given (the only one accepted) and the replicas'
 * `restore_command` (database.recovery_conf) unless it names its own; and
 * `keep_existing_recovery_conf`. Undefined when it has neither.
 */
export function targetedRecovery(m: CustomBootstrapMethod, restoreCommand: string | undefined): TargetedRecovery | undefined {
  const conf = m.recovery_conf;
  const keepExisting = m.keep_existing_recovery_conf === true;
  if (!conf && !keepExisting) return undefined;
  const parameters: Record<string, string | number> = {};
  if (conf) {
    for (const [k, v] of Object.entries(conf)) if (v !== undefined) parameters[k] = typeof v === 'boolean' ? (v ? 'on' : 'off') : v;
    parameters['recovery_target_action'] ??= 'promote';
    if (parameters['restore_command'] === undefined && restoreCommand !== undefined) parameters['restore_command'] = restoreCommand;
  }
  return { parameters, keepExisting };
}

/**
 * Whether `host:port` accepts a TCP connection within `timeoutMs` (closed at once; never rejects):
 * quorum failover's check that a leader's PostgreSQL is unreachable (docs/ha.md "Quorum failover").
 */
function tcpAnswers(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The HA node of `config`. */
function haNode(config: AgentConfig, w: NodeWiring): HaNode {
  const connect = parseHostPort(config.database.connect_address);
  const method = config.bootstrap.method;
  return new HaNode({
    name: config.name,
    scope: config.scope,
    version: VERSION,
    apiUrl: `${w.security().scheme}://${config.restapi.connect_address}/ha`,
    connUrl: `postgres://${connect.host}:${connect.port}/postgres`,
    tags: config.tags,
    bootstrapDcs: config.bootstrap.dcs as unknown as Record<string, unknown>,
    initdbOptions: config.bootstrap.initdb,
    ...(method !== 'initdb' && config.bootstrap.methods[method]
      ? {
          customBootstrapCommand: config.bootstrap.methods[method].command,
          customBootstrap: bootstrapPlan(method, config.bootstrap.methods[method], config.database.recovery_conf.restore_command),
        }
      : {}),
    localParameters: config.database.parameters,
    ...archiveSettings(config),
    trackProgress: true,
    // Receipts of discarded transactions beside the data directory: a re-clone does not touch them (docs/ha.md "Receipts").
    receiptStore: new FileReceiptStore(join(dirname(config.database.data_dir), `${config.name}.discarded`)),
    ...(config.database.callbacks ? { callbacks: config.database.callbacks } : {}),
    dcs: w.dcs,
    pg: w.pg,
    journal: w.journal,
    log: w.log,
    fetchStatus: w.fetchStatus,
    // No background probe: each HA cycle probes, and the API's readers of probe data (health
    // checks, GET /ha of peers, /metrics…) get a probe at most 1 s old on demand (issue 13).
    probeEveryMs: 0,
    // POST /failsafe to members, with the member client's TLS material and credentials (a POST needs them under restapi.authentication).
    postFailsafe: async (url, body, timeoutMs) => {
      const r = await requestApi(url, { ...w.security().memberClient, method: 'POST', body, timeoutMs });
      return r.reachable ? r.status : undefined;
    },
    ...(w.settingsCatalogue ? { settingsCatalogue: w.settingsCatalogue } : {}),
    // Quorum failover's watch: the leader's PostgreSQL checked by a TCP connect besides its agent.
    pgAnswers: tcpAnswers,
    watchdog: config.watchdog,
    ...(w.fence ? { fence: w.fence } : {}),
  });
}

/** The node API with the observation routes (/machines, /events, /ui) of `node`. */
function nodeApp(
  node: HaNode,
  journal: Journal,
  api: Pick<Parameters<typeof createNodeApp>[0], 'commands' | 'settingsCatalogue' | 'guard'>,
): Hono {
  const app = createNodeApp({ snapshot: () => node.snapshot(), ...api, fresh: () => node.freshProbe() });
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
  return app;
}

/** Serves `app` on restapi.listen (HTTPS with `tls`); resolves once it listens. */
function listen(app: Hono, address: string, tls: ApiSecurity['serverTls']): Promise<ServerType> {
  const { host, port } = parseHostPort(address);
  return new Promise((resolve, reject) => {
    const s = tls
      ? serve({ fetch: app.fetch, port, hostname: host, createServer: createHttpsServer, serverOptions: tls }, () => resolve(s))
      : serve({ fetch: app.fetch, port, hostname: host }, () => resolve(s));
    s.once('error', reject);
  });
}
