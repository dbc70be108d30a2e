/**
 * valibot schemas of one collector file (pg_exporter's format, documented in 0000-doc.yml).
 * Shape checks only; cross-field rules live in config-validate.ts. Unknown keys are ignored,
 * as upstream's non-strict yaml.v3 does.
 */
import * as v from 'valibot';

const num = v.pipe(v.number(), v.finite());
/** A float given as a YAML number or a string holding one (`scale`, `default`). */
const floatLike = v.union([num, v.pipe(v.string(), v.trim(), v.nonEmpty('must be a float'))]);

/** Column settings: the value of a `- <column>: {...}` item. */
export const ColumnSchema = v.object({
  usage: v.pipe(
    v.string('usage is required'),
    v.trim(),
    v.toUpperCase(),
    v.picklist(['DISCARD', 'LABEL', 'COUNTER', 'GAUGE', 'HISTOGRAM'], 'usage must be DISCARD, LABEL, COUNTER, GAUGE or HISTOGRAM'),
  ),
  name: v.optional(v.string()),
  rename: v.optional(v.nullable(v.string())),
  description: v.optional(v.nullable(v.string())),
  scale: v.optional(v.nullable(floatLike)),
  default: v.optional(v.nullable(floatLike)),
  bucket: v.optional(v.nullable(v.array(num, 'bucket must be a list of finite numbers'))),
});

/** One predicate query. */
export const PredicateSchema = v.object({
  name: v.optional(v.nullable(v.string())),
  predicate_query: v.pipe(
    v.string('predicate_query is required'),
    v.check((s) => s.trim() !== '', 'predicate_query is blank'),
  ),
  ttl: v.optional(v.nullable(v.pipe(num, v.minValue(0, 'predicate ttl must be >= 0')))),
});

/** One top-level branch. */
export const CollectorSchema = v.object({
  name: v.optional(v.nullable(v.string())),
  desc: v.optional(v.nullable(v.string())),
  query: v.pipe(
    v.string('query is required'),
    v.check((s) => s.trim() !== '', 'query is blank'),
  ),
  predicate_queries: v.optional(v.nullable(v.array(PredicateSchema))),
  tags: v.optional(v.nullable(v.array(v.string('tags must be strings')))),
  ttl: v.optional(v.nullable(v.pipe(num, v.minValue(0, 'ttl must be >= 0')))),
  timeout: v.optional(v.nullable(num)),
  priority: v.optional(v.nullable(v.pipe(num, v.integer()))),
  min_version: v.optional(v.nullable(v.pipe(num, v.integer()))),
  max_version: v.optional(v.nullable(v.pipe(num, v.integer()))),
  fatal: v.optional(v.nullable(v.boolean())),
  skip: v.optional(v.nullable(v.boolean())),
  metrics: v.pipe(
    v.array(
      v.pipe(
        v.record(v.string(), v.unknown()),
        v.check((m) => Object.keys(m).length === 1, 'each metrics item must be a map with exactly one column'),
      ),
      'metrics must be a list',
    ),
    v.minLength(1, 'metrics is empty'),
  ),
});

export type RawCollector = v.InferOutput<typeof CollectorSchema>;
export type RawColumn = v.InferOutput<typeof ColumnSchema>;
