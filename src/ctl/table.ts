/**
 * Plain-text tables in the style of the reference CLI: `+---+` borders, a title embedded in the top
 * border (`+ Cluster: e2e (7…) ---+---+`), numbers right-aligned, text left-aligned; and TSV.
 */

/** A cell: text, a number, or empty. */
export type Cell = string | number | undefined;

/** Renders a bordered table. `title` replaces the start of the top border. */
export function renderPretty(headers: string[], rows: Cell[][], title?: string): string[] {
  const text = (c: Cell) => (c === undefined ? '' : String(c));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => text(r[i]).length)));
  const border = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+';
  const line = (cells: Cell[], alignByType: boolean) =>
    '|' +
    widths
      .map((w, i) => {
        const c = cells[i];
        const t = text(c);
        return ' ' + (alignByType && typeof c === 'number' ? t.padStart(w) : t.padEnd(w)) + ' ';
      })
      .join('|') +
    '|';
  let top = border;
  if (title !== undefined) {
    const head = `+ ${title} `;
    top = head.length + 1 < border.length ? head + border.slice(head.length) : head + '+';
  }
  return [top, line(headers, false), border, ...rows.map((r) => line(r, true)), border];
}

/** Renders tab-separated values: a header line, then one line per row (tabs and newlines in cells become spaces). */
export function renderTsv(headers: string[], rows: Cell[][]): string[] {
  const clean = (c: Cell) => (c === undefined ? '' : String(c).replace(/[\t\n]/g, ' '));
  return [headers.join('\t'), ...rows.map((r) => headers.map((_, i) => clean(r[i])).join('\t'))];
}
