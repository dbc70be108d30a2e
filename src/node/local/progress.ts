/**
 * The progress of the long operation under way on this member (one at a time: a clone, a
 * rewind, a bootstrap's restore and recovery, a backup), for /ha (`progress`), the member key and
 * `hactl list` (docs/backups.md "Progress"). The effects tell it what they do; the tools' own
 * output is read by src/domain/progress.ts; when a tool prints no byte counts, the bytes written
 * into the data directory are sampled every few seconds. Its one writer per operation is the
 * effect that runs it.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readToolProgress, type OperationProgress, type ProgressOperation } from '../../domain/progress.ts';

/** Bytes of the regular files under `dir` (symbolic links not followed); 0 when it cannot be read. */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile())
        total += await stat(p).then(
          (s) => s.size,
          () => 0,
        );
    }
  };
  await walk(dir);
  return total;
}

/** What the tracker needs. */
export interface ProgressDeps {
  /** Epoch ms. */
  now(): number;
  /** Told after every change (the snapshot and the member key are rebuilt from it). */
  changed?(): void;
  /** The bytes in the data directory now (directoryBytes of it); absent: not sampled. */
  dataBytes?(): Promise<number>;
  /** How often the data directory is sampled while no tool reports bytes, ms. Default 5000. */
  sampleEveryMs?: number;
}

export class ProgressTracker {
  private op: OperationProgress | undefined;
  private sampler: ReturnType<typeof setInterval> | undefined;
  private toolBytes = false;
  /** Bumped on every change (the snapshot's memo compares it). */
  version = 0;

  constructor(private readonly d: ProgressDeps) {}

  /** The operation under way, or undefined. */
  current(): OperationProgress | undefined {
    return this.op;
  }

  /**
   * An operation begins (replacing any other): `sample` starts sampling the data directory's bytes
   * until a tool reports its own.
   */
  begin(operation: ProgressOperation, method: string, phase: string, opts: { sample?: boolean } = {}): void {
    this.stopSampling();
    this.toolBytes = false;
    this.op = { operation, method, phase, startedAtMs: this.d.now() };
    this.touch();
    if (opts.sample && this.d.dataBytes) {
      const every = this.d.sampleEveryMs ?? 5000;
      this.sampler = setInterval(() => void this.sample(), every);
      this.sampler.unref?.();
    }
  }

  /** The operation moves to another phase (or method); byte counts start over. */
  phase(phase: string, method?: string): void {
    if (!this.op) return;
    const { bytesDone: _d, bytesTotal: _t, percent: _p, ...rest } = this.op;
    this.op = { ...rest, phase, ...(method !== undefined ? { method } : {}) };
    this.toolBytes = false;
    this.touch();
  }

  /** A chunk of the running tool's output: its progress, when it shows any (readToolProgress). */
  output(text: string): void {
    if (!this.op) return;
    const r = readToolProgress(text);
    if (!r) return;
    if (r.bytesDone !== undefined) this.toolBytes = true;
    this.op = { ...this.op, ...r };
    this.touch();
  }

  /** Sets what is done (and the total), e.g. a recovery's replayed bytes. */
  bytes(done: number, total?: number): void {
    if (!this.op) return;
    this.toolBytes = true;
    this.op = {
      ...this.op,
      bytesDone: done,
      ...(total !== undefined ? { bytesTotal: total, percent: total > 0 ? Math.min(100, (100 * done) / total) : 100 } : {}),
    };
    this.touch();
  }

  /** The operation ended (either way). */
  end(): void {
    this.stopSampling();
    if (!this.op) return;
    this.op = undefined;
    this.touch();
  }

  /**
   * Runs `fn` as one operation: begun before, ended after, whatever happens.
   * @returns what `fn` returns; rejects as it does.
   */
  async run<T>(
    operation: ProgressOperation,
    method: string,
    phase: string,
    fn: () => Promise<T>,
    opts: { sample?: boolean } = {},
  ): Promise<T> {
    this.begin(operation, method, phase, opts);
    try {
      return await fn();
    } finally {
      this.end();
    }
  }

  private async sample(): Promise<void> {
    if (!this.op || this.toolBytes || !this.d.dataBytes) return;
    const op = this.op;
    const n = await this.d.dataBytes().catch(() => undefined);
    if (n === undefined || this.op !== op || this.toolBytes) return;
    this.op = { ...op, bytesDone: n };
    this.touch();
  }

  private stopSampling(): void {
    if (this.sampler) clearInterval(this.sampler);
    this.sampler = undefined;
  }

  private touch(): void {
    this.version++;
    this.d.changed?.();
  }
}
