/**
 * The fence process (docs/ha.md "Fencing"): how long it takes from spawn to its `ready` line, and
 * what memory it holds once idle (RSS, PSS and private memory from /proc/<pid>/smaps_rollup), for
 * each way of running it:
 *   tsx      — the sources through tsx's loader (how it ran first);
 *   bundled  — the sources bundled by esbuild into one .mjs, plain node (from the sources now);
 *   compiled — tsc's output, plain node (the build output, dist/); compiled here into a temp dir.
 * Then, on an idle fence started ahead (as the agent does now): how long `arm` and `disarm` take.
 *
 *   node --import tsx bench/fence-start.ts [--runs 10]
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fenceCommand, ProcessFence } from '../src/watchdog/process-fence.ts';
import { monoNowMs } from '../src/watchdog/protocol.ts';

const ROOT = resolve(import.meta.dirname, '..');
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(process.argv[runsArg + 1]) : 10;

function memory(pid: number): { rss: number; pss: number; priv: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0) / 1024;
  return { rss: kb('Rss'), pss: kb('Pss'), priv: kb('Private_Dirty') + kb('Private_Clean') };
}

async function once(command: string, args: string[]): Promise<{ ms: number; rss: number; pss: number; priv: number }> {
  const t0 = performance.now();
  const c = spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, NODE_OPTIONS: '' } });
  await new Promise<void>((r, j) => {
    c.stdout!.once('data', () => r());
    c.once('exit', () => j(new Error(`${args.join(' ')} exited before ready`)));
  });
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 500));
  const m = memory(c.pid!);
  c.stdin!.end(); // idle: the pipe closing ends it
  await new Promise((r) => c.once('exit', r));
  return { ms, ...m };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const fmt = (xs: number[], d = 0) => `median ${pct(xs, 0.5).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;

async function measure(name: string, command: string, args: string[]): Promise<void> {
  const rs = [];
  for (let i = 0; i < RUNS; i++) rs.push(await once(command, args));
  console.log(
    `${name.padEnd(9)} start ${fmt(rs.map((r) => r.ms))} ms; RSS ${fmt(
      rs.map((r) => r.rss),
      1,
    )} MB; PSS ${fmt(
      rs.map((r) => r.pss),
      1,
    )} MB; private ${fmt(
      rs.map((r) => r.priv),
      1,
    )} MB`,
  );
}

const entry = join(ROOT, 'src/watchdog/fence-process.ts');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
let t = performance.now();
const bundled = await fenceCommand();
console.log(
  `bundling at agent start (esbuild, once per process): ${(performance.now() - t).toFixed(0)} ms, ${bundled.kind}: ${bundled.args.at(-1)}`,
);
console.log(`${RUNS} runs each, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
await measure('tsx', process.execPath, ['--max-old-space-size=16', '--import', tsx, entry]);
await measure('bundled', bundled.command, bundled.args);
const out = mkdtempSync(join(tmpdir(), 'fence-bench-'));
try {
  execFileSync(process.execPath, [
    join(ROOT, 'node_modules/typescript/bin/tsc'),
    ...[
      '--outDir',
      out,
      '--rootDir',
      join(ROOT, 'src'),
      '--module',
      'NodeNext',
      '--target',
      'ES2022',
      '--rewriteRelativeImportExtensions',
      '--skipLibCheck',
      '--types',
      'node',
    ],
    entry,
  ]);
  execFileSync(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(join(out, 'package.json'))}, '{"type":"module"}')`]);
  await measure('compiled', process.execPath, ['--max-old-space-size=16', join(out, 'watchdog/fence-process.js')]);
} finally {
  rmSync(out, { recursive: true, force: true });
}

// Arming an idle fence started ahead, as the agent does before the leader race.
const victim = spawn('sleep', ['1000'], { stdio: 'ignore' });
const fence = new ProcessFence();
t = performance.now();
await fence.start();
const startMs = performance.now() - t;
const arms: number[] = [];
const disarms: number[] = [];
for (let i = 0; i < RUNS; i++) {
  t = performance.now();
  await fence.arm(victim.pid!, 60_000, monoNowMs() + 60_000);
  arms.push(performance.now() - t);
  t = performance.now();
  await fence.disarm();
  disarms.push(performance.now() - t);
}
console.log(
  `ProcessFence.start ${startMs.toFixed(0)} ms; then arm ${fmt(arms, 2)} ms, disarm ${fmt(disarms, 2)} ms (round trip on the pipe)`,
);
await fence.close();
victim.kill('SIGKILL');
