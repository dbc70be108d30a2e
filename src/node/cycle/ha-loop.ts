/**
 * The HA loop and its timing: runs the cycle, then sleeps `loop_wait` on the node's clock, or
 * runs again at once when woken (a DCS event, a machine transition, an API write, a scheduled
 * instant). A wake during a cycle makes the next one start right after it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';

/** The HA loop: one cycle at a time, then loop_wait on the clock, or at once when woken. */
export class HaLoop {
  private stopped = false;
  private done: Promise<void> | undefined;
  private wakeResolve: (() => void) | undefined;
  private wakePending = false;

  constructor(
    private readonly deps: {
      clock: Clock;
      /** Current loop_wait, ms. */
      loopWaitMs: () => number;
      /** One cycle; a rejection is logged and the loop goes on. */
      cycle: () => Promise<void>;
      /** Called after each cycle with the clock's time. */
      afterCycle: (atMs: number) => void;
      log: Logger;
    },
  ) {}

  /** Starts the loop (once). */
  start(): void {
    this.done ??= this.run();
  }

  /** Runs the next cycle now (or right after the one in progress). */
  wake(): void {
    this.wakePending = true;
    this.wakeResolve?.();
  }

  /** Stops the loop; resolves when the cycle in progress has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.done?.catch(() => undefined);
  }

  /** True once stop() was called. */
  get isStopped(): boolean {
    return this.stopped;
  }

  private async run(): Promise<void> {
    const { clock, log } = this.deps;
    while (!this.stopped) {
      this.wakePending = false;
      try {
        await this.deps.cycle();
      } catch (e) {
        log.error({ err: e }, 'HA cycle failed');
      }
      this.deps.afterCycle(clock.now());
      if (this.stopped) break;
      if (!this.wakePending) {
        await new Promise<void>((resolve) => {
          const t = clock.setTimeout(resolve, this.deps.loopWaitMs());
          this.wakeResolve = () => {
            clock.clearTimeout(t);
            resolve();
          };
        });
        this.wakeResolve = undefined;
      }
    }
  }
}
