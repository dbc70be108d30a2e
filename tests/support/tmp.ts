/** Temporary directories that tests remove, traversable by the `postgres` OS user. */
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Creates a fresh temp dir (mode 0755 so PostgreSQL running as `postgres` can traverse it). */
export async function makeTempDir(prefix = 'ha-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

/** Removes a temp dir and everything under it. */
export async function removeTempDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
