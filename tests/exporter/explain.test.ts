import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseCollectorFile } from '../../src/exporter/config-load.ts';
import { explainText } from '../../src/exporter/explain.ts';
import { statText } from '../../src/exporter/stat.ts';
import { REFERENCE_DIR, REFERENCE_SKIP, referencePath } from '../support/reference.ts';

/** The reference example (docs/reference/pg_exporter-explain-example.txt), read before the tests. */
let example = '';
const between = (start: string, end: string) => {
  const a = example.indexOf('\n', example.indexOf(start)) + 1;
  return example.slice(a, example.indexOf(end, a));
};

describe.skipIf(!REFERENCE_DIR)(`/explain and /stat formats ${REFERENCE_SKIP}`, () => {
  beforeAll(() => {
    example = readFileSync(referencePath('docs/reference/pg_exporter-explain-example.txt'), 'utf8');
  });

  it('renders the reference example byte for byte', () => {
    const input = between('---- INPUT: 0990-app.yml ----', '---- BEGIN GET /explain body ----');
    const expected = between('---- BEGIN GET /explain body ----', '---- END ----');
    const collectors = parseCollectorFile(input, '0990-app.yml', 101);
    expect(explainText(collectors)).toBe(expected);
  });

  it('renders the /stat example byte for byte', () => {
    const expected = between('---- BEGIN GET /stat body', '---- END ----');
    const text = statText([
      { name: 'app_queue', total: 42, hit: 35, error: 1, skip: 0, metric: 6, ttlLeftSeconds: 7.9, durationMs: 3.117 },
      { name: 'pg_table_size_long_name_x', total: 42, hit: 0, error: 0, skip: 3, metric: 0, ttlLeftSeconds: 0, durationMs: 0 },
      { name: 'pg', total: 7, hit: 0, error: 0, skip: 0, metric: 15, ttlLeftSeconds: 0, durationMs: 1234567.8 },
    ]);
    expect(text).toBe(expected);
  });
});
