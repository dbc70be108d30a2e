import { defineConfig } from 'vitest/config';

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
        test: {
          name: 'unit',
          include: ['tests/**/*.test.ts'],
          exclude: ['tests/e2e/**', 'node_modules/**'],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          fileParallelism: false,
          testTimeout: 240_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
