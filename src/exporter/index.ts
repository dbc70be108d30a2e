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
