import { describe, expect, it } from 'vitest';
import { applySettings, configProblems, configYaml, mergePatch, parseConfigText, sameConfig } from '../../src/ctl/config-edit.ts';
import { unifiedDiff } from '../../src/ctl/diff.ts';
import { CtlError } from '../../src/ctl/errors.ts';

describe('edit-config changes', () => {
  const doc = { ttl: 30, loop_wait: 10, database: { use_slots: true, parameters: { max_connections: 100 } } };

  it('-s sets dotted paths with YAML values; null deletes; -p sets database parameters', () => {
    const out = applySettings(
      doc,
      ['ttl=40', 'database.use_slots=false', 'loop_wait=null', 'postgresql.x=a b'],
      ['max_connections=200', 'wal_level=logical'],
    );
    expect(out).toEqual({
      ttl: 40,
      database: { use_slots: false, parameters: { max_connections: 200, wal_level: 'logical' } },
      postgresql: { x: 'a b' },
    });
    expect(doc.ttl).toBe(30);
  });

  it('a setting without = is a usage error naming the option', () => {
    expect(() => applySettings(doc, ['ttl'], [])).toThrow(/invalid -s "ttl": expected key=value/);
    try {
      applySettings(doc, [], ['=1']);
    } catch (e) {
      expect(e).toBeInstanceOf(CtlError);
      expect((e as CtlError).exitCode).toBe(2);
    }
  });

  it('--apply merges recursively, null deletes', () => {
    expect(mergePatch(doc, { database: { parameters: { max_connections: null, work_mem: '8MB' } }, ttl: null })).toEqual({
      loop_wait: 10,
      database: { use_slots: true, parameters: { work_mem: '8MB' } },
    });
  });

  it('parses YAML documents; a list is refused', () => {
    expect(parseConfigText('ttl: 20\n', 'f.yml')).toEqual({ ttl: 20 });
    expect(parseConfigText('', 'f.yml')).toEqual({});
    expect(() => parseConfigText('- a\n', 'f.yml')).toThrow(/f.yml: the configuration must be a mapping/);
    expect(() => parseConfigText('a: [', 'f.yml')).toThrow(/f.yml: not valid YAML/);
  });

  it('validation reports the timing rule and types', () => {
    expect(configProblems(doc)).toBeUndefined();
    expect(configProblems({ ...doc, loop_wait: 25 })!.join()).toMatch(/loop_wait 25/);
    expect(configProblems({ ttl: 'x' })!.join()).toMatch(/ttl/);
  });

  it('YAML with sorted keys; sameConfig ignores key order', () => {
    expect(configYaml({ b: 1, a: { d: 2, c: 3 } })).toBe('a:\n  c: 3\n  d: 2\nb: 1\n');
    expect(sameConfig({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(sameConfig({ a: 1 }, { a: 2 })).toBe(false);
  });
});

describe('unified diff', () => {
  it('is empty for equal texts', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb\n')).toEqual([]);
  });

  it('shows a change with context', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].join('\n') + '\n';
    const after = before.replace('e', 'E');
    expect(unifiedDiff(before, after)).toEqual([
      '--- before',
      '+++ after',
      '@@ -2,7 +2,7 @@',
      ' b',
      ' c',
      ' d',
      '-e',
      '+E',
      ' f',
      ' g',
      ' h',
    ]);
  });

  it('separate hunks for distant changes; additions and removals', () => {
    const lines = Array.from({ length: 20 }, (_, i) => `l${i}`);
    const after = [...lines];
    after.splice(1, 1);
    after.push('new');
    const d = unifiedDiff(lines.join('\n'), after.join('\n'));
    expect(d.filter((l) => l.startsWith('@@'))).toEqual(['@@ -1,5 +1,4 @@', '@@ -18,3 +17,4 @@']);
    expect(d).toContain('-l1');
    expect(d).toContain('+new');
  });

  it('from an empty text', () => {
    expect(unifiedDiff('', 'x\n')).toEqual(['--- before', '+++ after', '@@ -0,0 +1,1 @@', '+x']);
  });
});
