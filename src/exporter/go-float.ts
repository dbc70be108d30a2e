/**
 * Go-compatible float parsing and printing, so values, label values and /explain text match
 * pg_exporter's output. Rules from Go's strconv (ParseFloat; FormatFloat(x, 'g', -1, 64), which
 * is also what `%v` and the Prometheus text encoder use), see pg_exporter.md §1.10 and §7.2.
 */

const DECIMAL = /^[+-]?(\d+(_\d+)*\.?\d*(_\d+)*|\.\d+)([eE][+-]?\d+)?$/;
const SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

/**
 * Parses text the way Go's strconv.ParseFloat(s, 64) does for decimal input: `1e-3`, `1000`,
 * `NaN`, `Inf`, `+Infinity` (any case). Returns undefined when it does not parse (no trimming).
 */
export function parseGoFloat(text: string): number | undefined {
  // Fast path for plain decimal text (int8/numeric columns): digits, optional sign, point, exponent.
  const c0 = text.charCodeAt(0);
  const cl = text.charCodeAt(text.length - 1);
  if (((c0 >= 48 && c0 <= 57) || c0 === 45) && cl >= 48 && cl <= 57 && !text.includes('x') && !text.includes('X') && !text.includes(' ')) {
    const n = Number(text);
    if (!Number.isNaN(n)) return n;
  }
  const sp = SPECIAL.exec(text);
  if (sp) {
    if (sp[2]!.toLowerCase() === 'nan') return NaN;
    return sp[1] === '-' ? -Infinity : Infinity;
  }
  if (!DECIMAL.test(text)) return undefined;
  const n = Number(text.replace(/_/g, ''));
  return Number.isNaN(n) ? undefined : n;
}

/**
 * Formats like Go's strconv.FormatFloat(x, 'g', -1, 64): shortest round-trip digits; exponent
 * form (`1e+06`, `1.5e-05`, sign and at least two exponent digits) when the decimal exponent is
 * below -4 or at least 6; otherwise plain (`0.3`, `123456.7`). Specials: `NaN`, `+Inf`, `-Inf`.
 */
export function formatGoFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '+Inf';
  if (x === -Infinity) return '-Inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const abs = x < 0 ? -x : x;
  // Fast path: in [1e-4, 1e6) JS's shortest round-trip text is already Go's plain form.
  if (abs >= 1e-4 && abs < 1e6) return String(x);
  // Integers up to 1e21 (timestamps, byte counts): String() gives the same shortest digits as
  // toExponential(), padded with zeros to the point; move the point instead of reformatting.
  if (abs < 1e21 && Number.isInteger(x)) {
    const t = String(abs);
    let end = t.length;
    while (t.charCodeAt(end - 1) === 48) end--;
    const mant = end > 1 ? `${t[0]}.${t.slice(1, end)}` : t[0]!;
    const e = t.length - 1;
    return `${x < 0 ? '-' : ''}${mant}e+${e < 10 ? '0' : ''}${e}`;
  }
  const [mant, expText] = x.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(x);
}

/**
 * Formats seconds as Go's time.Duration String(): `0s`, `100ms`, `1.5s`, `2m0s`, `1h0m0s`,
 * `1.5µs`. Input is float seconds; it is rounded to whole nanoseconds like Go's conversion.
 */
export function formatGoDuration(seconds: number): string {
  let ns = Math.round(seconds * 1e9);
  if (ns === 0) return '0s';
  const neg = ns < 0;
  if (neg) ns = -ns;
  const frac = (value: number, unit: number): string => {
    const whole = Math.floor(value / unit);
    const rest = value % unit;
    if (rest === 0) return String(whole);
    const digits = String(unit).length - 1;
    return `${whole}.${String(rest).padStart(digits, '0').replace(/0+$/, '')}`;
  };
  let out: string;
  if (ns < 1e3) out = `${ns}ns`;
  else if (ns < 1e6) out = `${frac(ns, 1e3)}µs`;
  else if (ns < 1e9) out = `${frac(ns, 1e6)}ms`;
  else {
    const h = Math.floor(ns / 3.6e12);
    const m = Math.floor((ns % 3.6e12) / 6e10);
    const s = frac(ns % 6e10, 1e9);
    out = h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
  }
  return neg ? `-${out}` : out;
}
