/**
 * Public API of the metrics exporter, for embedding (node agent) and for the db-exporter CLI.
 */
export { Exporter, checkConstLabels, type ExporterOptions, type ExporterLogger } from './exporter.ts';
export { createExporterApp, verdict, ROLE_ROUTES, METRICS_CONTENT_TYPE, type ExporterApi, type HttpOptions } from './http.ts';
export { loadConfig, parseCollectorFile, ConfigError } from './config-load.ts';
export { explainText, explainBlock } from './explain.ts';
export { statText, type StatRow } from './stat.ts';
export { loadWebConfig, basicAuthMiddleware, type WebConfig } from './web-config.ts';
export { listen, parseListenAddress, type ListenOptions } from './serve.ts';
export type { Role } from './role-probe.ts';
export type { CollectorDef, ColumnDef, LoadedConfig, ServerFacts, Usage } from './types.ts';
export { Prober, PROBE_CONTENT_TYPE, type ProberOptions, type ProbeAnswer } from './probe.ts';
export { probeOnlyApi } from './probe-only.ts';
export {
  loadProbeConfig,
  buildProbeConfig,
  parseDsn,
  DEFAULT_PROBE_LIMITS,
  type ProbeConfig,
  type ProbeLimits,
  type AuthModule,
  type NamedTarget,
} from './probe-config.ts';
export {
  resolveProbe,
  REJECT_REASONS,
  type ProbeParams,
  type TargetSpec,
  type Selection,
  type RejectReason,
  type ProbeResolution,
} from './probe-request.ts';
export { parseAllowEntry, allowed, type AllowEntry } from './allowlist.ts';
export type { ProbeApi } from './http.ts';
