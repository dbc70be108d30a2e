/**
 * `hactl history`: the DCS `history` key, one row per timeline switch: TL, LSN (bytes, as the
 * reference prints it), Reason, Timestamp, New Leader.
 */
import YAML from 'yaml';
import type { ListFormat } from './list.ts';
import { readView, type Session } from './session.ts';
import { renderPretty, renderTsv, type Cell } from './table.ts';

const COLUMNS = ['TL', 'LSN', 'Reason', 'Timestamp', 'New Leader'];

/** Runs `history` in the chosen format. */
export async function runHistory(s: Session, format: ListFormat): Promise<void> {
  const view = await readView(s);
  const entries = view.history ?? [];
  const rows: Cell[][] = entries.map((e) => [e[0], e[1], e[2], e[3], e[4]]);
  let lines: string[];
  if (format === 'pretty') lines = renderPretty(COLUMNS, rows);
  else if (format === 'tsv') lines = renderTsv(COLUMNS, rows);
  else {
    const objects = rows.map((r) => Object.fromEntries(COLUMNS.map((c, i) => [c, r[i]]).filter(([, v]) => v !== undefined)));
    lines = format === 'json' ? [JSON.stringify(objects)] : objects.length === 0 ? ['[]'] : YAML.stringify(objects).trimEnd().split('\n');
  }
  for (const l of lines) s.io.out(l);
}
