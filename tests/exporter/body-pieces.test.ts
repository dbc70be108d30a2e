import { describe, expect, it } from 'vitest';
import { BodyBufferPool, byteLength, PIECE_CHARS, piecesStream, utf8Pieces } from '../../src/exporter/body-pieces.ts';

const line = (i: number) => `pg_table_size{datname="db",relname="t_${i}_é_😀"} ${i * 8192}\n`;

describe('utf8Pieces', () => {
  it('returns the exact UTF-8 bytes of a large exposition, every piece under 128 KiB and ending a line', () => {
    let text = '';
    for (let i = 0; i < 20_000; i++) text += line(i);
    const pieces = utf8Pieces(text);
    expect(pieces.length).toBeGreaterThan(10);
    expect(Buffer.concat(pieces).equals(Buffer.from(text))).toBe(true);
    for (const p of pieces) {
      expect(p.length).toBeLessThan(128 * 1024);
      expect(p[p.length - 1]).toBe(0x0a);
    }
  });

  it('never cuts a surrogate pair when a piece has no newline', () => {
    const text = '😀'.repeat(50); // 100 code units, no newline
    for (const max of [2, 3, 7, 64]) {
      const pieces = utf8Pieces(text, max);
      expect(Buffer.concat(pieces).toString('utf8')).toBe(text);
      expect(pieces.every((p) => !p.includes(Buffer.from('\uFFFD')))).toBe(true);
    }
  });

  it('gives no piece for an empty text and one for a short text; rejects maxChars < 2', () => {
    expect(utf8Pieces('')).toEqual([]);
    expect(utf8Pieces('a 1\n').map(String)).toEqual(['a 1\n']);
    expect(() => utf8Pieces('abc', 1)).toThrow(/maxChars/);
    expect(PIECE_CHARS * 3).toBeLessThan(128 * 1024);
  });
});

describe('piecesStream and byteLength', () => {
  it('stream the whole text and count its bytes', async () => {
    let text = '';
    for (let i = 0; i < 5_000; i++) text += line(i);
    const pieces = utf8Pieces(text);
    const got = Buffer.from(await new Response(piecesStream(pieces)).arrayBuffer());
    expect(byteLength(pieces)).toBe(Buffer.byteLength(text));
    expect(got.toString('utf8')).toBe(text);
  });
});

describe('BodyBufferPool', () => {
  const exposition = (n: number) => {
    let text = '';
    for (let i = 0; i < n; i++) text += line(i);
    return text;
  };

  it('encodes the exact UTF-8 bytes and reuses a buffer only after its release', () => {
    const pool = new BodyBufferPool();
    const a = exposition(5000);
    const first = pool.encode(a);
    expect(first.bytes.equals(Buffer.from(a))).toBe(true);
    // Not released: a second answer gets another buffer, the first one's bytes stay intact.
    const b = exposition(4000);
    const second = pool.encode(b);
    expect(second.bytes.buffer).not.toBe(first.bytes.buffer);
    expect(first.bytes.equals(Buffer.from(a))).toBe(true);
    first.release();
    first.release(); // idempotent
    expect(pool.freeCount).toBe(1);
    const third = pool.encode(b);
    expect(third.bytes.buffer).toBe(first.bytes.buffer);
    expect(third.bytes.equals(Buffer.from(b))).toBe(true);
    expect(second.bytes.equals(Buffer.from(b))).toBe(true);
  });

  it('replaces a free buffer too small for a larger text and keeps at most `keep` free buffers', () => {
    const pool = new BodyBufferPool(1);
    const small = pool.encode('a\n');
    small.release();
    expect(pool.freeCount).toBe(1);
    const big = exposition(20_000);
    const large = pool.encode(big);
    expect(large.bytes.buffer).not.toBe(small.bytes.buffer);
    expect(large.bytes.equals(Buffer.from(big))).toBe(true);
    expect(pool.freeCount).toBe(0);
    const other = pool.encode('b\n');
    large.release();
    other.release();
    expect(pool.freeCount).toBe(1);
    expect(pool.encode(big).bytes.buffer).toBe(large.bytes.buffer);
  });
});
