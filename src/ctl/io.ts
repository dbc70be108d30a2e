/**
 * The operator's terminal as hactl sees it: output lines, error lines and prompts. Commands take a
 * CtlIo so unit tests can script the answers; `createStdIo()` reads answers from stdin with
 * node:readline (a pty or a pipe alike; end of input answers every further prompt with
 * `undefined`, which every command treats as a refusal).
 */
import { createInterface, type Interface } from 'node:readline';

/** Where a command writes and how it asks. */
export interface CtlIo {
  /** Writes one line (a newline is added) to stdout. */
  out(line: string): void;
  /** Writes one line to stderr. */
  err(line: string): void;
  /** Shows `question` and resolves with the answer line (trimmed), or undefined at end of input. */
  ask(question: string): Promise<string | undefined>;
  /** True when stdout is a terminal (used to clear the screen in `list --watch`). */
  readonly isTty: boolean;
  /** Releases stdin. */
  close(): void;
}

/**
 * Asks a yes/no question `<question> [y/N]: `; true only for `y`/`yes` (any case).
 * End of input or anything else is false.
 */
export async function confirm(io: CtlIo, question: string): Promise<boolean> {
  const a = await io.ask(`${question} [y/N]: `);
  return a !== undefined && /^(y|yes)$/i.test(a);
}

/**
 * Asks with a default shown in brackets: `<question> [<default>]: `. An empty answer gives the
 * default; end of input gives undefined.
 */
export async function askWithDefault(io: CtlIo, question: string, dflt: string): Promise<string | undefined> {
  const a = await io.ask(`${question} [${dflt}]: `);
  if (a === undefined) return undefined;
  return a === '' ? dflt : a;
}

/** The process's stdin/stdout/stderr. The readline interface is created at the first prompt. */
export function createStdIo(): CtlIo {
  let rl: Interface | undefined;
  const lines: string[] = [];
  const waiting: Array<(l: string | undefined) => void> = [];
  let ended = false;
  const start = (): void => {
    if (rl) return;
    const terminal = Boolean(process.stdin.isTTY && process.stdout.isTTY);
    rl = createInterface({ input: process.stdin, output: terminal ? process.stdout : undefined, terminal });
    rl.on('line', (l) => {
      const w = waiting.shift();
      if (w) w(l.trim());
      else lines.push(l.trim());
    });
    // Ctrl-C at a prompt ends the input: the pending question is answered `undefined` (refused).
    rl.on('SIGINT', () => rl?.close());
    rl.on('close', () => {
      ended = true;
      for (const w of waiting.splice(0)) w(undefined);
    });
  };
  return {
    isTty: Boolean(process.stdout.isTTY),
    out: (line) => void process.stdout.write(line + '\n'),
    err: (line) => void process.stderr.write(line + '\n'),
    ask(question) {
      start();
      process.stdout.write(question);
      const ready = lines.shift();
      if (ready !== undefined) return Promise.resolve(ready);
      if (ended) {
        process.stdout.write('\n');
        return Promise.resolve(undefined);
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
    close() {
      rl?.close();
      process.stdin.pause();
    },
  };
}
