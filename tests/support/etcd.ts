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
  /** PID of the running etcd (changes after `restart()`). */
  pid: number;
  stop(): Promise<void>;
  /** Fault tests: SIGKILL the process, keeping its data directory and ports. */
  kill(): Promise<void>;
  /** Fault tests: starts it again on the same data directory and ports; resolves once /health answers. */
  restart(): Promise<void>;
  /** Fault tests: SIGSTOP (freeze) / SIGCONT (thaw) the process. */
  freeze(): void;
  thaw(): void;
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
export async function startEtcd(opts: { extraHosts?: string[] } = {}): Promise<EtcdServer> {
  const dir = await makeTempDir('ha-etcd-');
  const [client, peer] = await freePorts(2);
  const url = `http://127.0.0.1:${client}`;
  // extraHosts (network-namespace tests): the same port on more addresses, e.g. a veth's.
  const listenUrls = [url, ...(opts.extraHosts ?? []).map((h) => `http://${h}:${client}`)].join(',');
  let stderr = '';
  const launch = async (): Promise<number> => {
    const child = spawn('etcd', singleNodeEtcdArgs(dir, listenUrls, peer!), { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d) => (stderr += d));
    const pid = child.pid!;
    try {
      await waitFor(
        async () => (await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) })).ok,
        15000,
        `etcd on ${url} (${stderr})`,
      );
    } catch (e) {
      await stopPid(pid, 'SIGKILL');
      throw e;
    }
    return pid;
  };
  let pid: number;
  try {
    pid = await launch();
  } catch (e) {
    await removeTempDir(dir);
    throw e;
  }
  const server: EtcdServer = {
    host: `127.0.0.1:${client}`,
    url,
    pid,
    async stop() {
      try {
        process.kill(server.pid, 'SIGCONT');
      } catch {
        /* gone */
      }
      await stopPid(server.pid, 'SIGTERM', 5000);
      await removeTempDir(dir);
    },
    async kill() {
      await stopPid(server.pid, 'SIGKILL');
    },
    async restart() {
      server.pid = await launch();
    },
    freeze() {
      process.kill(server.pid, 'SIGSTOP');
    },
    thaw() {
      process.kill(server.pid, 'SIGCONT');
    },
  };
  return server;
}

/** One member of a multi-member test etcd. */
export interface EtcdMember {
  name: string;
  /** `127.0.0.1:<client port>` */
  host: string;
  url: string;
  pid: number | undefined;
  kill(): Promise<void>;
  restart(): Promise<void>;
}

/**
 * A real n-member etcd cluster on loopback (fault tests: an agent's endpoint or the etcd leader
 * killed). It is an EtcdServer whose `host`/`url`/`pid` are the first member's and whose `hosts`
 * and `urls` list every member; `members` reach each one; `stop()` stops them all.
 */
export async function startEtcdCluster(
  n = 3,
): Promise<EtcdServer & { hosts: string[]; urls: string[]; members: EtcdMember[]; leaderName(): Promise<string | undefined> }> {
  const dir = await makeTempDir('ha-etcd-cluster-');
  const ports = await freePorts(2 * n);
  const names = Array.from({ length: n }, (_, i) => `e${i + 1}`);
  const peerUrl = (i: number) => `http://127.0.0.1:${ports[2 * i + 1]}`;
  const initialCluster = names.map((nm, i) => `${nm}=${peerUrl(i)}`).join(',');
  const stderr: string[] = names.map(() => '');
  const members: EtcdMember[] = names.map((name, i) => {
    const url = `http://127.0.0.1:${ports[2 * i]}`;
    const m: EtcdMember = {
      name,
      host: `127.0.0.1:${ports[2 * i]}`,
      url,
      pid: undefined,
      async kill() {
        if (m.pid) await stopPid(m.pid, 'SIGKILL');
        m.pid = undefined;
      },
      async restart() {
        // prettier-ignore
        const child = spawn('etcd', [
          '--name', name,
          '--data-dir', join(dir, name),
          '--listen-client-urls', url,
          '--advertise-client-urls', url,
          '--listen-peer-urls', peerUrl(i),
          '--initial-advertise-peer-urls', peerUrl(i),
          '--initial-cluster', initialCluster,
          '--initial-cluster-state', 'new',
          '--initial-cluster-token', 'ha-test',
          '--log-level', 'error',
        ], { stdio: ['ignore', 'ignore', 'pipe'] });
        child.stderr?.on('data', (d) => (stderr[i] += d));
        m.pid = child.pid!;
      },
    };
    return m;
  });
  const healthy = async (m: EtcdMember) => {
    try {
      return (await fetch(`${m.url}/health`, { signal: AbortSignal.timeout(1000) })).ok;
    } catch {
      return false;
    }
  };
  const stopAll = async () => {
    for (const m of members) if (m.pid) await stopPid(m.pid, 'SIGKILL');
    await removeTempDir(dir);
  };
  try {
    for (const m of members) await m.restart();
    await waitFor(
      async () => (await Promise.all(members.map(healthy))).every(Boolean),
      20_000,
      `a ${n}-member etcd (${stderr.join(' | ')})`,
    );
  } catch (e) {
    await stopAll();
    throw e;
  }
  const first = members[0]!;
  const server = {
    host: first.host,
    url: first.url,
    get pid() {
      return first.pid ?? 0;
    },
    set pid(_v: number) {
      /* read-only here */
    },
    hosts: members.map((m) => m.host),
    urls: members.map((m) => m.url),
    members,
    stop: stopAll,
    kill: () => first.kill(),
    restart: async () => {
      await first.restart();
      await waitFor(() => healthy(first), 15_000, `etcd member ${first.name}`);
    },
    freeze: () => {
      for (const m of members) if (m.pid) process.kill(m.pid, 'SIGSTOP');
    },
    thaw: () => {
      for (const m of members) if (m.pid) process.kill(m.pid, 'SIGCONT');
    },
    /** Name of the current etcd leader (asked of any live member). */
    async leaderName(): Promise<string | undefined> {
      for (const m of members) {
        if (!m.pid) continue;
        try {
          const r = (await (
            await fetch(`${m.url}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1000) })
          ).json()) as { leader?: string; header?: { member_id?: string } };
          const list = (await (
            await fetch(`${m.url}/v3/cluster/member/list`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1000) })
          ).json()) as { members?: { ID: string; name: string }[] };
          return list.members?.find((x) => x.ID === r.leader)?.name;
        } catch {
          /* try the next */
        }
      }
      return undefined;
    },
  };
  return server;
}
