/** A real etcd (Debian's etcd-server) on free loopback ports in a temp dir, stopped by PID. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePorts } from './ports.ts';
import { makeTempDir, removeTempDir } from './tmp.ts';
import { stopPid, waitFor } from './processes.ts';

export interface EtcdServer {
  /** `127.0.0.1:<port>` */
  host: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Arguments of a one-member etcd in `dir`, serving clients on `url` and peers on loopback port `peer`. */
export function singleNodeEtcdArgs(dir: string, url: string, peer: number): string[] {
  // prettier-ignore
  return [
    '--name', 's1',
    '--data-dir', join(dir, 'data'),
    '--listen-client-urls', url,
    '--advertise-client-urls', url,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `s1=http://127.0.0.1:${peer}`,
    '--initial-cluster-state', 'new',
    '--log-level', 'error',
  ];
}

/** Starts etcd and waits until it answers /health. */
export async function startEtcd(): Promise<EtcdServer> {
  const dir = await makeTempDir('ha-etcd-');
  const [client, peer] = await freePorts(2);
  const url = `http://127.0.0.1:${client}`;
  const child = spawn(
    'etcd',
    singleNodeEtcdArgs(dir, url, peer!),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  const pid = child.pid!;
  try {
    await waitFor(async () => (await fetch(`${url}/health`)).ok, 15000, `etcd on ${url} (${stderr})`);
  } catch (e) {
    await stopPid(pid, 'SIGKILL');
    await removeTempDir(dir);
    throw e;
  }
  return {
    host: `127.0.0.1:${client}`,
    url,
    pid,
    async stop() {
      await stopPid(pid, 'SIGTERM', 5000);
      await removeTempDir(dir);
    },
  };
}
