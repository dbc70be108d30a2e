/**
 * The etcd3 client as EtcdDcs needs it: tuned fault handling and one bounded-call helper that
 * turns every failure into DcsError('dcs_unavailable').
 *
 * Why tuned (reference/stack.md §2.2): with etcd3's defaults a restarted etcd is usable again only
 * after the per-host circuit breaker half-opens (5 s) and the watch backs off; with a 500 ms
 * half-open, one global retry and a 100..1000 ms watch backoff everything recovers about 1.4 s
 * after etcd is back. The open circuit answers with cockatiel's BrokenCircuitError, which is not
 * an EtcdError: `boundedCall` maps it like any other failure.
 */
import { circuitBreaker, ConsecutiveBreaker, ExponentialBackoff, handleWhen, isBrokenCircuitError, retry, type IBackoff } from 'cockatiel';
import { Etcd3, GRPCUnavailableError, isRecoverableError } from 'etcd3';
import { DcsError } from './dcs.ts';

/** Pause between attempts of a call that could not reach etcd, ms. */
export const RETRY_PAUSE_MS = 100;

/**
 * How to reach a secured etcd (patroni.md §2.5 `etcd3` section), contents already read:
 * - `protocol: 'https'`: TLS, verifying etcd's certificate against `ca` (absent: system CAs);
 * - `cert` + `key`: client certificate (etcd `--client-cert-auth`);
 * - `auth`: etcd user and password (etcd `auth enable`); the client fetches a token with them.
 */
export interface EtcdSecurity {
  protocol?: 'http' | 'https';
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  auth?: { username: string; password: string };
}

/**
 * The endpoints of `hosts` for `security`: with `protocol: 'https'` bare `host:port` entries
 * become `https://host:port`; others are kept.
 */
export function securedHosts(hosts: readonly string[], security: EtcdSecurity): string[] {
  const https = security.protocol === 'https';
  return hosts.map((h) => (https && !/^https?:\/\//.test(h) ? `https://${h}` : h));
}

/**
 * An etcd3 client with quick reconnect (stack.md §2.2). `hosts`: `host:port`, `http://host:port`
 * or `https://host:port`. `security` adds TLS credentials and etcd authentication.
 */
export function createEtcdClient(hosts: string[], security?: EtcdSecurity): Etcd3 {
  const tls = security?.protocol === 'https' && (security.ca !== undefined || security.cert !== undefined);
  return new Etcd3({
    hosts,
    ...(tls
      ? {
          credentials: {
            // grpc's createSsl takes null for "the system's CAs"; etcd3's type wants a Buffer.
            rootCertificate: security.ca ?? (null as unknown as Buffer),
            ...(security.key !== undefined ? { privateKey: security.key } : {}),
            ...(security.cert !== undefined ? { certChain: security.cert } : {}),
          },
        }
      : {}),
    ...(security?.auth ? { auth: { username: security.auth.username, password: security.auth.password } } : {}),
    faultHandling: {
      host: () => circuitBreaker(handleWhen(isRecoverableError), { halfOpenAfter: 500, breaker: new ConsecutiveBreaker(3) }),
      global: retry(handleWhen(isRecoverableError), { maxAttempts: 1 }),
      // Typed IBackoff, but etcd3 calls `.next()` on it as a factory at runtime (stack.md §2.5).
      watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 1000 }) as unknown as IBackoff<unknown>,
    },
  });
}

/**
 * True for failures where the request certainly did not reach etcd (no connection, open circuit):
 * safe to repeat even for a non-idempotent transaction. A deadline is NOT among them (the
 * request may have been applied).
 */
export function isNotSentError(err: unknown): boolean {
  return isBrokenCircuitError(err) || err instanceof GRPCUnavailableError;
}

/** Message of any thrown value. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * An etcd client failure in an operator's words (issue 30): gRPC's status codes, its timestamps
 * and "Resolution note" tails, and the circuit breaker's "Execution prevented because the circuit
 * breaker is open" become what happened: a refused connection names the host; an open circuit
 * says that no host answers and that each is tried again shortly; anything else keeps its message
 * without the noise.
 */
export function plainEtcdError(err: unknown): string {
  if (isBrokenCircuitError(err)) return 'no etcd host answered (each is tried again 0.5 s after it failed)';
  let m = err instanceof Error ? err.message : String(err);
  m = m
    .replace(/\s*Resolution note:[\s\S]*$/, '')
    .replace(/ \(\d{4}-\d\d-\d\dT[^)]*\)/g, '')
    .replace(/^\d+ [A-Z_]+: /, '');
  const refused = /connect ECONNREFUSED (\S+)/.exec(m);
  if (refused) return `connection refused by ${refused[1]!.replace(/[.,;]$/, '')}`;
  const unreachable = /connect (EHOSTUNREACH|ENETUNREACH|ETIMEDOUT) (\S+)/.exec(m);
  if (unreachable) return `${unreachable[2]!.replace(/[.,;]$/, '')} cannot be reached (${unreachable[1]})`;
  return m.trim().replace(/\.$/, '');
}

/**
 * Runs `attempt(deadline)` until it succeeds, repeating only failures of `isNotSentError` after
 * RETRY_PAUSE_MS, all within `timeoutMs` of wall time. `deadline` is the absolute end (a Date,
 * for gRPC's per-call `options({ deadline })`); a Promise timer is the backstop for calls that
 * ignore it. Resolves with the attempt's value; rejects with DcsError('dcs_unavailable') on the
 * last failure or on timeout. Errors for which `passThrough(err)` is true are rethrown as they
 * are (the caller handles them, e.g. an unknown lease).
 */
export async function boundedCall<T>(
  what: string,
  timeoutMs: number,
  attempt: (deadline: Date) => Promise<T>,
  passThrough: (err: unknown) => boolean = () => false,
): Promise<T> {
  const deadline = new Date(Date.now() + timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DcsError('dcs_unavailable', `etcd did not answer ${what} within ${timeoutMs} ms`)), timeoutMs + 50);
  });
  // The open circuit hides why the host failed (an unknown CA, a refused client certificate):
  // keep the last real failure and name it.
  let lastReal: unknown;
  const run = async (): Promise<T> => {
    for (;;) {
      try {
        return await attempt(deadline);
      } catch (err) {
        if (err instanceof DcsError || passThrough(err)) throw err;
        if (!isBrokenCircuitError(err)) lastReal = err;
        const left = deadline.getTime() - Date.now();
        if (!isNotSentError(err) || left <= RETRY_PAUSE_MS) {
          const why =
            isBrokenCircuitError(err) && lastReal !== undefined
              ? `${plainEtcdError(err)}; the last failure: ${plainEtcdError(lastReal)}`
              : plainEtcdError(err);
          throw new DcsError('dcs_unavailable', `etcd ${what} failed: ${why}`, { cause: err });
        }
        await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
      }
    }
  };
  try {
    return await Promise.race([run(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
