/** The agent's side of fencing (src/node/lock/fencing.ts) with a fake fence device and a fake monotonic clock. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { Fencing, type WatchdogMode } from '../../../src/node/lock/fencing.ts';
import type { FenceDevice, FenceEvent } from '../../../src/watchdog/process-fence.ts';

class FakeDevice implements FenceDevice {
  calls: string[] = [];
  fail = false;
  armedPid: number | undefined;
  running = false;
  listener: ((e: FenceEvent) => void) | undefined;
  dataDir: string | undefined;
  get armed() {
    return this.armedPid !== undefined;
  }
  get pid() {
    return this.running ? 4242 : undefined;
  }
  async arm(pid: number | undefined, remainingMs: number, deadlineMonoMs: number) {
    this.calls.push(`arm ${pid ?? 'dir'} ${remainingMs} ${deadlineMonoMs}`);
    if (this.fail) throw new Error('cannot start');
    this.running = true;
    this.armedPid = pid ?? 0;
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

function setup(
  mode: WatchdogMode,
  opts: { pid?: number; dataDir?: string; marginSet?: true; timing?: { ttl: number; loop_wait: number; retry_timeout: number } } = {},
) {
  const device = new FakeDevice();
  device.dataDir = opts.dataDir;
  let mono = 1000;
  const world = { held: false, primary: false, pid: opts.pid as number | undefined, paused: false, pidReads: 0 };
  const notices: string[] = [];
  /** Every notice and warning with its level: `warn watchdog.armed`, `info watchdog.adjusted`, `warn log: <text>`. */
  const lines: string[] = [];
  const log = pino({ level: 'silent' });
  log.warn = ((_o: unknown, text?: string) => void lines.push(`warn log: ${text ?? String(_o)}`)) as typeof log.warn;
  const fencing = new Fencing({
    settings: { mode, safety_margin: 5, ...(opts.marginSet ? { safety_margin_set: true } : {}) },
    device,
    config: () => ({
      ...withDefaults(opts.timing ?? { ttl: 10, loop_wait: 2, retry_timeout: 10 }),
      ...(world.paused ? { pause: true } : {}),
    }),
    postmasterPid: async () => (world.pidReads++, world.pid),
    lockHeld: () => world.held,
    primaryRunning: () => world.primary,
    notice: (type, _text, level) => {
      notices.push(type);
      lines.push(`${level ?? 'warn'} ${type}`);
    },
    log,
    mono: () => mono,
  });
  return { device, fencing, world, notices, lines, advance: (ms: number) => (mono += ms) };
}

describe('Fencing', () => {
  it('required: arms before the race with now + ttl − margin, feeds each renewal with its send time + ttl − margin, and disarms after a lost race', async () => {
    const { device, fencing, world, notices, advance } = setup('required', { pid: 77 });
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

  it("automatic: a lost race arms nothing; a won race arms once, on the acquire's send time, before the promotion (afterAcquire)", async () => {
    const { device, fencing, world, notices, advance } = setup('automatic', { pid: 77 });
    // Lost: the race's loser neither arms nor disarms (the demo's "armed … disarmed" 3 ms apart).
    expect(await fencing.beforeAcquire()).toBe(true);
    await fencing.sync();
    expect(device.calls).toEqual([]);
    expect(notices).toEqual([]);
    // Won: the acquire's send time, then the lock is held; armed once before afterAcquire resolves.
    expect(await fencing.beforeAcquire()).toBe(true);
    const sent = fencing.stamp();
    advance(200);
    world.held = true;
    fencing.renewed(sent);
    await fencing.afterAcquire();
    expect(device.armed).toBe(true);
    expect(device.calls).toEqual(['arm 77 4800 6000']);
    await fencing.sync();
    expect(device.calls).toEqual(['arm 77 4800 6000']);
    expect(notices).toEqual(['watchdog.armed']);
  });

  it('routine arming and disarming, and the default margin fitted to the timing, are info; an adjusted margin the operator wrote, a warning', async () => {
    // ttl 10, retry_timeout 3 (the demo's): the default 5 s becomes 1.5 s.
    const timing = { ttl: 10, loop_wait: 2, retry_timeout: 3 };
    const byDefault = setup('automatic', { pid: 77, timing });
    byDefault.world.held = true;
    byDefault.fencing.renewed(byDefault.fencing.stamp());
    await byDefault.fencing.afterAcquire();
    byDefault.world.held = false;
    await byDefault.fencing.sync();
    expect(byDefault.lines).toEqual(['info watchdog.adjusted', 'info watchdog.armed', 'info watchdog.disarmed']);
    const written = setup('automatic', { pid: 77, timing, marginSet: true });
    written.world.held = true;
    written.fencing.renewed(written.fencing.stamp());
    await written.fencing.afterAcquire();
    expect(written.lines).toEqual(['warn watchdog.adjusted', 'info watchdog.armed']);
  });

  it("the reference's timing (ttl 30, loop_wait 10, retry_timeout 10, margin 5, as examples/) arms without a warning: the agent's own deadline (ttl − retry_timeout) comes before the fence (ttl − margin)", async () => {
    const { fencing, world, lines } = setup('automatic', { pid: 77, timing: { ttl: 30, loop_wait: 10, retry_timeout: 10 } });
    world.held = true;
    fencing.renewed(fencing.stamp());
    await fencing.afterAcquire();
    expect(lines).toEqual(['info watchdog.armed']);
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

  it('finding 16: with a data directory, stays armed while the postmaster is down and arms with none running, so a primary started next is fenced', async () => {
    const { device, fencing, world, notices, advance } = setup('automatic', { pid: 77, dataDir: '/data' });
    world.held = true;
    world.primary = true;
    fencing.renewed(fencing.stamp());
    await fencing.sync();
    expect(device.calls).toEqual(['arm 77 5000 6000']);
    // The postmaster crashed: the fence stays armed (on the data directory), no disarm.
    world.primary = false;
    world.pid = undefined;
    await fencing.sync();
    expect(device.armed).toBe(true);
    expect(device.calls).toEqual(['arm 77 5000 6000']);
    // A new agent process (fence idle) holding the lock with nothing running: armed on the directory.
    device.armedPid = undefined;
    const sent = fencing.stamp();
    advance(100);
    fencing.renewed(sent);
    await fencing.sync();
    expect(device.calls.at(-1)).toBe('arm dir 4900 6000');
    expect(notices.filter((n) => n === 'watchdog.disarmed')).toEqual([]);
    // Not armed on nothing once that deadline passed (it would fire at once with nothing to stop).
    device.armedPid = undefined;
    advance(6000);
    await fencing.sync();
    expect(device.calls.at(-1)).toBe('arm dir 4900 6000');
  });

  it('finding 16: without a data directory, disarms when no postmaster runs (PID only, as before)', async () => {
    const { device, fencing, world } = setup('automatic', { pid: 77 });
    world.held = true;
    fencing.renewed(fencing.stamp());
    await fencing.sync();
    expect(device.armed).toBe(true);
    world.pid = undefined;
    await fencing.sync();
    expect(device.armed).toBe(false);
  });

  it('finding 16: a primary is launched only on a lock valid for more than the fence margin plus the launch slack', () => {
    const { fencing } = setup('automatic', { pid: 77, dataDir: '/data' });
    // ttl 10, retry_timeout 10, safety_margin 5: margin 5 s; + 1 s slack.
    expect(fencing.marginMs()).toBe(5000);
    expect(fencing.primaryLaunchRefusal(true, 10_000 + 6001, 10_000)).toBeUndefined();
    expect(fencing.primaryLaunchRefusal(true, 10_000 + 6000, 10_000)).toMatch(/valid for 6000 ms only/);
    expect(fencing.primaryLaunchRefusal(true, 9_000, 10_000)).toMatch(/expired 1000 ms ago/);
    expect(fencing.primaryLaunchRefusal(false, 0, 10_000)).toMatch(/does not hold/);
    const off = setup('off', { pid: 77 }).fencing;
    expect(off.primaryLaunchRefusal(true, 10_001, 10_000)).toBeUndefined();
  });

  it('armed on the data directory while leading: sync reads no postmaster pid and changes nothing; armed on a pid it still checks', async () => {
    const dir = setup('automatic', { pid: 77, dataDir: '/data' });
    dir.world.held = true;
    dir.world.primary = true;
    dir.fencing.renewed(dir.fencing.stamp());
    await dir.fencing.afterAcquire();
    const calls = dir.device.calls.length;
    const reads = dir.world.pidReads;
    dir.world.pid = undefined; // even with no postmaster: armed on the directory it stays armed
    await dir.fencing.sync();
    await dir.fencing.sync();
    expect(dir.world.pidReads).toBe(reads);
    expect(dir.device.calls.length).toBe(calls);
    expect(dir.device.armed).toBe(true);
    const pid = setup('required', { pid: 77 });
    expect(await pid.fencing.beforeAcquire()).toBe(true);
    pid.world.held = true;
    pid.world.pid = undefined;
    await pid.fencing.sync();
    expect(pid.world.pidReads).toBeGreaterThan(0);
    expect(pid.device.calls.at(-1)).toBe('disarm');
  });
});
