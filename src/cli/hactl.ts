/**
 * `hactl`: the operators' command-line client (docs/hactl.md; patroni.md §5). Reads the agents'
 * ha.yml (`-c`, `HACTL_CONFIG`) or `--dcs-url`, reads the DCS directly (read-only client: no
 * lease, no watch) and calls the members' REST APIs.
 * Exit codes: 0 success, 1 refused or failed (the reason on stderr), 2 usage error.
 */
import { Command, CommanderError, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { CtlError, EXIT, errorText, usageError } from '../ctl/errors.ts';
import { openDcs, resolveTarget, type GlobalOptions, type Target } from '../ctl/context.ts';
import {
  checkMemberChoice,
  checkQueryOptions,
  MEMBER_ROLES,
  QUERY_FORMATS,
  runDsn,
  scopeQueryCommandFlag,
  runQuery,
  runVersion,
  type MemberRole,
  type QueryFormat,
} from '../ctl/query.ts';
import { CONFIG_DIALECTS, runConvertConfig, runEditConfig, runShowConfig } from '../ctl/config-commands.ts';
import { runDiscarded } from '../ctl/discarded.ts';
import { runHistory } from '../ctl/history.ts';
import { createStdIo, type CtlIo } from '../ctl/io.ts';
import { LIST_FORMATS, renderList, type ListFormat } from '../ctl/list.ts';
import {
  ROLE_FILTERS,
  runFlushRestart,
  runFlushSwitchover,
  runBackup,
  runReinit,
  runReload,
  runRestart,
  type RoleFilter,
} from '../ctl/member-actions.ts';
import { setMemberClient } from '../ctl/member-api.ts';
import { runPause } from '../ctl/pause.ts';
import { runDemoteCluster, runPromoteCluster } from '../ctl/cluster-mode.ts';
import { runRemove } from '../ctl/remove.ts';
import { readView, timestamp, type Session } from '../ctl/session.ts';
import { runFailover, runSwitchover } from '../ctl/switchover.ts';
import type { Dcs } from '../dcs/index.ts';
import { VERSION } from '../version.ts';
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';

const io: CtlIo = createStdIo();
let openedDcs: Dcs | undefined;
/** True while `list --watch` runs: Ctrl-C then ends it normally (exit 0). */
let watching = false;

/** Resolves the target, opens the DCS and runs `fn` with a Session. */
async function withSession(cmd: Command, cluster: string | undefined, fn: (s: Session, t: Target) => Promise<void>): Promise<void> {
  const target = await resolveTarget(cmd.optsWithGlobals<GlobalOptions>(), cluster);
  setMemberClient(target.client);
  const dcs = await openDcs(target);
  openedDcs = dcs;
  await fn(
    {
      scope: target.scope,
      dcs,
      io,
      now: Date.now,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    },
    target,
  );
}

const collect = (v: string, prev: string[]) => [...prev, v];
const formatOption = () => new Option('-f, --format <format>', 'output format').choices(LIST_FORMATS).default('pretty');
const roleOption = () => new Option('-r, --role <role>', 'only members of this role').choices(ROLE_FILTERS).default('any');

/** Options of list/topology. */
interface ListCli {
  format: ListFormat;
  extended?: boolean;
  timestamp?: boolean;
  watch?: string;
  W?: boolean;
}

async function listCommand(cmd: Command, cluster: string | undefined, o: ListCli, topology: boolean): Promise<void> {
  let everyMs: number | undefined;
  if (o.watch !== undefined) {
    const n = Number(o.watch);
    if (!Number.isFinite(n) || n <= 0) throw usageError(`invalid --watch ${JSON.stringify(o.watch)}: expected a number of seconds > 0`);
    everyMs = n * 1000;
  } else if (o.W) everyMs = 2000;
  await withSession(cmd, cluster, async (s) => {
    watching = everyMs !== undefined;
    for (;;) {
      const view = await readView(s);
      if (everyMs !== undefined && io.isTty) process.stdout.write('\x1b[2J\x1b[H');
      if (o.timestamp || everyMs !== undefined) io.out(timestamp(s.now()));
      for (const l of renderList(view, s.scope, { format: o.format, extended: o.extended === true, topology })) io.out(l);
      if (everyMs === undefined) return;
      await s.sleep(everyMs);
    }
  });
}

/**
 * Splits `[CLUSTER] MEMBER…` for reinit: the first word is the cluster when more words follow and
 * it names the cluster already known (from --scope or the configuration file), or when no cluster
 * is known at all.
 */
async function splitClusterArgs(cmd: Command, args: string[]): Promise<{ cluster: string | undefined; rest: string[] }> {
  const first = args[0];
  if (first === undefined || args.length < 2) return { cluster: undefined, rest: args };
  let known: string | undefined;
  try {
    known = (await resolveTarget(cmd.optsWithGlobals<GlobalOptions>(), undefined)).scope;
  } catch {
    known = undefined;
  }
  return known === undefined || known === first ? { cluster: first, rest: args.slice(1) } : { cluster: undefined, rest: args };
}

function buildProgram(): Command {
  const program = new Command('hactl')
    .description('control a PostgreSQL HA cluster: list, switchover, restart, edit the dynamic configuration')
    .version(VERSION)
    .option('-c, --config <file>', 'ha.yml of the cluster (default: $HACTL_CONFIG)')
    .option('--dcs-url <url>', "etcd v3 endpoint(s), http://host:port[,…] (instead of the file's etcd3.hosts)")
    .option('--scope <name>', "cluster name (instead of the file's scope)")
    .option('--namespace <prefix>', "DCS namespace (default: the file's, else /service/)")
    .exitOverride()
    .showHelpAfterError(false);

  program
    .command('list')
    .argument('[cluster]', 'cluster name')
    .description('list the members of the cluster')
    .addOption(formatOption())
    .option('-e, --extended', 'always show pending restart, scheduled restart and tags')
    .option('-t, --timestamp', 'print a timestamp first')
    .option('-w, --watch <seconds>', 'refresh every SECONDS until interrupted')
    .option('-W', 'refresh every 2 seconds until interrupted')
    .action((cluster: string | undefined, o: ListCli, cmd: Command) => listCommand(cmd, cluster, o, false));

  program
    .command('topology')
    .argument('[cluster]', 'cluster name')
    .description('list the members indented under the member they replicate from')
    .addOption(formatOption())
    .option('-e, --extended', 'always show pending restart, scheduled restart and tags')
    .option('-t, --timestamp', 'print a timestamp first')
    .option('-w, --watch <seconds>', 'refresh every SECONDS until interrupted')
    .option('-W', 'refresh every 2 seconds until interrupted')
    .action((cluster: string | undefined, o: ListCli, cmd: Command) => listCommand(cmd, cluster, o, true));

  program
    .command('switchover')
    .argument('[cluster]', 'cluster name')
    .description('switch the leader over to a replica, now or at a scheduled time')
    .option('--leader <name>', 'the current leader')
    .option('--primary <name>', 'alias of --leader')
    .option('--candidate <name>', 'the member to promote (default: the best one)')
    .option('--scheduled <time>', 'ISO 8601 time, or "now"')
    .option('--force', 'do not ask for confirmation')
    .action(
      (
        cluster: string | undefined,
        o: { leader?: string; primary?: string; candidate?: string; scheduled?: string; force?: boolean },
        cmd: Command,
      ) =>
        withSession(cmd, cluster, (s) =>
          runSwitchover(s, {
            ...((o.leader ?? o.primary) ? { leader: (o.leader ?? o.primary)! } : {}),
            ...(o.candidate !== undefined ? { candidate: o.candidate } : {}),
            ...(o.scheduled !== undefined ? { scheduled: o.scheduled } : {}),
            force: o.force === true,
          }),
        ),
    );

  program
    .command('failover')
    .argument('[cluster]', 'cluster name')
    .description('promote a given replica now, with or without a healthy leader')
    .option('--candidate <name>', 'the member to promote')
    .option('--force', 'do not ask for confirmation')
    .action((cluster: string | undefined, o: { candidate?: string; force?: boolean }, cmd: Command) =>
      withSession(cmd, cluster, (s) =>
        runFailover(s, { ...(o.candidate !== undefined ? { candidate: o.candidate } : {}), force: o.force === true }),
      ),
    );

  program
    .command('restart')
    .argument('<cluster>', 'cluster name')
    .argument('[members...]', 'members to restart (default: all)')
    .description('restart PostgreSQL on members, now or at a scheduled time')
    .addOption(roleOption())
    .option('--any', 'restart one member (chosen at random) of those selected')
    .option('--scheduled <time>', 'ISO 8601 time, or "now"')
    .option('--pending', 'restart only members with a pending restart')
    .option('--pg-version <version>', 'restart only members running a database version below this')
    .option('--timeout <seconds>', 'wait this long for the database to start')
    .option('--force', 'do not ask for confirmation; replace an existing scheduled restart')
    .action(
      (
        cluster: string,
        members: string[],
        o: {
          role: RoleFilter;
          any?: boolean;
          scheduled?: string;
          pending?: boolean;
          pgVersion?: string;
          timeout?: string;
          force?: boolean;
        },
        cmd: Command,
      ) =>
        withSession(cmd, cluster, (s) =>
          runRestart(s, {
            members,
            role: o.role,
            any: o.any === true,
            pending: o.pending === true,
            force: o.force === true,
            ...(o.scheduled !== undefined ? { scheduled: o.scheduled } : {}),
            ...(o.pgVersion !== undefined ? { pgVersion: o.pgVersion } : {}),
            ...(o.timeout !== undefined ? { timeout: o.timeout } : {}),
          }),
        ),
    );

  program
    .command('reload')
    .argument('<cluster>', 'cluster name')
    .argument('[members...]', 'members to reload (default: all)')
    .description('make members re-read their configuration file')
    .addOption(roleOption())
    .option('--force', 'do not ask for confirmation')
    .action((cluster: string, members: string[], o: { role: RoleFilter; force?: boolean }, cmd: Command) =>
      withSession(cmd, cluster, (s) => runReload(s, { members, role: o.role, force: o.force === true })),
    );

  program
    .command('reinit')
    .argument('<members...>', '[CLUSTER] MEMBER…: the replicas to rebuild')
    .description('wipe and re-clone replicas')
    .option('--from-leader', 'clone from the leader, not from the best replica')
    .option('--wait', 'wait until the members run again')
    .option('--force', 'do not ask for confirmation; cancel a running operation')
    .action(async (args: string[], o: { fromLeader?: boolean; wait?: boolean; force?: boolean }, cmd: Command) => {
      const { cluster, rest } = await splitClusterArgs(cmd, args);
      return withSession(cmd, cluster, (s) =>
        runReinit(s, { members: rest, fromLeader: o.fromLeader === true, wait: o.wait === true, force: o.force === true }),
      );
    });

  program
    .command('backup')
    .argument('[args...]', '[CLUSTER] [MEMBER]: the member to run it on (default: a running replica, else the leader)')
    .description("run the member's backup commands (ha.yml backup; POST /backup) and wait for them")
    .option('--create', 'run backup.create first (e.g. pgBackRest stanza-create)')
    .option('--timeout <seconds>', 'how long to wait for the backup (default 21600)')
    .action(async (args: string[], o: { create?: boolean; timeout?: string }, cmd: Command) => {
      const { cluster, rest } = await splitClusterArgs(cmd, args);
      if (rest.length > 1) throw usageError('backup takes at most one MEMBER');
      const timeout = o.timeout === undefined ? undefined : Number(o.timeout);
      if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0))
        throw usageError('--timeout must be a number of seconds > 0');
      return withSession(cmd, cluster, (s) =>
        runBackup(s, {
          ...(rest[0] !== undefined ? { member: rest[0] } : {}),
          create: o.create === true,
          ...(timeout !== undefined ? { timeoutMs: timeout * 1000 } : {}),
        }),
      );
    });

  for (const paused of [true, false]) {
    program
      .command(paused ? 'pause' : 'resume')
      .argument('[cluster]', 'cluster name')
      .description(paused ? 'put the cluster in maintenance mode (no automatic failover)' : 'leave maintenance mode')
      .option('--wait', 'wait until every member reports the new mode')
      .action((cluster: string | undefined, o: { wait?: boolean }, cmd: Command) =>
        withSession(cmd, cluster, (s) => runPause(s, paused, { wait: o.wait === true })),
      );
  }

  program
    .command('demote-cluster')
    .argument('[cluster]', 'cluster name')
    .description('make the cluster a standby cluster of a remote primary: its leader becomes a standby leader (standby_cluster)')
    .option('--host <host>', 'the remote primary to replicate from')
    .option('--port <port>', 'its port (default 5432)')
    .option('--primary-slot-name <name>', 'a replication slot on the remote')
    .option('--restore-command <command>', 'restore_command of the standby leader (its WAL archive; with no --host, the only source)')
    .option('--force', 'do not ask for confirmation')
    .option('--wait', 'wait until the leader runs as standby leader')
    .action(
      (
        cluster: string | undefined,
        o: { host?: string; port?: string; primarySlotName?: string; restoreCommand?: string; force?: boolean; wait?: boolean },
        cmd: Command,
      ) => withSession(cmd, cluster, (s) => runDemoteCluster(s, { ...o, force: o.force === true, wait: o.wait === true })),
    );

  program
    .command('promote-cluster')
    .argument('[cluster]', 'cluster name')
    .description('promote a standby cluster: remove standby_cluster, its standby leader becomes a primary')
    .option('--force', 'do not ask for confirmation')
    .option('--wait', 'wait until the leader runs as primary')
    .action((cluster: string | undefined, o: { force?: boolean; wait?: boolean }, cmd: Command) =>
      withSession(cmd, cluster, (s) => runPromoteCluster(s, { force: o.force === true, wait: o.wait === true })),
    );

  program
    .command('flush')
    .argument('<args...>', '[CLUSTER] restart|switchover [MEMBER…]')
    .description('cancel scheduled restarts or a scheduled switchover')
    .action((args: string[], _o: unknown, cmd: Command) => {
      const at = args.findIndex((a) => a === 'restart' || a === 'switchover');
      if (at < 0 || at > 1)
        throw usageError('flush needs a target: restart or switchover (usage: flush [CLUSTER] restart|switchover [MEMBER…])');
      const target = args[at]!;
      const members = args.slice(at + 1);
      if (target === 'switchover' && members.length > 0) throw usageError('flush switchover takes no member names');
      return withSession(cmd, at === 1 ? args[0] : undefined, (s) =>
        target === 'restart' ? runFlushRestart(s, members) : runFlushSwitchover(s),
      );
    });

  program
    .command('show-config')
    .argument('[cluster]', 'cluster name')
    .description('print the dynamic configuration (YAML)')
    .action((cluster: string | undefined, _o: unknown, cmd: Command) => withSession(cmd, cluster, runShowConfig));

  program
    .command('edit-config')
    .argument('[cluster]', 'cluster name')
    .description('change the dynamic configuration (diff, confirmation, compare-and-set write)')
    .option('-s, --set <key=value>', 'set a key (dotted path; null deletes), repeatable', collect, [])
    .option('-p, --pg <name=value>', 'set a database parameter (database.parameters), repeatable', collect, [])
    .option('--apply <file>', 'merge a YAML patch from FILE (- for stdin; null deletes)')
    .option('--replace <file>', 'replace the whole configuration with FILE (- for stdin)')
    .option('--force', 'do not ask for confirmation')
    .action(
      (cluster: string | undefined, o: { set: string[]; pg: string[]; apply?: string; replace?: string; force?: boolean }, cmd: Command) =>
        withSession(cmd, cluster, (s) =>
          runEditConfig(s, {
            set: o.set,
            pg: o.pg,
            force: o.force === true,
            ...(o.apply !== undefined ? { apply: o.apply } : {}),
            ...(o.replace !== undefined ? { replace: o.replace } : {}),
            readStdin: readAllStdin,
            catalogue: localCatalogue,
          }),
        ),
    );

  program
    .command('convert-config')
    .argument('<dialect>', `the dialect to write the dynamic configuration in: ${CONFIG_DIALECTS.join(' or ')}`)
    .argument('[cluster]', 'cluster name')
    .description(
      "rewrite the dynamic configuration in our dialect (native: database, use_db_rewind) or the reference's (patroni: postgresql, use_pg_rewind), meaning the same",
    )
    .option('--force', 'do not ask for confirmation')
    .action((dialect: string, cluster: string | undefined, o: { force?: boolean }, cmd: Command) => {
      if (!(CONFIG_DIALECTS as readonly string[]).includes(dialect))
        throw usageError(`convert-config: unknown dialect '${dialect}': expected ${CONFIG_DIALECTS.join(' or ')}`);
      return withSession(cmd, cluster, (s) => runConvertConfig(s, dialect as 'native' | 'patroni', o.force === true));
    });

  program
    .command('history')
    .argument('[cluster]', 'cluster name')
    .description('timeline switches: TL, LSN, reason, timestamp, new leader')
    .addOption(formatOption())
    .action((cluster: string | undefined, o: { format: ListFormat }, cmd: Command) =>
      withSession(cmd, cluster, (s) => runHistory(s, o.format)),
    );

  program
    .command('discarded')
    .argument('[args...]', '[CLUSTER] [MEMBER…]: whose receipts (default: every member)')
    .description('receipts of the transactions rewinds and re-clones discarded (docs/ha.md "Receipts")')
    .addOption(formatOption())
    .option('--transactions', 'one row per discarded transaction instead of one per receipt')
    .action(async (args: string[], o: { format: ListFormat; transactions?: boolean }, cmd: Command) => {
      const { cluster, rest } = await splitClusterArgs(cmd, args);
      return withSession(cmd, cluster, (s) => runDiscarded(s, { members: rest, format: o.format, transactions: o.transactions === true }));
    });

  program
    .command('remove')
    .argument('<cluster>', 'cluster name')
    .description('delete every key of the cluster from the DCS (asks for the cluster and leader names)')
    .action((cluster: string, _o: unknown, cmd: Command) => withSession(cmd, cluster, runRemove));

  const memberRoleOption = () => new Option('-r, --role <role>', 'a member of this role (default: the leader)').choices(MEMBER_ROLES);

  program
    .command('query')
    .argument('[cluster]', 'cluster name')
    .description("run SQL on a member's PostgreSQL (the leader unless --role or --member)")
    .addOption(memberRoleOption())
    .option('-m, --member <name>', 'this member')
    .option('-c, --command <sql>', 'the SQL to run')
    .option('--file <file>', 'read the SQL from FILE (- for stdin)')
    .option('-U, --username <user>', "login (default: the file's superuser, else $PGUSER, else postgres)")
    .option('-d, --dbname <name>', 'database (default: $PGDATABASE, else postgres)')
    .addOption(new Option('--format <format>', 'output format').choices(QUERY_FORMATS).default('tsv'))
    .action(
      (
        cluster: string | undefined,
        o: { role?: MemberRole; member?: string; command?: string; file?: string; username?: string; dbname?: string; format: QueryFormat },
        cmd: Command,
      ) => {
        checkQueryOptions(o);
        return withSession(cmd, cluster, (s, t) =>
          runQuery(s, {
            ...o,
            ...(t.superuser ? { superuser: t.superuser } : {}),
            readFile: (path) => (path === '-' ? readAllStdin() : readFile(path, 'utf8')),
          }),
        );
      },
    );

  program
    .command('dsn')
    .argument('[cluster]', 'cluster name')
    .description("print a member's connection string (the leader unless --role or --member)")
    .addOption(memberRoleOption())
    .option('-m, --member <name>', 'this member')
    .action((cluster: string | undefined, o: { role?: MemberRole; member?: string }, cmd: Command) => {
      checkMemberChoice(o);
      return withSession(cmd, cluster, (s) => runDsn(s, o));
    });

  program
    .command('version')
    .argument('[cluster]', 'cluster name')
    .argument('[members...]', 'members to ask (default: all)')
    .description("print hactl's version, and with a cluster each member's agent and PostgreSQL versions")
    .action(async (cluster: string | undefined, members: string[], _o: unknown, cmd: Command) => {
      let known = cluster !== undefined;
      if (!known) {
        // A cluster known from --scope or the configuration file counts too; none: hactl's version only.
        known = await resolveTarget(cmd.optsWithGlobals<GlobalOptions>(), undefined).then(
          () => true,
          () => false,
        );
      }
      if (!known) return runVersion(undefined, VERSION, [], (l) => io.out(l));
      return withSession(cmd, cluster, (s) => runVersion(s, VERSION, members, (l) => io.out(l)));
    });

  return program;
}

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function finish(code: number): Promise<never> {
  io.close();
  await openedDcs?.close().catch(() => {});
  await new Promise<void>((r) => process.stdout.write('', () => r()));
  await new Promise<void>((r) => process.stderr.write('', () => r()));
  process.exit(code);
}

async function main(argv: string[]): Promise<never> {
  process.on('SIGINT', () => void finish(watching ? EXIT.ok : 130));
  const program = buildProgram();
  try {
    await program.parseAsync(scopeQueryCommandFlag(argv));
    return await finish(EXIT.ok);
  } catch (e) {
    if (e instanceof CommanderError) {
      const ok = e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help';
      return finish(ok ? EXIT.ok : EXIT.usage);
    }
    if (e instanceof CtlError) {
      io.err(e.message);
      return finish(e.exitCode);
    }
    io.err(`hactl: ${errorText(e)}`);
    return finish(EXIT.failed);
  }
}

await main(process.argv);

/**
 * The settings catalogue of the PostgreSQL binaries on this machine (`postgres --describe-config`,
 * no server needed), for `edit-config`'s parameter check; undefined when there are none.
 */
async function localCatalogue(): Promise<SettingsCatalogue | undefined> {
  try {
    const { detectBinDir } = await import('../postgres/bin-dir.ts');
    const { loadSettingsCatalogue } = await import('../postgres/settings-catalogue.ts');
    return await loadSettingsCatalogue(detectBinDir());
  } catch {
    return undefined;
  }
}
