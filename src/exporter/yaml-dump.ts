/**
 * A small YAML emitter reproducing gopkg.in/yaml.v3's Marshal layout for the collector structure
 * shown by /explain (pg_exporter.md §2.6): 4-space indent, block sequences, `|`/`|-` literal
 * blocks for multi-line strings, double quotes for strings that would read as another type.
 * It covers strings, numbers, booleans, string/number lists and maps; not a general YAML writer.
 */
import { formatGoFloat } from './go-float.ts';

/** A node of the dump: ordered key/value pairs, lists, scalars. Undefined entries are omitted. */
export type DumpValue = string | number | boolean | DumpValue[] | DumpMap;
/** Ordered map; entries whose value is undefined are skipped. */
export type DumpMap = { entries: [string, DumpValue | undefined][] };

const OTHER_TYPE = /^(~|null|Null|NULL|true|True|TRUE|false|False|FALSE|y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|<<)$/;
const NUMBERISH =
  /^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$|^0x[0-9a-fA-F_]+$|^0o?[0-7_]+$|^0b[01_]+$|^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$/;

function plainAllowed(s: string): boolean {
  if (s === '' || /^\s|\s$/.test(s)) return false;
  if (/^[-?:,[\]{}#&*!|>'"%@`]/.test(s)) return false;
  if (/: |:$| #|[\t\r\n\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(s)) return false;
  return true;
}

function doubleQuote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r')}"`;
}

/** The scalar as yaml.v3 writes it when it fits on the key's line; null when it needs a literal block. */
function scalar(s: string): string | null {
  if (s.includes('\n')) {
    const literalOk = !/^[ \n]/.test(s) && !/ \n/.test(s) && !/[\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(s);
    return literalOk ? null : doubleQuote(s);
  }
  if (OTHER_TYPE.test(s) || NUMBERISH.test(s)) return doubleQuote(s);
  if (plainAllowed(s)) return s;
  if (/[\x00-\x1f\x7f]/.test(s)) return doubleQuote(s);
  return `'${s.replace(/'/g, "''")}'`;
}

function literal(s: string, indent: string): string {
  const trailing = /\n\n+$/.test(s) ? '+' : s.endsWith('\n') ? '' : '-';
  const body = s.replace(/\n+$/, '');
  const lines = body.split('\n').map((l) => (l === '' ? '' : indent + l));
  return `|${trailing}\n${lines.join('\n')}\n`;
}

function num(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21 && !Object.is(n, -0)) return String(n);
  const s = formatGoFloat(n);
  return s === '+Inf' ? '.inf' : s === '-Inf' ? '-.inf' : s === 'NaN' ? '.nan' : s;
}

/** Writes `value` after "key:" (or after "- "); returns text starting with " " or "\n". */
function afterKey(value: DumpValue, indent: number): string {
  const pad = ' '.repeat(indent);
  if (typeof value === 'string') {
    const sc = scalar(value);
    return sc === null ? ` ${literal(value, ' '.repeat(indent + 4))}` : ` ${sc}\n`;
  }
  if (typeof value === 'number') return ` ${num(value)}\n`;
  if (typeof value === 'boolean') return ` ${value}\n`;
  if (Array.isArray(value)) {
    if (value.length === 0) return ' []\n';
    return '\n' + value.map((item) => seqItem(item, indent + 4)).join('');
  }
  const entries = value.entries.filter(([, x]) => x !== undefined) as [string, DumpValue][];
  if (entries.length === 0) return ' {}\n';
  return '\n' + entries.map(([k, x]) => `${pad}    ${k}:${afterKey(x, indent + 4)}`).join('');
}

function seqItem(item: DumpValue, indent: number): string {
  const pad = ' '.repeat(indent);
  if (typeof item === 'object' && !Array.isArray(item)) {
    const entries = item.entries.filter(([, x]) => x !== undefined) as [string, DumpValue][];
    // yaml.v3 puts the first key on the dash line, the rest two columns right of the dash, and
    // indents their children from the dash column (not from the key column).
    return entries.map(([k, x], i) => `${i === 0 ? `${pad}- ` : `${pad}  `}${k}:${afterKey(x, indent)}`).join('');
  }
  return `${pad}-${afterKey(item, indent)}`;
}

/** Renders a one-key document `key: value` in yaml.v3 style; ends with a newline. */
export function dumpYaml(key: string, value: DumpValue): string {
  return `${key}:${afterKey(value, 0)}`;
}
