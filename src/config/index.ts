/**
 * Configuration of the node agent: ha.yml + HA_* environment overrides, validated once at
 * start (docs/configuration.md). The CLI catches ConfigError, prints `.message`, exits 2.
 */
export { loadConfig, parseConfig } from './load.ts';
export { ConfigError } from './config-error.ts';
export type {
  AgentConfig,
  BasicCredentials,
  CtlConfig,
  CustomBootstrapMethod,
  Etcd3Config,
  LogLevel,
  RestApiConfig,
  RoleCredentials,
  VerifyClient,
} from './agent-config.ts';
export { LOG_LEVELS } from './agent-config.ts';
export { ENV_OVERRIDES } from './env.ts';
export { parseHostPort, formatHostPort, HostPortError, type HostPort } from './host-port.ts';
export { DynamicConfigSchema, validateDynamicConfig, effectiveDynamicConfig, type DynamicConfigDocument } from './dynamic-schema.ts';
export { normalizeInitdbOptions } from './initdb.ts';
