/**
 * Turns valibot issues into the lines of a ConfigError: `<dot.path>: <problem>`.
 * Missing keys read "is required", keys a strict section does not know read "unknown key".
 */
import * as v from 'valibot';

/** Anything with valibot issues' shape (`v.BaseIssue<unknown>`). */
type Issue = v.BaseIssue<unknown>;

/** Dot path of an issue (`database.authentication.superuser.username`, `etcd3.hosts.1`), `(root)` when empty. */
export function issuePath(issue: Issue): string {
  return v.getDotPath(issue) ?? '(root)';
}

/** Readable problem text of one issue, without the path. */
export function issueProblem(issue: Issue): string {
  if (issue.kind === 'schema' && issue.expected === 'never' && issue.type.endsWith('object')) return 'unknown key';
  if (issue.kind === 'schema' && issue.input === undefined && issue.expected?.startsWith('"')) return 'is required';
  return issue.message;
}

/** Every issue as `<dot.path>: <problem>`, in the order valibot found them, duplicates dropped. */
export function formatIssues(issues: readonly Issue[]): string[] {
  return [...new Set(issues.map((i) => `${issuePath(i)}: ${issueProblem(i)}`))];
}
