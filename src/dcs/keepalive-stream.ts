/**
 * One long-lived etcd LeaseKeepAlive stream for the agent's one-shot keepalives (issue 13).
 *
 * etcd3's `Lease.keepaliveOnce()` opens a new bidirectional gRPC stream for every keepalive and
 * ends it after the answer: an HTTP/2 stream set up and torn down per HA cycle (headers,
 * metadata, grpc-js call objects), a large part of an idle agent's CPU. etcd's own Go client keeps
 * one stream per client for all its leases; this does the same, but stays one-shot: a keepalive is
 * sent only when the HA loop asks (`once`), never on a timer, so a frozen agent still loses its
 * lease after ttl (src/dcs/etcd.ts "Rules").
 *
 * etcd answers the requests of one stream in order, so answers are matched to waiters in FIFO
 * order. Any stream error, end, or a waiter's deadline drops the stream: every waiter is
 * rejected and the next `once` opens a new one (possibly on another endpoint, chosen by etcd3's
 * connection pool).
 */
import type { IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from 'etcd3';
import { castGrpcError, EtcdLeaseInvalidError, GRPCDeadlineExceededError, GRPCUnavailableError } from 'etcd3';

type KeepaliveDuplex = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

interface Waiter {
  resolve: (res: ILeaseKeepAliveResponse) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** See the module comment. `open` opens a new stream (etcd3's `LeaseClient.leaseKeepAlive`). */
export class KeepaliveStream {
  private stream: KeepaliveDuplex | undefined;
  private opening: Promise<KeepaliveDuplex> | undefined;
  /** The waiters of each open stream, in the order of their requests. */
  private readonly waiting = new Map<KeepaliveDuplex, Waiter[]>();
  private closed = false;

  constructor(private readonly open: () => Promise<KeepaliveDuplex>) {}

  /**
   * Sends one keepalive for lease `leaseId` (decimal string) and resolves with etcd's answer.
   * @throws EtcdLeaseInvalidError when etcd answers TTL 0 (the lease is unknown or expired);
   *         GRPCDeadlineExceededError when no answer came by `deadline` (the stream is dropped);
   *         the stream's gRPC error (cast by etcd3, e.g. GRPCUnavailableError, which boundedCall
   *         retries on a new stream) when it failed or ended.
   */
  async once(leaseId: string, deadline: Date): Promise<ILeaseKeepAliveResponse> {
    if (this.closed) throw new Error('keepalive stream closed');
    const stream = await this.get(deadline);
    const res = await new Promise<ILeaseKeepAliveResponse>((resolve, reject) => {
      const list = this.waiting.get(stream);
      if (!list) {
        reject(new GRPCUnavailableError('lease keepalive: the stream ended before the request was sent'));
        return;
      }
      const timer = setTimeout(
        () => {
          this.drop(stream, new GRPCDeadlineExceededError('lease keepalive: no answer before the deadline'));
        },
        Math.max(0, deadline.getTime() - Date.now()),
      );
      list.push({ resolve, reject, timer });
      try {
        stream.write({ ID: leaseId });
      } catch (e) {
        this.drop(stream, castGrpcError(e as Error));
      }
    });
    if (res.TTL === '0') throw new EtcdLeaseInvalidError(leaseId);
    return res;
  }

  /** Ends the stream and rejects every waiter; `once` refuses afterwards. */
  close(): void {
    this.closed = true;
    if (this.stream) this.drop(this.stream, new Error('keepalive stream closed'));
  }

  /**
   * The open stream, or a new one. Opening waits for etcd3's connection pool; an opening that
   * has not finished by `deadline` is abandoned (a later call starts another; the late stream, if
   * it ever comes, is ended), so one stuck connection attempt never holds every later keepalive.
   */
  private get(deadline: Date): Promise<KeepaliveDuplex> {
    if (this.stream) return Promise.resolve(this.stream);
    if (!this.opening) {
      const opening: Promise<KeepaliveDuplex> = this.open()
        .then((stream) => {
          if (this.closed || this.opening !== opening) {
            stream.end();
            throw new GRPCUnavailableError('lease keepalive: stream opened too late');
          }
          this.waiting.set(stream, []);
          stream.on('data', (res: ILeaseKeepAliveResponse) => {
            const w = this.waiting.get(stream)?.shift();
            if (!w) return;
            clearTimeout(w.timer);
            w.resolve(res);
          });
          stream.on('error', (err: Error) => this.drop(stream, castGrpcError(err)));
          stream.on('end', () => this.drop(stream, new GRPCUnavailableError('lease keepalive: the stream was ended by etcd')));
          this.stream = stream;
          return stream;
        })
        .finally(() => {
          if (this.opening === opening) this.opening = undefined;
        });
      opening.catch(() => undefined);
      this.opening = opening;
    }
    const opening = this.opening;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          if (this.opening === opening) this.opening = undefined;
          reject(new GRPCDeadlineExceededError('lease keepalive: no stream before the deadline'));
        },
        Math.max(0, deadline.getTime() - Date.now()),
      );
    });
    return Promise.race([opening, late]).finally(() => clearTimeout(timer));
  }

  /** Forgets `stream` (if still the current one), ends it and rejects every waiter with `err`. */
  private drop(stream: KeepaliveDuplex, err: Error): void {
    if (this.stream === stream) this.stream = undefined;
    const waiters = this.waiting.get(stream) ?? [];
    this.waiting.delete(stream);
    for (const w of waiters) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    try {
      stream.end();
    } catch {
      /* already ended */
    }
  }
}
