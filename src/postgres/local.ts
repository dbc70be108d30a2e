/**
 * LocalPostgres: the PgControl implementation for one local PostgreSQL 15 instance managed with
 * initdb / pg_ctl / pg_basebackup / pg_controldata (run as the `postgres` OS user when the agent is
 * root) and a postgres.js connection over the unix socket as the superuser. See docs/postgres.md.
 */
import { existsSync, watch } from 'node:fs';
import { chmod, mkdir, open, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import postgres from 'postgres';
import { dirname, join, resolve } from 'node:path';
import type { PgStatus } from '../domain/pg-status.ts';
import { renderConninfo, writeAgentConfig, type NodeConf } from './conf-files.ts';
import { bounded, classifyPgError, createLocalPool, PgUnreachableError, type Sql } from './connection.ts';
import { readControlData } from './controldata.ts';
import { runInitdb } from './initdb.ts';
import { assertPgCanReach, chownToPg, pgOsUser } from './os-user.ts';
import {
  isPostmasterAlive,
  pgCtlPromote,
  pgCtlReload,
  pgCtlStartNoWait,
  pgCtlStop,
  postmasterPidFileValue,
  readPostmasterPid,
  tailFile,
  waitForOldSharedMemory,
  type PgCtlTarget,
} from './pg-ctl.ts';
import {
  dataDirProblem,
  escalationWindows,
  identifyPostgres,
  isSameProcess,
  listenerOf,
  socketLockPostmaster,
  terminatePostmaster,
  PostmasterRunningError,
  type ProcIdentity,
} from './postmaster.ts';
import { runProbe } from './probe.ts';
import { PgToolError, runAsPg, runShellAsPg } from './run-as-pg.ts';
import { pgRewindMayRetry, RewindNotStartedError } from './rewind-error.ts';
import { planSlots } from './slots.ts';
import { quoteIdent, quoteLiteral } from './sql-quote.ts';
import type {
  CommandOptions,
  ConfigureOptions,
  ControlData,
  CopiedSlot,
  PgControl,
  PromotionMarker,
  RoleAuth,
  SlotInfo,
  Upstream,
  WalEnd,
} from './types.ts';
import { formatLsn, parseLsn } from '../domain/lsn.ts';
import type { WalRecord } from '../domain/discarded.ts';
import { readWalEnd, readWalRange } from './waldump.ts';

/** The promotion marker's file in the data directory (PgControl.readPromotion). */
const PROMOTION_FILE = 'ha.promotion.json';

/** Constructor options of LocalPostgres. */
export interface LocalPostgresOptions {
  /** Member name: application_name in primary_conninfo, slot names. */
  name: string;
  /** Cluster name (cluster_name, custom bootstrap --scope). */
  scope: string;
  dataDir: string;
  /** Directory of initdb, pg_ctl, pg_basebackup, pg_controldata (see detectBinDir). */
  binDir: string;
  /** listen_addresses and port. */
  listen: { host: string; port: number };
  /** unix_socket_directories; created 0700 and owned by the PostgreSQL user. */
  socketDir: string;
  superuser: RoleAuth;
  replication: RoleAuth;
  /** Extra pg_hba lines, appended after the agent's. */
  pgHba: string[];
  /** Server log; default `<dataDir>/../<name>.log`. */
  logFile?: string;
  /** The replication user's password file primary_conninfo names; default `<dataDir>/../<name>.pgpass`. */
  passfile?: string;
  /** Told when a stop has to escalate by PID (pino-compatible `warn(obj, msg)`), and how long a rewind's steps took (`info`); optional. */
  log?: { warn(obj: object, msg: string): void; info?(obj: object, msg: string): void };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Default bound of query() and of each internal statement, ms. */
const DEFAULT_QUERY_TIMEOUT_MS = 60_000;

/** The local PostgreSQL instance. Methods reject with errors carrying a `code` (see connection.ts, run-as-pg.ts). */
export class LocalPostgres implements PgControl {
  readonly dataDir: string;
  readonly logFile: string;
  private readonly node: NodeConf;
  private readonly binDir: string;
  private sql: Sql | undefined;
  /**
   * The postmaster this agent last saw run for this node (PID + start time), kept in memory so it
   * can be stopped by PID even when postmaster.pid is gone (data directory wiped under it).
   */
  private known: ProcIdentity | undefined;
  /** The last walEnd() answer and what it was read from (pg_controldata fields and pg_wal's files). */
  private walEndCache: { key: string; value: WalEnd | Error } | undefined;

  constructor(private readonly opts: LocalPostgresOptions) {
    this.dataDir = resolve(opts.dataDir);
    this.binDir = opts.binDir;
    this.logFile = resolve(opts.logFile ?? join(dirname(this.dataDir), `${opts.name}.log`));
    this.node = {
      name: opts.name,
      scope: opts.scope,
      dataDir: this.dataDir,
      listen: opts.listen,
      socketDir: resolve(opts.socketDir),
      superuser: opts.superuser,
      replication: opts.replication,
      pgHba: opts.pgHba,
      passfile: resolve(opts.passfile ?? join(dirname(this.dataDir), `${opts.name}.pgpass`)),
    };
  }

  private get target(): PgCtlTarget {
    return { binDir: this.binDir, dataDir: this.dataDir, logFile: this.logFile };
  }

  private pool(): Sql {
    this.sql ??= createLocalPool({
      socketDir: this.node.socketDir,
      port: this.opts.listen.port,
      username: this.opts.superuser.username,
      password: this.opts.superuser.password,
      applicationName: 'ha-probe',
      connectTimeoutSeconds: 2,
      statementTimeoutMs: DEFAULT_QUERY_TIMEOUT_MS,
    });
    return this.sql;
  }

  /** Drops the pool (after a timeout the single connection may be stuck); the next call makes a new one. */
  private resetPool(): void {
    const old = this.sql;
    this.sql = undefined;
    old?.end({ timeout: 0 }).catch(() => undefined);
  }

  /**
   * Creates the data dir (0700) and the socket dir (0700), owned by the PostgreSQL user, after
   * checking that the PostgreSQL user can reach them (assertPgCanReach).
   */
  private async ensureDirs(): Promise<void> {
    for (const d of [this.dataDir, this.node.socketDir]) await assertPgCanReach(d);
    for (const d of [this.dataDir, this.node.socketDir]) {
      // Parents get the default mode (they must stay traversable by the PostgreSQL user).
      await mkdir(dirname(d), { recursive: true });
      await mkdir(d, { recursive: true, mode: 0o700 });
      await chmod(d, 0o700);
      await chownToPg(d);
    }
  }

  /** Creates the log file if missing and gives it to the PostgreSQL user (pg_ctl opens it as that user). */
  private async ensureLogFile(): Promise<void> {
    await mkdir(dirname(this.logFile), { recursive: true });
    const fh = await open(this.logFile, 'a', 0o600);
    await fh.close();
    await chownToPg(this.logFile);
  }

  async readPromotion(): Promise<PromotionMarker | undefined> {
    try {
      const v = JSON.parse(await readFile(join(this.dataDir, PROMOTION_FILE), 'utf8')) as Partial<PromotionMarker>;
      return typeof v.timeline === 'number' && typeof v.member === 'string' && typeof v.atMs === 'number'
        ? { timeline: v.timeline, member: v.member, atMs: v.atMs }
        : undefined;
    } catch {
      return undefined;
    }
  }

  async writePromotion(marker: PromotionMarker): Promise<void> {
    const file = join(this.dataDir, PROMOTION_FILE);
    await writeFile(file, JSON.stringify(marker), { mode: 0o600 });
    // pg_basebackup reads it as the postgres user on the source.
    await chownToPg(file);
  }

  async removePromotion(): Promise<void> {
    await rm(join(this.dataDir, PROMOTION_FILE), { force: true });
  }

  async hasStandbySignal(): Promise<boolean> {
    return existsSync(join(this.dataDir, 'standby.signal'));
  }

  async readTimelineHistory(timeline: number): Promise<string> {
    return readFile(join(this.dataDir, 'pg_wal', `${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`), 'utf8');
  }

  async hasData(): Promise<boolean> {
    return existsSync(join(this.dataDir, 'PG_VERSION'));
  }

  controlData(): Promise<ControlData> {
    return readControlData(this.binDir, this.dataDir);
  }

  async initdb(options: string[]): Promise<void> {
    await this.ensureDirs();
    await runInitdb({ binDir: this.binDir, dataDir: this.dataDir, superuser: this.opts.superuser, options });
  }

  /**
   * Sets the superuser's password and creates (or updates) the replication role with
   * REPLICATION LOGIN and its password. Idempotent. Requires a running primary.
   */
  async postBootstrap(): Promise<void> {
    const su = this.opts.superuser;
    const repl = this.opts.replication;
    await this.query(`ALTER ROLE ${quoteIdent(su.username)} WITH PASSWORD ${quoteLiteral(su.password)}`);
    if (repl.username === su.username) {
      await this.query(`ALTER ROLE ${quoteIdent(su.username)} WITH REPLICATION LOGIN`);
      return;
    }
    const exists = await this.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_roles WHERE rolname = ${quoteLiteral(repl.username)}`,
    );
    const verb = (exists[0]?.n ?? 0) > 0 ? 'ALTER' : 'CREATE';
    await this.query(`${verb} ROLE ${quoteIdent(repl.username)} WITH REPLICATION LOGIN PASSWORD ${quoteLiteral(repl.password)}`);
  }

  /**
   * `<command> --scope=<scope> --datadir=<data directory>` (without them: `noParams`), then
   * `args` as `--<key>=<value>`, through /bin/sh as the PostgreSQL OS user, with HA_SCOPE,
   * HA_NAME and HA_DATADIR in its environment.
   */
  async customBootstrap(
    command: string,
    opts: { noParams?: boolean; args?: Record<string, string | number | boolean>; onOutput?: (text: string) => void } = {},
  ): Promise<void> {
    await this.ensureDirs();
    const words = opts.noParams ? [] : [`--scope=${this.opts.scope}`, `--datadir=${this.dataDir}`];
    for (const [k, v] of Object.entries(opts.args ?? {})) words.push(`--${k}=${String(v)}`);
    const line = [command, ...words.map(shellQuote)].join(' ');
    await runShellAsPg(line, { env: this.commandEnv(), ...(opts.onOutput ? { onOutput: opts.onOutput } : {}) });
  }

  /** The environment of an operator's command: HA_SCOPE, HA_NAME, HA_DATADIR (docs/backups.md). */
  private commandEnv(extra: Record<string, string> = {}): Record<string, string> {
    return { HA_SCOPE: this.opts.scope, HA_NAME: this.opts.name, HA_DATADIR: this.dataDir, ...extra };
  }

  /** PgControl.runCommand: /bin/sh -c as the PostgreSQL OS user, HA_* (commandEnv) and `opts.env` in its environment. */
  async runCommand(commandLine: string, opts: CommandOptions = {}): Promise<void> {
    await this.ensureDirs();
    const env = this.commandEnv({
      ...(opts.env ?? {}),
      ...(opts.replicationPassword ? { PGPASSWORD: this.opts.replication.password } : {}),
    });
    await runShellAsPg(commandLine, { env, ...(opts.onOutput ? { onOutput: opts.onOutput } : {}) });
  }

  /** PgControl.sourceConninfo: host, port, the replication user and dbname=postgres; no password. */
  sourceConninfo(from: Upstream): string {
    return renderConninfo([
      ['host', from.host],
      ['port', String(from.port)],
      ['user', this.opts.replication.username],
      ['dbname', 'postgres'],
    ]);
  }

  async configure(opts: ConfigureOptions): Promise<void> {
    await this.ensureDirs();
    await writeAgentConfig(this.node, opts);
  }

  /**
   * pg_ctl start -w (skipped when a postmaster of this data directory already runs), then waits
   * until a query over the unix socket succeeds. A postmaster of this node that lost its
   * postmaster.pid (data directory wiped or replaced under it) is stopped by PID first.
   * @throws PgToolError (pg_ctl failed, with the log tail); PgUnreachableError when the socket does
   *         not answer before `timeoutMs`.
   */
  async start(timeoutMs: number, opts?: { beforeLaunch?: () => void }): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await this.ensureDirs();
    await this.ensureLogFile();
    // Already running (e.g. agent restarted): only wait for the socket.
    const started = Date.now();
    const running = readPostmasterPid(this.dataDir);
    const launched = running === undefined;
    if (launched) {
      if (this.knownPostmaster()) {
        await this.stop(dataDirProblem(this.dataDir) ? 'immediate' : 'fast', Math.min(30_000, Math.max(1000, deadline - Date.now())));
      }
      await waitForOldSharedMemory(this.dataDir, Math.min(10_000, timeoutMs));
      // A crashed postmaster can linger as a zombie until PID 1 reaps it; PostgreSQL's own lock
      // file check would take it for a live server and refuse to start. Its shared memory has no
      // attached process (checked above), so the stale pid file can go.
      await rm(join(this.dataDir, 'postmaster.pid'), { force: true });
      await this.removeStaleSocketLock();
      // The last check, with no await between it and the launch (finding 16).
      opts?.beforeLaunch?.();
      await pgCtlStartNoWait(this.target, timeoutMs);
    } else {
      this.remember(running);
    }
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        await this.query('SELECT 1', Math.max(200, Math.min(2000, deadline - Date.now())));
        const pid = readPostmasterPid(this.dataDir);
        if (pid !== undefined) this.remember(pid);
        return;
      } catch (e) {
        last = e;
        if (!(e instanceof PgUnreachableError)) throw e;
        // The postmaster writes its pid file at once; gone after that means it exited (bad
        // configuration, shared memory still held by a crashed server's children, …).
        if (launched && Date.now() - started > 1000 && readPostmasterPid(this.dataDir) === undefined) {
          const log = await tailFile(this.target.logFile);
          throw new PgUnreachableError(`PostgreSQL exited during start-up${log ? `; server log:\n${log}` : ''}`, 'refused');
        }
        await sleep(20);
      }
    }
    throw new PgUnreachableError(
      `PostgreSQL started but does not answer on ${this.node.socketDir} within ${timeoutMs} ms: ${String(last)}`,
      'timeout',
    );
  }

  /** Removes `.s.PGSQL.<port>.lock` when the postmaster it names is gone (or a zombie). */
  private async removeStaleSocketLock(): Promise<void> {
    const lock = join(this.node.socketDir, `.s.PGSQL.${this.opts.listen.port}.lock`);
    let pid: number;
    try {
      pid = Number((await readFile(lock, 'utf8')).split('\n', 1)[0]);
    } catch {
      return;
    }
    if (Number.isInteger(pid) && pid > 0 && isPostmasterAlive(pid)) return;
    await rm(lock, { force: true });
    await rm(join(this.node.socketDir, `.s.PGSQL.${this.opts.listen.port}`), { force: true });
  }

  /**
   * Stops the postmaster of this node and resolves once it has exited; no-op when none runs.
   * `pg_ctl stop -m <mode>` while postmaster.pid names it; when that fails, or the pid file is gone
   * (data directory wiped under a running server), the remembered PID is signalled directly.
   * A postmaster outliving its window is escalated: fast → SIGQUIT → SIGKILL, immediate →
   * SIGKILL (see escalationWindows), so no postmaster of ours is left behind. `fast` becomes
   * `immediate` when the data directory is gone (no checkpoint can be written).
   * @throws Error only when the postmaster survives SIGKILL, or when postmaster.pid names a
   *         process not owned by the PostgreSQL user that pg_ctl could not stop.
   */
  async stop(requested: 'fast' | 'immediate', timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const filePid = readPostmasterPid(this.dataDir);
    const id = this.knownPostmaster();
    if (filePid === undefined && !id) return;
    this.resetPool();
    // A fast shutdown writes a checkpoint: pointless (and slow to fail) without a data directory.
    const mode = requested === 'fast' && dataDirProblem(this.dataDir) ? 'immediate' : requested;
    let signalled = false;
    if (filePid !== undefined) {
      try {
        await pgCtlStop(this.target, mode, Math.min(timeoutMs, 15_000));
        signalled = id?.pid === filePid;
      } catch (e) {
        // Ours (identified): signalled by PID below. Otherwise pg_ctl was the only way.
        if (id?.pid !== filePid && readPostmasterPid(this.dataDir) !== undefined) throw e;
      }
      if (id?.pid !== filePid) {
        // postmaster.pid names a process we could not identify as ours: only pg_ctl's signal.
        while (readPostmasterPid(this.dataDir) === filePid) {
          if (Date.now() > deadline) throw new Error(`postmaster ${filePid} still alive ${timeoutMs} ms after pg_ctl stop -m ${mode}`);
          await sleep(5);
        }
      }
    }
    if (!id) return;
    await terminatePostmaster(id, {
      mode,
      signalled,
      ...escalationWindows(mode, deadline - Date.now()),
      onEscalate: (signal, pid) =>
        this.opts.log?.warn({ pid, signal, mode }, `postmaster ${pid} outlived the ${mode} shutdown: sending ${signal}`),
    });
    if (this.known?.pid === id.pid) this.known = undefined;
  }

  /**
   * Before the data directory is written (clone): stops any postmaster this node knows of
   * (postmaster.pid, the remembered PID, the socket lock file naming this data directory) with
   * `immediate`, then makes sure nothing else answers on the node's port or unix socket.
   * @throws PostmasterRunningError when something still listens there (not ours: never killed).
   */
  async ensureNoPostmaster(timeoutMs = 30_000): Promise<void> {
    if (readPostmasterPid(this.dataDir) !== undefined || this.knownPostmaster()) await this.stop('immediate', timeoutMs);
    const problem = await this.liveServerProblem();
    if (problem) throw new PostmasterRunningError(`refusing to write into data directory ${this.dataDir}: ${problem}`);
  }

  /** Why the data directory cannot be written now (a server of this node runs or holds its port/socket); undefined when it can. */
  private async liveServerProblem(): Promise<string | undefined> {
    const pid = readPostmasterPid(this.dataDir);
    if (pid !== undefined) return `postmaster ${pid} of this data directory is running`;
    const known = this.knownPostmaster();
    if (known) return `postmaster ${known.pid} of this node is still running`;
    const listener = await listenerOf(this.opts.listen, this.node.socketDir);
    return listener ? `${listener}: a server the agent does not know as its postmaster; stop it first` : undefined;
  }

  /** Why the data directory no longer holds the cluster (gone, PG_VERSION or global/pg_control missing); undefined when it does. */
  dataDirProblem(): string | undefined {
    return dataDirProblem(this.dataDir);
  }

  /** The PostgreSQL OS user's uid (undefined when it cannot be determined). */
  private pgUid(): number | undefined {
    try {
      return pgOsUser().uid;
    } catch {
      return undefined;
    }
  }

  /** Remembers the postmaster `pid` (from postmaster.pid) by identity, when it is a postgres process of the PostgreSQL user. */
  private remember(pid: number): void {
    if (this.known?.pid === pid && isSameProcess(this.known)) return;
    const id = identifyPostgres(pid, this.pgUid());
    if (id) this.known = id;
  }

  /**
   * A live postmaster of this node, identified: the one postmaster.pid names, else the remembered
   * one while it is still that process, else the one the socket lock file names for this data
   * directory (an agent restarted after the data directory was wiped).
   */
  private knownPostmaster(): ProcIdentity | undefined {
    const pid = readPostmasterPid(this.dataDir);
    if (pid !== undefined) {
      this.remember(pid);
      if (this.known?.pid === pid) return this.known;
    }
    if (this.known && !isSameProcess(this.known)) this.known = undefined;
    if (this.known) return this.known;
    const lock = socketLockPostmaster(join(this.node.socketDir, `.s.PGSQL.${this.opts.listen.port}.lock`), this.dataDir, this.pgUid());
    if (lock) this.known = lock;
    return lock;
  }

  /**
   * `SELECT pg_promote(true, <s>)`; when that fails or returns false, `pg_ctl promote -w`. Resolves
   * once pg_is_in_recovery() is false (no-op on a primary).
   * @throws PgUnreachableError / PgToolError; Error when still in recovery after `timeoutMs`.
   */
  async promote(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const inRecovery = async () =>
      (await this.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r', Math.max(500, deadline - Date.now())))[0]?.r ?? true;
    if (!(await inRecovery())) return;
    // pg_promote(wait => true) polls only every 100 ms; ask without waiting and poll faster.
    let asked = false;
    try {
      asked = (await this.query<{ ok: boolean }>('SELECT pg_promote(false) AS ok', Math.max(500, deadline - Date.now())))[0]?.ok === true;
    } catch {
      asked = false;
    }
    if (!asked && (await inRecovery())) await pgCtlPromote(this.target, Math.max(1000, deadline - Date.now()));
    while (await inRecovery()) {
      if (Date.now() > deadline) throw new Error(`still in recovery ${timeoutMs} ms after promote`);
      await sleep(5);
    }
  }

  reload(): Promise<void> {
    return pgCtlReload(this.target);
  }

  /**
   * pg_basebackup -D dataDir -X stream --checkpoint=fast from `from` as the replication user
   * (PGPASSWORD, --no-password). The data directory must be empty and no server of this node may
   * run (see ensureNoPostmaster); on failure its content is removed.
   * @throws PostmasterRunningError when a postmaster of this node runs or its port/socket answers;
   *         Error when the data directory is not empty (nothing is touched in both cases);
   *         PgToolError with pg_basebackup's stderr.
   */
  async basebackup(from: Upstream, opts: { onOutput?: (text: string) => void } = {}): Promise<void> {
    await this.ensureDirs();
    const running = await this.liveServerProblem();
    if (running)
      throw new PostmasterRunningError(
        `basebackup: refusing to write into data directory ${this.dataDir}: ${running} (ensureNoPostmaster() first)`,
      );
    if ((await readdir(this.dataDir)).length > 0) {
      throw new Error(`basebackup: data directory ${this.dataDir} is not empty (removeData() first)`);
    }
    try {
      await runAsPg(
        join(this.binDir, 'pg_basebackup'),
        [
          '-D',
          this.dataDir,
          '-X',
          'stream',
          '-h',
          from.host,
          '-p',
          String(from.port),
          '-U',
          this.opts.replication.username,
          '--checkpoint=fast',
          '--no-password',
          // No fsync here: a base backup's pg_control says "in production", so PostgreSQL fsyncs
          // the whole data directory when it first starts (StartupXLOG → SyncDataDirectory).
          '--no-sync',
          // "copied/total kB (N%)" as it goes: the clone's progress in /ha (docs/backups.md "Progress").
          '--progress',
        ],
        {
          env: { PGPASSWORD: this.opts.replication.password, PGAPPNAME: `${this.opts.name}-basebackup`, PGCONNECT_TIMEOUT: '10' },
          ...(opts.onOutput ? { onOutput: opts.onOutput } : {}),
        },
      );
    } catch (e) {
      await this.removeData();
      throw e;
    }
    await chmod(this.dataDir, 0o700);
  }

  /**
   * pg_rewind of the stopped data directory from `from` (see PgControl.rewind): refuses while a
   * server of this node runs; checks wal_log_hints / data checksums in pg_controldata; brings a
   * data directory that was not shut down cleanly to a clean state by single-user crash recovery;
   * then `pg_rewind --target-pgdata=<data> --source-server='host port user dbname'` as the
   * superuser (PGPASSWORD). pg_rewind's own output is returned in the error when it fails.
   * @throws PostmasterRunningError; Error (no wal_log_hints nor checksums); PgToolError
   *         (single-user recovery or pg_rewind failed, with its stderr).
   */
  async rewind(from: Upstream, opts: { onOutput?: (text: string) => void } = {}): Promise<void> {
    const running = await this.liveServerProblem();
    if (running) throw new RewindNotStartedError(`pg_rewind: refusing to rewrite data directory ${this.dataDir}: ${running}`);
    const cd = await this.controlData();
    if (cd.walLogHints === false && (cd.dataChecksumVersion ?? 0) === 0) {
      throw new Error(`pg_rewind: data directory ${this.dataDir} has neither wal_log_hints = on nor data checksums: it cannot be rewound`);
    }
    const t0 = Date.now();
    if (cd.clusterState !== 'shut down' && cd.clusterState !== 'shut down in recovery') await this.singleUserRecovery(cd.clusterState);
    const t1 = Date.now();
    await this.checkpointOn(from);
    const t2 = Date.now();
    const { stdout, stderr } = await this.runPgRewind(from, opts.onOutput);
    await chmod(this.dataDir, 0o700);
    const outcome = /no rewind required/.test(stdout + stderr) ? 'no rewind required' : 'rewound';
    const copy = /need to copy (\d+) MB \(total source directory size is (\d+) MB\)/.exec(stdout + stderr);
    this.opts.log?.info?.(
      {
        source: from.name,
        crashRecoveryMs: t1 - t0,
        sourceCheckpointMs: t2 - t1,
        pgRewindMs: Date.now() - t2,
        state: cd.clusterState,
        ...(copy ? { copiedMb: Number(copy[1]), sourceMb: Number(copy[2]) } : {}),
      },
      `pg_rewind from ${from.name}: ${outcome}`,
    );
  }

  /**
   * Runs pg_rewind from `from` (see rewind()). A failure on the source before pg_rewind changed
   * the target (pgRewindMayRetry: the source could not be reached, the connection was lost while
   * the file lists were compared) is a RewindNotStartedError, which the agent may retry; any other
   * failure is pg_rewind's PgToolError.
   */
  private async runPgRewind(from: Upstream, onOutput?: (text: string) => void): Promise<{ stdout: string; stderr: string }> {
    try {
      return await runAsPg(
        join(this.binDir, 'pg_rewind'),
        [
          `--target-pgdata=${this.dataDir}`,
          // --progress: pg_rewind then says how much it copies ("need to copy N MB (total source directory size is M MB)").
          '--progress',
          `--source-server=${renderConninfo([
            ['host', from.host],
            ['port', String(from.port)],
            ['user', this.opts.superuser.username],
            ['dbname', 'postgres'],
            ['connect_timeout', '10'],
            ['application_name', `${this.opts.name}-rewind`],
          ])}`,
        ],
        { env: { PGPASSWORD: this.opts.superuser.password, LC_ALL: 'C', LANG: 'C' }, ...(onOutput ? { onOutput } : {}) },
      );
    } catch (e) {
      const output = e instanceof PgToolError ? e.stderr : '';
      if (e instanceof PgToolError && e.exitCode !== null && pgRewindMayRetry(output)) {
        throw new RewindNotStartedError(`${e.message} (the target data directory was not changed)`);
      }
      throw e;
    }
  }

  /**
   * CHECKPOINT on the rewind source: right after a promotion its control file still names the
   * old timeline until the first checkpoint, and pg_rewind reads the source's timeline from there
   * (the reference waits for the leader's post-promotion checkpoint for the same reason). A
   * failure here is left to pg_rewind to report.
   */
  private async checkpointOn(from: Upstream): Promise<void> {
    const sql = createLocalPool({
      socketDir: from.host,
      port: from.port,
      username: this.opts.superuser.username,
      password: this.opts.superuser.password,
      applicationName: `${this.opts.name}-rewind`,
      connectTimeoutSeconds: 10,
      statementTimeoutMs: 300_000,
    });
    try {
      await bounded(sql.unsafe('CHECKPOINT') as never, 300_000);
    } catch (e) {
      this.opts.log?.warn({ source: from.name, err: String(e) }, 'CHECKPOINT on the rewind source failed');
    } finally {
      await sql.end({ timeout: 1 }).catch(() => undefined);
    }
  }

  /**
   * Crash recovery in single-user mode, as the reference does before pg_rewind (PostgreSQL 15's
   * pg_rewind refuses a target that was not shut down cleanly): `postgres --single -D <data>
   * -c archive_mode=on -c archive_command=false postgres < /dev/null`. The signal files are removed
   * first (single-user mode does not support standby mode; the replica configuration is written
   * again after the rewind); archive_mode=on with a failing archive_command keeps every WAL
   * segment the recovery's checkpoint would otherwise recycle, which pg_rewind reads back to the
   * last common checkpoint.
   */
  private async singleUserRecovery(state: string): Promise<void> {
    // A crashed postmaster's children may still hold its shared memory for a moment.
    await waitForOldSharedMemory(this.dataDir, 10_000);
    await rm(join(this.dataDir, 'standby.signal'), { force: true });
    await rm(join(this.dataDir, 'recovery.signal'), { force: true });
    await rm(join(this.dataDir, 'postmaster.pid'), { force: true });
    try {
      await runAsPg(
        join(this.binDir, 'postgres'),
        ['--single', '-D', this.dataDir, '-c', 'archive_mode=on', '-c', 'archive_command=false', 'postgres'],
        {
          env: { LC_ALL: 'C', LANG: 'C' },
        },
      );
    } catch (e) {
      throw new Error(
        `crash recovery in single-user mode (cluster state was '${state}') failed before pg_rewind: ${String(e instanceof Error ? e.message : e)}`,
      );
    }
    const after = await this.controlData();
    if (after.clusterState !== 'shut down') {
      throw new Error(
        `crash recovery in single-user mode left the cluster state '${after.clusterState}', not 'shut down': pg_rewind would refuse it`,
      );
    }
  }

  /**
   * PgControl.walEnd: readWalEnd (src/postgres/waldump.ts) on this data directory, refused while a
   * postmaster of this node runs (its WAL moves). The answer (or the error) is kept while
   * pg_controldata and pg_wal's files (names, sizes, modification times) stay the same: a stopped
   * member asks every cycle, and nothing writes its WAL meanwhile.
   * @throws PostmasterRunningError; Error when pg_controldata or the WAL cannot be read.
   */
  async walEnd(): Promise<WalEnd> {
    const running = readPostmasterPid(this.dataDir);
    if (running !== undefined)
      throw new PostmasterRunningError(`not reading where the WAL ends: postmaster ${running} of this data directory is running`);
    const cd = await this.controlData();
    const walDir = join(this.dataDir, 'pg_wal');
    const files: string[] = [];
    for (const name of (await readdir(walDir)).sort()) {
      const st = await stat(join(walDir, name)).catch(() => undefined);
      if (st?.isFile()) files.push(`${name}:${st.size}:${st.mtimeMs}`);
    }
    const key = [
      cd.systemIdentifier,
      cd.clusterState,
      cd.checkpointLsn,
      cd.redoLsn,
      cd.checkpointTimeline,
      cd.minRecoveryLsn,
      ...files,
    ].join('|');
    const cached = this.walEndCache;
    if (cached?.key === key) {
      if (cached.value instanceof Error) throw cached.value;
      return cached.value;
    }
    try {
      const value = await readWalEnd(
        { binDir: this.binDir, dataDir: this.dataDir },
        {
          redoLsn: cd.redoLsn ?? cd.checkpointLsn,
          checkpointTimeline: cd.checkpointTimeline,
          ...(cd.walGeometry ? { geometry: cd.walGeometry } : {}),
        },
      );
      this.walEndCache = { key, value };
      return value;
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      this.walEndCache = { key, value: err };
      throw err;
    }
  }

  /** PgControl.readWalRange: pg_waldump over [fromLsn, toLsn) of `timeline` (src/postgres/waldump.ts readWalRange). */
  readWalRange(timeline: number, fromLsn: bigint, toLsn: bigint | undefined, onRecord: (r: WalRecord) => void): Promise<void> {
    return readWalRange({ binDir: this.binDir, dataDir: this.dataDir, timeoutMs: 600_000 }, timeline, fromLsn, toLsn, onRecord);
  }

  /**
   * PgControl.relationNames: on `from` (the superuser over TCP), the databases by OID, then in each
   * database named by a path `pg_filenode_relation(tablespace, relfilenode)` for the paths of that
   * database (tablespace 1663, pg_default, is passed as 0 as the function wants). Every failure is
   * swallowed: names are a convenience of the receipt, never a reason to hold a rejoin.
   */
  async relationNames(from: Upstream, paths: string[]): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const parsed = paths
      .map((p) => p.split('/').map(Number) as [number, number, number])
      .filter((x) => x.length === 3 && x.every(Number.isInteger));
    if (parsed.length === 0) return out;
    const connect = (database: string) =>
      postgres({
        host: from.host,
        port: from.port,
        user: this.opts.superuser.username,
        password: this.opts.superuser.password,
        database,
        max: 1,
        connect_timeout: 5,
        idle_timeout: 5,
        fetch_types: false,
        prepare: false,
        onnotice: () => undefined,
        connection: { application_name: `${this.opts.name}-receipt`, statement_timeout: 10_000 },
      });
    const dbs = new Map<number, string>();
    const main = connect('postgres');
    try {
      const rows = await bounded<{ oid: string; datname: string }[]>(
        main.unsafe('SELECT oid::text AS oid, datname FROM pg_database WHERE datallowconn') as never,
        15_000,
      );
      for (const r of rows) dbs.set(Number(r.oid), r.datname);
    } catch {
      return out;
    } finally {
      await main.end({ timeout: 1 }).catch(() => undefined);
    }
    for (const [oid, datname] of dbs) {
      const mine = parsed.filter((p) => p[1] === oid);
      if (mine.length === 0) continue;
      const sql = connect(datname);
      try {
        const values = mine.map(([ts, , rel]) => `(${ts === 1663 ? 0 : ts}::oid, ${rel}::oid, '${ts}/${oid}/${rel}')`).join(', ');
        const rows = await bounded<{ path: string; name: string | null }[]>(
          sql.unsafe(
            `SELECT v.path, pg_filenode_relation(v.ts, v.rel)::regclass::text AS name FROM (VALUES ${values}) AS v(ts, rel, path)`,
          ) as never,
          15_000,
        );
        for (const r of rows) if (r.name) out[r.path] = `${datname}.${r.name}`;
      } catch {
        /* best effort */
      } finally {
        await sql.end({ timeout: 1 }).catch(() => undefined);
      }
    }
    return out;
  }

  /** Removes everything inside the data directory (the directory itself stays, 0700, owned by the PostgreSQL user). */
  async removeData(): Promise<void> {
    if (!existsSync(this.dataDir)) return;
    for (const entry of await readdir(this.dataDir)) await rm(join(this.dataDir, entry), { recursive: true, force: true });
  }

  /**
   * PID of the live postmaster of this node: the one postmaster.pid names (remembered), else the
   * remembered one while it is still that process (its pid file was removed under it).
   */
  async postmasterPid(): Promise<number | undefined> {
    // The common case, every cycle: the file names the postmaster already identified, and one read
    // of its /proc stat (same start time, not a zombie) shows it is still that process.
    const named = postmasterPidFileValue(this.dataDir);
    if (named !== undefined && this.known?.pid === named && isSameProcess(this.known)) return named;
    const pid = named !== undefined && isPostmasterAlive(named) ? named : undefined;
    if (pid !== undefined) {
      this.remember(pid);
      return pid;
    }
    if (this.known && !isSameProcess(this.known)) this.known = undefined;
    return this.known?.pid;
  }

  /**
   * The crash watcher's connection (PgControl.openWatchConnection): a pool of its own (max 1, never
   * idle-closed, application_name `ha-watch`) over the unix socket; `onClosed` once when its
   * connection ends after it answered `SELECT 1`.
   */
  async openWatchConnection(onClosed: () => void, timeoutMs: number): Promise<() => void> {
    let open = false;
    let closed = false;
    const sql = createLocalPool({
      socketDir: this.node.socketDir,
      port: this.opts.listen.port,
      username: this.opts.superuser.username,
      password: this.opts.superuser.password,
      applicationName: 'ha-watch',
      connectTimeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
      statementTimeoutMs: DEFAULT_QUERY_TIMEOUT_MS,
      idleTimeoutSeconds: 0,
      onClose: () => {
        if (!open || closed) return;
        closed = true;
        sql.end({ timeout: 0 }).catch(() => undefined);
        onClosed();
      },
    });
    const close = () => {
      closed = true;
      sql.end({ timeout: 0 }).catch(() => undefined);
    };
    try {
      await bounded(sql`SELECT 1` as never, timeoutMs);
    } catch (e) {
      close();
      throw e;
    }
    open = true;
    return close;
  }

  /** PgControl.watchDataDir: fs.watch on the data directory (not recursive, not keeping the process alive). */
  watchDataDir(onChange: (ended: boolean) => void): () => void {
    let ended = false;
    const w = watch(this.dataDir, { persistent: false });
    const end = () => {
      if (ended) return;
      ended = true;
      w.close();
      onChange(true);
    };
    w.on('change', () => {
      if (ended) return;
      // The directory itself gone (removed or renamed): the watch is bound to the old inode.
      if (!existsSync(this.dataDir)) end();
      else onChange(false);
    });
    w.on('error', end);
    return () => {
      ended = true;
      w.close();
    };
  }

  /**
   * One round trip (see probe.ts), bounded by `timeoutMs`.
   * @throws PgUnreachableError (code 'pg_unreachable') when PostgreSQL does not answer;
   *         PgQueryError (code 'pg_query_failed') when it answers with an error.
   */
  probe(timeoutMs: number): Promise<PgStatus> {
    return runProbe(this.pool(), timeoutMs, () => this.resetPool());
  }

  /**
   * Creates missing physical slots (immediately reserving WAL) and drops unlisted inactive ones.
   * Active unlisted slots are kept (they cannot be dropped while a walsender uses them).
   */
  async syncSlots(names: string[]): Promise<void> {
    const existing = await this.query<{ name: string; active: boolean }>(
      "SELECT slot_name AS name, active FROM pg_replication_slots WHERE slot_type = 'physical'",
    );
    const plan = planSlots(existing, names);
    for (const name of plan.create) {
      await this.query(
        `SELECT pg_create_physical_replication_slot(${quoteLiteral(name)}, true) WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(name)})`,
      );
    }
    for (const name of plan.drop) {
      await this.query(
        `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(name)} AND NOT active`,
      );
    }
  }

  async listSlots(): Promise<SlotInfo[]> {
    const rows = await this.query<{
      name: string;
      type: string;
      database: string | null;
      plugin: string | null;
      active: boolean;
      restart_lsn: string | null;
      confirmed_flush: string | null;
    }>(
      `SELECT slot_name AS name, slot_type AS type, database, plugin, active, restart_lsn::text AS restart_lsn, confirmed_flush_lsn::text AS confirmed_flush
         FROM pg_replication_slots ORDER BY slot_name`,
    );
    return rows.map((r) => ({
      name: r.name,
      type: r.type === 'logical' ? 'logical' : 'physical',
      ...(r.database ? { database: r.database } : {}),
      ...(r.plugin ? { plugin: r.plugin } : {}),
      active: r.active,
      ...(r.restart_lsn ? { restartLsn: parseLsn(r.restart_lsn) } : {}),
      ...(r.confirmed_flush ? { confirmedFlush: parseLsn(r.confirmed_flush) } : {}),
    }));
  }

  async createPhysicalSlot(name: string): Promise<void> {
    await this.query(
      `SELECT pg_create_physical_replication_slot(${quoteLiteral(name)}, true) WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(name)})`,
    );
  }

  async createLogicalSlot(name: string, database: string, plugin: string): Promise<void> {
    await this.inDatabase(database, (q) =>
      q(
        `SELECT pg_create_logical_replication_slot(${quoteLiteral(name)}, ${quoteLiteral(plugin)}) WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(name)})`,
      ),
    );
  }

  async dropSlot(name: string): Promise<void> {
    await this.query(
      `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(name)} AND NOT active`,
    );
  }

  async advanceSlot(name: string, lsn: bigint, database?: string): Promise<bigint | undefined> {
    const sql = `SELECT end_lsn::text AS end_lsn FROM pg_replication_slot_advance(${quoteLiteral(name)}, ${quoteLiteral(formatLsn(lsn))}::pg_lsn)`;
    const rows = database
      ? await this.inDatabase(database, (q) => q<{ end_lsn: string | null }>(sql))
      : await this.query<{ end_lsn: string | null }>(sql);
    const v = rows[0]?.end_lsn;
    return v ? parseLsn(v) : undefined;
  }

  async readPrimarySlots(from: Upstream, names: string[]): Promise<CopiedSlot[]> {
    if (names.length === 0) return [];
    const sql = postgres({
      host: from.host,
      port: from.port,
      user: this.opts.superuser.username,
      password: this.opts.superuser.password,
      database: 'postgres',
      max: 1,
      connect_timeout: 5,
      idle_timeout: 5,
      fetch_types: false,
      prepare: false,
      onnotice: () => undefined,
      connection: { application_name: `${this.opts.name}-slots`, statement_timeout: 10_000 },
    });
    try {
      const list = names.map(quoteLiteral).join(', ');
      const rows = await bounded<
        { name: string; database: string; plugin: string; restart_lsn: string; confirmed_flush: string; state: Buffer }[]
      >(
        sql.unsafe(
          `SELECT slot_name AS name, database, plugin, restart_lsn::text AS restart_lsn, confirmed_flush_lsn::text AS confirmed_flush,
                  pg_read_binary_file('pg_replslot/' || slot_name || '/state') AS state
             FROM pg_replication_slots
            WHERE slot_type = 'logical' AND NOT pg_is_in_recovery() AND restart_lsn IS NOT NULL AND confirmed_flush_lsn IS NOT NULL
              AND slot_name IN (${list})`,
        ) as never,
        15_000,
      );
      return [...rows].map((r) => ({
        name: r.name,
        database: r.database,
        plugin: r.plugin,
        restartLsn: parseLsn(r.restart_lsn),
        confirmedFlush: parseLsn(r.confirmed_flush),
        state: Buffer.from(r.state),
      }));
    } finally {
      await sql.end({ timeout: 1 }).catch(() => undefined);
    }
  }

  async writeSlotState(name: string, state: Buffer): Promise<void> {
    if (!/^[a-z0-9_]{1,63}$/.test(name)) throw new Error(`not a slot name: ${JSON.stringify(name)}`);
    const base = join(this.dataDir, 'pg_replslot');
    const dir = join(base, name);
    const tmp = `${dir}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { mode: 0o700 });
    const fh = await open(join(tmp, 'state'), 'w', 0o600);
    try {
      await fh.writeFile(state);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await chownToPg(tmp);
    await chownToPg(join(tmp, 'state'));
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
    for (const d of [dir, base]) {
      const h = await open(d, 'r');
      await h.sync().catch(() => undefined);
      await h.close();
    }
  }

  async oldestWalLsn(): Promise<bigint | undefined> {
    const rows = await this.query<{ name: string; seg: string }>(
      "SELECT name, pg_size_bytes(current_setting('wal_segment_size'))::text AS seg FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'",
    );
    let min: bigint | undefined;
    for (const r of rows) {
      const segBytes = BigInt(r.seg);
      const lsn = BigInt('0x' + r.name.slice(8, 16)) * 0x100000000n + BigInt('0x' + r.name.slice(16, 24)) * segBytes;
      if (min === undefined || lsn < min) min = lsn;
    }
    return min;
  }

  /** Runs `fn` on a one-off connection to `database` (logical slot functions need the slot's database). */
  private async inDatabase<T>(
    database: string,
    fn: (q: <R = Record<string, unknown>>(text: string) => Promise<R[]>) => Promise<T>,
  ): Promise<T> {
    const sql = createLocalPool({
      socketDir: this.node.socketDir,
      port: this.opts.listen.port,
      username: this.opts.superuser.username,
      password: this.opts.superuser.password,
      applicationName: 'ha-slots',
      connectTimeoutSeconds: 2,
      statementTimeoutMs: DEFAULT_QUERY_TIMEOUT_MS,
      database,
    });
    try {
      return await fn(async <R>(text: string) => [...(await bounded<R[]>(sql.unsafe(text) as never, DEFAULT_QUERY_TIMEOUT_MS))]);
    } finally {
      await sql.end({ timeout: 1 }).catch(() => undefined);
    }
  }

  /**
   * Runs one SQL statement (simple text, no parameters) as the superuser over the socket.
   * @throws PgUnreachableError / PgQueryError (see connection.ts).
   */
  async query<T = Record<string, unknown>>(sql: string, timeoutMs = DEFAULT_QUERY_TIMEOUT_MS): Promise<T[]> {
    try {
      const rows = await bounded<T[]>(this.pool().unsafe(sql) as never, timeoutMs, () => this.resetPool());
      return [...rows];
    } catch (e) {
      throw classifyPgError(e);
    }
  }

  async close(): Promise<void> {
    const old = this.sql;
    this.sql = undefined;
    await old?.end({ timeout: 1 }).catch(() => undefined);
  }
}

/** Quotes one word for /bin/sh: single quotes, `'` as `'\''`. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
