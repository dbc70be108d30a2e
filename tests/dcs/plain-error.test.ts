/** etcd client failures in an operator's words (src/dcs/etcd-client.ts plainEtcdError; issue 30). */
import { BrokenCircuitError } from 'cockatiel';
import { describe, expect, it } from 'vitest';
import { plainEtcdError } from '../../src/dcs/etcd-client.ts';

describe('plainEtcdError', () => {
  it('an open circuit says that no host answered, not "the circuit breaker is open"', () => {
    expect(plainEtcdError(new BrokenCircuitError())).toBe('no etcd host answered (each is tried again 0.5 s after it failed)');
  });

  it("gRPC's status code, timestamps and Resolution note are dropped; a refused connection names the host", () => {
    const grpc = new Error(
      '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:2379 (2026-11-27T04:00:00.000Z). Resolution note: subchannel pool was reset',
    );
    expect(plainEtcdError(grpc)).toBe('connection refused by 127.0.0.1:2379');
    expect(plainEtcdError(new Error('14 UNAVAILABLE: Connection dropped (2026-11-27T04:00:00.000Z). Resolution note: x'))).toBe(
      'Connection dropped',
    );
    expect(plainEtcdError(new Error('14 UNAVAILABLE: No connection established. Last error: connect EHOSTUNREACH 10.0.0.9:2379'))).toBe(
      '10.0.0.9:2379 cannot be reached (EHOSTUNREACH)',
    );
  });

  it('anything else keeps its message', () => {
    expect(plainEtcdError(new Error('etcdserver: requested lease not found'))).toBe('etcdserver: requested lease not found');
    expect(plainEtcdError('plain')).toBe('plain');
  });
});
