import { describe, expect, it } from 'vitest';
import { normalizeInitdbOptions } from '../../src/config/initdb.ts';
import { parseConfig } from '../../src/config/index.ts';
import { GOOD_YAML } from './fixtures.ts';

describe('normalizeInitdbOptions', () => {
  it('turns flags and one-key maps into initdb arguments, in order', () => {
    expect(
      normalizeInitdbOptions([
        'data-checksums',
        { encoding: 'UTF8' },
        '--no-sync',
        { 'wal-segsize': 32 },
        { 'allow-group-access': true },
        { debug: false },
      ]),
    ).toEqual(['--data-checksums', '--encoding=UTF8', '--no-sync', '--wal-segsize=32', '--allow-group-access']);
  });

  it('refuses maps with several keys and entries of other types, with their index', () => {
    expect(() => parseConfig(`${GOOD_YAML}bootstrap:\n  initdb: [ok, {a: 1, b: 2}, 3, [x]]\n`, {})).toThrow(
      expect.objectContaining({
        problems: [
          'bootstrap.initdb.1: a map entry must have exactly one key, e.g. {encoding: UTF8}',
          'bootstrap.initdb.2: must be an option name or a one-key map such as {encoding: UTF8}, got 3',
          'bootstrap.initdb.3: must be an option name or a one-key map such as {encoding: UTF8}, got Array',
        ],
      }),
    );
  });
});
