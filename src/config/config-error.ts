/**
 * The one error a bad configuration produces. The CLI prints `message` and exits with
 * `exitCode` (2). Every problem found is listed, not only the first.
 */

/**
 * Thrown by `loadConfig` / `parseConfig` when the configuration cannot be used.
 * - `problems`: one line per problem, `<dot.path>: <problem>` (for YAML syntax errors
 *   `<source>:<line>:<col>: <problem>`; for an unreadable file `<path>: <problem>`).
 * - `message`: a header naming the source, then every problem on its own indented line.
 * - `code`: always `ECONFIG`; `exitCode`: always 2 (architecture: "one readable error (exit 2)").
 */
export class ConfigError extends Error {
  readonly code = 'ECONFIG';
  readonly exitCode = 2;
  readonly problems: string[];
  readonly source: string;

  constructor(source: string, problems: string[], options?: { cause?: unknown }) {
    const n = problems.length;
    super(`invalid configuration (${source}): ${n} problem${n === 1 ? '' : 's'}\n` + problems.map((p) => `  - ${p}`).join('\n'), options);
    this.name = 'ConfigError';
    this.problems = problems;
    this.source = source;
  }
}
