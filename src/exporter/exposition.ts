/**
 * Prometheus text exposition (format 0.0.4) written the way client_golang writes it, which is
 * what pg_exporter's users and promtool see (pg_exporter.md §7.2–§7.3): families sorted by name,
 * series sorted by label values, labels sorted by name, HELP then TYPE then samples, no blank
 * lines, Go `%g` numbers. Duplicate series and HELP/TYPE conflicts are dropped and counted
 * instead of failing the whole answer (the seed's rule; upstream answers 500).
 */
import { formatGoFloat } from './go-float.ts';

export type MetricType = 'gauge' | 'counter';

/** One sample: label pairs (any order) and a value. */
export interface Sample {
  labels: [string, string][];
  value: number;
}

/** A metric family as produced by one collector or by self-monitoring. */
export interface Family {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

const escapeHelp = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const NEEDS_ESCAPE = /[\\"\n]/;
/** Label value as written between quotes (escaped only when it contains `\\`, `"` or a newline). */
export const escapeLabel = (s: string) => (NEEDS_ESCAPE.test(s) ? s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : s);

interface Series {
  /** Sort key: label names and values joined with control separators, names sorted. */
  key: string;
  /** Rendered label block, `{a="x",b="y"}` or empty. */
  text: string;
  value: number;
}

/** Rendered form of one label list (after constant labels are merged and names sorted). */
interface LabelForm {
  key: string;
  text: string;
}

/**
 * The label side of one collector result, shared by every value family of that result: rows
 * sorted by series key (constant labels merged), later duplicates of a key removed.
 */
export interface RowForm {
  layout: LabelLayout;
  /** Own label values of every row, row-major (`layout.names.length` per row), result order. */
  labelValues: string[];
  /** Indexes of the kept rows in series order (ascending keys). */
  order: number[];
  /** Rows dropped because an earlier row had the same key. */
  dupes: number;
}

/**
 * Static text around the label values of one collector's series: constant labels merged
 * (collector labels win), names sorted, so a row's key is `keySegs[0] + v + keySegs[1] + ...`
 * and its label block `textSegs[0] + escaped v + textSegs[1] + ...`, values taken in `slots`
 * order (indexes into the collector's LABEL columns).
 */
export interface LabelLayout {
  /** Own label names (config order, without constant labels). */
  names: string[];
  slots: number[];
  keySegs: string[];
  textSegs: string[];
}

/** Builds the layout for LABEL names `names` (config order) and constant labels `constLabels`. */
export function labelLayout(names: string[], constLabels: readonly [string, string][]): LabelLayout {
  const merged: { name: string; own: number; value: string }[] = names.map((name, i) => ({ name, own: i, value: '' }));
  for (const [k, v] of constLabels) if (!names.includes(k)) merged.push({ name: k, own: -1, value: v });
  merged.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const slots: number[] = [];
  const keySegs: string[] = [''];
  const textSegs: string[] = [''];
  merged.forEach((m, i) => {
    const last = keySegs.length - 1;
    keySegs[last] += `${m.name}\u0000`;
    textSegs[last] += `${i ? ',' : '{'}${m.name}="`;
    if (m.own < 0) {
      keySegs[last] += `${m.value}\u0001`;
      textSegs[last] += `${escapeLabel(m.value)}"`;
    } else {
      slots.push(m.own);
      keySegs.push('\u0001');
      textSegs.push('"');
    }
  });
  if (merged.length > 0) textSegs[textSegs.length - 1] += '}';
  return { names, slots, keySegs, textSegs };
}

/** Series key of row `r` of `form`. */
export function rowKey(form: RowForm, r: number): string {
  const { slots, keySegs, names } = form.layout;
  const base = r * names.length;
  let key = keySegs[0]!;
  for (let s = 0; s < slots.length; s++) key += form.labelValues[base + slots[s]!]! + keySegs[s + 1]!;
  return key;
}

/** Label block (`{a="x",...}` or empty) of row `r` of `form`. */
export function rowText(form: RowForm, r: number): string {
  const { slots, textSegs, names } = form.layout;
  const base = r * names.length;
  let text = textSegs[0]!;
  for (let s = 0; s < slots.length; s++) text += escapeLabel(form.labelValues[base + slots[s]!]!) + textSegs[s + 1]!;
  return text;
}

/**
 * A family whose text lines were written when the collector's result arrived (the fast path):
 * `lines` holds `name{labels} value\n` for every kept row, already in series order. `samples`
 * materializes the generic form on demand (tests, merging with a same-named family).
 */
export class RenderedFamily implements Family {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: MetricType,
    readonly form: RowForm,
    /** Value of every row, result order. */
    readonly values: Float64Array,
    readonly lines: string,
    /** Constant labels merged into `form` (the builder checks they are its own). */
    readonly constLabels: readonly [string, string][],
  ) {}

  /** Samples as produced, duplicates included (the generic producer's count). */
  get sampleCount(): number {
    return this.values.length;
  }

  /** Series kept (duplicates removed). */
  get seriesCount(): number {
    return this.form.order.length;
  }

  /** The generic producer's samples: every row in result order, own labels only. */
  get samples(): Sample[] {
    const { labelValues } = this.form;
    const labelNames = this.form.layout.names;
    const n = labelNames.length;
    const out: Sample[] = [];
    for (let i = 0; i < this.values.length; i++) {
      const labels: [string, string][] = [];
      for (let j = 0; j < n; j++) labels.push([labelNames[j]!, labelValues[i * n + j]!]);
      out.push({ labels, value: this.values[i]! });
    }
    return out;
  }
}

/** Samples of a family as produced (a rendered family counts its dropped duplicates too). */
export function familySize(f: Family): number {
  return f instanceof RenderedFamily ? f.sampleCount : f.samples.length;
}

const sameLabels = (a: readonly [string, string][], b: readonly [string, string][]) =>
  a === b || (a.length === b.length && a.every(([k, v], i) => b[i]![0] === k && b[i]![1] === v));

interface FamilyEntry {
  help: string;
  type: MetricType;
  /** Generic series (absent while the family is a single rendered family). */
  series?: Map<string, Series>;
  rendered?: RenderedFamily;
}

/**
 * Accumulates families from many sources, adding constant labels to every series. The first
 * HELP/TYPE seen for a name wins; a sample whose family disagrees on TYPE, or whose label set was
 * already seen, is dropped and counted in `dropped`. A RenderedFamily that is alone under its
 * name is copied to the output as is; a second family under the same name turns it back into
 * series, so the result is the same either way.
 */
export class ExpositionBuilder {
  private readonly families = new Map<string, FamilyEntry>();
  /** Label lists shared by several families (one per result row) are rendered once. */
  private readonly forms = new WeakMap<[string, string][], LabelForm>();
  /** Samples dropped because they duplicated a series or conflicted with the family's type. */
  dropped = 0;
  /** Sources (e.g. collector names) that had something dropped, for logs. */
  readonly droppedFrom = new Set<string>();

  constructor(private readonly constLabels: [string, string][] = []) {}

  /** Adds a family; `source` names the producer for the drop report. */
  add(f: Family, source = f.name): void {
    const rendered = f instanceof RenderedFamily && sameLabels(f.constLabels, this.constLabels) ? f : undefined;
    let fam = this.families.get(f.name);
    if (!fam) {
      fam = { help: f.help, type: f.type };
      this.families.set(f.name, fam);
      if (rendered) {
        fam.rendered = rendered;
        this.countDupes(rendered, source);
        return;
      }
      fam.series = new Map();
    } else if (fam.type !== f.type) {
      const n = familySize(f);
      this.dropped += n;
      if (n) this.droppedFrom.add(source);
      return;
    }
    const series = this.seriesOf(fam);
    if (rendered) {
      this.countDupes(rendered, source);
      const { form } = rendered;
      for (const r of form.order) {
        const key = rowKey(form, r);
        if (series.has(key)) {
          this.dropped++;
          this.droppedFrom.add(source);
          continue;
        }
        series.set(key, { key, text: rowText(form, r), value: rendered.values[r]! });
      }
      return;
    }
    for (const s of f.samples) {
      let form = this.forms.get(s.labels);
      if (!form) {
        form = this.render1(s.labels);
        this.forms.set(s.labels, form);
      }
      if (series.has(form.key)) {
        this.dropped++;
        this.droppedFrom.add(source);
        continue;
      }
      series.set(form.key, { key: form.key, text: form.text, value: s.value });
    }
  }

  private countDupes(r: RenderedFamily, source: string): void {
    if (r.form.dupes === 0) return;
    this.dropped += r.form.dupes;
    this.droppedFrom.add(source);
  }

  /** The entry's series map, converting a rendered family into series first. */
  private seriesOf(fam: FamilyEntry): Map<string, Series> {
    if (fam.series) return fam.series;
    const series = new Map<string, Series>();
    const r = fam.rendered!;
    for (const row of r.form.order) {
      const key = rowKey(r.form, row);
      series.set(key, { key, text: rowText(r.form, row), value: r.values[row]! });
    }
    fam.series = series;
    fam.rendered = undefined;
    return series;
  }

  /** Merges constant labels (sample labels win), sorts by name, renders key and text. */
  private render1(own: [string, string][]): LabelForm {
    let labels = own;
    if (this.constLabels.length > 0) {
      labels = own.slice();
      for (const c of this.constLabels) if (!own.some(([k]) => k === c[0])) labels.push(c);
    }
    if (labels.length > 1) {
      let sorted = true;
      for (let i = 1; i < labels.length; i++) if (labels[i - 1]![0] > labels[i]![0]) sorted = false;
      if (!sorted) labels = (labels === own ? own.slice() : labels).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    }
    if (labels.length === 0) return { key: '', text: '' };
    let key = '';
    let text = '{';
    for (let i = 0; i < labels.length; i++) {
      const [k, v] = labels[i]!;
      key += `${k}\u0000${v}\u0001`;
      text += `${i ? ',' : ''}${k}="${escapeLabel(v)}"`;
    }
    return { key, text: `${text}}` };
  }

  /** Number of series held. */
  get seriesCount(): number {
    let n = 0;
    for (const f of this.families.values()) n += f.series ? f.series.size : f.rendered!.seriesCount;
    return n;
  }

  /** Renders the text body; a family without series is left out, as client_golang does. */
  render(): string {
    const names = [...this.families.keys()].sort();
    const out: string[] = [];
    for (const name of names) {
      const fam = this.families.get(name)!;
      if (fam.rendered) {
        if (fam.rendered.seriesCount === 0) continue;
        out.push(`# HELP ${name} ${escapeHelp(fam.help)}\n# TYPE ${name} ${fam.type}\n`, fam.rendered.lines);
        continue;
      }
      const map = fam.series!;
      if (map.size === 0) continue;
      out.push(`# HELP ${name} ${escapeHelp(fam.help)}\n# TYPE ${name} ${fam.type}\n`);
      const series = [...map.values()].sort(compareSeries);
      for (const s of series) out.push(`${name}${s.text} ${formatGoFloat(s.value)}\n`);
    }
    return out.join('');
  }
}

/**
 * Keys are `name\0value\1...` with names sorted, so comparing key text orders series by label
 * values in label-name order, a shorter value first (client_golang's order).
 */
function compareSeries(a: Series, b: Series): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
