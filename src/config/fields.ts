/**
 * Field schemas shared by the ha.yml schema and the dynamic configuration schema, each with a
 * readable message (stack.md §7: "put custom messages on the important fields").
 */
import * as v from 'valibot';
import { hostPortProblem } from './host-port.ts';

/** A non-empty string. */
export const NonEmptyString = v.pipe(
  v.string((i) => `must be a string, got ${i.received}`),
  v.nonEmpty('must not be empty'),
);

/** A boolean (YAML `true`/`false`; `on`/`off`/`yes` are strings in YAML 1.2 and are refused). */
export const Bool = v.boolean((i) => `must be true or false, got ${i.received}`);

/** An integer >= 1 (seconds for ttl, loop_wait, retry_timeout). */
export const PositiveInteger = v.pipe(
  v.number((i) => `must be an integer, got ${i.received}`),
  v.integer((i) => `must be an integer, got ${i.received}`),
  v.minValue(1, (i) => `must be at least 1, got ${i.received}`),
);

/** An integer >= 0 (bytes, priorities). */
export const NonNegativeInteger = v.pipe(
  v.number((i) => `must be an integer, got ${i.received}`),
  v.integer((i) => `must be an integer, got ${i.received}`),
  v.minValue(0, (i) => `must be 0 or more, got ${i.received}`),
);

/** `host:port` text with port 1..65535 (see host-port.ts). */
export const HostPortString = v.pipe(
  v.string((i) => `must be a host:port string, got ${i.received}`),
  v.check(
    (s) => hostPortProblem(s) === undefined,
    (i) => hostPortProblem(String(i.input)) ?? 'must be host:port',
  ),
);

/** A PostgreSQL parameter value as written in YAML. */
export const ParameterValue = v.union(
  [v.string(), v.number(), v.boolean()],
  (i) => `must be a string, number or boolean, got ${i.received}`,
);

/** PostgreSQL parameter name -> value. */
export const Parameters = mapping(v.record(v.string(), ParameterValue, (i) => `must be a mapping of parameter: value, got ${i.received}`));

/** A list of pg_hba.conf lines. */
export const HbaLines = v.array(NonEmptyString, (i) => `must be a list of pg_hba.conf lines, got ${i.received}`);

/** True for a YAML/JSON mapping: an object that is not an array (valibot's object schemas let arrays through). */
export function isMapping(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * Guards an object or record schema against arrays and other non-mappings, with one
 * readable message (`must be a mapping, got Array`).
 */
export function mapping<const S extends v.GenericSchema<Record<string, unknown>, unknown>>(schema: S) {
  return v.pipe(
    v.custom<Record<string, unknown>>(isMapping, (i) => `must be a mapping, got ${i.received}`),
    schema,
  );
}
