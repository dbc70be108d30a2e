/**
 * A replica's data directory wiped (`rm -rf`) while its PostgreSQL runs, on a real 3-node cluster
 * (real etcd, real PostgreSQL 15, one agent process per node). The agent must notice it, stop the
 * orphaned postmaster by its remembered PID (its postmaster.pid went with the directory), clone
 * from the leader again and stream, without ever cloning over the live postmaster, without a
 * "start failed" loop and without a second primary.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, sleep, stopPid, waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';

let c: TestCluster;
/** The wiped replica's old postmaster: killed in afterAll should the test fail to see it gone. */
let oldPid: number | undefined;

beforeAll(async () => {
  c = await TestCluster.create({ nodes: 3, ttl: 10, loopWait: 2, retryTimeout: 3 });
  c.startAll();
});

afterAll(async () => {
  if (oldPid && isPostgres(oldPid)) await stopPid(oldPid, 'SIGKILL');
  await c?.destroy();
});

/** Is `pid` a live `postgres` process (so a recycled PID is never killed by the cleanup)? */
function isPostgres(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^\d+ \(postgres\) [^ZX]/.test(stat);
  } catch {
    return false;
  }
}

interface Transition {
  kind: string;
  machine: string;
  from: string;
  to: string;
  reason?: string;
  time: string;
}

/** The database machine's transitions in a node's journal (beside its data directory). */
function transitions(name: string): Transition[] {
  const file = join(dirname(c.node(name).dataDir), `${name}.journal.jsonl`);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Transition)
    .filter((e) => e.kind === 'transition' && e.machine === 'database');
}

describe('a replica whose data directory is wiped under a running PostgreSQL', () => {
  it('stops the orphaned postmaster by PID, clones again from the leader and streams, with one primary throughout', async () => {
    try {
      const leader = await c.waitForLeader(60_000);
      const replicas = c.nodes.map((n) => n.name).filter((n) => n !== leader);
      await c.waitForStreaming(replicas, 60_000);
      const victim = replicas[0]!;
      oldPid = c.postmasterPid(victim);
      expect(oldPid).toBeGreaterThan(0);
      const before = transitions(victim).length;

      // Never two members answering 200 on /primary, from the wipe to the end.
      let watching = true;
      const doublePrimaries: string[][] = [];
      const watcher = (async () => {
        while (watching) {
          const answers = await Promise.all(
            c.nodes.map(async (n) => ((await c.get(n.name, '/primary')).status === 200 ? n.name : undefined)),
          );
          const primaries = answers.filter((x): x is string => !!x);
          if (primaries.length > 1) doublePrimaries.push(primaries);
          await sleep(200);
        }
      })();

      const t0 = Date.now();
      await rm(c.node(victim).dataDir, { recursive: true, force: true });

      // The old postmaster (no postmaster.pid any more) is stopped by the agent, by PID.
      await waitFor(() => !isPostgres(oldPid!), 10_000, `old postmaster ${oldPid} of ${victim} gone`, 20);
      const goneAfterMs = Date.now() - t0;

      // Cloned again and streaming from the leader with a new postmaster.
      await waitFor(
        async () => {
          const pid = c.postmasterPid(victim);
          if (!pid || pid === oldPid) return false;
          return (await c.psql(victim, 'select status from pg_stat_wal_receiver', 2000).catch(() => '')).trim() === 'streaming';
        },
        90_000,
        `${victim} streaming again`,
      );
      await c.psql(leader, "create table after_wipe (id int primary key, v text); insert into after_wipe values (1, 'again')");
      await waitFor(
        async () => (await c.psql(victim, 'select v from after_wipe where id = 1').catch(() => '')).trim() === 'again',
        30_000,
        `row on ${victim}`,
      );
      expect((await c.get(victim, '/replica')).status).toBe(200);
      const ha = (await c.get(victim, '/ha')).json();
      expect(ha.state).toBe('running');
      expect(ha.role).toBe('replica');

      watching = false;
      await watcher;

      const after = transitions(victim).slice(before);
      const path = after.map((t) => t.to);
      const startFailures = path.filter((s) => s === 'start_failed').length;
      const stopOnWipe = after.find((t) => t.from === 'running' && t.to === 'stopping');
      const log = `transitions of ${victim} after the wipe:\n${after.map((t) => `${t.time} ${t.from} -> ${t.to}${t.reason ? ` (${t.reason.slice(0, 160)})` : ''}`).join('\n')}`;

      if (process.env['DW_DEBUG']) console.log(`old postmaster gone after ${goneAfterMs} ms\n${log}`);
      expect(goneAfterMs, log).toBeLessThan(5_000);
      expect(startFailures, log).toBeLessThan(5);
      // The expected path: stopped because the directory went, cloned, started.
      expect(stopOnWipe?.reason ?? '', log).toMatch(/data directory gone/);
      expect(path, log).toContain('creating_replica');
      expect(path.at(-1), log).toBe('running');
      expect(doublePrimaries, log).toEqual([]);
      expect(await c.leader()).toBe(leader);
      // No postmaster outlives the test: the old one is gone for good.
      expect(isAlive(oldPid!) && isPostgres(oldPid!)).toBe(false);
    } catch (e) {
      throw new Error(`${String(e)}\n${c.logs()}`);
    }
  });
});
