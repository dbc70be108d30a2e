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
const escapeLabel = (s: string) => (NEEDS_ESCAPE.test(s) ? s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : s);

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
 * Accumulates families from many sources, adding constant labels to every series. The first
 * HELP/TYPE seen for a name wins; a sample whose family disagrees on TYPE, or whose label set was
 * already seen, is dropped and counted in `dropped`.
 */
export class ExpositionBuilder {
  private readonly families = new Map<string, { help: string; type: MetricType; series: Map<string, Series> }>();
  /** Label lists shared by several families (one per result row) are rendered once. */
  private readonly forms = new WeakMap<[string, string][], LabelForm>();
  /** Samples dropped because they duplicated a series or conflicted with the family's type. */
  dropped = 0;
  /** Sources (e.g. collector names) that had something dropped, for logs. */
  readonly droppedFrom = new Set<string>();

  constructor(private readonly constLabels: [string, string][] = []) {}

  /** Adds a family; `source` names the producer for the drop report. */
  add(f: Family, source = f.name): void {
    let fam = this.families.get(f.name);
    if (!fam) {
      fam = { help: f.help, type: f.type, series: new Map() };
      this.families.set(f.name, fam);
    } else if (fam.type !== f.type) {
      this.dropped += f.samples.length;
      if (f.samples.length) this.droppedFrom.add(source);
      return;
    }
    for (const s of f.samples) {
      let form = this.forms.get(s.labels);
      if (!form) {
        form = this.render1(s.labels);
        this.forms.set(s.labels, form);
      }
      if (fam.series.has(form.key)) {
        this.dropped++;
        this.droppedFrom.add(source);
        continue;
      }
      fam.series.set(form.key, { key: form.key, text: form.text, value: s.value });
    }
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
    for (const f of this.families.values()) n += f.series.size;
    return n;
  }

  /** Renders the text body; a family without series is left out, as client_golang does. */
  render(): string {
    const names = [...this.families.keys()].sort();
    const out: string[] = [];
    for (const name of names) {
      const fam = this.families.get(name)!;
      if (fam.series.size === 0) continue;
      out.push(`# HELP ${name} ${escapeHelp(fam.help)}\n# TYPE ${name} ${fam.type}\n`);
      const series = [...fam.series.values()].sort(compareSeries);
      let lines = '';
      for (const s of series) lines += `${name}${s.text} ${formatGoFloat(s.value)}\n`;
      out.push(lines);
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
