import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Journal } from '@ha/machines';
import { fileJournalSink } from '../../../src/node/agent/journal-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'ha-journal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('fileJournalSink', () => {
  it('appends one JSON line per entry, in order, creating the directory', () => {
    const path = join(dir, 'sub', 'a.journal.jsonl');
    const j = new Journal({ sink: fileJournalSink(path), now: () => 0 });
    j.append({ machine: 'm', kind: 'event', event: { type: 'x' } });
    j.append({ machine: 'm', kind: 'event', event: { type: 'y' } });
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.event.type)).toEqual(['x', 'y']);
    expect(j.path).toBe(path);
  });

  it('rotates to <file>.1 when a line would pass maxBytes, keeping one predecessor', () => {
    const path = join(dir, 'b.journal.jsonl');
    const j = new Journal({ sink: fileJournalSink(path, 200), now: () => 0 });
    for (let i = 0; i < 6; i++) j.append({ machine: 'm', kind: 'event', event: { type: `e${i}` } });
    expect(existsSync(`${path}.1`)).toBe(true);
    expect(readFileSync(path, 'utf8').length).toBeLessThanOrEqual(200);
    const all = [...readFileSync(`${path}.1`, 'utf8').trim().split('\n'), ...readFileSync(path, 'utf8').trim().split('\n')];
    expect(JSON.parse(all.at(-1)!).event.type).toBe('e5');
  });
});
