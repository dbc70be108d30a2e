#!/usr/bin/env node
// Runs the TypeScript CLI in this process through tsx's loader (one process, no npx tree).
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/ha.ts');
