import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The machines library from its sources, as tsconfig.json's `paths` give it to tsc and tsx: the
 * tests never wait for (nor read a stale) packages/machines/dist. The packaging tests
 * (tests/e2e/packages.test.ts) check the built packages themselves.
 */
const machinesSource = [
  { find: /^@ha\/machines\/svg$/, replacement: fileURLToPath(new URL('./packages/machines/src/charts/svg.ts', import.meta.url)) },
  { find: /^@ha\/machines\/domain$/, replacement: fileURLToPath(new URL('./packages/machines/src/domain/index.ts', import.meta.url)) },
  { find: /^@ha\/machines$/, replacement: fileURLToPath(new URL('./packages/machines/src/index.ts', import.meta.url)) },
];

/**
 * Two projects:
 * - unit: fast, parallel, never starts a server or a process;
 * - e2e: anything that starts PostgreSQL, etcd, pgbouncer, Prometheus or agent processes.
 *   Runs one file at a time (2-core machine).
 */
export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias: machinesSource },
        test: {
          name: 'unit',
          include: ['tests/**/*.test.ts'],
          // Builds packages/machines when stale: the example and the API report read its dist/.
          globalSetup: ['tests/support/machines-build.ts'],
          exclude: ['tests/e2e/**', 'node_modules/**'],
          testTimeout: 20_000,
        },
      },
      {
        resolve: { alias: machinesSource },
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          // The agent's build in tests/e2e/packages.test.ts reads packages/machines/dist.
          globalSetup: ['tests/support/machines-build.ts'],
          fileParallelism: false,
          testTimeout: 240_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
