/**
 * The docs check (issue 30, item 11): what README.md, docs/ and examples/ name must exist. Every
 * relative link, every repository path in backticks (src/…, tests/…, bench/…, examples/…, docs/…,
 * scripts/…, bin/…, collectors/…, .ci/run), every `hactl` and `ha` verb, and every HTTP endpoint
 * written as `GET /path` (or another method) must be found in the tree or the sources. A wrong
 * name in the docs fails here, with the file and line.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** README.md, docs/*.md and every .md under examples/. */
function markdownFiles(): string[] {
  const out = [join(ROOT, 'README.md')];
  for (const f of readdirSync(join(ROOT, 'docs'))) if (f.endsWith('.md')) out.push(join(ROOT, 'docs', f));
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory() && e.name !== 'node_modules') walk(p);
      else if (e.name.endsWith('.md')) out.push(p);
    }
  };
  walk(join(ROOT, 'examples'));
  return out.filter((f) => existsSync(f));
}

/** Lines of a markdown file outside fenced code blocks, with their numbers (1-based). */
function proseLines(text: string): { n: number; line: string }[] {
  const out: { n: number; line: string }[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) out.push({ n: i + 1, line });
  });
  return out;
}

/** Every line with its number, fenced or not (commands live in fences). */
function allLines(text: string): { n: number; line: string }[] {
  return text.split('\n').map((line, i) => ({ n: i + 1, line }));
}

const REPO_PATH = /`((?:src|tests|bench|examples|docs|scripts|bin|collectors)\/[A-Za-z0-9_.\-/]*|\.ci\/run)`/g;

/** The verbs a commander program in `file` defines (`.command('name')`). */
function verbsOf(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return new Set(
    [...text.matchAll(/\.command\((?:paused \? 'pause' : 'resume'|'([a-z-]+)')/g)].map((m) => m[1] ?? 'pause').concat(['resume', 'help']),
  );
}

/** Every string literal that looks like a route in the sources of the APIs. */
function routes(): Set<string> {
  const files = [
    'src/http/app.ts',
    'src/http/health.ts',
    'src/http/config-routes.ts',
    'src/http/switchover-routes.ts',
    'src/http/restart-routes.ts',
    'src/http/failsafe-routes.ts',
    'src/observe/app.ts',
    'src/exporter/http.ts',
    'src/exporter/serve.ts',
  ];
  const out = new Set<string>();
  for (const f of files) {
    if (!existsSync(join(ROOT, f))) continue;
    for (const m of readFileSync(join(ROOT, f), 'utf8').matchAll(/['"`](\/[a-z][a-z0-9_\-/]*)/g)) out.add(m[1]!.replace(/\/$/, ''));
  }
  return out;
}

describe('the docs name what exists', () => {
  const files = markdownFiles();

  it('relative links point at files or directories of the repository', () => {
    const broken: string[] = [];
    for (const f of files) {
      for (const { n, line } of proseLines(readFileSync(f, 'utf8'))) {
        for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
          const target = m[1]!.split('#')[0]!;
          if (!target || /^[a-z]+:/.test(target)) continue;
          if (!existsSync(resolve(dirname(f), target))) broken.push(`${relative(ROOT, f)}:${n}: ${m[1]}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('repository paths in backticks exist', () => {
    const missing: string[] = [];
    for (const f of files) {
      for (const { n, line } of allLines(readFileSync(f, 'utf8'))) {
        for (const m of line.matchAll(REPO_PATH)) {
          const p = m[1]!.replace(/:\d+$/, '');
          if (/[*<>{}]/.test(p)) continue;
          if (!existsSync(join(ROOT, p))) missing.push(`${relative(ROOT, f)}:${n}: ${p}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('hactl and ha verbs exist', () => {
    const hactl = verbsOf('src/cli/hactl.ts');
    const ha = verbsOf('src/cli/ha.ts');
    const unknown: string[] = [];
    for (const f of files) {
      for (const { n, line } of allLines(readFileSync(f, 'utf8'))) {
        for (const m of line.matchAll(
          /(?:\bhactl(?:\.ts|\.js)?|\bhactl\b)((?:\s+(?:-c|--config|--dcs-url|--scope|--namespace)\s+\S+)*)\s+([a-z][a-z-]+)/g,
        )) {
          const verb = m[2]!;
          if (
            [
              'is',
              'the',
              'and',
              'or',
              'reads',
              'prints',
              'with',
              'runs',
              'to',
              'verb',
              'command',
              'calls',
              'never',
              'works',
              'exits',
              'lists',
              'shows',
              'in',
              'as',
              'asks',
              'uses',
              'against',
              'does',
              'validates',
              'session',
              'sends',
              'itself',
              'on',
              'finds',
              'waits',
              'plainly',
            ].includes(verb)
          )
            continue;
          if (!hactl.has(verb)) unknown.push(`${relative(ROOT, f)}:${n}: hactl ${verb}`);
        }
        for (const m of line.matchAll(/(?:src\/cli\/ha\.ts|dist\/src\/cli\/ha\.js|bin\/ha\.js|`ha)\s+([a-z][a-z-]+)/g)) {
          const verb = m[1]!;
          if (['is', 'the', 'and', 'or', 'run-time'].includes(verb)) continue;
          if (!ha.has(verb)) unknown.push(`${relative(ROOT, f)}:${n}: ha ${verb}`);
        }
      }
    }
    expect(unknown).toEqual([]);
  });

  it('endpoints written as `METHOD /path` exist in the sources', () => {
    const known = routes();
    const unknown: string[] = [];
    for (const f of files) {
      for (const { n, line } of allLines(readFileSync(f, 'utf8'))) {
        for (const m of line.matchAll(/\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\/[a-z][a-z0-9_\-/]*)/g)) {
          const path = m[1]!.replace(/\/$/, '');
          if (known.has(path) || [...known].some((k) => path.startsWith(`${k}/`))) continue;
          unknown.push(`${relative(ROOT, f)}:${n}: ${m[0]}`);
        }
      }
    }
    expect(unknown).toEqual([]);
  });

  it('checks a real number of files, links and paths (not a test that cannot fail)', () => {
    expect(files.length).toBeGreaterThan(20);
    const total = files.reduce((k, f) => k + [...readFileSync(f, 'utf8').matchAll(REPO_PATH)].length, 0);
    expect(total).toBeGreaterThan(50);
    expect(statSync(join(ROOT, 'docs')).isDirectory()).toBe(true);
  });
});
