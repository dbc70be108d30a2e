/**
 * hactl against a real 3-node cluster (real etcd, real PostgreSQL 15, one agent process per
 * node). Prompts are answered (and refused) through a pseudo-terminal (`script`, bsdutils).
 * Covers: list in every format and topology, show-config, edit-config (diff, refusal, concurrent
 * change, invalid value), restart --pending and restart in a pty, reload, pause/resume, switchover
 * (pty, refused and performed; scheduled, listed, flushed and run), failover, history, reinit
 * --wait, a member that is down, and remove (refused confirmations, then removal).
 */
import { spawn } from 'node:child_process';
import { resolve as resolve_ } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { run, waitFor } from '../support/processes.ts';
import { runHactl, runHactlPty, type HactlResult } from '../hactl/run-hactl.ts';
import { TestCluster } from './support/cluster.ts';

let c: TestCluster;
let cfg: string[] = [];
let leader = '';

const hactl = (...args: string[]): Promise<HactlResult> => runHactl([...cfg, ...args]);

type Row = Record<string, string | number>;
async function rows(): Promise<Row[]> {
  const r = await hactl('list', '-f', 'json');
  if (r.code !== 0) throw new Error(`list failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Row[];
}

/** Waits for 3 members: one Leader (running), two streaming replicas; returns the leader. */
async function settle(not?: string): Promise<string> {
  return waitFor(
    async () => {
      const rs = await rows();
      const lead = rs.filter((r) => r['Role'] === 'Leader' && r['State'] === 'running');
      const reps = rs.filter((r) => r['Role'] === 'Replica' && r['State'] === 'streaming');
      const name = lead[0]?.['Member'];
      return rs.length === 3 && lead.length === 1 && reps.length === 2 && name !== not ? String(name) : undefined;
    },
    90_000,
    'a settled cluster',
    250,
  );
}

/** Runs `list --watch 0.3` until it printed the table twice (at most `maxMs`), then Ctrl-C (SIGINT). */
function watchTwice(maxMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/hactl.ts', ...cfg, 'list', '--watch', '0.3'], {
      cwd: resolve_(import.meta.dirname, '../..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let sent = false;
    const interrupt = () => {
      if (sent) return;
      sent = true;
      child.kill('SIGINT');
    };
    const timer = setTimeout(interrupt, maxMs);
    child.stdout.on('data', (d) => {
      out += d;
      if ((out.match(/^\+ Cluster: e2e /gm) ?? []).length >= 2) interrupt();
    });
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

const replicas = () => c.nodes.map((n) => n.name).filter((n) => n !== leader);

beforeAll(async () => {
  c = await TestCluster.create({ nodes: 3, ttl: 10, loopWait: 2, retryTimeout: 3 });
  cfg = ['-c', c.nodes[0]!.configPath];
  c.startAll();
  await c.waitForLeader(60_000);
  leader = await settle();
});

afterAll(async () => {
  await c?.destroy();
});

describe('hactl on a real cluster', () => {
  it('list: pretty table with the title, json, yaml, tsv; topology; a bad format is a usage error', async () => {
    const pretty = await hactl('list');
    expect(pretty.code).toBe(0);
    const lines = pretty.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^\+ Cluster: e2e \(\d+\) [-+]+$/);
    expect(lines[1]).toMatch(/^\| Member +\| Host +\| Role +\| State +\| TL \| Receive LSN \| Lag \| Replay LSN \| Lag \|$/);
    const leaderLine = lines.find((l) => l.startsWith(`| ${leader} `))!;
    expect(leaderLine).toMatch(new RegExp(`\\| 127\\.0\\.0\\.1:${c.node(leader).pgPort} +\\| Leader +\\| running +\\| +1 \\|`));
    for (const r of replicas())
      expect(lines.find((l) => l.startsWith(`| ${r} `))).toMatch(
        /\| Replica +\| streaming +\| +1 \| [0-9A-F]+\/[0-9A-F]+ +\| +\d+ \| [0-9A-F]+\/[0-9A-F]+ +\| +\d+ \|$/,
      );

    const json = await rows();
    expect(json.map((r) => r['Member'])).toEqual(['node1', 'node2', 'node3']);
    expect(json[0]).toMatchObject({ Cluster: 'e2e', TL: 1 });
    const replicaRow = json.find((r) => r['Member'] === replicas()[0])!;
    expect(Object.keys(replicaRow)).toEqual([
      'Cluster',
      'Member',
      'Host',
      'Role',
      'State',
      'TL',
      'Receive LSN',
      'Receive Lag',
      'Replay LSN',
      'Replay Lag',
    ]);

    const yaml = await hactl('list', '--format', 'yaml');
    expect(YAML.parse(yaml.stdout).map((r: Row) => r['Member'])).toEqual(['node1', 'node2', 'node3']);
    const tsv = await hactl('list', '-f', 'tsv');
    expect(tsv.stdout.split('\n')[0]).toBe('Cluster\tMember\tHost\tRole\tState\tTL\tReceive LSN\tReceive Lag\tReplay LSN\tReplay Lag');

    const topo = await hactl('topology');
    expect(topo.code).toBe(0);
    const body = topo.stdout.split('\n').filter((l) => l.startsWith('| '));
    expect(body[1]).toMatch(new RegExp(`^\\| ${leader} `));
    expect(body.slice(2).map((l) => /^\| \+ (node\d)/.exec(l)?.[1])).toEqual(replicas());

    const watched = await watchTwice(20_000);
    expect(watched.code).toBe(0);
    expect(watched.out.match(/^\+ Cluster: e2e /gm)!.length).toBeGreaterThanOrEqual(2);

    const bad = await hactl('list', '-f', 'xml');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/xml/);
    const nowhere = await runHactl(['list'], { env: { HACTL_CONFIG: '' } });
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toMatch(/no DCS/);
  });

  it('show-config and edit-config: diff and write with --force, refused in a pty, invalid value refused', async () => {
    const show = await hactl('show-config');
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^loop_wait: 2$/m);
    expect(show.stdout).toMatch(/^ttl: 10$/m);

    const edit = await hactl('edit-config', '-s', 'maximum_lag_on_failover=2097152', '--force');
    expect(edit.code, edit.stderr).toBe(0);
    expect(edit.stdout).toMatch(/^--- before\n\+\+\+ after\n@@ /m);
    expect(edit.stdout).toMatch(/^\+maximum_lag_on_failover: 2097152$/m);
    expect(edit.stdout).toMatch(/Configuration changed/);
    expect((await hactl('show-config')).stdout).toMatch(/^maximum_lag_on_failover: 2097152$/m);

    const refused = await runHactlPty(
      [...cfg, 'edit-config', '-s', 'check_timeline=true'],
      [{ expect: 'Apply these changes? [y/N]: ', send: 'n' }],
    );
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(/^\+check_timeline: true$/m);
    expect(refused.output).toMatch(/Aborting edit-config/);
    expect((await hactl('show-config')).stdout).toMatch(/^check_timeline: false$/m);

    const invalid = await hactl('edit-config', '-s', 'loop_wait=100', '--force');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/invalid configuration: .*loop_wait 100/);
    const usage = await hactl('edit-config', '-s', 'novalue', '--force');
    expect(usage.code).toBe(2);
  });

  it('edit-config: a concurrent change between reading and writing aborts the write', async () => {
    const r = await runHactlPty(
      [...cfg, 'edit-config', '-s', 'loop_wait=3'],
      [
        {
          expect: 'Apply these changes? [y/N]: ',
          send: 'y',
          before: async () => {
            const other = await hactl('edit-config', '-s', 'maximum_lag_on_failover=3145728', '--force');
            expect(other.code, other.stderr).toBe(0);
          },
        },
      ],
    );
    expect(r.code).toBe(1);
    expect(r.output).toMatch(/^\+loop_wait: 3$/m);
    expect(r.output).toMatch(/Config modification aborted due to concurrent changes/);
    const show = (await hactl('show-config')).stdout;
    expect(show).toMatch(/^loop_wait: 2$/m);
    expect(show).toMatch(/^maximum_lag_on_failover: 3145728$/m);
  });

  it('restart --pending restarts the members with a pending restart, replicas first', async () => {
    const set = await hactl('edit-config', '-p', 'max_connections=120', '--force');
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/^\+ +max_connections: 120$/m);
    await waitFor(async () => (await rows()).every((r) => r['Pending restart'] === '*'), 30_000, 'pending restart on every member');
    const pretty = await hactl('list');
    expect(pretty.stdout).toMatch(/\| Pending restart \| Pending restart reason +\|/);
    expect(pretty.stdout).toMatch(/\| \* +\| max_connections: 100->120 \|/);

    const r = await hactl('restart', 'e2e', '--pending', '--force');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const done = r.stdout.split('\n').filter((l) => l.startsWith('Success: restart on member '));
    expect(done.map((l) => l.split(' ').pop())).toEqual([...replicas(), leader]);
    expect(await c.psql(leader, 'show max_connections')).toBe('120\n');
    await waitFor(async () => (await rows()).every((row) => row['Pending restart'] === undefined), 30_000, 'pending restart cleared');

    const again = await hactl('restart', 'e2e', '--pending', '--force');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/No member has a pending restart/);
    const unknown = await hactl('restart', 'e2e', 'nosuch', '--force');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/Member nosuch does not exist in cluster e2e/);
    leader = await settle();
  });

  it('restart in a pty: refused, then confirmed', async () => {
    const target = replicas()[0]!;
    const question = `Are you sure you want to restart members ${target}? [y/N]: `;
    const no = await runHactlPty([...cfg, 'restart', 'e2e', target], [{ expect: question, send: 'n' }]);
    expect(no.code).toBe(1);
    expect(no.output).toMatch(/Aborting restart/);
    const before = (await c.get(target, '/ha')).json().postmaster_start_time;
    const yes = await runHactlPty([...cfg, 'restart', 'e2e', target], [{ expect: question, send: 'y' }]);
    expect(yes.code, yes.output).toBe(0);
    expect(yes.output).toMatch(new RegExp(`Success: restart on member ${target}`));
    expect((await c.get(target, '/ha')).json().postmaster_start_time).not.toBe(before);
  });

  it('reload every member', async () => {
    const r = await hactl('reload', 'e2e', '--force');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.match(/^Success: reload on member node\d$/gm)).toHaveLength(3);
  });

  it('pause and resume with --wait; a second pause/resume is refused', async () => {
    const p = await hactl('pause', '--wait');
    expect(p.code, p.stderr).toBe(0);
    expect(p.stdout).toMatch(/Success: cluster management is paused/);
    expect((await hactl('list')).stdout).toMatch(/^ Maintenance mode: on$/m);
    const again = await hactl('pause');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/Cluster is already paused/);
    const sched = await hactl(
      'switchover',
      '--candidate',
      replicas()[0]!,
      '--scheduled',
      new Date(Date.now() + 60_000).toISOString(),
      '--force',
    );
    expect(sched.code).toBe(1);
    expect(sched.stderr).toMatch(/Can't schedule switchover in the paused state/);
    const r = await hactl('resume', '--wait');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Success: cluster management is resumed/);
    expect((await hactl('list')).stdout).not.toMatch(/Maintenance mode/);
    const notPaused = await hactl('resume');
    expect(notPaused.code).toBe(1);
    expect(notPaused.stderr).toMatch(/Cluster is not paused/);
  });

  it('switchover in a pty: refused, then answered and performed; history shows it', async () => {
    const candidate = replicas()[1]!;
    const dialog = (last: string) => [
      { expect: `Primary [${leader}]: `, send: '' },
      { expect: /Candidate \["node\d","node\d"\] \[\]: /, send: candidate },
      { expect: 'When should the switchover take place (e.g. 2030-01-01T14:30) [now]: ', send: '' },
      { expect: `Are you sure you want to switchover cluster e2e, demoting current leader ${leader}? [y/N]: `, send: last },
    ];
    const no = await runHactlPty([...cfg, 'switchover'], dialog('n'));
    expect(no.code).toBe(1);
    expect(no.output).toMatch(/Current cluster topology/);
    expect(no.output).toMatch(/Aborting switchover/);
    expect(await c.leader()).toBe(leader);

    const yes = await runHactlPty([...cfg, 'switchover'], dialog('y'), { timeoutMs: 90_000 });
    expect(yes.code, yes.output).toBe(0);
    expect(yes.output).toMatch(new RegExp(`\\d\\d:\\d\\d:\\d\\d Successfully switched over to "${candidate}"`));
    const old = leader;
    leader = await settle(old);
    expect(leader).toBe(candidate);

    const hist = await hactl('history', '-f', 'json');
    expect(hist.code).toBe(0);
    const entries = JSON.parse(hist.stdout) as Row[];
    expect(entries.at(-1)).toMatchObject({ TL: 1, 'New Leader': candidate });
    expect(entries.at(-1)!['LSN']).toEqual(expect.any(Number));
    const pretty = await hactl('history');
    expect(pretty.stdout.split('\n')[1]).toMatch(/^\| TL \| LSN +\| Reason +\| Timestamp +\| New Leader \|$/);
    expect((await rows()).find((r) => r['Member'] === leader)!['TL']).toBe(2);
  });

  it('scheduled switchover: listed, flushed, then scheduled again and run at its time', async () => {
    const candidate = replicas()[0]!;
    const far = await hactl(
      'switchover',
      '--candidate',
      candidate,
      '--scheduled',
      new Date(Date.now() + 3_600_000).toISOString(),
      '--force',
    );
    expect(far.code, far.stderr).toBe(0);
    expect(far.stdout).toMatch(/Switchover scheduled/);
    const listed = (await hactl('list')).stdout;
    expect(listed).toMatch(/^ Switchover scheduled at: \d{4}-\d\d-\d\dT[\d:.]+\+00:00$/m);
    expect(listed).toMatch(new RegExp(`^ {20}from: ${leader}$`, 'm'));
    expect(listed).toMatch(new RegExp(`^ {22}to: ${candidate}$`, 'm'));
    const flushed = await hactl('flush', 'switchover');
    expect(flushed.code).toBe(0);
    expect(flushed.stdout).toMatch(/Success: scheduled switchover deleted/);
    expect((await hactl('list')).stdout).not.toMatch(/Switchover scheduled/);
    expect((await hactl('flush', 'e2e', 'switchover')).stdout).toMatch(/No pending scheduled switchover/);

    const past = await hactl('switchover', '--candidate', candidate, '--scheduled', '2001-01-01T00:00:00Z', '--force');
    expect(past.code).toBe(1);
    expect(past.stderr).toMatch(/Cannot schedule switchover in the past/);
    const garbage = await hactl('switchover', '--scheduled', 'tomorrow-ish', '--force');
    expect(garbage.code).toBe(2);

    const soon = await hactl('switchover', '--candidate', candidate, '--scheduled', new Date(Date.now() + 4000).toISOString(), '--force');
    expect(soon.code, soon.stderr).toBe(0);
    const old = leader;
    leader = await settle(old);
    expect(leader).toBe(candidate);
  });

  it('failover to a candidate; checks name the member', async () => {
    const noCandidate = await hactl('failover', '--force');
    expect(noCandidate.code).toBe(1);
    expect(noCandidate.stderr).toMatch(/Failover could be performed only to a specific candidate/);
    const self = await hactl('switchover', '--candidate', leader, '--force');
    expect(self.code).toBe(1);
    expect(self.stderr).toMatch(new RegExp(`Member ${leader} is already the leader of cluster e2e`));
    const ghost = await hactl('switchover', '--candidate', 'ghost', '--force');
    expect(ghost.code).toBe(1);
    expect(ghost.stderr).toMatch(/Member ghost does not exist in cluster e2e or is tagged as nofailover/);

    const candidate = replicas()[1]!;
    const r = await hactl('failover', '--candidate', candidate, '--force');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`Successfully failed over to "${candidate}"`));
    leader = await settle(leader);
    expect(leader).toBe(candidate);
  });

  it('reinit --wait rebuilds a replica; the leader is refused', async () => {
    const target = replicas()[0]!;
    const r = await hactl('reinit', 'e2e', target, '--force', '--wait');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`Success: reinitialize for member ${target}`));
    expect(r.stdout).toMatch(new RegExp(`Reinitialize is completed on: ${target}`));
    const onLeader = await hactl('reinit', leader, '--force');
    expect(onLeader.code).toBe(1);
    expect(onLeader.stderr).toMatch(new RegExp(`Member ${leader} is the leader`));
    leader = await settle();
  });

  it('a member that is down: reported by name, list still works, then the member is gone from the list', async () => {
    const down = replicas()[0]!;
    await c.killAgent(down);
    const r = await hactl('reload', 'e2e', down, '--force');
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`Failed: member ${down} is not reachable at http://127\\.0\\.0\\.1:${c.node(down).apiPort}`));
    expect(r.stderr).toMatch(new RegExp(`reload failed on member ${down}`));
    expect(r.stdout + r.stderr).not.toMatch(/^\s+at /m);
    const list = await hactl('list');
    expect(list.code).toBe(0);
    await waitFor(async () => (await rows()).length === 2, 30_000, `${down} key expired`);
    const after = await hactl('list');
    expect(after.stdout).not.toMatch(new RegExp(`\\| ${down} `));
    expect(after.stdout).toMatch(new RegExp(`\\| ${leader} +\\| [\\d.:]+ +\\| Leader `));
  });

  it('remove: refused on a wrong cluster name or leader name, then removes every key', async () => {
    const wrongName = await runHactlPty(
      [...cfg, 'remove', 'e2e'],
      [{ expect: 'Please confirm the cluster name to remove: ', send: 'e2f' }],
    );
    expect(wrongName.code).toBe(1);
    expect(wrongName.output).toMatch(/Cluster names specified do not match/);
    const wrongLeader = await runHactlPty(
      [...cfg, 'remove', 'e2e'],
      [
        { expect: 'Please confirm the cluster name to remove: ', send: 'e2e' },
        { expect: 'please type: "Yes I am aware": ', send: 'Yes I am aware' },
        { expect: 'Please specify the leader name to continue: ', send: 'nobody' },
      ],
    );
    expect(wrongLeader.code).toBe(1);
    expect(wrongLeader.output).toMatch(/You did not specify the current leader of the cluster e2e/);
    expect((await rows()).length).toBeGreaterThan(0);

    for (const n of c.nodes) await c.stopAgent(n.name);
    const current = await c.leader();
    const steps = [
      { expect: 'Please confirm the cluster name to remove: ', send: 'e2e' },
      { expect: 'please type: "Yes I am aware": ', send: 'Yes I am aware' },
      ...(current ? [{ expect: 'Please specify the leader name to continue: ', send: current }] : []),
    ];
    const removed = await runHactlPty([...cfg, 'remove', 'e2e'], steps);
    expect(removed.code, removed.output).toBe(0);
    expect(removed.output).toMatch(/Cluster e2e removed from the DCS/);
    const keys = await run('etcdctl', ['--endpoints', c.etcd.url, 'get', '--prefix', '--keys-only', '/service/e2e/'], {
      env: { ...process.env, ETCDCTL_API: '3' },
    });
    expect(keys.trim()).toBe('');
    expect((await hactl('list')).stdout).toMatch(/Cluster: e2e \(uninitialized\)/);
  });
});
