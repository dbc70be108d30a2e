/**
 * The exporter's process-wide V8 settings (tuneHeap, src/exporter/exporter.ts): the old
 * generation's growing percentage, and the young generation's growth stopped at creation unless
 * DB_EXPORTER_NEW_SPACE_CAP_MB asks for a cap (or none). Each case imports a fresh module (the
 * settings apply once per process, per module instance).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

const load = async () => {
  vi.resetModules();
  return import('../../src/exporter/exporter.ts');
};

describe('tuneHeap', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('stops the young generation growing by default, once', async () => {
    vi.stubEnv('DB_EXPORTER_NEW_SPACE_CAP_MB', undefined as unknown as string);
    vi.stubEnv('DB_EXPORTER_HEAP_FLAGS', undefined as unknown as string);
    const m = await load();
    expect(m.tuneHeap()).toEqual(['--heap-growing-percent=30', '--semi-space-growth-factor=1']);
    expect(m.tuneHeap()).toEqual([]);
  });

  it('leaves the growth on when a cap (or 0, no cap) is asked for; DB_EXPORTER_HEAP_FLAGS replaces the list', async () => {
    vi.stubEnv('DB_EXPORTER_NEW_SPACE_CAP_MB', '16');
    expect((await load()).tuneHeap()).toEqual(['--heap-growing-percent=30']);
    vi.stubEnv('DB_EXPORTER_NEW_SPACE_CAP_MB', '0');
    vi.stubEnv('DB_EXPORTER_HEAP_FLAGS', '');
    expect((await load()).tuneHeap()).toEqual([]);
    vi.stubEnv('DB_EXPORTER_NEW_SPACE_CAP_MB', undefined as unknown as string);
    vi.stubEnv('DB_EXPORTER_HEAP_FLAGS', '--heap-growing-percent=20');
    expect((await load()).tuneHeap()).toEqual(['--heap-growing-percent=20', '--semi-space-growth-factor=1']);
  });
});
