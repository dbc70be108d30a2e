/**
 * The /metrics answer as UTF-8 pieces under 128 KiB each, so that no response allocates (and
 * later frees) one block the size of the whole text. glibc serves blocks ≥ 128 KiB with mmap
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
