/**
 * SQL value conversion for collector columns, with postgres.js's JS types mapped to pg_exporter's
 * tables (pg_exporter.md §1.10): numbers × scale; numeric/int8/text parsed as Go floats × scale
 * (NaN if unparsable); bool 1/0 and timestamps in Unix seconds, never scaled; NULL gives
 * default × scale, else NaN; anything else NaN.
 */
import { formatGoFloat, parseGoFloat } from './go-float.ts';
import type { ColumnDef } from './types.ts';

/** PostgreSQL type OIDs that are floating point (label formatting uses Go `%v`). */
const FLOAT_OIDS = new Set([700, 701]);

/** Value of a GAUGE/COUNTER/HISTOGRAM column; `null` means "NULL without a default" → NaN for gauges. */
export function sampleValue(raw: unknown, col: ColumnDef): number {
  if (raw === null || raw === undefined) return col.defaultValue === undefined ? NaN : col.defaultValue * col.scale;
  if (typeof raw === 'number') return raw * col.scale;
  if (typeof raw === 'bigint') return Number(raw) * col.scale;
  if (typeof raw === 'boolean') return raw ? 1 : 0;
  if (raw instanceof Date) return Math.trunc(raw.getTime() / 1000);
  if (typeof raw === 'string') {
    const n = parseGoFloat(raw);
    return n === undefined ? NaN : n * col.scale;
  }
  if (raw instanceof Uint8Array) {
    const n = parseGoFloat(Buffer.from(raw).toString('utf8'));
    return n === undefined ? NaN : n * col.scale;
  }
  return NaN;
}

/** Text of a LABEL column: NULL → "", bool → true/false, timestamp → Unix seconds, float → Go %v. */
export function labelValue(raw: unknown, typeOid?: number): string {
  if (raw === null || raw === undefined) return '';
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'boolean') return raw ? 'true' : 'false';
  if (raw instanceof Date) return String(Math.trunc(raw.getTime() / 1000));
  if (typeof raw === 'number')
    return typeOid !== undefined && FLOAT_OIDS.has(typeOid) ? formatGoFloat(raw) : Number.isInteger(raw) ? String(raw) : formatGoFloat(raw);
  if (typeof raw === 'bigint') return raw.toString();
  if (raw instanceof Uint8Array) return Buffer.from(raw).toString('utf8');
  if (Array.isArray(raw)) return `{${raw.map((x) => labelValue(x)).join(',')}}`;
  return JSON.stringify(raw);
}
