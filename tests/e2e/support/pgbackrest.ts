/**
 * Real pgBackRest (Debian's `pgbackrest`, /usr/bin/pgbackrest) for the e2e tests: one repository
 * on the local file system under the cluster's temp dir, and one configuration file per member
 * (as every server has its own /etc/pgbackrest/pgbackrest.conf): `[global]` names the repository,
 * `[<scope>]` the member's data directory, port and socket. The commands the agents run are built
 * here: archive_command, restore_command, the backup section and the pgBackRest replica creation
 * method (delta restore as a standby). Everything lives in the cluster's dir, removed by destroy().
 */
import { execFileSync } from 'node:child_process';
import { chown, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { run, waitFor } from '../../support/processes.ts';
import { createSafetyTables } from './writer.ts';
import type { TestCluster, TestNode } from './cluster.ts';

/** The pgBackRest executable the tests use. */
export const PGBACKREST = '/usr/bin/pgbackrest';

/** The PostgreSQL OS user's uid and gid when the tests run as root (the agents run PostgreSQL and its tools as that user). */
function pgUid(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** The cluster's temp dir, from a node's data dir (`<dir>/<name>/data`). */
function clusterDir(node: Pick<TestNode, 'dataDir'>): string {
  return dirname(dirname(node.dataDir));
}

/** A member's pgBackRest configuration file. */
export function confOf(node: Pick<TestNode, 'dataDir' | 'name'>): string {
  return join(clusterDir(node), `${node.name}.pgbackrest.conf`);
}

/** `pgbackrest --config=<member's> --stanza=<scope>` (the start of every command line). */
export function pgbackrest(node: Pick<TestNode, 'dataDir' | 'name'>, stanza: string): string {
  return `${PGBACKREST} --config=${confOf(node)} --stanza=${stanza}`;
}

/** archive_command of a member: push the finished segment to the repository. */
export function archiveCommand(node: Pick<TestNode, 'dataDir' | 'name'>, stanza: string): string {
  return `${pgbackrest(node, stanza)} archive-push %p`;
}

/**
 * restore_command of a member: fetch a segment from the repository. `delaySeconds` sleeps first
 * (a slower archive, so a polled API can see the catch-up happen; production has no reason to).
 */
export function restoreCommand(node: Pick<TestNode, 'dataDir' | 'name'>, stanza: string, delaySeconds = 0): string {
  return `${delaySeconds > 0 ? `sleep ${delaySeconds}; ` : ''}${pgbackrest(node, stanza)} archive-get %f "%p"`;
}

/**
 * Creates the repository and writes every member's configuration file (after TestCluster.create,
 * before the agents start). The repository, log and lock directories belong to the PostgreSQL OS
 * user, who runs every pgBackRest command (the agents run them as that user). `of`: the
 * repository and stanza of another cluster (a standby cluster restoring and fetching the WAL of
 * its primary cluster's repository); default this cluster's own, stanza = its scope.
 */
export async function setUpPgBackRest(c: TestCluster, of?: TestCluster): Promise<{ repo: string }> {
  const base = join((of ?? c).dir, 'pgbackrest');
  const repo = join(base, 'repo');
  const stanza = (of ?? c).scope;
  const uid = pgUid();
  for (const d of [base, repo, join(base, 'log'), join(base, 'lock')]) {
    await mkdir(d, { recursive: true, mode: 0o750 });
    if (uid !== undefined) await chown(d, uid.uid, uid.gid);
  }
  for (const n of c.nodes) {
    await writeFile(
      confOf(n),
      [
        '[global]',
        `repo1-path=${repo}`,
        'repo1-retention-full=2',
        `log-path=${join(base, 'log')}`,
        `lock-path=${join(base, 'lock')}`,
        'log-level-console=warn',
        'log-level-file=off',
        'start-fast=y',
        'archive-timeout=60',
        '',
        `[${stanza}]`,
        `pg1-path=${n.dataDir}`,
        `pg1-port=${n.pgPort}`,
        `pg1-socket-path=${join(dirname(n.dataDir), `.${n.name}-sock`)}`,
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
  }
  return { repo };
}

/** `pgbackrest info --output=json` of the stanza, read with `node`'s configuration, as the PostgreSQL user. */
export async function backupInfo(c: TestCluster, node: string): Promise<Array<{ backup?: Array<{ label: string; type: string }> }>> {
  const uid = pgUid();
  const out = await run(PGBACKREST, [`--config=${confOf(c.node(node))}`, `--stanza=${c.scope}`, 'info', '--output=json'], {
    cwd: '/',
    ...(uid ? { uid: uid.uid, gid: uid.gid } : {}),
  });
  return JSON.parse(out);
}

/** The `backup` section of a member's file (docs/backups.md "Backups"): stanza-create first when asked, then a backup. */
export function backupSection(node: Pick<TestNode, 'dataDir' | 'name'>, stanza: string): string {
  return `backup: ${JSON.stringify({ create: `${pgbackrest(node, stanza)} stanza-create`, command: `${pgbackrest(node, stanza)} backup` })}`;
}

/**
 * Sets up pgBackRest (setUpPgBackRest), starts node1 until it is primary and node2 until it
 * streams, and creates the safety tables on both; the agents' logs are in the error when any step
 * fails.
 */
export async function startArchivedPair(c: TestCluster): Promise<void> {
  await setUpPgBackRest(c);
  c.start('node1');
  try {
    await waitFor(async () => (await c.primaries()).includes('node1'), 90_000, 'node1 primary');
    c.start('node2');
    await c.waitForStreaming(['node2'], 90_000);
    await createSafetyTables(c, 'node1', ['node1', 'node2']);
  } catch (e) {
    throw new Error(`${String(e)}\n${c.logs()}`);
  }
}
