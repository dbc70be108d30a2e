/** Version and build data of the exporter (`/version`, `<ns>_exporter_build_info`). */
import { VERSION } from '../version.ts';
import { arch, platform } from 'node:os';

/** The seven build labels of the seed; `goversion` holds the Node.js runtime version. */
export interface BuildInfo {
  version: string;
  branch: string;
  revision: string;
  builddate: string;
  goversion: string;
  goos: string;
  goarch: string;
}

function packageVersion(): string {
  return `v${VERSION}`;
}

/** Build data from the environment (`DB_EXPORTER_REVISION`, `_BRANCH`, `_BUILD_DATE`) and package.json. */
export function buildInfo(): BuildInfo {
  const env = process.env;
  return {
    version: packageVersion(),
    branch: env['DB_EXPORTER_BRANCH'] ?? 'main',
    revision: env['DB_EXPORTER_REVISION'] ?? 'HEAD',
    builddate: env['DB_EXPORTER_BUILD_DATE'] ?? 'unknown',
    goversion: process.version,
    goos: platform(),
    goarch: arch() === 'x64' ? 'amd64' : arch(),
  };
}

/** The /version body (no trailing newline), in pg_exporter's shape (§2.5). */
export function versionText(b: BuildInfo): string {
  return [
    `db_exporter version ${b.version}`,
    `revision: ${b.revision}`,
    `branch: ${b.branch}`,
    `node version: ${b.goversion}`,
    `build date: ${b.builddate}`,
    `goos: ${b.goos}`,
    `goarch: ${b.goarch}`,
  ].join('\n');
}
