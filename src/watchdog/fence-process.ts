/**
 * The fence process (docs/ha.md "Fencing"): started by the agent (src/watchdog/process-fence.ts)
 * once, idle, when it starts, in its own process group, so it outlives the agent. It reads the
 * agent's messages on stdin (protocol.ts), answers on stdout, and stops the postmaster
 * (SIGQUIT, then SIGKILL) when the deadline passes without a feed or when stdin closes while
 * armed (the agent died). `disarm` makes it idle again; `exit`, or stdin closing while idle,
 * ends it. Logic: fence-core.ts.
 *
 * Usage: node fence-process.js [--kill-after-ms N] [--log FILE]
 *   --log FILE: every firing is also appended to FILE as one JSON line (the agent may be gone).
 *
 * Kept tiny on purpose: node:fs and node:os only, no dependencies. It runs under plain `node`:
 * from the build output (dist/) as compiled, from the sources as one ESM file that the agent
 * bundles with esbuild at start (process-fence.ts `fenceCommand`), never through tsx.
 */
import { appendFileSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { FenceCore, FENCE_EXIT } from './fence-core.ts';
import { monoNowMs, parseLine, type FromFence, type ToFence } from './protocol.ts';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const killAfterMs = Number(arg('--kill-after-ms') ?? 1000);
const logFile = arg('--log');
if (!Number.isFinite(killAfterMs) || killAfterMs < 0) {
  process.stderr.write('fence-process: --kill-after-ms must be a number >= 0\n');
  process.exit(FENCE_EXIT.badUsage);
}

// Best effort, effective only with the privileges for it (root): the fence should be the last
// process the kernel's OOM killer picks and should get the CPU before the agent does.
try {
  writeFileSync('/proc/self/oom_score_adj', '-1000');
} catch {
  /* not permitted */
}
try {
  setPriority(-10);
} catch {
  /* not permitted */
}

// The agent may be gone (SIGKILL): writes to its pipe then fail with EPIPE; never let that end us.
process.stdout.on('error', () => undefined);
process.on('SIGPIPE', () => undefined);
// A terminal's Ctrl-C or a SIGTERM to our group must not end the fence silently: it is ended by
// `disarm`, by firing, or by SIGKILL only.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);
process.on('SIGHUP', () => undefined);

let exiting = false;
const core = new FenceCore(
  {
    mono: monoNowMs,
    setTimer: (fn, ms) => setTimeout(fn, ms),
    clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
    readStat: (pid) => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        return undefined;
      }
    },
    listPids: () => {
      try {
        return readdirSync('/proc')
          .filter((d) => /^\d+$/.test(d))
          .map(Number);
      } catch {
        return [];
      }
    },
    dataDirPostmaster: (dataDir) => {
      // postmaster.pid's first line is the postmaster's PID; the postmaster's working directory is
      // its data directory, which rules out a stale file naming a recycled PID.
      try {
        const pid = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]?.trim());
        if (!Number.isInteger(pid) || pid <= 1) return undefined;
        return readlinkSync(`/proc/${pid}/cwd`) === realpathSync(dataDir) ? pid : undefined;
      } catch {
        return undefined;
      }
    },
    kill: (pid, signal) => process.kill(pid, signal),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    send: (msg: FromFence) => {
      if (msg.ev === 'fired' && logFile) {
        try {
          appendFileSync(logFile, `${JSON.stringify({ ...msg, at: new Date().toISOString(), fencePid: process.pid })}\n`);
        } catch {
          /* best effort */
        }
      }
      try {
        process.stdout.write(`${JSON.stringify(msg)}\n`);
      } catch {
        /* the agent is gone */
      }
    },
    exit: (code) => {
      if (exiting) return;
      exiting = true;
      // Let the last line reach the agent when it still listens, but never wait long.
      const t = setTimeout(() => process.exit(code), 200);
      process.stdout.write('', () => {
        clearTimeout(t);
        process.exit(code);
      });
    },
  },
  { killAfterMs },
);

let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  buf += chunk;
  let nl: number;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    const msg = line ? parseLine<ToFence>(line) : undefined;
    if (msg && 'op' in msg) core.handle(msg);
  }
});
process.stdin.on('end', () => core.agentGone());
process.stdin.on('close', () => core.agentGone());
process.stdin.on('error', () => core.agentGone());

try {
  process.stdout.write(`${JSON.stringify({ ev: 'ready', pid: process.pid } satisfies FromFence)}\n`);
} catch {
  /* the agent is gone: stdin's end follows */
}
