/**
 * Helpers of the synchronous-replication e2e tests: the `sync` key as etcd holds it, waiting for
 * the synchronous set to be in place, and losing the leader (kill -9 of its agent and its
 * postmaster together).
 */
import { sleep, stopPid, waitFor } from '../../support/processes.ts';
import type { TestCluster } from './cluster.ts';

/** The `sync` key: leader, members (sorted), quorum; undefined when absent. */
export async function syncKey(c: TestCluster): Promise<{ leader: string; members: string[]; quorum: number } | undefined> {
  const raw = await c.etcdGet('sync');
  if (!raw) return undefined;
  const v = JSON.parse(raw) as { leader: string; sync_standby: string | null; quorum?: number };
  return { leader: v.leader, members: v.sync_standby ? v.sync_standby.split(',').sort() : [], quorum: v.quorum ?? 0 };
}

/**
 * Waits until the leader holds the lock, every other member streams, and the `sync` key names
 * the leader with at least `members` standbys. Returns the leader.
 */
export async function waitSyncReady(c: TestCluster, members: number, timeoutMs = 90_000): Promise<string> {
  return waitFor(
    async () => {
      const leader = await c.leader();
      if (!leader) return undefined;
      const key = await syncKey(c).catch(() => undefined);
      if (!key || key.leader !== leader || key.members.length < members) return undefined;
      for (const n of c.nodes) {
        if (n.name === leader) continue;
        const r = await c.get(n.name, '/replica').catch(() => undefined);
        if (r?.status !== 200) return undefined;
      }
      return leader;
    },
    timeoutMs,
    `a leader with ${members} synchronous standby(s) in the sync key and every replica streaming`,
  );
}

/**
 * Loses a member as a machine is lost: kill -9 of its agent, its postmaster and every child of
 * the postmaster together (a walsender outliving a killed postmaster would still ship the WAL it
 * has, which a lost machine does not). Resolves when all are gone.
 */
export async function loseMember(c: TestCluster, name: string): Promise<void> {
  const pm = c.postmasterPid(name);
  const agent = c.node(name).proc?.pid;
  const children = pm ? c.postgresChildren(name, '') : [];
  const pids = [agent, pm, ...children].filter((p): p is number => p !== undefined);
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  await Promise.all(pids.map((p) => stopPid(p, 'SIGKILL')));
  // The postmaster's children notice its death and exit; give them a moment before a restart.
  await sleep(200);
}

/** `synchronous_standby_names` of a running member. */
export async function standbyNames(c: TestCluster, name: string): Promise<string> {
  return (await c.psql(name, 'show synchronous_standby_names')).trim();
}
