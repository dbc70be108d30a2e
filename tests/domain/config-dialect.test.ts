import { describe, expect, it } from 'vitest';
import {
  convertDocument,
  readAsNative,
  renameDocument,
  storedDialect,
  translatePath,
  writtenDialect,
} from '../../src/domain/config-dialect.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';

describe('the dialect of a dynamic configuration document', () => {
  it('is named by its database section', () => {
    expect(writtenDialect({ ttl: 30, database: {} })).toBe('native');
    expect(writtenDialect({ ttl: 30, postgresql: {} })).toBe('patroni');
    expect(writtenDialect({ database: {}, postgresql: {} })).toBe('both');
    expect(writtenDialect({ ttl: 30 })).toBeUndefined();
    expect(writtenDialect([1])).toBeUndefined();
    expect(storedDialect({ ttl: 30, postgresql: {} })).toBe('patroni');
    expect(storedDialect({ ttl: 30 })).toBe('native');
    expect(storedDialect({ database: {}, postgresql: {} })).toBe('native');
  });

  it('paths are renamed with the section and the rewind switch', () => {
    expect(translatePath(['postgresql', 'use_pg_rewind'], 'patroni', 'native')).toEqual(['database', 'use_db_rewind']);
    expect(translatePath(['postgresql', 'parameters', 'x'], 'patroni', 'native')).toEqual(['database', 'parameters', 'x']);
    expect(translatePath(['database', 'use_db_rewind'], 'native', 'patroni')).toEqual(['postgresql', 'use_pg_rewind']);
    expect(translatePath(['ttl'], 'native', 'patroni')).toEqual(['ttl']);
  });
});

describe('reading a document of the reference', () => {
  it("renames it and takes the reference's defaults where they differ from ours", () => {
    const doc = { ttl: 20, postgresql: { use_slots: false, parameters: { max_connections: 200 } } };
    expect(readAsNative(doc)).toEqual({
      ttl: 20,
      database: {
        use_slots: false,
        parameters: { max_connections: 200 },
        use_db_rewind: false,
        remove_data_directory_on_rewind_failure: false,
      },
    });
    const c = withDefaults(doc);
    expect(c.database).toEqual({
      use_slots: false,
      use_db_rewind: false,
      remove_data_directory_on_rewind_failure: false,
      remove_data_directory_on_diverged_timelines: false,
      parameters: { max_connections: 200 },
    });
    expect(
      withDefaults({ postgresql: { use_pg_rewind: true, remove_data_directory_on_rewind_failure: true } }).database.use_db_rewind,
    ).toBe(true);
    // Ours: the native defaults (true, true).
    expect(withDefaults({ database: {} }).database.use_db_rewind).toBe(true);
    expect(withDefaults({}).database.remove_data_directory_on_rewind_failure).toBe(true);
  });

  it("does not read the native name of the rewind switch inside the reference's section", () => {
    expect(withDefaults({ postgresql: { use_db_rewind: true } }).database.use_db_rewind).toBe(false);
    expect(withDefaults({ postgresql: { use_pg_rewind: true, use_db_rewind: false } }).database.use_db_rewind).toBe(true);
  });

  it('leaves a native document as it is (same object) and does not change its input', () => {
    const native = { database: { use_db_rewind: false } };
    expect(readAsNative(native)).toBe(native);
    const patroni = { postgresql: { use_pg_rewind: true } };
    readAsNative(patroni);
    expect(patroni).toEqual({ postgresql: { use_pg_rewind: true } });
  });
});

describe('converting a whole document', () => {
  it('keeps its meaning: the defaults that differ are written out', () => {
    expect(convertDocument({ ttl: 30, postgresql: { use_pg_rewind: true } }, 'patroni', 'native')).toEqual({
      ttl: 30,
      database: { use_db_rewind: true, remove_data_directory_on_rewind_failure: false },
    });
    expect(convertDocument({ ttl: 30 }, 'native', 'patroni')).toEqual({
      ttl: 30,
      postgresql: { use_pg_rewind: true, remove_data_directory_on_rewind_failure: true },
    });
    const there = convertDocument({ ttl: 30, database: { use_slots: false }, 'x-tool': 1 }, 'native', 'patroni');
    const back = convertDocument(there, 'patroni', 'native');
    expect(withDefaults(back)).toEqual(withDefaults({ ttl: 30, database: { use_slots: false }, 'x-tool': 1 }));
    expect(withDefaults(there)).toEqual(withDefaults({ ttl: 30, database: { use_slots: false }, 'x-tool': 1 }));
  });

  it('a rename keeps the key order and never overwrites a key of the target name', () => {
    expect(Object.keys(renameDocument({ a: 1, postgresql: {}, b: 2 }, 'patroni', 'native'))).toEqual(['a', 'database', 'b']);
    expect(renameDocument({ postgresql: { use_pg_rewind: true, use_db_rewind: false } }, 'patroni', 'native')).toEqual({
      database: { use_pg_rewind: true, use_db_rewind: false },
    });
  });
});
