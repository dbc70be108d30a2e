/**
 * Replica creation and catch-up with a pgBackRest repository against copies from the primary
 * (issue 25; docs/backups.md): real etcd, real PostgreSQL 15, real pgBackRest, two agent processes
 * at ttl 10 / loop_wait 2 / retry_timeout 3, `use_slots: false`, `wal_keep_size: 0` (the primary
 * recycles its WAL), archive_mode on with pgBackRest's archive-push, `recovery_conf.
 * restore_command` with its archive-get, a `backup` section, and on node2 `create_replica_methods:
 * [pgbackrest, basebackup]` with a pgBackRest delta restore (`keep_data`), all as in
 * tests/e2e/archive.test.ts. node1 is the primary throughout; node2 is the replica (re)made.
 *
 *   0. the stanza created (archive-push fails until it exists), a database of about 1 GB
 *      (pgbench -i -s 70 by default) loaded and archived, then POST /backup {"create": true} on
 *      node1: a full backup (the first of the stanza);
 *   1. replica creation, each timed from the request (or the agent's start) to node2 streaming,
 *      `--rounds` times, alternating:
 *      a. POST /reinitialize {"from-leader": true}: wipe + pg_basebackup of the whole database
 *         from the primary;
 *      b. POST /reinitialize: node2's methods, pgBackRest's delta restore over its existing data
 *         directory (only the files that differ from the backup are restored), then the WAL since
 *         the backup from the archive, then streaming;
 *      c. a new member: node2 stopped, its data directory emptied, its agent started: the same
 *         method restores everything from the repository;
 *   2. catch-up of a replica that fell behind: node2 stopped (agent, then PostgreSQL), pgbench
 *      writes on the primary for `--write-seconds`, then switch + checkpoint until the segment
 *      node2 needs is gone from the primary's pg_wal; then, timed from node2's agent start to
 *      streaming:
 *      a. nothing else: node2 replays from the archive, then streams (checked: not copied again);
 *      b. the same fall-behind, then POST /reinitialize {"from-leader": true} as soon as node2's
 *         agent reports its PostgreSQL running: a re-copy (checked: the data directory was
 *         emptied).
 *
 * For each operation the primary's extra load: the CPU time (utime + stime + cutime + cstime, so
 * exited children reaped by their parent count too) and the I/O (/proc/<pid>/io: rchar/wchar,
 * bytes through read/write system calls, where PostgreSQL's send() to a socket is not counted;
 * read_bytes/write_bytes, bytes the storage layer fetched/was sent) of node1's postmaster and all
 * its descendants, sampled before and after; the kernel adds a reaped child's I/O to its
 * parent's, so a walsender that served a base backup and exited is counted. What went over the
 * network is the loopback interface's transmitted bytes (/proc/net/dev: the base backup and the
 * streaming, plus the small etcd and API traffic of the cluster and of this script's polls). Also
 * the CPU of the commands node2's agent ran (pg_basebackup, pgBackRest restore, pg_ctl; the
 * agent's cutime/cstime), not node2's PostgreSQL (its replay, its restore_command). An idle rate
 * of the primary's CPU and of the loopback is printed to subtract the background (archiver,
 * checkpointer, the agents' queries). Prints figures only; never a timed test.
 *
 * Caveats: the test cluster runs with fsync=off, so pg_basebackup runs with --no-sync and the
 * start skips the data directory sync, while pgBackRest's restore syncs what it writes: the
 * comparison favours the copy. Times that start at the agent's start (1c, 2a, 2b) include the
 * agent's own start (a few seconds under tsx). The repository is on the same local disk (production's is on
 * another host or an object store: its transfer is not the primary's load either). With the whole
 * database in the page cache, read_bytes stays near zero for either method: rchar shows what the
 * primary's processes read. The delta restores of 1b run over a data directory that differs
 * little from the backup (the best case for a delta); 1c is the worst (nothing to reuse).
 *
 *   node --import tsx bench/backup-bench.ts [--scale 70] [--rounds 1] [--write-seconds 30] [--log]
 *
 * `--log` prints node2's agent log messages after each operation, with their offsets from its start.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestCluster } from '../tests/e2e/support/cluster.ts';
import {
  archiveCommand,
  backupSection,
  confOf,
  PGBACKREST,
  pgbackrest,
  restoreCommand,
  setUpPgBackRest,
} from '../tests/e2e/support/pgbackrest.ts';
import { pgBinDir } from '../tests/support/pg.ts';
import { run, sleep, stopPid, waitFor } from '../tests/support/processes.ts';

const args = process.argv.slice(2);
/** A numeric command-line option (`--name N`), or its default. */
function option(name: string, fallback: number): number {
  const i = args.indexOf(name);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
const scale = option('--scale', 70);
const rounds = option('--rounds', 1);
const writeSeconds = option('--write-seconds', 30);
/** `--log`: after each operation, node2's agent log messages since its start, with their offsets. */
const showLog = args.includes('--log');

const PRIMARY = 'node1';
const REPLICA = 'node2';
const STANZA = 'e2e'; // the test cluster's scope
const LONG_MS = 1_800_000;
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
const MB = 1024 * 1024;

/** CPU seconds and I/O bytes of a process tree (or their difference between two samples). */
interface Load {
  cpuS: number;
  rchar: number;
  wchar: number;
  readBytes: number;
  writeBytes: number;
}

/** One measured operation, a row of the table. */
interface Row {
  op: string;
  round: number;
  wallS: number;
  primary: Load;
  /** CPU of the commands node2's agent ran (its children, reaped). */
  replicaCmdCpuS: number;
  /** Bytes sent over the loopback interface meanwhile (the base backup and the streaming, and the small etcd/API traffic). */
  loopbackBytes: number;
  note: string;
}

const rows: Row[] = [];

const c = await TestCluster.create({
  nodes: 2,
  ttl: 10,
  loopWait: 2,
  retryTimeout: 3,
  dcsExtra: ['database: { use_slots: false }'],
  parameters: (n) => ({ archive_mode: 'on', archive_command: archiveCommand(n, STANZA), wal_keep_size: '0' }),
  databaseExtra: (n) => [
    `recovery_conf: ${JSON.stringify({ restore_command: restoreCommand(n, STANZA) })}`,
    ...(n.name === REPLICA
      ? [
          'create_replica_methods: [pgbackrest, basebackup]',
          `pgbackrest: ${JSON.stringify({ command: `${pgbackrest(n, STANZA)} --delta --type=standby restore`, keep_data: true, no_params: true })}`,
        ]
      : []),
  ],
  topExtra: (n) => [backupSection(n, STANZA)],
});

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    if (stopping) return;
    stopping = true;
    console.error(`\n${sig}: stopping the cluster`);
    void c.destroy().finally(() => process.exit(130));
  });
}

/** Every process's parent and cumulative CPU ticks (own + reaped children), from /proc/<pid>/stat. */
function processTable(): Map<number, { ppid: number; ticks: number }> {
  const table = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After the command: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(entry), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
    } catch {
      /* the process went away */
    }
  }
  return table;
}

/** The I/O counters of one process (/proc/<pid>/io), zeros when it is gone. */
function ioOf(pid: number): Omit<Load, 'cpuS'> {
  try {
    const text = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (k: string) => Number(new RegExp(`^${k}: (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    return { rchar: field('rchar'), wchar: field('wchar'), readBytes: field('read_bytes'), writeBytes: field('write_bytes') };
  } catch {
    return { rchar: 0, wchar: 0, readBytes: 0, writeBytes: 0 };
  }
}

/** CPU and I/O of `root` and all its living descendants (their exited children are in their counters). */
function treeLoad(root: number | undefined): Load {
  const total: Load = { cpuS: 0, rchar: 0, wchar: 0, readBytes: 0, writeBytes: 0 };
  if (!root) return total;
  const table = processTable();
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, p] of table) if (p.ppid === tree[i]) tree.push(pid);
  for (const pid of tree) {
    total.cpuS += (table.get(pid)?.ticks ?? 0) / TICKS;
    const io = ioOf(pid);
    total.rchar += io.rchar;
    total.wchar += io.wchar;
    total.readBytes += io.readBytes;
    total.writeBytes += io.writeBytes;
  }
  return total;
}

/** after − before, field by field. */
function diff(after: Load, before: Load): Load {
  return {
    cpuS: after.cpuS - before.cpuS,
    rchar: after.rchar - before.rchar,
    wchar: after.wchar - before.wchar,
    readBytes: after.readBytes - before.readBytes,
    writeBytes: after.writeBytes - before.writeBytes,
  };
}

/** CPU seconds of the commands an agent ran and reaped (its cutime + cstime); 0 when it does not run. */
function agentChildrenCpu(name: string): number {
  const pid = c.agentPid(name);
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[13]) + Number(f[14])) / TICKS;
  } catch {
    return 0;
  }
}

/** Bytes transmitted on the loopback interface so far (/proc/net/dev), 0 when unreadable. */
function loopbackBytes(): number {
  try {
    const line = readFileSync('/proc/net/dev', 'utf8')
      .split('\n')
      .find((l) => l.trim().startsWith('lo:'));
    // lo: rx bytes, packets, errs, drop, fifo, frame, compressed, multicast, then tx bytes.
    return Number(line?.split(':')[1]?.trim().split(/\s+/)[8] ?? 0);
  } catch {
    return 0;
  }
}

/** The primary's PostgreSQL tree now; throws when node1 no longer leads (the figures would be meaningless). */
async function primaryLoad(): Promise<Load> {
  const leader = await c.leader();
  if (leader !== PRIMARY) throw new Error(`the leader is ${leader ?? 'nobody'}, not ${PRIMARY}`);
  return treeLoad(c.postmasterPid(PRIMARY));
}

/**
 * Runs `op` (which resolves at the operation's end, or with the instant it ended) between two
 * samples of the primary's load and of node2's agent's children, and records a row. node2's agent
 * may be (re)started inside `op`: its children's CPU then counts from zero.
 */
async function measure(op: string, round: number, body: () => Promise<string | void>): Promise<Row> {
  console.log(`→ ${op} (round ${round})`);
  const before = await primaryLoad();
  const replicaAgentBefore = c.agentPid(REPLICA);
  const replicaCpuBefore = agentChildrenCpu(REPLICA);
  const loBefore = loopbackBytes();
  const t0 = Date.now();
  const note = (await body()) ?? '';
  const wallS = (Date.now() - t0) / 1000;
  const primary = diff(await primaryLoad(), before);
  const replicaCmdCpuS = agentChildrenCpu(REPLICA) - (c.agentPid(REPLICA) === replicaAgentBefore ? replicaCpuBefore : 0);
  const row = { op, round, wallS, primary, replicaCmdCpuS, loopbackBytes: loopbackBytes() - loBefore, note };
  rows.push(row);
  if (showLog) printLog(REPLICA, t0);
  console.log(
    `${op} (round ${round}): ${wallS.toFixed(1)} s; primary CPU ${primary.cpuS.toFixed(2)} s, read ${mb(primary.rchar)} MB` +
      ` (storage ${mb(primary.readBytes)} MB), written ${mb(primary.wchar)} MB; loopback ${mb(row.loopbackBytes)} MB; node2's commands CPU ${replicaCmdCpuS.toFixed(2)} s${note ? `; ${note}` : ''}`,
  );
  return row;
}

/** A directory's size in MB (du -sm). */
function dirMb(dir: string): number {
  return Number(execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0]);
}

/** Bytes as MB with one decimal. */
function mb(bytes: number): string {
  return (bytes / MB).toFixed(1);
}

/** Waits until `name` is a running replica streaming from its upstream (GET /ha); returns epoch ms. */
function streaming(name: string, timeoutMs: number = LONG_MS): Promise<number> {
  return c.streamingAt(name, timeoutMs);
}

/** Waits until a reinitialize of `name` is under way (it no longer runs as a streaming replica). */
async function reinitUnderWay(name: string): Promise<void> {
  await waitFor(
    async () => {
      const doc = (await c.get(name, '/ha')).json();
      return doc !== undefined && (doc.state !== 'running' || doc.replication_state !== 'streaming' || doc.progress !== undefined);
    },
    30_000,
    `a reinitialize of ${name} under way`,
    50,
  );
}

/** The first agent log line (parsed) of `name` at or after `since` whose message matches `re`. */
function logLine(name: string, re: RegExp, since: number): Record<string, unknown> | undefined {
  return c.firstLogLine(name, re, since);
}

/** Prints `name`'s agent log messages at or after `since`, each with its offset in seconds. */
function printLog(name: string, since: number): void {
  for (const raw of c.node(name).output.split('\n')) {
    if (!raw.startsWith('{')) continue;
    try {
      const j = JSON.parse(raw) as { time?: number; msg?: string };
      if ((j.time ?? 0) >= since)
        console.log(`    +${(((j.time ?? 0) - since) / 1000).toFixed(1)} s ${name}: ${String(j.msg ?? '').slice(0, 200)}`);
    } catch {
      /* not JSON */
    }
  }
}

/** What the log says about how node2 was made since `since`: the method and its duration, or a warning. */
function methodNote(since: number, expected: 'pgbackrest' | 'basebackup'): string {
  const created = logLine(REPLICA, /^replica created by method/, since);
  const failed = logLine(REPLICA, /^replica creation method \S+ failed/, since);
  if (expected === 'basebackup') return created ? `WARNING: a method ran: ${String(created['msg'])}` : 'pg_basebackup';
  if (!created) return 'WARNING: no replica creation method logged';
  const m = String(created['method']);
  return `${m === expected ? '' : 'WARNING: '}restored by ${m} in ${(Number(created['ms']) / 1000).toFixed(1)} s${failed ? ` (after: ${String(failed['msg'])})` : ''}`;
}

/** Stops node2 as archive.test.ts does: its agent (SIGTERM), then its PostgreSQL if left running (fast shutdown). */
async function stopReplica(): Promise<void> {
  await c.stopAgent(REPLICA);
  const pm = c.postmasterPid(REPLICA);
  if (pm) await stopPid(pm, 'SIGINT', 120_000);
}

/** pgbench against the primary as the superuser. */
function pgbench(extra: string[]): Promise<string> {
  return run(
    join(pgBinDir(), 'pgbench'),
    [...extra, '-h', '127.0.0.1', '-p', String(c.node(PRIMARY).pgPort), '-U', 'postgres', 'postgres'],
    {
      env: { ...process.env, PGPASSWORD: 'e2e-super' },
    },
  );
}

/** `pgbackrest stanza-create` with node1's configuration, as the PostgreSQL OS user (the agents run pgBackRest as that user). */
async function stanzaCreate(): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  await run(PGBACKREST, [`--config=${confOf(c.node(PRIMARY))}`, `--stanza=${STANZA}`, 'stanza-create'], {
    cwd: '/',
    ...(asRoot ? { uid: id('-u'), gid: id('-g') } : {}),
  });
}

/** Waits until the archiver has archived the segment in use now (switched first). */
async function archived(timeoutMs = 900_000): Promise<void> {
  const seg = (await c.psql(PRIMARY, 'select pg_walfile_name(pg_switch_wal())', 60_000)).trim();
  await waitFor(
    async () => (await c.psql(PRIMARY, "select coalesce(last_archived_wal, '') from pg_stat_archiver")).trim() >= seg,
    timeoutMs,
    `${seg} archived`,
    250,
  );
}

/** The WAL segment file name holding `lsn` on timeline `tli` (16 MB segments), as archive.test.ts. */
function segmentOf(lsn: string, tli: number): string {
  const [hi, lo] = lsn.split('/').map((x) => BigInt(`0x${x}`));
  const segno = ((hi! << 32n) | lo!) / (16n * 1024n * 1024n);
  const hex = (n: bigint | number) => n.toString(16).toUpperCase().padStart(8, '0');
  return `${hex(tli)}${hex(segno / 256n)}${hex(segno % 256n)}`;
}

/**
 * Puts node2 behind WAL the primary no longer has: notes the segment it needs, stops it, writes
 * with pgbench for `writeSeconds`, then switches and checkpoints until that segment is gone from
 * the primary's pg_wal. Returns a description (segments behind, WAL written).
 */
async function fallBehind(): Promise<string> {
  await streaming(REPLICA);
  const lsn = (await c.psql(REPLICA, 'select pg_last_wal_replay_lsn()')).trim();
  const tli = Number((await c.psql(REPLICA, 'select timeline_id from pg_control_checkpoint()')).trim());
  const needed = segmentOf(lsn, tli);
  await stopReplica();
  const before = (await c.psql(PRIMARY, 'select pg_current_wal_lsn()')).trim();
  await pgbench(['-n', '-T', String(writeSeconds), '-c', '4', '-j', '2']);
  await waitFor(
    async () => {
      await c.psql(PRIMARY, 'select pg_switch_wal()', 60_000);
      await c.psql(PRIMARY, 'checkpoint', 300_000);
      const oldest = (await c.psql(PRIMARY, "select min(name) from pg_ls_waldir() where name ~ '^[0-9A-F]{24}$'")).trim();
      return oldest > needed;
    },
    300_000,
    `the primary's pg_wal past ${needed}`,
    500,
  );
  const current = (await c.psql(PRIMARY, 'select pg_walfile_name(pg_current_wal_lsn())')).trim();
  const behind = parseInt(current.slice(8), 16) - parseInt(needed.slice(8), 16);
  const walBytes = Number((await c.psql(PRIMARY, `select pg_current_wal_lsn() - '${before}'::pg_lsn`)).trim());
  // The archiver's backlog of these writes is theirs, not the catch-up's: drained before the measure.
  await archived();
  return `${behind} segments behind (${mb(walBytes)} MB of WAL written)`;
}

/** 1a: POST /reinitialize from the leader (wipe + pg_basebackup), to streaming. */
async function reinitFromLeader(round: number): Promise<void> {
  await streaming(REPLICA);
  await measure('1a. replica by pg_basebackup (POST /reinitialize from-leader)', round, async () => {
    const t0 = Date.now();
    const r = await c.post(REPLICA, '/reinitialize', { 'from-leader': true });
    if (r.status !== 200) throw new Error(`POST /reinitialize: ${r.status} ${r.body}${r.error ?? ''}`);
    await reinitUnderWay(REPLICA);
    await streaming(REPLICA);
    return `${methodNote(t0, 'basebackup')}; node2's data directory now ${dirMb(c.node(REPLICA).dataDir)} MB`;
  });
}

/** 1b: POST /reinitialize with node2's methods (pgBackRest delta restore over its data), to streaming. */
async function reinitByMethods(round: number): Promise<void> {
  await streaming(REPLICA);
  await measure('1b. replica by pgBackRest delta restore (POST /reinitialize)', round, async () => {
    const t0 = Date.now();
    const r = await c.post(REPLICA, '/reinitialize', {});
    if (r.status !== 200) throw new Error(`POST /reinitialize: ${r.status} ${r.body}${r.error ?? ''}`);
    await reinitUnderWay(REPLICA);
    await streaming(REPLICA);
    return methodNote(t0, 'pgbackrest');
  });
}

/** 1c: a new member: node2 stopped, its data directory emptied, its agent started (a full restore from the repository). */
async function newMember(round: number): Promise<void> {
  await streaming(REPLICA);
  await stopReplica();
  const dir = c.node(REPLICA).dataDir;
  for (const e of readdirSync(dir)) rmSync(join(dir, e), { recursive: true, force: true });
  await measure('1c. new member by pgBackRest restore (empty data directory)', round, async () => {
    const t0 = Date.now();
    c.start(REPLICA);
    await streaming(REPLICA);
    return methodNote(t0, 'pgbackrest');
  });
}

/** 2a: node2 behind recycled WAL, its agent started: archive recovery, then streaming; checked not copied again. */
async function catchUpFromArchive(round: number): Promise<void> {
  const behind = await fallBehind();
  const marker = join(c.node(REPLICA).dataDir, 'ha-bench-not-copied-again');
  writeFileSync(marker, 'left by bench/backup-bench.ts\n');
  await measure('2a. catch-up from the archive (agent started)', round, async () => {
    const t0 = Date.now();
    c.start(REPLICA);
    let archiveAt: number | undefined;
    let seen = '';
    await waitFor(
      async () => {
        const doc = (await c.get(REPLICA, '/ha')).json();
        const now = `${doc?.state ?? '(no answer)'}${doc?.replication_state ? ` / ${String(doc.replication_state)}` : ''}`;
        if (showLog && now !== seen) console.log(`    +${((Date.now() - t0) / 1000).toFixed(1)} s GET /ha: ${(seen = now)}`);
        if (doc?.replication_state === 'in archive recovery') archiveAt ??= Date.now();
        return doc?.state === 'running' && doc?.role === 'replica' && doc?.replication_state === 'streaming';
      },
      LONG_MS,
      `${REPLICA} streaming`,
      100,
    );
    const copied = !existsSync(marker) || logLine(REPLICA, /replica created|bootstrap from|reinitializ/i, t0) !== undefined;
    return (
      `${behind}; ${archiveAt ? `in archive recovery at ${((archiveAt - t0) / 1000).toFixed(1)} s` : 'never seen in archive recovery'}` +
      (copied ? ' — WARNING: node2 was copied again' : ', not copied again')
    );
  });
  rmSync(marker, { force: true });
}

/**
 * 2b: the same fall-behind, then POST /reinitialize from the leader as soon as node2's agent
 * reports its PostgreSQL running (it has started replaying from the archive by then). Not before,
 * and without `force`: a reinitialize forced while the database machine is `starting` is answered
 * 200 but dropped (the state takes no cmd.reinitialize). Checked: a file left in the data directory
 * is gone (the directory was copied again).
 */
async function catchUpByRecopy(round: number): Promise<void> {
  const behind = await fallBehind();
  const marker = join(c.node(REPLICA).dataDir, 'ha-bench-copied-again');
  writeFileSync(marker, 'left by bench/backup-bench.ts\n');
  await measure('2b. re-copy (agent started, POST /reinitialize from-leader)', round, async () => {
    const t0 = Date.now();
    c.start(REPLICA);
    let last = '';
    await waitFor(
      async () => {
        if ((await c.get(REPLICA, '/ha')).json()?.state !== 'running') return false;
        const r = await c.post(REPLICA, '/reinitialize', { 'from-leader': true }, 5000);
        last = `${r.status} ${r.body}${r.error ?? ''}`;
        return r.status === 200;
      },
      120_000,
      'POST /reinitialize accepted',
      200,
    ).catch((e) => {
      throw new Error(`${String(e)}: last answer ${last}`);
    });
    const accepted = Date.now();
    // Under way once the data directory has been emptied (node2 may not stream yet either way).
    const copied = await waitFor(() => !existsSync(marker), 60_000, "node2's data directory emptied", 50).catch(() => false);
    await streaming(REPLICA);
    return (
      `${behind}; reinitialize accepted at ${((accepted - t0) / 1000).toFixed(1)} s; ${methodNote(t0, 'basebackup')}` +
      (copied ? ', copied again' : ' — WARNING: the data directory was not copied again')
    );
  });
}

/** The markdown table of every row, and the means per operation when there were several rounds. */
function table(): string {
  const head = [
    '| operation | round | wall s | primary CPU s | primary read MB (rchar) | primary read MB (storage) | primary written MB (wchar) | loopback MB | node2 commands CPU s | notes |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  const line = (r: Row) =>
    `| ${r.op} | ${r.round} | ${r.wallS.toFixed(1)} | ${r.primary.cpuS.toFixed(2)} | ${mb(r.primary.rchar)} | ${mb(r.primary.readBytes)} | ${mb(r.primary.wchar)} | ${mb(r.loopbackBytes)} | ${r.replicaCmdCpuS.toFixed(2)} | ${r.note} |`;
  const out = [...head, ...rows.map(line)];
  if (rounds > 1) {
    out.push(
      '',
      '| operation (mean of rounds) | wall s | primary CPU s | primary read MB (rchar) | loopback MB |',
      '| --- | ---: | ---: | ---: | ---: |',
    );
    for (const op of [...new Set(rows.map((r) => r.op))]) {
      const rs = rows.filter((r) => r.op === op);
      const mean = (f: (r: Row) => number) => rs.reduce((s, r) => s + f(r), 0) / rs.length;
      out.push(
        `| ${op} | ${mean((r) => r.wallS).toFixed(1)} | ${mean((r) => r.primary.cpuS).toFixed(2)} | ${mb(mean((r) => r.primary.rchar))} | ${mb(mean((r) => r.loopbackBytes))} |`,
      );
    }
  }
  return out.join('\n');
}

try {
  const tStart = Date.now();
  await setUpPgBackRest(c);
  c.start(PRIMARY);
  await waitFor(async () => (await c.primaries()).includes(PRIMARY), 120_000, `${PRIMARY} primary`);
  c.start(REPLICA);
  await streaming(REPLICA, 300_000);

  // The stanza first: archive-push fails until it exists (the WAL would pile up in pg_wal).
  await stanzaCreate();
  console.log(`cluster up, stanza created in ${((Date.now() - tStart) / 1000).toFixed(1)} s; loading pgbench scale ${scale}`);
  const t0 = Date.now();
  await pgbench(['-i', '-s', String(scale), '-q']);
  await c.psql(PRIMARY, 'checkpoint', 300_000);
  await archived();
  await streaming(REPLICA);
  const size = (await c.psql(PRIMARY, "select pg_size_pretty(pg_database_size('postgres'))")).trim();
  console.log(`database: pgbench scale ${scale}, ${size}, loaded, archived and replicated in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // The primary's background, to subtract: its PostgreSQL's CPU over 10 s of nothing asked of it.
  const idleBefore = await primaryLoad();
  const idleLo = loopbackBytes();
  await sleep(10_000);
  const idle = diff(await primaryLoad(), idleBefore);
  const idleLoRate = (loopbackBytes() - idleLo) / 10;
  console.log(
    `primary idle (streaming to node2, archiving nothing): ${(idle.cpuS / 10).toFixed(3)} CPU s per s, ${mb(idle.rchar / 10)} MB/s read; loopback ${(idleLoRate / 1024).toFixed(0)} KB/s`,
  );

  // 0. The stanza and a full backup on the primary (POST /backup {"create": true}); its commands
  // are the agent's children, so node1's agent's reaped children's CPU is the backup's.
  const backupCpuBefore = agentChildrenCpu(PRIMARY);
  await measure('0. stanza-create + full backup (POST /backup on node1)', 1, async () => {
    const r = await c.post(PRIMARY, '/backup', { create: true }, LONG_MS);
    if (r.status !== 200) throw new Error(`POST /backup: ${r.status} ${r.body}${r.error ?? ''}\n${c.node(PRIMARY).output.slice(-4000)}`);
    return `${r.body.trim()}; pgBackRest's CPU (node1's agent's commands) ${(agentChildrenCpu(PRIMARY) - backupCpuBefore).toFixed(1)} s`;
  });
  const repoMb = dirMb(join(c.dir, 'pgbackrest', 'repo'));
  console.log(`repository after the backup: ${repoMb} MB (backup and archived WAL, compressed)`);

  for (let round = 1; round <= rounds; round++) {
    await reinitFromLeader(round);
    await reinitByMethods(round);
    await newMember(round);
  }
  for (let round = 1; round <= rounds; round++) {
    await catchUpFromArchive(round);
    await catchUpByRecopy(round);
  }

  console.log(
    `\n## backup-bench: pgbench scale ${scale} (${size}), ${rounds} round(s), ${writeSeconds} s of writes per fall-behind, total ${((Date.now() - tStart) / 1000).toFixed(0)} s\n`,
  );
  console.log(table());
  console.log(
    `\nprimary idle rate: ${(idle.cpuS / 10).toFixed(3)} CPU s per s, loopback ${(idleLoRate / 1024).toFixed(0)} KB/s (multiply by the wall time to subtract the background). ` +
      "Primary = node1's postmaster and descendants; fsync=off (pg_basebackup --no-sync), repository on the local disk.",
  );
} finally {
  if (!stopping) await c.destroy();
}
