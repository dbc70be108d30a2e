/**
 * `db-exporter`: standalone metrics exporter. Flags follow pg_exporter's (pg_exporter.md §3), with
 * environment equivalents `DB_EXPORTER_*` (then `PG_EXPORTER_*`). Exit codes: 0 after --dry-run /
 * --explain, 1 on a bad flag or when the HTTP server fails, 2 on a configuration error or a failed
 * first connection with --fail-fast.
 */
import { Command, Option } from 'commander';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '../exporter/config-load.ts';
import { explainBlock } from '../exporter/explain.ts';
import { Exporter, type ExporterLogger } from '../exporter/exporter.ts';
import { createExporterApp, type ExporterApi } from '../exporter/http.ts';
import { loadProbeConfig } from '../exporter/probe-config.ts';
import { probeOnlyApi } from '../exporter/probe-only.ts';
import { Prober } from '../exporter/probe.ts';
import { listen, parseListenAddress } from '../exporter/serve.ts';
import { basicAuthMiddleware, loadWebConfig } from '../exporter/web-config.ts';

const env = (name: string): string | undefined => process.env[`DB_EXPORTER_${name}`] ?? process.env[`PG_EXPORTER_${name}`];
const bool = (s: string | undefined): boolean | undefined => (s === undefined ? undefined : /^(1|true|yes|on)$/i.test(s.trim()));
const list = (s: string | undefined): string[] =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** `k=v,k2=v2` to a map; split on the first `=`; empty keys or values are skipped. */
export function parseConstLabels(s: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of list(s)) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k && v) out[k] = v;
  }
  return out;
}

function fail(code: number, msg: string): never {
  process.stderr.write(`${msg}\n`);
  process.exit(code);
}

/** Writes all of `text` to stdout (pipes may be asynchronous), then exits with `code`. */
function printAndExit(text: string, code: number): Promise<never> {
  return new Promise(() => {
    process.stdout.write(text, () => process.exit(code));
  });
}

async function main(argv: string[]): Promise<void> {
  const program = new Command('db-exporter')
    .description('PostgreSQL / pgbouncer metrics exporter speaking pg_exporter collector files')
    .option('-u, --url <url>', 'database URL (env DB_EXPORTER_URL, PG_EXPORTER_URL, PGURL)')
    .option('-c, --config <path>', 'collector config file or directory (env DB_EXPORTER_CONFIG)')
    .option('--web.listen-address <addr>', 'listen address', ':9630')
    .option('-P, --web.telemetry-path <path>', 'metrics path (env DB_EXPORTER_TELEMETRY_PATH)')
    .option('--web.config.file <path>', 'TLS and basic auth configuration (exporter-toolkit format)')
    .option(
      '--probe.config <path>',
      'targets, auth modules, allowlist and limits of GET /probe (env DB_EXPORTER_PROBE_CONFIG); without --url only /probe targets are scraped',
    )
    .option('-n, --namespace <ns>', 'prefix of self-monitoring metrics (env DB_EXPORTER_NAMESPACE) [db, or pgbouncer]')
    .option('-l, --label <labels>', 'constant labels k=v,k2=v2 (env DB_EXPORTER_LABEL)')
    .option('-t, --tag <tags>', 'comma-separated server tags (env DB_EXPORTER_TAG)')
    .option('-C, --disable-cache', 'ignore collector ttl (env DB_EXPORTER_DISABLE_CACHE)')
    .option('-m, --disable-intro', 'remove the <ns>_exporter_* metrics (env DB_EXPORTER_DISABLE_INTRO)')
    .addOption(new Option('-a, --auto-discovery', 'scrape every database (env DB_EXPORTER_AUTO_DISCOVERY) [true]'))
    .addOption(new Option('--no-auto-discovery', 'only scrape the URL database'))
    .option('-x, --exclude-database <dbs>', 'databases not discovered (env DB_EXPORTER_EXCLUDE_DATABASE) [template0,template1,postgres]')
    .option('-i, --include-database <dbs>', 'only these databases are discovered (env DB_EXPORTER_INCLUDE_DATABASE)')
    .option('-f, --fail-fast', 'exit 2 if the first connection fails (env DB_EXPORTER_FAIL_FAST)')
    .option('-T, --connect-timeout <ms>', 'bound of each pre-check statement and probe, ms (env DB_EXPORTER_CONNECT_TIMEOUT) [1000]')
    .option('-D, --dry-run', 'print every loaded collector and exit')
    .option('-E, --explain', 'connect, plan, print /explain and exit')
    .option('--log.level <level>', 'debug, info, warn, error (env DB_EXPORTER_LOG_LEVEL)', 'info');
  program.parse(argv);
  const o = program.opts<Record<string, string | boolean | undefined>>();

  const level = String(o['log.level'] ?? env('LOG_LEVEL') ?? 'info');
  const logger = pino({ level: ['debug', 'info', 'warn', 'error'].includes(level) ? level : 'info' }, pino.destination(2));
  const log: ExporterLogger = {
    debug: (m) => logger.debug(m),
    info: (m) => logger.info(m),
    warn: (m) => logger.warn(m),
    error: (m) => logger.error(m),
  };

  const configPath =
    (o['config'] as string | undefined) ??
    env('CONFIG') ??
    ['collectors', 'db_exporter.yml', '/etc/db_exporter.yml', '/etc/db_exporter'].find((p) => {
      try {
        loadConfig(p);
        return true;
      } catch {
        return false;
      }
    });
  if (!configPath) fail(1, 'no valid config path, exit');

  const probeConfigPath = (o['probe.config'] as string | undefined) ?? env('PROBE_CONFIG');
  if (o['dryRun'] ?? o['dry-run']) {
    try {
      if (probeConfigPath) loadProbeConfig(probeConfigPath);
      const cfg = loadConfig(configPath);
      for (const w of cfg.warnings) process.stderr.write(`${w}\n`);
      const text = cfg.collectors.map((c) => `${explainBlock(c)}\n`).join('');
      await printAndExit(text, 0);
    } catch (e) {
      fail(1, (e as Error).message);
    }
  }

  const givenUrl = (o['url'] as string | undefined) ?? env('URL') ?? process.env['PGURL'];
  const url = givenUrl ?? 'postgres://localhost:5432/postgres';
  // With a probe configuration and no URL the exporter scrapes only its /probe targets.
  const probeOnly = probeConfigPath !== undefined && givenUrl === undefined;
  const telemetryPath = (o['web.telemetryPath'] as string | undefined) ?? env('TELEMETRY_PATH') ?? '/metrics';
  if (!/^\/[^?#{}]*$/.test(telemetryPath) || ['/', '/up', '/reload', '/explain', '/stat', '/version'].includes(telemetryPath))
    fail(1, `invalid telemetry path ${telemetryPath}`);
  let addr: { host: string; port: number };
  try {
    addr = parseListenAddress(String(o['web.listenAddress']));
  } catch (e) {
    fail(1, (e as Error).message);
  }
  const autoEnv = bool(env('AUTO_DISCOVERY'));
  const namespace = (o['namespace'] as string | undefined) ?? env('NAMESPACE');
  const constLabels = parseConstLabels((o['label'] as string | undefined) ?? env('LABEL'));
  const tags = list((o['tag'] as string | undefined) ?? env('TAG'));
  const disableCache = Boolean(o['disableCache'] ?? bool(env('DISABLE_CACHE')));
  const disableIntro = Boolean(o['disableIntro'] ?? bool(env('DISABLE_INTRO')));
  const connectTimeoutMs = Number((o['connectTimeout'] as string | undefined) ?? env('CONNECT_TIMEOUT') ?? 1000) || 1000;
  const prober = (() => {
    if (probeConfigPath === undefined) return undefined;
    try {
      return new Prober({
        probeConfigPath,
        configPath,
        namespace,
        constLabels,
        tags,
        disableCache,
        disableIntro,
        connectTimeoutMs,
        logger: log,
      });
    } catch (e) {
      fail(e instanceof ConfigError ? 2 : 1, (e as Error).message);
    }
  })();
  const exporter = (() => {
    if (probeOnly) return undefined;
    try {
      return new Exporter({
        url,
        configPath,
        namespace,
        constLabels,
        tags,
        disableCache,
        disableIntro,
        autoDiscovery: argv.includes('--no-auto-discovery')
          ? false
          : argv.includes('--auto-discovery') || argv.includes('-a')
            ? true
            : (autoEnv ?? true),
        excludeDatabases:
          ((o['excludeDatabase'] as string | undefined) ?? env('EXCLUDE_DATABASE') !== undefined)
            ? list((o['excludeDatabase'] as string | undefined) ?? env('EXCLUDE_DATABASE'))
            : undefined,
        includeDatabases: list((o['includeDatabase'] as string | undefined) ?? env('INCLUDE_DATABASE')),
        connectTimeoutMs,
        logger: log,
        ...(prober ? { extraFamilies: () => prober.families() } : {}),
      });
    } catch (e) {
      fail(e instanceof ConfigError ? 2 : 1, (e as Error).message);
    }
  })();

  if (exporter) {
    const role = await exporter.probe.probe();
    if (role !== 'primary' && role !== 'replica') {
      if (o['failFast'] ?? bool(env('FAIL_FAST'))) {
        await exporter.stop();
        await prober?.stop();
        fail(
          2,
          `fail connecting to primary server (role ${role}: ${exporter.probe.lastError ?? 'no answer'}), exit because of --fail-fast`,
        );
      }
      log.warn(`fail connecting to primary server: role ${role}: ${exporter.probe.lastError ?? 'no answer'} (startup will continue)`);
    }
  }

  if (o['explain']) {
    let text = '';
    if (exporter) {
      await exporter.collect();
      text = exporter.explain();
      await exporter.stop();
    } else if (prober) text = probeOnlyApi(prober).explain();
    await prober?.stop();
    await printAndExit(text, 0);
  }

  const webConfigPath = o['web.config.file'] as string | undefined;
  let web: ReturnType<typeof loadWebConfig> | undefined;
  if (webConfigPath) {
    try {
      web = loadWebConfig(webConfigPath);
    } catch (e) {
      fail(1, (e as Error).message);
    }
  }
  const auth = web ? basicAuthMiddleware(web.users) : undefined;
  // /reload and SIGHUP re-read both the collector set (and primary) and the probe configuration.
  const api: ExporterApi = exporter
    ? prober
      ? {
          get role() {
            return exporter.role;
          },
          build: exporter.build,
          collect: () => exporter.collect(),
          explain: () => exporter.explain(),
          stat: () => exporter.stat(),
          async reload() {
            const a = await exporter.reload();
            const b = await prober.reload();
            return !a.ok ? a : b;
          },
        }
      : exporter
    : probeOnlyApi(prober!);
  const app = createExporterApp(api, { telemetryPath, middleware: auth ? [auth] : [], ...(prober ? { probe: prober } : {}) });
  exporter?.start();
  prober?.start();
  let server;
  try {
    server = await listen(app, { ...addr, ...(web?.tls ? { tls: web.tls } : {}) });
  } catch (e) {
    await exporter?.stop();
    await prober?.stop();
    fail(1, `fail listening on ${String(o['web.listenAddress'])}: ${(e as Error).message}`);
  }
  log.info(
    `db-exporter ${api.build.version} listening on ${web?.tls ? 'https' : 'http'}://${addr.host}:${addr.port}${telemetryPath}${prober ? ` and /probe (${prober.probeConfig.targets.size} named targets${prober.probeConfig.allowDsn ? ', DSN targets on the allowlist' : ''})` : ''}`,
  );
  process.on('SIGHUP', () => void api.reload());
  const shutdown = () => {
    server.close();
    void Promise.all([exporter?.stop(), prober?.stop()]).finally(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

await main(process.argv);
