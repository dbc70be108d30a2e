/**
 * PostgreSQL parameters (`database.parameters`) checked against the server's own catalogue of
 * settings, the way PostgreSQL itself checks a line of postgresql.conf — so that a value the
 * server would refuse at its next start is refused when it is written (PATCH/PUT /config), and
 * dropped when it reaches an agent from the DCS anyway.
 *
 * Pure: the catalogue is built elsewhere (src/postgres/settings-catalogue.ts, from
 * `postgres --describe-config`).
 *
 * Rules, after PostgreSQL 15's guc.c (parse_bool, parse_int, parse_real, convert_to_base_unit,
 * parse_and_validate_value) and the documentation, chapter 20.1 "Setting Parameters":
 * 20.1.1 "Parameter Names and Values" (units: memory B, kB, MB, GB, TB with multiplier 1024;
 * time us, ms, s, min, h, d; unit names are case-sensitive; a fractional value with a unit is
 * rounded to a multiple of the next smaller unit, then an integer parameter is rounded to an
 * integer) and 20.1.2 "Parameter Interaction via the Configuration File" (names are
 * case-insensitive; one parameter per line; the file is read at start and an error in it stops
 * the server from starting):
 * - the name, lower-cased, must be `[a-z_][a-z0-9_]*`; a name containing dots is a custom
 *   (placeholder) parameter, e.g. `pg_stat_statements.max`: each dot-separated part must be such
 *   an identifier, the value is not checked (the module defining it may not even be loaded);
 * - any other name must be in the catalogue (else `unknown PostgreSQL parameter`), and not of
 *   context `internal` (block_size, server_version, …: PostgreSQL refuses to set them);
 * - values: a JSON boolean is the text `on`/`off`, a number its decimal text (as the agent writes
 *   them into postgresql.conf); then by the parameter's type:
 *   - bool: `on`, `off`, `true`, `false`, `yes`, `no`, `1`, `0`, case-insensitive, and any unique
 *     prefix of `true`, `false`, `yes`, `no` (`t`, `f`, `y`, `n`, …) and `of` for `off`;
 *   - integer: C `strtol` syntax with base prefixes (`0x1F` hexadecimal, `017` octal) or a decimal
 *     fraction/exponent (`1.5e3`), optional whitespace, an optional unit (only when the parameter
 *     has one) converted to the parameter's base unit, rounded half to even, then checked against
 *     min..max (which the catalogue gives in the base unit);
 *   - real: C `strtod` syntax, optional unit as above (no rounding), min..max;
 *   - enum: one of the values, case-insensitive (including PostgreSQL's hidden aliases such as
 *     `true`/`false`/`yes`/`no`/`1`/`0` for on/off enums, when the catalogue lists them);
 *   - string: anything.
 * Not checked: cross-parameter rules and check hooks (e.g. max_wal_senders < max_connections,
 * a valid time zone, loadable shared_preload_libraries).
 */

/** The type of a parameter (pg_settings.vartype). */
export type PgVarType = 'bool' | 'integer' | 'real' | 'string' | 'enum';

/** What the catalogue knows about one parameter. */
export interface PgSetting {
  /** Name as PostgreSQL spells it (e.g. `IntervalStyle`); the catalogue is keyed by its lower case. */
  name: string;
  vartype: PgVarType;
  /**
   * pg_settings.context: `internal` (cannot be set), `postmaster` (restart), `sighup` (reload),
   * `superuser-backend`, `backend`, `superuser`, `user`.
   */
  context: string;
  /**
   * Base unit of an integer or real parameter, as pg_settings.unit: `B`, `kB`, `MB`, `8kB` (memory,
   * the last one in blocks of 8 kB), `ms`, `s`, `min` (time). `''`: the parameter takes no unit.
   * undefined: not known (a value with a unit is then accepted unconverted and not range-checked).
   */
  unit?: string;
  /** Inclusive bounds of an integer or real parameter, in its base unit. */
  min?: number;
  max?: number;
  /** Values of an enum parameter as pg_settings.enumvals lists them; undefined: not known (no check). */
  enumValues?: readonly string[];
  /** Further values PostgreSQL accepts but does not list (e.g. `hot_standby` for wal_level). */
  enumAliases?: readonly string[];
}

/** The settings a PostgreSQL server knows, keyed by lower-case name. */
export interface SettingsCatalogue {
  /** Server version the catalogue was read from, e.g. `15.8` (informative). */
  version?: string;
  settings: ReadonlyMap<string, PgSetting>;
}

/** A catalogue from a list of settings (keyed by lower-cased name; a later duplicate wins). */
export function catalogueOf(settings: Iterable<PgSetting>, version?: string): SettingsCatalogue {
  const map = new Map<string, PgSetting>();
  for (const s of settings) map.set(asciiLower(s.name), s);
  return version === undefined ? { settings: map } : { version, settings: map };
}

/** A parameter value as it may appear in the configuration document. */
export type ParameterValue = string | number | boolean;

/**
 * The problem with setting parameter `name` to `value`, or undefined when PostgreSQL would
 * accept it (see the module comment for the rules). The text names the parameter where useful,
 * e.g. `invalid value "lots" for integer parameter max_connections`,
 * `300000000 is outside the range 1..262143`, `unknown PostgreSQL parameter`.
 */
export function checkParameter(name: string, value: ParameterValue, catalogue: SettingsCatalogue): string | undefined {
  const key = asciiLower(name);
  if (!/^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$/.test(key)) return 'invalid PostgreSQL parameter name';
  if (key.includes('.')) return undefined; // custom (placeholder) parameter: value not checked
  const setting = catalogue.settings.get(key);
  if (!setting) return 'unknown PostgreSQL parameter';
  if (setting.context === 'internal')
    return 'PostgreSQL parameter cannot be changed (fixed when PostgreSQL was built or the cluster initialised)';
  const text = typeof value === 'boolean' ? (value ? 'on' : 'off') : String(value);
  switch (setting.vartype) {
    case 'bool':
      return parseBool(text) === undefined
        ? `invalid value ${JSON.stringify(text)} for boolean parameter ${setting.name} (use on, off, true, false, yes, no, 1 or 0)`
        : undefined;
    case 'integer':
    case 'real':
      return checkNumber(setting, text);
    case 'enum':
      return checkEnum(setting, text);
    case 'string':
      return undefined;
  }
}

/**
 * Every problem of a `database.parameters` mapping, one line each, in key order:
 * `database.parameters.<name>: <problem>` (see checkParameter). Empty when all are acceptable.
 */
export function checkParameters(params: Record<string, ParameterValue>, catalogue: SettingsCatalogue): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    const problem = checkParameter(name, value, catalogue);
    if (problem !== undefined) out.push(`database.parameters.${name}: ${problem}`);
  }
  return out;
}

/**
 * Splits parameters into those PostgreSQL would accept (`kept`, same values, same key order) and
 * the problems of the others (`dropped`, lines as checkParameters gives them), for an agent that
 * must not write a value its server would refuse to start with.
 */
export function filterParameters<V extends ParameterValue>(
  params: Record<string, V>,
  catalogue: SettingsCatalogue,
): { kept: Record<string, V>; dropped: string[] } {
  const kept: Record<string, V> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    const problem = checkParameter(name, value, catalogue);
    if (problem === undefined) kept[name] = value;
    else dropped.push(`database.parameters.${name}: ${problem}`);
  }
  return { kept, dropped };
}

// ---------------------------------------------------------------------------------------------
// Booleans and enums

/**
 * PostgreSQL's parse_bool: true/false/yes/no and their prefixes, on/off/of, 1/0; ASCII
 * case-insensitive, no surrounding whitespace. undefined when not a boolean.
 */
export function parseBool(text: string): boolean | undefined {
  const v = asciiLower(text);
  if (v === '') return undefined;
  switch (v[0]) {
    case 't':
      return 'true'.startsWith(v) ? true : undefined;
    case 'f':
      return 'false'.startsWith(v) ? false : undefined;
    case 'y':
      return 'yes'.startsWith(v) ? true : undefined;
    case 'n':
      return 'no'.startsWith(v) ? false : undefined;
    case 'o':
      // 'o' alone is ambiguous: at least two letters.
      return v === 'on' ? true : v === 'of' || v === 'off' ? false : undefined;
    case '1':
      return v.length === 1 ? true : undefined;
    case '0':
      return v.length === 1 ? false : undefined;
    default:
      return undefined;
  }
}

function checkEnum(setting: PgSetting, text: string): string | undefined {
  if (!setting.enumValues) return undefined;
  const v = asciiLower(text);
  const all = [...setting.enumValues, ...(setting.enumAliases ?? [])];
  if (all.some((e) => asciiLower(e) === v)) return undefined;
  const listed = setting.enumValues.map((e) => (e === '' ? '""' : e)).join(', ');
  return `invalid value ${JSON.stringify(text)} for parameter ${setting.name} (available values: ${listed})`;
}

// ---------------------------------------------------------------------------------------------
// Numbers and units

/** Memory units, largest first, in bytes (guc.c memory_unit_conversion_table). */
const MEMORY_UNITS: ReadonlyArray<readonly [string, number]> = [
  ['TB', 1024 ** 4],
  ['GB', 1024 ** 3],
  ['MB', 1024 ** 2],
  ['kB', 1024],
  ['B', 1],
];
/** Time units, largest first, in microseconds (guc.c time_unit_conversion_table). */
const TIME_UNITS: ReadonlyArray<readonly [string, number]> = [
  ['d', 86_400_000_000],
  ['h', 3_600_000_000],
  ['min', 60_000_000],
  ['s', 1_000_000],
  ['ms', 1000],
  ['us', 1],
];
const MEMORY_HINT = 'valid units: B, kB, MB, GB, TB';
const TIME_HINT = 'valid units: us, ms, s, min, h, d';

/** A base unit (pg_settings.unit) as a unit table and its size in that table's smallest unit. */
interface BaseUnit {
  table: ReadonlyArray<readonly [string, number]>;
  size: number;
}

/** `8kB` → memory, 8192 bytes; `s` → time, 1e6 µs; undefined for '' and anything unknown. */
export function baseUnitOf(unit: string): BaseUnit | undefined {
  const mem = /^(\d*)(B|kB|MB|GB|TB)$/.exec(unit);
  if (mem) {
    const bytes = MEMORY_UNITS.find(([u]) => u === mem[2])![1];
    return { table: MEMORY_UNITS, size: (mem[1] ? Number(mem[1]) : 1) * bytes };
  }
  const time = TIME_UNITS.find(([u]) => u === unit);
  return time ? { table: TIME_UNITS, size: time[1] } : undefined;
}

/**
 * guc.c convert_to_base_unit: `value` given in the unit at the start of `rest` (at most 3
 * characters, then only whitespace), expressed in `base`. A fractional value is first rounded to
 * a multiple of the next smaller unit. undefined when the unit is not one of the table's.
 */
function convertToBaseUnit(value: number, rest: string, base: BaseUnit): number | undefined {
  const m = /^(\S{1,3})\s*$/.exec(rest);
  if (!m) return undefined;
  const i = base.table.findIndex(([u]) => u === m[1]);
  if (i < 0) return undefined;
  let v = value * (base.table[i]![1] / base.size);
  const next = base.table[i + 1];
  if (next) {
    const step = next[1] / base.size;
    v = rint(v / step) * step;
  }
  return v;
}

/** C rint(): round to the nearest integer, halves to even. */
function rint(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

const C_SPACE = /[ \t\n\v\f\r]/;
const INT_MAX = 2147483647;
const INT_MIN = -2147483648;
const DBL_MIN = 2.2250738585072014e-308;

/** C strtol(s, &end, 0) on a 64-bit long: the value, the index where parsing stopped (0 when nothing was parsed), overflow. */
function strtol(s: string): { value: number; end: number; overflow: boolean } {
  let i = 0;
  while (i < s.length && C_SPACE.test(s[i]!)) i++;
  let neg = false;
  if (s[i] === '+' || s[i] === '-') neg = s[i++] === '-';
  let base = 10;
  if (s[i] === '0' && (s[i + 1] === 'x' || s[i + 1] === 'X') && /[0-9a-fA-F]/.test(s[i + 2] ?? '')) {
    base = 16;
    i += 2;
  } else if (s[i] === '0') base = 8;
  const digits = base === 16 ? /[0-9a-fA-F]/ : base === 8 ? /[0-7]/ : /[0-9]/;
  const start = i;
  let v = 0n;
  while (i < s.length && digits.test(s[i]!)) v = v * BigInt(base) + BigInt(parseInt(s[i++]!, base));
  if (i === start) return { value: 0, end: 0, overflow: false };
  const limit = neg ? 2n ** 63n : 2n ** 63n - 1n;
  const overflow = v > limit;
  const value = Number(overflow ? limit : v);
  return { value: neg ? -value : value, end: i, overflow };
}

/** C strtod(s, &end): the value, the index where parsing stopped (0 when nothing was parsed), ERANGE. */
function strtod(s: string): { value: number; end: number; erange: boolean } {
  let i = 0;
  while (i < s.length && C_SPACE.test(s[i]!)) i++;
  const rest = s.slice(i);
  const special = /^([+-]?)(infinity|inf|nan(\([0-9A-Za-z_]*\))?)/i.exec(rest);
  if (special) {
    const sign = special[1] === '-' ? -1 : 1;
    const value = special[2]!.toLowerCase().startsWith('nan') ? NaN : sign * Infinity;
    return { value, end: i + special[0].length, erange: false };
  }
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?/.exec(rest);
  if (hex && (hex[2]! + (hex[3] ?? '')).length > 0) {
    const int = hex[2]!;
    const frac = hex[3] ?? '';
    let mantissa = 0;
    for (const c of int + frac) mantissa = mantissa * 16 + parseInt(c, 16);
    const value = (hex[1] === '-' ? -1 : 1) * mantissa * 2 ** (Number(hex[4] ?? 0) - 4 * frac.length);
    return { value, end: i + hex[0].length, erange: !Number.isFinite(value) };
  }
  const dec = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(rest);
  if (!dec) return { value: 0, end: 0, erange: false };
  const value = Number(dec[0]);
  const nonZero = /[1-9]/.test(dec[1]!);
  const erange = !Number.isFinite(value) || (nonZero && Math.abs(value) < DBL_MIN);
  return { value, end: i + dec[0].length, erange };
}

/** The number of an integer or real parameter's text, in its base unit, or why there is none. */
function parseNumber(setting: PgSetting, text: string): { ok: true; value: number; checkRange: boolean } | { ok: false; hint?: string } {
  const isInt = setting.vartype === 'integer';
  let value: number;
  let end: number;
  if (isInt) {
    const l = strtol(text);
    value = l.value;
    end = l.end;
    const stop = text[end];
    let erange = false;
    if (stop === '.' || stop === 'e' || stop === 'E' || l.overflow) {
      const d = strtod(text);
      ({ value, end, erange } = d);
    }
    if (end === 0 || erange || Number.isNaN(value)) return { ok: false };
  } else {
    const d = strtod(text);
    if (d.end === 0 || d.erange || Number.isNaN(d.value)) return { ok: false };
    ({ value, end } = d);
  }
  let rest = text.slice(end);
  rest = rest.replace(/^[ \t\n\v\f\r]+/, '');
  let checkRange = true;
  if (rest !== '') {
    if (setting.unit === undefined) {
      // Unit not known: accept any valid unit name without converting it.
      const m = /^(\S{1,3})\s*$/.exec(rest);
      const known = m && [...MEMORY_UNITS, ...TIME_UNITS].some(([u]) => u === m[1]);
      if (!known) return { ok: false, hint: `unknown unit; ${MEMORY_HINT}; ${TIME_HINT}` };
      checkRange = false;
    } else {
      const base = baseUnitOf(setting.unit);
      if (!base) return { ok: false, hint: 'this parameter takes no unit' };
      const converted = convertToBaseUnit(value, rest, base);
      if (converted === undefined) return { ok: false, hint: base.table === MEMORY_UNITS ? MEMORY_HINT : TIME_HINT };
      value = converted;
    }
  }
  if (isInt) {
    value = rint(value);
    if (value > INT_MAX || value < INT_MIN) return { ok: false, hint: 'exceeds the integer range' };
  }
  return { ok: true, value, checkRange };
}

function checkNumber(setting: PgSetting, text: string): string | undefined {
  const parsed = parseNumber(setting, text);
  if (!parsed.ok) {
    const kind = setting.vartype === 'integer' ? 'integer' : 'real';
    return `invalid value ${JSON.stringify(text)} for ${kind} parameter ${setting.name}${parsed.hint ? ` (${parsed.hint})` : ''}`;
  }
  if (!parsed.checkRange) return undefined;
  const { value } = parsed;
  const below = setting.min !== undefined && value < setting.min;
  const above = setting.max !== undefined && value > setting.max;
  if (!below && !above) return undefined;
  const unit = setting.unit ?? '';
  const withUnit = (n: number | undefined): string => (unit === '' ? String(n) : /^\d/.test(unit) ? `${n} × ${unit}` : `${n} ${unit}`);
  const shown = text.trim() === String(value) ? withUnit(value) : `${text.trim()} = ${withUnit(value)}`;
  const range =
    unit === ''
      ? `${setting.min}..${setting.max}`
      : /^\d/.test(unit)
        ? `${setting.min}..${setting.max} × ${unit}`
        : `${setting.min}..${setting.max} ${unit}`;
  return `${shown} is outside the range ${range}`;
}

/** ASCII-only lower case (PostgreSQL's pg_strcasecmp / pg_strncasecmp fold only A-Z). */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}
