/**
 * The two packages as their users get them (issue 31): `npm pack` @ha/machines and ha, install
 * the tarballs into empty temporary projects (xstate, and ha's dependencies, from the npm
 * registry), then use them as a user would:
 * - plain `node` drives the database machine start → running → crashed → starting with fake
 *   effects (tests/e2e/packages/drive.mjs), and loads the svg entry without its optional peer;
 * - `tsc --noEmit` type-checks a strict TypeScript consumer (consumer.ts) with moduleResolution
 *   bundler and node16, with the newest xstate and with the oldest its peer range accepts;
 * - esbuild bundles the same drive for the browser, no Node.js built-in pulled in, and headless
 *   Chromium (playwright-core) runs it;
 * - the machines project's node_modules holds nothing outside the package's dependency list;
 * - `ha/machines` is the same module as `@ha/machines`, the bins run the build, the observe
 *   example serves its page; neither tarball carries tests, and their sizes are printed and
 *   bounded.
 * Spawns npm, node, tsc and a browser, so it is in the e2e project. The machines tarball is
 * packed from a copy of packages/machines (its own `prepack` build, away from the repository's
 * dist/, which unit tests read); the agent's dist/ is rebuilt first, then packed as it is.
 */
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.ts';
import { waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./packages/', import.meta.url));
const CHROMIUM = '/usr/bin/chromium';
const TSC = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');

/** Upper bounds of the tarballs (bytes): about twice their size at 0.1.0 (55 kB and 500 kB packed). */
const MACHINES_TARBALL_MAX = 100_000;
const MACHINES_UNPACKED_MAX = 500_000;
const HA_TARBALL_MAX = 1_000_000;

/** What `npm pack --json` prints for one package. */
interface PackReport {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string; size: number }[];
}

/** Runs a command; resolves with its output and exit code (never rejects). */
function sh(cmd: string, args: string[], cwd: string, timeoutMs = 300_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        cwd,
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, NODE_OPTIONS: '', npm_config_update_notifier: 'false' },
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) }),
    );
  });
}

/** Like {@link sh}, but throws with the output when the exit code is not 0. */
async function must(cmd: string, args: string[], cwd: string, timeoutMs?: number): Promise<string> {
  const r = await sh(cmd, args, cwd, timeoutMs);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** `npm pack --json` in `dir` into `dest`; the one package's report. */
async function pack(dir: string, dest: string, extra: string[] = []): Promise<PackReport> {
  const out = await must('npm', ['pack', '--json', '--pack-destination', dest, ...extra], dir);
  // Lifecycle scripts (prepack) may print before the JSON array.
  const reports = JSON.parse(out.slice(out.indexOf('\n[') + 1 || out.indexOf('['))) as PackReport[];
  return reports[0]!;
}

/** An empty ES module project at `dir` (no dependencies), ready for `npm install <tarball>`. */
function emptyProject(dir: string, name: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '0.0.0', private: true, type: 'module' }, null, 2));
  for (const f of readdirSync(FIXTURES)) cpSync(join(FIXTURES, f), join(dir, f));
}

/**
 * Every package installed in a project, as its path under the project (`node_modules/xstate`,
 * `node_modules/a/node_modules/b` …): the directories on disk and the entries of npm's hidden
 * lockfile, which must agree.
 */
function installedPackages(dir: string): string[] {
  const found: string[] = [];
  const walk = (nodeModules: string, prefix: string): void => {
    if (!existsSync(nodeModules)) return;
    for (const name of readdirSync(nodeModules)) {
      if (name.startsWith('.')) continue;
      const names = name.startsWith('@') ? readdirSync(join(nodeModules, name)).map((n) => `${name}/${n}`) : [name];
      for (const n of names) {
        found.push(`${prefix}node_modules/${n}`);
        walk(join(nodeModules, n, 'node_modules'), `${prefix}node_modules/${n}/`);
      }
    }
  };
  walk(join(dir, 'node_modules'), '');
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  expect(Object.keys(lock.packages).sort()).toEqual(found.sort());
  return found.sort();
}

/**
 * `tsc --noEmit` of consumer.ts in the project `app`: strict, the package's .d.ts files checked
 * too (skipLibCheck false), with the given module resolution. Fails with tsc's output.
 */
async function typeCheckConsumer(app: string, resolution: 'bundler' | 'node16', moduleKind: 'esnext' | 'node16'): Promise<void> {
  const config = `tsconfig.${resolution}.json`;
  writeFileSync(
    join(app, config),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: false,
        target: 'ES2022',
        // xstate's own .d.ts files need AbortSignal: the DOM library here (a Node.js project has
        // it from @types/node).
        lib: ['ES2022', 'DOM'],
        types: [],
        module: moduleKind,
        moduleResolution: resolution,
      },
      files: ['consumer.ts'],
    }),
  );
  const r = await sh(process.execPath, [TSC, '-p', config], app, 180_000);
  expect(`${r.stdout}${r.stderr}`).toBe('');
  expect(r.code).toBe(0);
}

/** The drive's expected result (drive.mjs). */
const DRIVEN = {
  states: ['stopped', 'starting', 'running', 'crashed', 'starting', 'running'],
  calls: ['start:primary', 'start:primary'],
  afterCrash: 'crashed',
  held: 'starting',
  numbers: { crashed: 14, starting: 6, count: 15 },
  replayed: 'running',
  chartStartsWith: 'stateDiagram-v2',
};

let tmp: string;
let machinesPack: PackReport;
let haPack: PackReport;
let machinesApp: string;
let haApp: string;

beforeAll(async () => {
  tmp = await makeTempDir('ha-packages-');
  // @ha/machines, packed from a copy that builds itself (prepack) with the repository's tools.
  const copy = join(tmp, 'machines-src');
  cpSync(join(ROOT, 'packages/machines'), copy, {
    recursive: true,
    filter: (src) => !/[\\/](dist|node_modules|\.api-temp)$/.test(src),
  });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  machinesPack = await pack(copy, tmp);
  // ha: the agent's dist/ rebuilt from the sources, then packed as it is (its `prepare` would
  // also rebuild the repository's packages/machines/dist, which unit tests may be reading).
  await must('npm', ['run', 'build:agent'], ROOT, 600_000);
  haPack = await pack(ROOT, tmp, ['--ignore-scripts']);
  console.log(
    `tarballs: ${machinesPack.filename} ${machinesPack.size} bytes (${machinesPack.unpackedSize} unpacked, ${machinesPack.files.length} files); ` +
      `${haPack.filename} ${haPack.size} bytes (${haPack.unpackedSize} unpacked, ${haPack.files.length} files)`,
  );

  machinesApp = join(tmp, 'app-machines');
  emptyProject(machinesApp, 'app-machines');
  await must('npm', ['install', '--no-audit', '--no-fund', join(tmp, machinesPack.filename)], machinesApp);

  haApp = join(tmp, 'app-ha');
  emptyProject(haApp, 'app-ha');
  cpSync(join(ROOT, 'examples/embedding'), haApp, { recursive: true });
  await must('npm', ['install', '--no-audit', '--no-fund', join(tmp, machinesPack.filename), join(tmp, haPack.filename)], haApp, 600_000);
}, 1_200_000);

afterAll(async () => {
  if (tmp) await removeTempDir(tmp);
});

describe('the @ha/machines tarball', () => {
  it('holds the build, the sources its maps point to, and nothing else; its size is bounded', () => {
    const paths = machinesPack.files.map((f) => f.path);
    expect(paths).toContain('dist/index.js');
    expect(paths).toContain('dist/index.d.ts');
    expect(paths).toContain('dist/index.js.map');
    expect(paths).toContain('dist/charts/svg.js');
    expect(paths).toContain('dist/domain/index.js');
    expect(paths).toContain('src/index.ts');
    expect(paths).toContain('README.md');
    expect(paths).toContain('CHANGELOG.md');
    expect(paths.filter((p) => !/^(dist\/|src\/|package\.json$|README\.md$|CHANGELOG\.md$)/.test(p))).toEqual([]);
    expect(machinesPack.size).toBeLessThan(MACHINES_TARBALL_MAX);
    expect(machinesPack.unpackedSize).toBeLessThan(MACHINES_UNPACKED_MAX);
  });

  it('installs into an empty project with nothing outside its dependency list', () => {
    const manifest = JSON.parse(readFileSync(join(machinesApp, 'node_modules/@ha/machines/package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    const required = [
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}).filter((p) => !manifest.peerDependenciesMeta?.[p]?.optional),
    ];
    expect(required.sort()).toEqual(['xstate']);
    expect(installedPackages(machinesApp)).toEqual(['node_modules/@ha/machines', 'node_modules/xstate']);
  });

  it('drives the database machine start -> running -> crashed -> starting under plain node', async () => {
    const out = await must(process.execPath, ['run-node.mjs'], machinesApp, 30_000);
    expect(JSON.parse(out)).toEqual(DRIVEN);
  });

  it('loads its svg entry without the optional @viz-js/viz, and says what is missing when asked to render', async () => {
    const out = JSON.parse(await must(process.execPath, ['svg-without-viz.mjs'], machinesApp, 30_000)) as {
      loaded: boolean;
      error: string;
    };
    expect(out.loaded).toBe(true);
    expect(out.error).toMatch(/@viz-js\/viz/);
  });

  for (const [resolution, moduleKind] of [
    ['bundler', 'esnext'],
    ['node16', 'node16'],
  ] as const) {
    it(`type-checks a strict TypeScript consumer with moduleResolution ${resolution}`, async () => {
      await typeCheckConsumer(machinesApp, resolution, moduleKind);
    });
  }

  it('runs and type-checks with the oldest xstate its peer range accepts', async () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages/machines/package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    const oldest = /^\^(\d+\.\d+\.\d+)$/.exec(manifest.peerDependencies['xstate'] ?? '')?.[1];
    expect(oldest, 'the xstate peer range is ^x.y.z').toBeDefined();
    const app = join(tmp, 'app-oldest-xstate');
    emptyProject(app, 'app-oldest-xstate');
    await must('npm', ['install', '--no-audit', '--no-fund', `xstate@${oldest}`, join(tmp, machinesPack.filename)], app);
    expect(JSON.parse(readFileSync(join(app, 'node_modules/xstate/package.json'), 'utf8')).version).toBe(oldest);
    expect(JSON.parse(await must(process.execPath, ['run-node.mjs'], app, 30_000))).toEqual(DRIVEN);
    await typeCheckConsumer(app, 'bundler', 'esnext');
  });

  it.skipIf(!existsSync(CHROMIUM))(
    'bundles for the browser with esbuild, no Node.js built-in, and runs the drive in headless Chromium',
    async () => {
      const bundle = await build({
        absWorkingDir: machinesApp,
        entryPoints: ['browser-entry.mjs'],
        bundle: true,
        platform: 'browser',
        format: 'esm',
        target: 'es2022',
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      const inputs = Object.keys(bundle.metafile.inputs);
      expect(inputs.filter((p) => !/^(node_modules\/(@ha\/machines|xstate)\/|browser-entry\.mjs$|drive\.mjs$)/.test(p))).toEqual([]);
      expect(inputs.some((p) => p.startsWith('node_modules/@ha/machines/dist/'))).toBe(true);
      const externals = Object.values(bundle.metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external).map((x) => x.path));
      expect(externals).toEqual([]);
      const code = bundle.outputFiles[0]!.text;
      console.log(`browser bundle: ${code.length} bytes from ${inputs.length} modules`);

      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      try {
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        await page.setContent('<!doctype html><title>@ha/machines</title>');
        await page.addScriptTag({ type: 'module', content: code });
        await page.waitForFunction('globalThis.__driveResult || globalThis.__driveError', undefined, { timeout: 20_000 });
        expect(await page.evaluate('globalThis.__driveError ?? null')).toBeNull();
        expect(await page.evaluate('globalThis.__driveResult')).toEqual(DRIVEN);
        expect(await page.evaluate('typeof process')).toBe('undefined');
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    },
  );

  it('has a domain entry that pulls in no machine and not xstate', async () => {
    writeFileSync(
      join(machinesApp, 'domain-entry.mjs'),
      "import { databaseStateNumber } from '@ha/machines/domain';\nglobalThis.n = databaseStateNumber('crashed');\n",
    );
    const bundle = await build({
      absWorkingDir: machinesApp,
      entryPoints: ['domain-entry.mjs'],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    expect(Object.keys(bundle.metafile.inputs).sort()).toEqual([
      'domain-entry.mjs',
      'node_modules/@ha/machines/dist/domain/index.js',
      'node_modules/@ha/machines/dist/domain/restart-request.js',
      'node_modules/@ha/machines/dist/domain/schedule.js',
      'node_modules/@ha/machines/dist/domain/states.js',
    ]);
  });
});

describe('the ha tarball', () => {
  it('holds what runs (bins, the compiled agent, the UI files, the collectors) and nothing of tests or sources; its size is bounded', () => {
    const paths = haPack.files.map((f) => f.path);
    for (const p of [
      'package.json',
      'README.md',
      'bin/ha.js',
      'bin/hactl.js',
      'bin/db-exporter.js',
      'dist/src/cli/ha.js',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/observe/ui/index.html',
      'dist/src/watchdog/fence-process.js',
    ]) {
      expect(paths).toContain(p);
    }
    expect(paths.some((p) => p.startsWith('collectors/'))).toBe(true);
    expect(
      paths.filter(
        (p) => /(^|\/)tests?\//.test(p) || p.endsWith('.test.js') || p.endsWith('.map') || (p.endsWith('.ts') && !p.endsWith('.d.ts')),
      ),
    ).toEqual([]);
    expect(paths.filter((p) => !/^(bin\/|dist\/src\/|collectors\/|package\.json$|README\.md$)/.test(p))).toEqual([]);
    expect(haPack.size).toBeLessThan(HA_TARBALL_MAX);
  });

  it('re-exports the one installed @ha/machines as ha and ha/machines', async () => {
    const out = JSON.parse(await must(process.execPath, ['via-ha.mjs'], haApp, 30_000)) as {
      same: boolean;
      exports: string[];
      result: unknown;
    };
    expect(out.same).toBe(true);
    expect(out.exports).toEqual(
      expect.arrayContaining(['databaseMachine', 'switchoverMachine', 'restartMachine', 'Journal', 'renderChart', 'DATABASE_STATES']),
    );
    expect(out.result).toEqual(DRIVEN);
    expect(existsSync(join(haApp, 'node_modules/ha/node_modules/@ha/machines'))).toBe(false);
    const installed = installedPackages(haApp);
    for (const devOnly of ['node_modules/tsx', 'node_modules/esbuild', 'node_modules/typescript', 'node_modules/vitest'])
      expect(installed).not.toContain(devOnly);
  });

  it('runs its bins from the build, not through tsx', async () => {
    const version = JSON.parse(readFileSync(join(haApp, 'node_modules/ha/package.json'), 'utf8')) as { version: string };
    expect((await must(join(haApp, 'node_modules/.bin/ha'), ['--version'], haApp, 30_000)).trim()).toBe(version.version);
    expect(await must(join(haApp, 'node_modules/.bin/hactl'), ['--help'], haApp, 30_000)).toMatch(/^Usage: hactl/);
    expect(await must(join(haApp, 'node_modules/.bin/db-exporter'), ['--help'], haApp, 30_000)).toMatch(/Usage: db-exporter/);
    const svg = await must(join(haApp, 'node_modules/.bin/ha'), ['chart', 'database', '--format', 'svg'], haApp, 60_000);
    expect(svg).toContain('id="state:database.crashed"');
  });

  it('serves the observe example (examples/embedding/observe.mjs) under plain node', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['observe.mjs', '--port', String(port), '--every', '100'], {
      cwd: haApp,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    try {
      await waitFor(() => output.includes('listening on'), 20_000, `observe.mjs to listen (output: ${output})`);
      const body = (await (await fetch(`http://127.0.0.1:${port}/machines`)).json()) as { machines: { name: string }[] };
      expect(body.machines.map((m) => m.name)).toEqual(['database', 'switchover', 'restart']);
      const ui = await fetch(`http://127.0.0.1:${port}/ui`);
      expect(ui.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
