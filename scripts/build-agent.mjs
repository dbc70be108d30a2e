// The agent's build: dist/src/ from src/ with tsc -p tsconfig.build.json (ESM JavaScript, .d.ts
// for the package's exports, source maps), plus the /ui page's static files.
//
//   node scripts/build-agent.mjs     (npm run build:agent; `npm run build` first builds
//                                     packages/machines, whose .d.ts files this build reads)
//
// dist/ is removed first, so that a module deleted from src/ does not linger in the package.
// Exits non-zero when tsc fails.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(join(root, 'dist'), { recursive: true, force: true });
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
} catch {
  process.exit(1);
}
cpSync(join(root, 'src/observe/ui'), join(root, 'dist/src/observe/ui'), { recursive: true });
