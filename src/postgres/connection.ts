/**
 * The agent's connection to its own PostgreSQL: one postgres.js pool (max 1) over the unix socket
 * as the superuser (options object, not a URL: stack.md §3), every query bounded by a timer that
 * cancels it (q.cancel() sends a CancelRequest) and rejects. Errors are sorted into
 * "not reachable" (code 'pg_unreachable') and "answered with an error" (code 'pg_query_failed').
 */
import postgres from 'postgres';

/** A postgres.js pool. */
export type Sql = postgres.Sql;

/** PostgreSQL did not answer (refused, no socket, timeout, closed, shutting down, starting up). */
export class PgUnreachableError extends Error {
  readonly code = 'pg_unreachable';
  constructor(
    message: string,
    /** The underlying error code (ECONNREFUSED, ENOENT, CONNECT_TIMEOUT, 57P03, timeout…). */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PgUnreachableError';
  }
}

/** PostgreSQL answered with an error; `sqlState` is the SQLSTATE (e.g. 42P01, 25006). */
export class PgQueryError extends Error {
  readonly code = 'pg_query_failed';
  constructor(
    message: string,
    readonly sqlState: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PgQueryError';
  }
}

/** Network/driver error codes that mean "the server is not reachable" (stack.md §3). */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EACCES',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);

/**
 * Classifies a postgres.js error: unreachable for the codes above, SQLSTATE class 08 (connection
 * exception) and 57P01/57P02/57P03 (shutdown, crash, starting up); anything else with a SQLSTATE is
 * a PgQueryError; other errors are returned as they are.
 */
export function classifyPgError(e: unknown): Error {
  if (e instanceof PgUnreachableError || e instanceof PgQueryError) return e;
  const err = e instanceof Error ? e : new Error(String(e));
  const code = String((err as { code?: unknown }).code ?? '');
  if (UNREACHABLE_CODES.has(code) || /^08/.test(code) || /^57P0[123]$/.test(code)) {
    return new PgUnreachableError(`PostgreSQL not reachable: ${err.message}`, code, { cause: err });
  }
  if (err instanceof postgres.PostgresError || /^[0-9A-Z]{5}$/.test(code)) {
    return new PgQueryError(err.message, code, { cause: err });
  }
  return err;
}

/** Where and as whom the pool connects. */
export interface LocalPoolOptions {
  socketDir: string;
  port: number;
  username: string;
  password: string;
  /** application_name of the sessions. */
  applicationName: string;
  /** Connect timeout, seconds (postgres.js unit). */
  connectTimeoutSeconds: number;
  /** Server-side statement_timeout backstop, ms. */
  statementTimeoutMs: number;
  /** Database to connect to; default `postgres`. */
  database?: string;
  /** Seconds a connection may stay idle before it is closed; default 60, 0 = never. */
  idleTimeoutSeconds?: number;
  /** Called when a connection of the pool closes (postgres.js `onclose`). */
  onClose?: () => void;
}

/** Creates the pool (lazy: connects on the first query). No type fetch round trip, notices dropped. */
export function createLocalPool(o: LocalPoolOptions): Sql {
  return postgres({
    host: o.socketDir,
    port: o.port,
    user: o.username,
    password: o.password,
    database: o.database ?? 'postgres',
    max: 1,
    connect_timeout: o.connectTimeoutSeconds,
    idle_timeout: o.idleTimeoutSeconds ?? 60,
    max_lifetime: null,
    ...(o.onClose ? { onclose: o.onClose } : {}),
    fetch_types: false,
    prepare: false,
    onnotice: () => undefined,
    connection: { application_name: o.applicationName, statement_timeout: o.statementTimeoutMs },
  });
}

/**
 * Awaits a postgres.js query, cancelling it and rejecting with PgUnreachableError (reason
 * 'timeout') when it has not finished after `timeoutMs`. `onTimeout` runs after the cancel (the
 * caller may reset its pool there). Errors are classified with classifyPgError.
 */
export async function bounded<T>(q: postgres.PendingQuery<T & postgres.MaybeRow[]>, timeoutMs: number, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      try {
        const c = q.cancel() as unknown;
        if (c && typeof (c as Promise<void>).catch === 'function') (c as Promise<void>).catch(() => undefined);
      } catch {
        /* cancel is best effort */
      }
      onTimeout?.();
      reject(new PgUnreachableError(`PostgreSQL did not answer within ${timeoutMs} ms`, 'timeout'));
    }, timeoutMs);
  });
  try {
    return (await Promise.race([q, timeout])) as unknown as T;
  } catch (e) {
    throw classifyPgError(e);
  } finally {
    clearTimeout(timer);
  }
}
