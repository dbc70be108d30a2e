/**
 * Idle agent cost (issue 13). Real etcd, real PostgreSQL 15, a settled 3-node cluster at
 * ttl 30 / loop_wait 10 / retry_timeout 10, one agent process per node. Prints, per agent, the CPU
 * it used over the idle window (% of one core, every thread's schedstat), its RSS, PSS and private
 * memory at the end (/proc/<pid>/smaps_rollup) and the load average, then
 * the crash-detection latency: SIGKILL of a replica's postmaster → its GET /health answers 503
 * (polled every 2 ms), repeated `--crashes` times.
 *
 *   node --import tsx bench/idle.ts [--seconds 90] [--settle 60] [--crashes 3] [--built] [--prof <dir>] [--node-flags "<flags>"] [--no-gc-wait]
 * `--built` measures the compiled agent (dist/, after `npm run build`); `--prof <dir>` runs every
 * agent with `--cpu-prof --cpu-prof-dir=<dir>` (profiles are written when the agents stop by
 * SIGTERM at the end); `--node-flags` adds Node/V8 flags to the agents' command line. The window
 * starts after `--settle` seconds and once every agent's start-up memory reducer has run (see
 * gcWait; `--no-gc-wait` leaves that out).
 * `HA_AGENT_ENTRY=dist/src/cli/ha.js` runs an existing build without rebuilding. Figures:
 * docs/performance.md "Idle agent".
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { TestCluster } from '../tests/e2e/support/cluster.ts';
import { sleep, stopPid, waitFor } from '../tests/support/processes.ts';

const args = process.argv.slice(2);
const arg = (k: string, d: string) => {
  const i = args.indexOf(k);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : d;
};
const seconds = Number(arg('--seconds', '90'));
const crashes = Number(arg('--crashes', '3'));
const settleSeconds = Number(arg('--settle', '60'));
const prof = args.includes('--prof') ? resolve(arg('--prof', 'out/prof')) : undefined;
const extraFlags = arg('--node-flags', '').split(/\s+/).filter(Boolean);
if (args.includes('--built')) {
  execFileSync('npm', ['run', 'build'], { stdio: 'ignore' });
  process.env['HA_AGENT_ENTRY'] = 'dist/src/cli/ha.js';
}

/**
 * CPU time (user + system, all threads) and memory of a process. RSS counts the node binary's
 * pages in full although every node process on the machine shares them; `privateMb` (anonymous,
 * private dirty) is what one more agent costs, `pssMb` its proportional share.
 */
function status(pid: number): { rssMb: number; cpuS: number; pssMb: number; privateMb: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(s)?.[1] ?? 0) / 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  let roll = '';
  try {
    roll = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    /* no smaps_rollup */
  }
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(roll)?.[1] ?? 0) / 1024;
  return { rssMb: rss, cpuS: cpuSeconds(pid) ?? (Number(f[11]) + Number(f[12])) / 100, pssMb: kb('Pss'), privateMb: kb('Private_Dirty') };
}

/**
 * CPU time of every thread of `pid`, seconds, from `/proc/<pid>/task/<tid>/schedstat` (its first
 * field: ns on a CPU, the scheduler's exact count): `/proc/<pid>/stat` counts 10 ms ticks, ±1 tick
 * being ±0.011 % of a core over 90 s, the size of the gap to the target. Undefined when the
 * kernel has no schedstat. A thread that exits within the window takes its time with it (the
 * agent's threads live as long as the process).
 */
function cpuSeconds(pid: number): number | undefined {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`))
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return ns / 1e9;
  } catch {
    return undefined;
  }
}
/**
 * The agent's child processes (the fence process of src/watchdog, when `watchdog.mode` is not
 * off), from every `/proc/<pid>/stat`'s parent PID: part of what one agent costs.
 */
function children(pid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return out;
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * The agents run with --trace-gc (one line per GC, a few a minute at idle) unless --no-gc-wait:
 * the window starts only once every agent's start-up memory reducer has run its full GCs
 * ("Mark-Compact (reduce)"). V8 schedules them when the allocation rate drops after start-up,
 * and forces them after about 100 s if the rate never looked low enough: one replica in two runs
 * of three ran them 105 s after start, inside the window, for ~90 ms of CPU across its threads,
 * a one-time start-up cost that read as a 0.13–0.16 % idle replica (docs/performance.md).
 */
const gcWait = !args.includes('--no-gc-wait');
const flags = [
  ...extraFlags,
  ...(gcWait && !extraFlags.includes('--trace-gc') ? ['--trace-gc'] : []),
  ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
];
// The agent's node binary gets the flags through a `sh -c exec` wrapper (TestCluster's wrapCommand
// prefixes the command line; `exec` keeps the PID).
const wrap = flags.length ? ['sh', '-c', `exec "$0" ${flags.map((f) => `'${f}'`).join(' ')} "$@"`] : undefined;
const names = ['node1', 'node2', 'node3'];
const c = await TestCluster.create({
  nodes: 3,
  ttl: 30,
  loopWait: 10,
  retryTimeout: 10,
  ...(wrap ? { wrapCommand: Object.fromEntries(names.map((n) => [n, wrap])) } : {}),
});
try {
  const started = Date.now();
  c.startAll();
  const leader = await c.settled(180_000);
  // Let start-up work (bootstrap, basebackup, first member keys, JIT warm-up) finish, and V8's
  // memory reducer run its full GCs after the start-up allocation (it schedules them for tens
  // of seconds after the allocation rate drops): --settle seconds, default 60. With 15 s the
  // window still caught those GCs on the leader (0.08 % instead of 0.05 %).
  await sleep(settleSeconds * 1000);
  if (gcWait) {
    // Every agent's start-up memory-reducing GCs done (see gcWait), at most 150 s after start, then 2 s more.
    const reduced = (n: (typeof c.nodes)[number]) => /Mark-Compact \(reduce\)/.test(n.output);
    await waitFor(() => c.nodes.every(reduced) || Date.now() - started > 150_000, 150_000, 'the memory reducer of every agent', 500);
    await sleep(2000);
  }
  const pids = c.nodes.map((n) => ({ name: n.name, pid: c.agentPid(n.name)! }));
  const kids = pids.map((p) => children(p.pid).filter((k) => readFileSync(`/proc/${k}/cmdline`, 'utf8').includes('node')));
  const before = pids.map((p) => status(p.pid));
  const kidsBefore = kids.map((ks) => ks.map((k) => status(k)));
  const t0 = Date.now();
  const load0 = loadavg();
  await sleep(seconds * 1000);
  const wall = (Date.now() - t0) / 1000;
  const after = pids.map((p) => status(p.pid));
  const kidsAfter = kids.map((ks) => ks.map((k) => status(k)));
  console.log(
    `\n## Idle agents over ${wall.toFixed(1)} s, from ${settleSeconds} s after the cluster settled (ttl 30 / loop_wait 10)${flags.length ? ` flags: ${flags.join(' ')}` : ''}${process.env['HA_AGENT_ENTRY'] ? ' built' : ' tsx'}`,
  );
  pids.forEach((p, i) => {
    const cpu = ((after[i]!.cpuS - before[i]!.cpuS) / wall) * 100;
    const a = after[i]!;
    console.log(
      `${p.name}${p.name === leader ? ' (leader) ' : ' (replica)'}  CPU ${cpu.toFixed(3)}% of a core  RSS ${a.rssMb.toFixed(1)} MB  (PSS ${a.pssMb.toFixed(1)} MB, private ${a.privateMb.toFixed(1)} MB)`,
    );
    kids[i]!.forEach((k, j) => {
      const kb = kidsBefore[i]![j]!;
      const ka = kidsAfter[i]![j]!;
      console.log(
        `  + child ${k} (fence process)  CPU ${(((ka.cpuS - kb.cpuS) / wall) * 100).toFixed(3)}%  RSS ${ka.rssMb.toFixed(1)} MB  (PSS ${ka.pssMb.toFixed(1)} MB, private ${ka.privateMb.toFixed(1)} MB)`,
      );
    });
  });
  console.log(`load average at start / end of the window: ${load0} / ${loadavg()} (2 cores)`);
  console.log('target ≤ 0.05% and ≤ 60 MB; reference manager 0.04%, 60 MB');
  // Every agent's full GCs, in seconds since its start, and where the window lay (with --trace-gc).
  if (flags.includes('--trace-gc')) {
    for (const n of c.nodes) {
      const full = n.output
        .split('\n')
        .filter((l) => /Mark-Compact/.test(l))
        .map((l) => `${(Number(/\s(\d+) ms: /.exec(l)?.[1] ?? 0) / 1000).toFixed(1)} s${/\(reduce\)/.test(l) ? ' (reduce)' : ''}`);
      console.log(
        `${n.name} full GCs at ${full.join(', ')}; the window: ${((t0 - started) / 1000).toFixed(1)}–${((t0 - started) / 1000 + wall).toFixed(1)} s`,
      );
    }
  }

  // Crash detection: a replica's postmaster killed; its /health turns 503 when the agent noticed.
  const replica = names.find((n) => n !== leader)!;
  const lat: number[] = [];
  for (let i = 0; i < crashes; i++) {
    await waitFor(
      async () => (await c.get(replica, '/health')).status === 200 && (await c.get(replica, '/readiness')).status === 200,
      120_000,
      `${replica} running`,
    );
    await sleep(1500 + Math.random() * 500);
    const pm = c.postmasterPid(replica)!;
    const t = performance.now();
    process.kill(pm, 'SIGKILL');
    let seen = 0;
    while (performance.now() - t < 10_000) {
      const r = await c.get(replica, '/health');
      if (r.status !== 200) {
        seen = performance.now();
        break;
      }
      await sleep(2);
    }
    lat.push(seen ? seen - t : NaN);
  }
  if (crashes > 0) {
    const sorted = [...lat].sort((x, y) => x - y);
    console.log(
      `crash detection (SIGKILL postmaster → /health 503): ${lat.map((l) => `${l.toFixed(0)} ms`).join(', ')}; median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms (target ≤ 100 ms)`,
    );
  }
  if (prof) {
    for (const p of pids) await stopPid(p.pid, 'SIGTERM', 30_000);
    console.log(`CPU profiles in ${prof}`);
  }
} finally {
  await c.destroy();
}
