/**
 * Errors of hactl commands. A CtlError carries the exit code (1 refused or failed, 2 usage error)
 * and a message that names the member or key involved; the CLI prints `.message` alone (never a
 * stack trace).
 */

/** Exit codes of hactl: 0 success, 1 refused or failed, 2 usage error. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** A failure a hactl command reports to the operator: message plus exit code. */
export class CtlError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'CtlError';
  }
}

/** A usage error (exit code 2). */
export function usageError(message: string): CtlError {
  return new CtlError(message, 2);
}

/** Text of any thrown value, without a stack. */
export function errorText(e: unknown): string {
  if (e instanceof Error) {
    const cause = (e as { cause?: unknown }).cause;
    const code = (cause as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' && !e.message.includes(code) ? `${e.message} (${code})` : e.message;
  }
  return String(e);
}
