/** A real Prometheus server (Debian's `prometheus`) scraping loopback targets, and promtool. */
import { execFileSync, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { stopPid, waitFor } from './processes.ts';
import { makeTempDir, removeTempDir } from './tmp.ts';

export interface PrometheusServer {
  url: string;
  /** Runs an instant query; the `data.result` array. */
  query(q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` (`host:port`) at `metricsPath` every second. */
export async function startPrometheus(job: string, targets: string[], metricsPath = '/metrics'): Promise<PrometheusServer> {
  return startPrometheusConfig(
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      `  - job_name: ${job}`,
      `    metrics_path: ${metricsPath}`,
      `    static_configs: [ { targets: [${targets.map((t) => `"${t}"`).join(', ')}] } ]`,
    ].join('\n'),
  );
}

/**
 * Starts Prometheus with a whole configuration file's text (written as prometheus.yml in a temp
 * directory that also holds the TSDB; relative rule_files resolve from there, so pass absolute
 * ones), on a free loopback port; waits until it is ready. `configPath` is where the file is.
 */
export async function startPrometheusConfig(configText: string): Promise<PrometheusServer & { configPath: string }> {
  const dir = await makeTempDir('ha-prom-');
  const port = await freePort();
  const configPath = join(dir, 'prometheus.yml');
  await writeFile(configPath, configText);
  const child = spawn(
    'prometheus',
    [`--config.file=${configPath}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    {
      stdio: 'ignore',
    },
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.pid) await stopPid(child.pid, 'SIGTERM', 5000);
    await removeTempDir(dir);
  };
  try {
    await waitFor(async () => (await fetch(`${url}/-/ready`)).ok, 30_000, 'prometheus ready');
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    url,
    configPath,
    async query(q) {
      const r = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(q)}`);
      const j = (await r.json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      return j.data.result;
    },
    stop,
  };
}

/** `promtool check metrics` on a body: exit code (0 clean, 3 lint only, 1 parse error) and output. */
export function promtoolCheckMetrics(body: string): { code: number; output: string } {
  try {
    return {
      code: 0,
      output: execFileSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }),
    };
  } catch (e) {
    const err = e as { status: number; stdout?: string; stderr?: string };
    return { code: err.status, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}
