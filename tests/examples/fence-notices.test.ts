/**
 * The shipped configurations warn about nothing of their own on a leader (issue 30, item 10):
 * every agent configuration under examples/ and the demo's (`ha demo`), loaded as `ha run` loads
 * it, drives the agent's fence (src/node/lock/fencing.ts, a fake fence device) through a lost
 * race, a won race, renewals and the end of leading, with the timing of its own `bootstrap.dcs`.
 * No line may be at warn: the default safety margin fitted to the timing, the arming and the
 * disarming are info, and a race's loser arms nothing.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { demoNodeYaml } from '../../src/cli/demo.ts';
import { loadConfig, parseConfig, type AgentConfig } from '../../src/config/index.ts';
import { Fencing } from '../../src/node/lock/fencing.ts';
import type { FenceDevice } from '../../src/watchdog/process-fence.ts';

/** A fence device that arms, feeds and disarms in memory. */
class MemoryFence implements FenceDevice {
  armed = false;
  dataDir: string | undefined;
  pid = 4242;
  constructor(dataDir: string) {
    this.dataDir = dataDir;
  }
  async arm(): Promise<void> {
    this.armed = true;
  }
  feed(): void {}
  async disarm(): Promise<void> {
    this.armed = false;
  }
  async close(): Promise<void> {}
  onEvent(): void {}
}

/** Every log line and notice of one leader's fence, as `<level> <text>`. */
async function leaderFenceLines(config: AgentConfig): Promise<string[]> {
  const lines: string[] = [];
  const log = pino({ level: 'silent' });
  log.warn = ((o: unknown, text?: string) => void lines.push(`warn ${text ?? String(o)}`)) as typeof log.warn;
  const world = { held: false, primary: false };
  let mono = 1_000_000;
  const fencing = new Fencing({
    settings: config.watchdog,
    device: new MemoryFence(config.database.data_dir),
    config: () => config.bootstrap.dcs,
    postmasterPid: async () => 77,
    lockHeld: () => world.held,
    primaryRunning: () => world.primary,
    notice: (_type, text, level) => void lines.push(`${level ?? 'warn'} ${text}`),
    log,
    mono: () => mono,
  });
  // A lost race, then a won one, two renewals, and the end of leading.
  expect(await fencing.beforeAcquire()).toBe(true);
  await fencing.sync();
  expect(await fencing.beforeAcquire()).toBe(true);
  world.held = true;
  fencing.renewed(fencing.stamp());
  await fencing.afterAcquire();
  world.primary = true;
  for (let i = 0; i < 2; i++) {
    mono += config.bootstrap.dcs.loop_wait * 1000;
    fencing.renewed(fencing.stamp());
    await fencing.sync();
  }
  world.held = false;
  world.primary = false;
  await fencing.sync();
  return lines;
}

const SECURE_ENV = { HA_RESTAPI_PASSWORD: 'a', HA_ETCD3_PASSWORD: 'b', HA_SUPERUSER_PASSWORD: 'c', HA_REPLICATION_PASSWORD: 'd' };

const FILES = [
  'examples/three-nodes/node1.yml',
  'examples/three-nodes/node2.yml',
  'examples/three-nodes/node3.yml',
  'examples/secure-three-nodes/node1.yml',
  'examples/callbacks-cascade/node3.yml',
  'examples/standby-cluster/dr1.yml',
  'examples/standby-cluster/dr2.yml',
];

describe('the shipped configurations lead without a warning of their own', () => {
  it.each(FILES)('%s', async (file) => {
    const lines = await leaderFenceLines(await loadConfig(file, file.includes('secure') ? SECURE_ENV : {}));
    expect(lines.filter((l) => l.startsWith('warn '))).toEqual([]);
    expect(lines.filter((l) => l.includes('fence armed'))).toHaveLength(1);
  });

  it("the demo's nodes (ttl 10, loop_wait 2, retry_timeout 3)", async () => {
    const yaml = demoNodeYaml({
      name: 'node1',
      dir: '/tmp/ha-demo-test',
      apiPort: 8008,
      pgPort: 5432,
      ttl: 10,
      loopWait: 2,
      retryTimeout: 3,
    });
    const lines = await leaderFenceLines(parseConfig(yaml, {}, 'demo node1'));
    expect(lines.filter((l) => l.startsWith('warn '))).toEqual([]);
    expect(lines.filter((l) => l.includes('fence armed'))).toHaveLength(1);
    expect(lines.some((l) => l.startsWith('info watchdog.safety_margin 5 s (the default) with ttl 10 s'))).toBe(true);
  });

  it("an operator's own safety_margin that the agent does not use as written still warns", async () => {
    const yaml = `${demoNodeYaml({ name: 'node1', dir: '/tmp/ha-demo-test', apiPort: 8008, pgPort: 5432, ttl: 10, loopWait: 2, retryTimeout: 3 })}\nwatchdog: { safety_margin: 5 }`;
    const lines = await leaderFenceLines(parseConfig(yaml, {}, 'demo node1'));
    expect(lines.filter((l) => l.startsWith('warn '))).toEqual([
      "warn watchdog.safety_margin 5 s with ttl 10 s and retry_timeout 3 s: using 1.5 s (at most ttl / 2 and retry_timeout / 2, so the agent's own demotion comes first)",
    ]);
  });
});
