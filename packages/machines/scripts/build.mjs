// The package's build: dist/ from src/ with tsc (ESM JavaScript, .d.ts, source maps).
//
//   node scripts/build.mjs        (npm run build; npm pack and the repository's `prepare` run it)
//
// 1. removes dist/, so that a module deleted from src/ does not linger in the package;
// 2. runs tsc -p tsconfig.json (rewriteRelativeImportExtensions turns './x.ts' into './x.js' in
//    the JavaScript);
// 3. does the same in the .d.ts files, where tsc 5.9 keeps './x.ts': a consumer's TypeScript must
//    find './x.js' (resolved to './x.d.ts') without allowImportingTsExtensions.
// Exits non-zero when tsc fails.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' });
} catch {
  process.exit(1);
}

/** Relative specifiers ending in .ts in import/export declarations and import() types. */
const TS_SPECIFIER = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g;
for (const entry of readdirSync(dist, { recursive: true })) {
  const file = join(dist, String(entry));
  if (!file.endsWith('.d.ts')) continue;
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(TS_SPECIFIER, '$1$2$3.js$2');
  if (fixed !== text) writeFileSync(file, fixed);
}
