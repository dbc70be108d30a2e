/**
 * The /metrics answer without one new block the size of the whole text per response: encoded
 * into a reused buffer (BodyBufferPool, GET under @hono/node-server), or as UTF-8 pieces under
 * 128 KiB each (HEAD, other hosts). glibc serves blocks ≥ 128 KiB with mmap
 * until the first such block is freed, then raises that threshold and serves them from its
 * heap arena, whose high-water mark stays in the RSS (mallopt(3), M_MMAP_THRESHOLD): one ~1.5 MB
 * answer per scrape grew the built exporter by 10–15 MB over 100 scrapes (docs/performance.md,
 * "Exporter, 2026-11-26").
 */

/** Largest piece, UTF-16 code units: at most 3 UTF-8 bytes each, so a piece is ≤ 96 KiB. */
export const PIECE_CHARS = 32 * 1024;

/**
 * Splits `text` into UTF-8 buffers of at most `maxChars` code units each, cut after a newline
 * when the piece has one (exposition lines end with one), else never between the two halves of
 * a surrogate pair. The buffers concatenated are exactly `Buffer.from(text)`. `maxChars` ≥ 2.
 */
export function utf8Pieces(text: string, maxChars = PIECE_CHARS): Buffer[] {
  if (!(maxChars >= 2)) throw new RangeError(`maxChars must be at least 2, got ${maxChars}`);
  const pieces: Buffer[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + maxChars, text.length);
    if (end < text.length) {
      const nl = text.lastIndexOf('\n', end - 1);
      if (nl >= start) end = nl + 1;
      else {
        const c = text.charCodeAt(end - 1);
        if (c >= 0xd800 && c <= 0xdbff) end--;
      }
    }
    pieces.push(Buffer.from(text.slice(start, end), 'utf8'));
    start = end;
  }
  return pieces;
}

/** Total length of `pieces`, bytes (for Content-Length). */
export function byteLength(pieces: readonly Uint8Array[]): number {
  let length = 0;
  for (const p of pieces) length += p.length;
  return length;
}

/** `pieces` as a stream body, one chunk each. */
export function piecesStream(pieces: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(ctl) {
      for (const p of pieces) ctl.enqueue(p);
      ctl.close();
    },
  });
}

/** Smallest buffer the pool allocates, bytes. */
const POOL_MIN_BYTES = 256 * 1024;

/**
 * Reusable buffers for the /metrics answer written by the handler under @hono/node-server: each
 * answer is encoded into a buffer the previous answers used, so a scrape allocates (and frees)
 * no UTF-8 copy of its ~1.5 MB text. A buffer goes back to the pool only once the response
 * emitted 'finish' (every byte handed to the kernel); an answer cut short drops its buffer (the
 * garbage collector frees it). At most `keep` free buffers are kept; a text larger than every
 * free buffer gets a new one 1.25 × its size (at least 256 KiB), replacing a smaller free one.
 */
export class BodyBufferPool {
  private readonly free: Buffer[] = [];

  constructor(private readonly keep = 2) {}

  /**
   * `text` as UTF-8 in a pooled buffer: `bytes` (a view of exactly the encoded bytes, equal to
   * `Buffer.from(text)`) and `release`, to call once nothing reads `bytes` any more (idempotent).
   */
  encode(text: string): { bytes: Buffer; release: () => void } {
    const need = Buffer.byteLength(text, 'utf8');
    const i = this.free.findIndex((b) => b.length >= need);
    let buf: Buffer;
    if (i >= 0) buf = this.free.splice(i, 1)[0]!;
    else {
      // The smallest free buffer is too small for texts this size: let it go.
      if (this.free.length > 0) this.free.shift();
      buf = Buffer.allocUnsafeSlow(Math.max(POOL_MIN_BYTES, Math.ceil(need * 1.25)));
    }
    const n = buf.write(text, 0, 'utf8');
    let released = false;
    return {
      bytes: buf.subarray(0, n),
      release: () => {
        if (released) return;
        released = true;
        if (this.free.length < this.keep) {
          this.free.push(buf);
          this.free.sort((a, b) => a.length - b.length);
        }
      },
    };
  }

  /** Free buffers held (tests). */
  get freeCount(): number {
    return this.free.length;
  }
}
