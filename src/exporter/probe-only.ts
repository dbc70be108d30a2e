/**
 * The HTTP face of an exporter that has no server of its own, only `/probe` targets
 * (`db-exporter --probe.config …` without `--url`): `/metrics` holds the exporter's build and
 * uptime and the targets' self-monitoring (Prober.families), the role routes answer 503
 * `unknown` (there is no server whose role they could tell), `/explain` lists every loaded
 * collector (`?target=` gives one target's plan), `/stat` is empty, `/reload` re-reads the
 * collector set and the probe configuration.
 */
import { buildInfo, type BuildInfo } from './build-info.ts';
import { explainText } from './explain.ts';
import { ExpositionBuilder, type Family } from './exposition.ts';
import type { ExporterApi } from './http.ts';
import type { Prober } from './probe.ts';
import { statText } from './stat.ts';

/** An ExporterApi over a Prober alone (module comment). */
export function probeOnlyApi(prober: Prober, build: BuildInfo = buildInfo()): ExporterApi {
  const startedAt = Date.now();
  const constPairs = Object.entries(prober.opts.constLabels ?? {});
  let scrapes = 0;
  return {
    role: 'unknown',
    build,
    async collect() {
      scrapes++;
      const ns = prober.namespace;
      const b = new ExpositionBuilder(constPairs);
      const g = (name: string, help: string, value: number, labels: [string, string][] = []): Family => ({
        name,
        help,
        type: 'gauge',
        samples: [{ labels, value }],
      });
      if (!prober.opts.disableIntro) {
        b.add(
          g(
            `${ns}_exporter_build_info`,
            "A metric with a constant '1' value labeled with version, revision, branch, goversion, builddate, goos, and goarch from which db_exporter was built.",
            1,
            [
              ['version', build.version],
              ['revision', build.revision],
              ['branch', build.branch],
              ['goversion', build.goversion],
              ['builddate', build.builddate],
              ['goos', build.goos],
              ['goarch', build.goarch],
            ],
          ),
        );
        b.add(g(`${ns}_exporter_up`, 'always be 1 if your could retrieve metrics', 1));
        b.add(g(`${ns}_exporter_uptime`, 'seconds since exporter primary server inited', (Date.now() - startedAt) / 1000));
        b.add({
          name: `${ns}_exporter_scrape_total_count`,
          help: 'times exporter was scraped for metrics',
          type: 'counter',
          samples: [{ labels: [], value: scrapes }],
        });
      }
      for (const f of prober.families()) b.add(f);
      return b.render();
    },
    reload: () => prober.reload(),
    explain: () => explainText(prober.collectors.collectors),
    stat: () => statText([]),
  };
}
