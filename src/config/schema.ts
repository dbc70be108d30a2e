/**
 * valibot schema of ha.yml after environment overrides (patroni.md §4.1, reduced to the keys
 * this agent uses). Sections are strict: a key this agent does not know is reported as
 * "unknown key" rather than silently ignored (a misspelt `conect_address` would otherwise fall
 * back to its default). Open mappings: `tags`, `bootstrap.dcs`, `*.parameters`, custom
 * bootstrap sections.
 */
import * as v from 'valibot';
import { LOG_LEVELS } from './agent-config.ts';
import { DynamicConfigSchema } from './dynamic-schema.ts';
import { Bool, HbaLines, isMapping, mapping, HostPortString, NonEmptyString, NonNegativeInteger, Parameters } from './fields.ts';
import { InitdbOptionSchema } from './initdb.ts';

const mappingMessage = (i: { received: string }) => `must be a mapping, got ${i.received}`;

/** A name that becomes one DCS key segment: non-empty, no `/`. */
const KeySegment = v.pipe(
  NonEmptyString,
  v.check((s) => !s.includes('/') && !/\s/.test(s), 'must not contain "/" or whitespace'),
);

/** etcd3.hosts: a list of `host:port`, or one comma-separated string; becomes a list. */
const EtcdHosts = v.pipe(
  v.union([v.string(), v.array(v.unknown())], (i) => `must be a list of host:port or a comma-separated string, got ${i.received}`),
  v.transform((h) => (typeof h === 'string' ? h.split(',').map((s) => s.trim()).filter((s) => s !== '') : h)),
  v.array(HostPortString),
  v.minLength(1, 'must name at least one etcd host:port'),
);

const Role = mapping(v.strictObject(
  { username: NonEmptyString, password: v.optional(v.string((i) => `must be a string (quote it), got ${i.received}`)) },
  mappingMessage,
));

const Tags = mapping(v.looseObject(
  {
    nofailover: v.optional(Bool),
    noloadbalance: v.optional(Bool),
    clonefrom: v.optional(Bool),
    nosync: v.optional(Bool),
    failover_priority: v.optional(NonNegativeInteger),
  },
  mappingMessage,
));

/** Keys of `bootstrap` that are not custom method sections. */
const BOOTSTRAP_KEYS: readonly string[] = ['dcs', 'method', 'initdb', 'pg_hba'];

const CustomMethod = mapping(v.looseObject({ command: NonEmptyString }, mappingMessage));

const Bootstrap = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, mappingMessage),
  v.objectWithRest(
    {
      dcs: v.optional(DynamicConfigSchema, {}),
      method: v.optional(KeySegment, 'initdb'),
      initdb: v.optional(v.array(InitdbOptionSchema, (i) => `must be a list, got ${i.received}`), []),
      pg_hba: v.optional(HbaLines, []),
    },
    CustomMethod,
    mappingMessage,
  ),
  v.forward(
    v.check(
      (b) => b.method === 'initdb' || (Object.hasOwn(b, b.method) && !BOOTSTRAP_KEYS.includes(b.method)),
      (i) => `"${(i.input as { method: string }).method}" is neither initdb nor a section of bootstrap`,
    ),
    ['method'],
  ),
);

const Database = mapping(v.strictObject(
  {
    listen: HostPortString,
    connect_address: v.optional(HostPortString),
    data_dir: v.pipe(NonEmptyString, v.startsWith('/', 'must be an absolute path')),
    bin_dir: v.optional(NonEmptyString),
    socket_dir: v.optional(v.pipe(NonEmptyString, v.startsWith('/', 'must be an absolute path'))),
    authentication: mapping(v.strictObject({ superuser: Role, replication: Role }, mappingMessage)),
    parameters: v.optional(Parameters, {}),
    pg_hba: v.optional(HbaLines, []),
  },
  mappingMessage,
));

/** The whole file. Output: as written, with defaults of optional sections filled in. */
export const FileSchema = v.strictObject(
  {
    scope: KeySegment,
    namespace: v.optional(NonEmptyString, '/service/'),
    name: KeySegment,
    restapi: mapping(v.strictObject({ listen: HostPortString, connect_address: v.optional(HostPortString) }, mappingMessage)),
    etcd3: mapping(v.strictObject({ hosts: EtcdHosts }, mappingMessage)),
    bootstrap: v.optional(Bootstrap, {}),
    database: Database,
    tags: v.optional(Tags, {}),
    log: v.optional(
      mapping(v.strictObject(
        { level: v.optional(v.picklist(LOG_LEVELS, (i) => `must be one of ${LOG_LEVELS.join(', ')}, got ${i.received}`), 'info') },
        mappingMessage,
      )),
      {},
    ),
  },
  (i) => `the configuration must be a mapping of sections, got ${i.received}`,
);

/** Output of {@link FileSchema}. */
export type FileConfig = v.InferOutput<typeof FileSchema>;
