/**
 * KeepaliveStream (src/dcs/keepalive-stream.ts) over a fake duplex stream: one stream for many
 * keepalives, answers matched in order, a TTL 0 answer is a lost lease, a deadline or an error
 * drops the stream and the next keepalive opens another.
 */
import { EventEmitter } from 'node:events';
import { EtcdLeaseInvalidError, GRPCDeadlineExceededError, GRPCUnavailableError } from 'etcd3';
import { describe, expect, it } from 'vitest';
import { KeepaliveStream } from '../../src/dcs/keepalive-stream.ts';

class FakeStream extends EventEmitter {
  written: { ID: string }[] = [];
  ended = false;
  write(req: { ID: string }): boolean {
    this.written.push(req);
    return true;
  }
  end(): void {
    this.ended = true;
  }
  answer(ttl: string, id = '7'): void {
    this.emit('data', { ID: id, TTL: ttl });
  }
}

function setup() {
  const streams: FakeStream[] = [];
  const ka = new KeepaliveStream(async () => {
    const s = new FakeStream();
    streams.push(s);
    return s as never;
  });
  return { ka, streams };
}
const soon = (ms = 1000) => new Date(Date.now() + ms);
const tick = () => new Promise((r) => setImmediate(r));

describe('KeepaliveStream', () => {
  it('sends every keepalive on one stream and matches answers in order', async () => {
    const { ka, streams } = setup();
    const a = ka.once('7', soon());
    await tick();
    const b = ka.once('7', soon());
    await tick();
    expect(streams).toHaveLength(1);
    expect(streams[0]!.written).toEqual([{ ID: '7' }, { ID: '7' }]);
    streams[0]!.answer('30');
    streams[0]!.answer('29');
    expect((await a).TTL).toBe('30');
    expect((await b).TTL).toBe('29');
    const c = ka.once('7', soon());
    await tick();
    streams[0]!.answer('30');
    await c;
    expect(streams).toHaveLength(1);
  });

  it('rejects a TTL 0 answer as a lost lease, and keeps the stream', async () => {
    const { ka, streams } = setup();
    const a = ka.once('7', soon());
    await tick();
    streams[0]!.answer('0');
    await expect(a).rejects.toBeInstanceOf(EtcdLeaseInvalidError);
    expect(streams[0]!.ended).toBe(false);
  });

  it('drops the stream at the deadline and opens a new one for the next keepalive', async () => {
    const { ka, streams } = setup();
    await expect(ka.once('7', soon(30))).rejects.toBeInstanceOf(GRPCDeadlineExceededError);
    expect(streams[0]!.ended).toBe(true);
    const b = ka.once('7', soon());
    await tick();
    expect(streams).toHaveLength(2);
    streams[0]!.answer('30'); // a late answer on the old stream reaches nobody
    streams[1]!.answer('25');
    expect((await b).TTL).toBe('25');
  });

  it('rejects waiters when the stream fails or etcd ends it, without touching the next stream', async () => {
    const { ka, streams } = setup();
    const a = ka.once('7', soon());
    await tick();
    streams[0]!.emit('end');
    await expect(a).rejects.toBeInstanceOf(GRPCUnavailableError);
    const b = ka.once('7', soon());
    await tick();
    streams[0]!.emit('error', new Error('late error of the old stream'));
    streams[1]!.answer('30');
    expect((await b).TTL).toBe('30');
  });

  it('gives up on a stream that does not open by the deadline', async () => {
    let calls = 0;
    const ka = new KeepaliveStream(() => {
      calls++;
      return new Promise(() => undefined);
    });
    await expect(ka.once('7', soon(20))).rejects.toBeInstanceOf(GRPCDeadlineExceededError);
    await expect(ka.once('7', soon(20))).rejects.toBeInstanceOf(GRPCDeadlineExceededError);
    expect(calls).toBe(2);
  });
});
