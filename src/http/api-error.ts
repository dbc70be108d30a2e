/**
 * The node API's one error type: every refusal and failure a handler answers is an ApiError with
 * a code, and its HTTP status comes from one table (ERROR_STATUS), not from the handler. A
 * handler either returns `refuse(code, text)` or throws an ApiError (`orFail` turns a rejected
 * DCS or node call into one); the app's error handler (app.ts `onError`) answers thrown ones.
 * The answer is the plain-text message (responses.ts `message`). Health verdicts (200/503 with
 * the status document, health.ts) are answers, not errors, and do not go through here.
 */
import { message } from './responses.ts';

/** Why a request was refused or failed (docs/api.md lists the messages). */
export type ApiErrorCode =
  /** The body, a parameter or an option is invalid. */
  | 'invalid_request'
  /** A well-formed value that cannot be used (a timestamp in the past or unparseable). */
  | 'unprocessable'
  /** restapi.authentication is set and the request has no valid credentials. */
  | 'unauthenticated'
  /** The allowlist or the client certificate check refuses the caller. */
  | 'forbidden'
  /** Nothing to act on (no scheduled restart or switchover). */
  | 'not_found'
  /** Another request got there first, or the state forbids it (paused, already scheduled). */
  | 'conflict'
  /** The members named in a switchover or failover do not qualify. */
  | 'precondition_failed'
  /** The body is larger than restapi's limit. */
  | 'body_too_large'
  /** POST /reload could not re-read the configuration. */
  | 'reload_failed'
  /** The feature is off (failsafe mode). */
  | 'not_enabled'
  /** The DCS could not be read or written, or lacks the key. */
  | 'dcs_unavailable'
  /** The node refuses the command in its current state (no leader, I am the leader, conditions). */
  | 'refused'
  /** The command ran and failed, or its outcome is not known in time. */
  | 'command_failed'
  /** Too many unsafe requests in flight. */
  | 'overloaded';

/** The HTTP status of each code: the one place a handler's error becomes a status. */
export const ERROR_STATUS: Readonly<Record<ApiErrorCode, number>> = {
  invalid_request: 400,
  unprocessable: 422,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  precondition_failed: 412,
  body_too_large: 413,
  reload_failed: 500,
  not_enabled: 502,
  dcs_unavailable: 503,
  refused: 503,
  command_failed: 503,
  overloaded: 503,
};

/** A refusal or failure of a request: `message` is the answer's text; `headers` go with it. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The answer to `e`: its text with the status of its code. */
export function errorAnswer(e: ApiError): Response {
  return message(ERROR_STATUS[e.code], e.message, e.headers ? { ...e.headers } : undefined);
}

/** The answer to a refusal with `code` and `text` (as errorAnswer of that ApiError). */
export function refuse(code: ApiErrorCode, text: string, headers?: Readonly<Record<string, string>>): Response {
  return errorAnswer(new ApiError(code, text, headers));
}

/** The code of a parse failure the domain reports with status 400 or 422 (schedule.ts, restart-conditions.ts). */
export function parseFailure(status: 400 | 422): ApiErrorCode {
  return status === 422 ? 'unprocessable' : 'invalid_request';
}

/** Text of an unknown thrown value, for error answers. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Awaits `call`; a rejection is thrown as ApiError(`code`, `text(reason)`), which the app answers
 * (e.g. `orFail(() => commands.readCluster(), 'dcs_unavailable', (e) => \`DCS is not reachable: ${errorText(e)}\`)`).
 */
export async function orFail<T>(call: () => Promise<T>, code: ApiErrorCode, text: (reason: unknown) => string): Promise<T> {
  try {
    return await call();
  } catch (e) {
    throw new ApiError(code, text(e));
  }
}
