/**
 * A stand-in agent for tests/e2e/fence-process.test.ts: starts a real fence process
 * (src/watchdog/process-fence.ts) idle, as the agent does, arms it on the PID given as argv[2]
 * with argv[3] ms, feeds it every argv[4] ms (0: never) with argv[3] ms, and prints
 * `armed <fencePid>` once armed. With argv[5] = `disarm`, it disarms it right after and prints
 * `idle <fencePid>` instead. The test then kills or freezes this process.
 */
import { ProcessFence } from '../../../src/watchdog/process-fence.ts';
import { monoNowMs } from '../../../src/watchdog/protocol.ts';

const pid = Number(process.argv[2]);
const windowMs = Number(process.argv[3]);
const feedEveryMs = Number(process.argv[4] ?? 0);
const thenDisarm = process.argv[5] === 'disarm';
const fence = new ProcessFence();
fence
  .start()
  .then(() => fence.arm(pid, windowMs, monoNowMs() + windowMs))
  .then(async () => {
    if (thenDisarm) {
      await fence.disarm();
      process.stdout.write(`idle ${fence.pid}\n`);
      setInterval(() => undefined, 60_000);
      return;
    }
    process.stdout.write(`armed ${fence.pid}\n`);
    if (feedEveryMs > 0) setInterval(() => fence.feed(windowMs, monoNowMs() + windowMs), feedEveryMs);
    else setInterval(() => undefined, 60_000);
  })
  .catch((e: unknown) => {
    process.stdout.write(`failed ${String(e)}\n`);
    process.exit(1);
  });
