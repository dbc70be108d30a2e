/** `ha run` with a bad configuration exits with code 2 and names every bad field. */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

const ROOT = resolve(import.meta.dirname, '../..');
let dir = '';

beforeAll(async () => {
  dir = await makeTempDir('ha-badconf-');
});
afterAll(async () => {
  await removeTempDir(dir);
});

function runHa(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/ha.ts'), ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => res({ code, stderr }));
  });
}

describe('ha run with a bad configuration', () => {
  it('exits 2 with one error naming every bad field', async () => {
    const file = join(dir, 'bad.yml');
    await writeFile(
      file,
      [
        'scope: demo',
        'restapi: { listen: "127.0.0.1:8008" }',
        'etcd3: { hosts: ["127.0.0.1"] }',
        'bootstrap: { dcs: { ttl: 30, loop_wait: 20, retry_timeout: 10 } }',
        'database:',
        '  listen: "127.0.0.1:70000"',
        `  data_dir: ${join(dir, 'data')}`,
        '  authentication: { superuser: { username: postgres }, replication: { username: r } }',
      ].join('\n'),
    );
    const r = await runHa(['run', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/name/);
    expect(r.stderr).toMatch(/database\.listen/);
    expect(r.stderr).toMatch(/etcd3\.hosts/);
    expect(r.stderr).toMatch(/loop_wait 20 \+ 2\*retry_timeout 10 = 40 > ttl 30/);
  });

  it('exits 2 when the file does not exist', async () => {
    const r = await runHa(['run', join(dir, 'missing.yml')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/missing\.yml/);
  });
});
