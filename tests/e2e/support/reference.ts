/**
 * The field's reference (Debian's patroni 3.0.2) on the nodes of a TestCluster, for the takeover
 * tests (issue 26, docs/migration.md): one `patroni` process per node, run as the PostgreSQL OS
 * user, on the node's name, ports and data directory, with the same superuser and replication
 * credentials and the same unix socket directory as our agent's configuration of that node (its
 * default `<dirname(data_dir)>/.<name>-sock`), so that either agent can manage the PostgreSQL the
 * other started. Processes are stopped by PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pgOsUser } from '../../../src/postgres/os-user.ts';
import { pgBinDir } from '../../support/pg.ts';
import { run, stopPid } from '../../support/processes.ts';
import type { TestCluster, TestNode } from './cluster.ts';

/** The reference's program (Debian package `patroni`). */
export const PATRONI = '/usr/bin/patroni';
/** Its command-line client. */
export const PATRONICTL = '/usr/bin/patronictl';

/** The reference's timing: its validator wants ttl ≥ 20 and loop_wait + 2 × retry_timeout ≤ ttl. */
export const REFERENCE_TIMING = { ttl: 20, loopWait: 2, retryTimeout: 5 };

/** One node's reference process. */
export interface ReferenceNode {
  name: string;
  configPath: string;
  proc: ChildProcess;
  output: string;
}

/** Path of the reference's configuration of a node: `<dir>/<name>.patroni.yml`. */
export function referenceConfigPath(c: TestCluster, node: TestNode): string {
  return join(c.dir, `${node.name}.patroni.yml`);
}

/**
 * Writes the reference's configuration of `node` (patroni.yml, its own dialect), the node's data
 * directory's parent and socket directory owned by the PostgreSQL OS user. Local parameters are
 * those of TestCluster's configuration (fsync off, shared_buffers 16MB), so neither agent finds a
 * parameter of the other pending restart.
 */
export async function writeReferenceConfig(c: TestCluster, node: TestNode): Promise<string> {
  const { uid, gid } = pgOsUser();
  const home = dirname(node.dataDir);
  const socketDir = join(home, `.${node.name}-sock`);
  for (const d of [home, socketDir]) {
    await mkdir(d, { recursive: true, mode: 0o700 });
    await chown(d, uid, gid);
  }
  const path = referenceConfigPath(c, node);
  await writeFile(
    path,
    [
      `scope: ${c.scope}`,
      `name: ${node.name}`,
      'restapi:',
      `  listen: 127.0.0.1:${node.apiPort}`,
      `  connect_address: 127.0.0.1:${node.apiPort}`,
      'etcd3:',
      `  hosts: ${c.etcd.host}`,
      'bootstrap:',
      '  dcs:',
      `    ttl: ${REFERENCE_TIMING.ttl}`,
      `    loop_wait: ${REFERENCE_TIMING.loopWait}`,
      `    retry_timeout: ${REFERENCE_TIMING.retryTimeout}`,
      '    postgresql:',
      '      use_pg_rewind: true',
      '  initdb: [{encoding: UTF8}, data-checksums]',
      'postgresql:',
      `  listen: 127.0.0.1:${node.pgPort}`,
      `  connect_address: 127.0.0.1:${node.pgPort}`,
      `  data_dir: ${node.dataDir}`,
      `  bin_dir: ${pgBinDir()}`,
      `  pgpass: ${join(home, 'patroni.pgpass')}`,
      '  authentication:',
      '    superuser: {username: postgres, password: e2e-super}',
      '    replication: {username: replicator, password: e2e-repl}',
      '  parameters:',
      `    unix_socket_directories: '${socketDir}'`,
      "    fsync: 'off'",
      '    shared_buffers: 16MB',
      '  pg_hba:',
      '  - local all all trust',
      '  - host all all 127.0.0.1/32 scram-sha-256',
      '  - host replication replicator 127.0.0.1/32 scram-sha-256',
      '',
    ].join('\n'),
  );
  return path;
}

/** Starts the reference on `node` as the PostgreSQL OS user (its configuration written first). */
export async function startReference(c: TestCluster, node: TestNode): Promise<ReferenceNode> {
  const configPath = await writeReferenceConfig(c, node);
  const { uid, gid } = pgOsUser();
  const proc = spawn(PATRONI, [configPath], {
    uid,
    gid,
    cwd: dirname(node.dataDir),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dirname(node.dataDir), LANG: 'C.UTF-8' },
  });
  const ref: ReferenceNode = { name: node.name, configPath, proc, output: '' };
  proc.stdout?.on('data', (d) => (ref.output += d));
  proc.stderr?.on('data', (d) => (ref.output += d));
  return ref;
}

/** Stops a reference process: SIGTERM (in pause it leaves PostgreSQL running), SIGKILL after `graceMs`. */
export async function stopReference(ref: ReferenceNode, graceMs = 30_000): Promise<void> {
  if (ref.proc.pid) await stopPid(ref.proc.pid, 'SIGTERM', graceMs);
}

/** Runs patronictl with a node's reference configuration (`pause --wait`, `list`, …); resolves with stdout. */
export function patronictl(configPath: string, args: string[]): Promise<string> {
  return run(PATRONICTL, ['-c', configPath, ...args], { env: { ...process.env, HOME: dirname(configPath) } });
}

/** True when the reference is installed (Debian's patroni). */
export function referenceInstalled(): boolean {
  return existsSync(PATRONI) && existsSync(PATRONICTL);
}
