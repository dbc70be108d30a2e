#!/usr/bin/env node
// Runs the built CLI (dist/, from `npm run build`) when present; otherwise the TypeScript
// sources through tsx's loader, in this process (one process, no npx tree).
import { existsSync } from 'node:fs';

const built = new URL('../dist/src/cli/ha.js', import.meta.url);
if (existsSync(built)) {
  await import(built.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/ha.ts');
}
