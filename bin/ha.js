#!/usr/bin/env node
// Runs the built CLI, dist/src/cli/ha.js (`npm run build`, which `npm ci` runs through
// `prepare`; an installed package ships it). The TypeScript sources run without a build as
// `node --import tsx src/cli/ha.ts`.
import { existsSync } from 'node:fs';

const built = new URL('../dist/src/cli/ha.js', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write('ha: no build at dist/src/cli/ha.js: run `npm run build` (or run the sources: node --import tsx src/cli/ha.ts)\n');
  process.exit(1);
}
await import(built.href);
