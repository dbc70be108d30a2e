/** ha.yml: `database.callbacks` (names, command lines) and the cascading tags (`replicatefrom`, `nostream`). */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import { splitCommandLine } from '../../src/config/command-line.ts';
import { GOOD_YAML } from './fixtures.ts';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('splitCommandLine', () => {
  it('splits as a shell would, without expanding anything', () => {
    expect(splitCommandLine('/usr/bin/vip.sh  --dev eth0')).toEqual(['/usr/bin/vip.sh', '--dev', 'eth0']);
    expect(splitCommandLine(`/x 'a b' "c \\"d\\" $HOME" e\\ f ''`)).toEqual(['/x', 'a b', 'c "d" $HOME', 'e f', '']);
    expect(splitCommandLine('  ')).toEqual([]);
  });
  it('refuses unterminated quotes and a trailing backslash', () => {
    expect(() => splitCommandLine("/x 'a")).toThrow('unterminated single quote');
    expect(() => splitCommandLine('/x "a')).toThrow('unterminated double quote');
    expect(() => splitCommandLine('/x \\')).toThrow('trailing backslash');
  });
});

describe('database.callbacks', () => {
  it('accepts the five callbacks as command lines or word lists', () => {
    const c = parseConfig(
      `${GOOD_YAML}  callbacks:\n    on_start: "/etc/ha/cb.sh --log '/var/log/x y'"\n    on_role_change: [/etc/ha/vip.sh, eth0]\n    on_stop: /bin/true\n`,
      {},
    );
    expect(c.database.callbacks).toEqual({
      on_start: ['/etc/ha/cb.sh', '--log', '/var/log/x y'],
      on_role_change: ['/etc/ha/vip.sh', 'eth0'],
      on_stop: ['/bin/true'],
    });
  });
  it('is absent when not configured', () => {
    expect(parseConfig(GOOD_YAML, {}).database.callbacks).toBeUndefined();
  });
  it('refuses unknown callback names, naming the field, and bad commands', () => {
    const yaml = `${GOOD_YAML}  callbacks:\n    on_promote: /bin/true\n    on_start: ""\n    on_stop: 5\n    on_reload: "/x 'unterminated"\n`;
    expect(problemsOf(() => parseConfig(yaml, {}))).toEqual([
      'database.callbacks.on_start: must name a program',
      'database.callbacks.on_stop: must be a command line or a list of words, got 5',
      'database.callbacks.on_reload: cannot split the command line: unterminated single quote',
      'database.callbacks.on_promote: unknown key',
    ]);
  });
  it('refuses a callbacks section that is not a mapping', () => {
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}  callbacks: [a]\n`, {}))).toEqual([
      'database.callbacks: must be a mapping, got Array',
    ]);
  });
});

describe('tags replicatefrom and nostream', () => {
  it('accepts replicatefrom naming another member, and nostream: false', () => {
    const c = parseConfig(`${GOOD_YAML}tags: {replicatefrom: node2, nostream: false, clonefrom: true}\n`, {});
    expect(c.tags).toEqual({ replicatefrom: 'node2', nostream: false, clonefrom: true });
  });
  it('refuses nostream: true (no archive recovery), replicatefrom naming this member, and bad values', () => {
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}tags: {nostream: true, replicatefrom: node1}\n`, {}))).toEqual([
      'tags.nostream: is not supported: a member without streaming needs archive recovery (restore_command), which this agent does not configure; remove the tag',
      'tags.replicatefrom: names this member itself; name another member (or remove the tag to stream from the leader)',
    ]);
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}tags: {replicatefrom: "a/b", nostream: "yes"}\n`, {}))).toEqual([
      'tags.replicatefrom: must not contain "/" or whitespace',
      'tags.nostream: must be true or false, got "yes"',
    ]);
  });
});

describe('examples/callbacks-cascade', () => {
  it('node3.yml validates: callbacks and replicatefrom', async () => {
    const { loadConfig } = await import('../../src/config/index.ts');
    const c = await loadConfig('examples/callbacks-cascade/node3.yml', {});
    expect(c.tags).toMatchObject({ replicatefrom: 'node2' });
    expect(Object.keys(c.database.callbacks ?? {})).toEqual(['on_start', 'on_stop', 'on_restart', 'on_reload', 'on_role_change']);
    expect(c.database.callbacks?.on_role_change).toEqual(['examples/callbacks-cascade/callback.sh']);
  });
});
