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
const escapeLabel = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

interface Series {
  key: string;
  labels: [string, string][];
  value: number;
}

/**
 * Accumulates families from many sources, adding constant labels to every series. The first
 * HELP/TYPE seen for a name wins; a sample whose family disagrees on TYPE, or whose label set was
 * already seen, is dropped and counted in `dropped`.
 */
export class ExpositionBuilder {
  private readonly families = new Map<string, { help: string; type: MetricType; series: Map<string, Series> }>();
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
      const map = new Map<string, string>(this.constLabels);
      for (const [k, v] of s.labels) map.set(k, v);
      const labels = [...map.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      const key = labels.map(([k, v]) => `${k}\u0000${v}`).join('\u0001');
      if (fam.series.has(key)) {
        this.dropped++;
        this.droppedFrom.add(source);
        continue;
      }
      fam.series.set(key, { key, labels, value: s.value });
    }
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
      for (const s of series) {
        const lbl = s.labels.length ? `{${s.labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
        out.push(`${name}${lbl} ${formatGoFloat(s.value)}\n`);
      }
    }
    return out.join('');
  }
}

function compareSeries(a: Series, b: Series): number {
  const n = Math.min(a.labels.length, b.labels.length);
  for (let i = 0; i < n; i++) {
    const [ak, av] = a.labels[i]!;
    const [bk, bv] = b.labels[i]!;
    if (ak !== bk) return ak < bk ? -1 : 1;
    if (av !== bv) return av < bv ? -1 : 1;
  }
  return a.labels.length - b.labels.length;
}
