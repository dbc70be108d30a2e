/** The agent's side of fencing (src/node/fencing.ts) with a fake fence device and a fake monotonic clock. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import { Fencing, type WatchdogMode } from '../../src/node/fencing.ts';
import type { FenceDevice, FenceEvent } from '../../src/watchdog/process-fence.ts';

class FakeDevice implements FenceDevice {
  calls: string[] = [];
  fail = false;
  armedPid: number | undefined;
  running = false;
  listener: ((e: FenceEvent) => void) | undefined;
  get armed() {
    return this.armedPid !== undefined;
  }
  get pid() {
    return this.running ? 4242 : undefined;
  }
  async arm(pid: number, remainingMs: number, deadlineMonoMs: number) {
    this.calls.push(`arm ${pid} ${remainingMs} ${deadlineMonoMs}`);
    if (this.fail) throw new Error('cannot start');
    this.running = true;
    this.armedPid = pid;
  }
  feed(remainingMs: number, deadlineMonoMs: number) {
    this.calls.push(`feed ${remainingMs} ${deadlineMonoMs}`);
  }
  async disarm() {
    this.calls.push('disarm');
    this.armedPid = undefined;
  }
  async close() {
    this.calls.push('close');
    this.armedPid = undefined;
    this.running = false;
  }
  onEvent(l: (e: FenceEvent) => void) {
    this.listener = l;
  }
}

function setup(mode: WatchdogMode, opts: { pid?: number } = {}) {
  const device = new FakeDevice();
  let mono = 1000;
  const world = { held: false, primary: false, pid: opts.pid as number | undefined, paused: false };
  const notices: string[] = [];
  const fencing = new Fencing({
    settings: { mode, safety_margin: 5 },
    device,
    config: () => ({ ...withDefaults({ ttl: 10, loop_wait: 2, retry_timeout: 10 }), ...(world.paused ? { pause: true } : {}) }),
    postmasterPid: async () => world.pid,
    lockHeld: () => world.held,
    primaryRunning: () => world.primary,
    notice: (type) => notices.push(type),
    log: pino({ level: 'silent' }),
    mono: () => mono,
  });
  return { device, fencing, world, notices, advance: (ms: number) => (mono += ms) };
}

describe('Fencing', () => {
  it('arms before the race with now + ttl − margin, feeds each renewal with its send time + ttl − margin, and disarms after a lost race', async () => {
    const { device, fencing, world, notices, advance } = setup('automatic', { pid: 77 });
    expect(await fencing.beforeAcquire()).toBe(true);
    expect(device.calls).toEqual(['arm 77 5000 6000']);
    world.held = true;
    const sent = fencing.stamp();
    advance(300);
    fencing.renewed(sent);
    expect(device.calls.at(-1)).toBe('feed 4700 6000');
    // Lost: not held, running as a replica → disarmed.
    world.held = false;
    await fencing.sync();
    expect(device.calls.at(-1)).toBe('disarm');
    expect(notices).toEqual(['watchdog.armed', 'watchdog.disarmed']);
  });

  it('keeps the fence armed, unfed, while a lost lock leaves the primary running, and disarms once it stopped', async () => {
    const { device, fencing, world } = setup('automatic', { pid: 77 });
    world.held = true;
    world.primary = true;
    fencing.renewed(fencing.stamp());
    await fencing.sync();
    expect(device.armed).toBe(true);
    world.held = false;
    await fencing.sync();
    expect(device.armed).toBe(true);
    world.primary = false;
    world.pid = undefined;
    await fencing.sync();
    expect(device.armed).toBe(false);
  });

  it('disarms in pause and at stop', async () => {
    const { device, fencing, world } = setup('automatic', { pid: 77 });
    world.held = true;
    world.primary = true;
    fencing.renewed(fencing.stamp());
    await fencing.sync();
    expect(device.armed).toBe(true);
    world.paused = true;
    await fencing.sync();
    expect(device.armed).toBe(false);
    world.paused = false;
    await fencing.sync();
    expect(device.armed).toBe(true);
    await fencing.stop();
    expect(device.armed).toBe(false);
    expect(device.calls.slice(-2)).toEqual(['disarm', 'close']);
  });

  it('required: refuses the race when the fence cannot be armed, and reports failed; automatic goes on', async () => {
    const req = setup('required', { pid: 77 });
    req.device.fail = true;
    expect(await req.fencing.beforeAcquire()).toBe(false);
    expect(req.fencing.mayLead()).toBe(false);
    expect(req.fencing.status()).toEqual({ mode: 'required', armed: false, failed: true });
    const auto = setup('automatic', { pid: 77 });
    auto.device.fail = true;
    expect(await auto.fencing.beforeAcquire()).toBe(true);
    expect(auto.fencing.mayLead()).toBe(true);
    expect(auto.fencing.status().failed).toBe(false);
  });

  it('leaves an idle (started, disarmed) fence alone while this member does not lead, and ends it at stop', async () => {
    const { device, fencing, world } = setup('automatic', { pid: 77 });
    device.running = true;
    world.primary = false;
    for (let i = 0; i < 3; i++) await fencing.sync();
    expect(device.calls).toEqual([]);
    await fencing.stop();
    expect(device.calls).toEqual(['close']);
    expect(device.pid).toBeUndefined();
  });

  it('off: never touches the device', async () => {
    const { device, fencing, world } = setup('off', { pid: 77 });
    world.held = true;
    world.primary = true;
    expect(await fencing.beforeAcquire()).toBe(true);
    fencing.renewed(fencing.stamp());
    await fencing.sync();
    expect(device.calls).toEqual([]);
  });
});
