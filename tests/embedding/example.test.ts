/**
 * examples/embedding/run.mjs, as its header says to run it: plain `node`, importing
 * `@ha/machines` by name (the workspace link to packages/machines, whose dist/ the unit project's
 * global setup builds when it is stale: tests/support/machines-build.ts).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Runs the embedding example (a short-lived node process, no servers) and returns its output. */
function runExample(): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['examples/embedding/run.mjs'],
      { cwd: root, timeout: 15_000, env: { ...process.env, NODE_OPTIONS: '' } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('examples/embedding/run.mjs', () => {
  it('drives the three machines with fake effects and prints every transition, under plain node', async () => {
    const { code, stdout, stderr } = await runExample();
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines).toContain('database: stopped -> initdb (cmd.bootstrap) no leader, bootstrapping');
    expect(lines).toContain('database: initdb -> running (xstate.done.actor.initdb) no leader, bootstrapping');
    expect(lines).toContain('database: starting -> start_failed (xstate.error.actor.start) start failed (fake)');
    expect(lines).toContain('database: running -> crashed (pg.died) postmaster is gone');
    expect(lines).toContain('switchover: idle -> scheduled (switchover.requested)');
    expect(lines).toContain('switchover: scheduled -> executing (clock.tick)');
    expect(lines).toContain('restart: idle -> scheduled (restart.scheduled)');
    expect(lines).toContain('restart: scheduled -> executing (clock.tick)');
    // One line per transition, in the format `machine: from -> to (event) reason`.
    for (const line of lines.slice(0, -1)) expect(line).toMatch(/^(database|switchover|restart): \S+ -> \S+ \(\S+\)( .+)?$/);
    expect(lines.at(-1)).toBe('replayed: database=running switchover=idle restart=done');
  });
});
