#!/usr/bin/env node
// Runs the built CLI, dist/src/cli/db-exporter.js (`npm run build`, which `npm ci` runs through
// `prepare`; an installed package ships it). The TypeScript sources run without a build as
// `node --import tsx src/cli/db-exporter.ts`.
import { existsSync } from 'node:fs';

const built = new URL('../dist/src/cli/db-exporter.js', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write(
    'db-exporter: no build at dist/src/cli/db-exporter.js: run `npm run build` (or run the sources: node --import tsx src/cli/db-exporter.ts)\n',
  );
  process.exit(1);
}
await import(built.href);
