/** pg_controldata: running it and parsing its `Key: value` output (LC_ALL=C, PostgreSQL 15 labels). */
import { join } from 'node:path';
import { parseLsn } from '../domain/lsn.ts';
import type { ControlData } from './types.ts';
import { runAsPg } from './run-as-pg.ts';

/** Splits pg_controldata output into label -> value (label without the colon, value trimmed). */
export function parseControlDataFields(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    // Labels contain colons only as the separator ("Latest checkpoint's oldestCommitTsXid:0" has no space).
    const i = line.indexOf(':');
    if (i <= 0) continue;
    out.set(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  return out;
}

/**
 * The fields the agent uses from pg_controldata output (see ControlData in types.ts).
 * @throws Error when a field is missing or malformed (e.g. output in another language).
 */
export function parseControlData(text: string): ControlData {
  const f = parseControlDataFields(text);
  const get = (label: string): string => {
    const v = f.get(label);
    if (v === undefined) throw new Error(`pg_controldata output lacks "${label}"`);
    return v;
  };
  const timeline = Number(get("Latest checkpoint's TimeLineID"));
  if (!Number.isInteger(timeline))
    throw new Error(`pg_controldata: bad TimeLineID ${JSON.stringify(f.get("Latest checkpoint's TimeLineID"))}`);
  return {
    systemIdentifier: get('Database system identifier'),
    clusterState: get('Database cluster state'),
    checkpointLsn: parseLsn(get('Latest checkpoint location')),
    checkpointTimeline: timeline,
    minRecoveryLsn: parseLsn(get('Minimum recovery ending location')),
    ...(f.has("Latest checkpoint's REDO location") ? { redoLsn: parseLsn(f.get("Latest checkpoint's REDO location")!) } : {}),
    ...(f.has("Min recovery ending loc's timeline") ? { minRecoveryTimeline: Number(f.get("Min recovery ending loc's timeline")) } : {}),
    ...(f.has('WAL block size') && f.has('Bytes per WAL segment')
      ? { walGeometry: { blockBytes: BigInt(f.get('WAL block size')!), segmentBytes: BigInt(f.get('Bytes per WAL segment')!) } }
      : {}),
    ...(f.has('wal_log_hints setting') ? { walLogHints: f.get('wal_log_hints setting') === 'on' } : {}),
    ...(f.has('Data page checksum version') ? { dataChecksumVersion: Number(f.get('Data page checksum version')) } : {}),
  };
}

/**
 * Runs `pg_controldata -D dataDir` as the PostgreSQL OS user with LC_ALL=C and parses it.
 * @throws PgToolError when the directory holds no cluster; Error when the output cannot be parsed.
 */
export async function readControlData(binDir: string, dataDir: string): Promise<ControlData> {
  const { stdout } = await runAsPg(join(binDir, 'pg_controldata'), ['-D', dataDir], {
    env: { LC_ALL: 'C', LANG: 'C' },
    timeoutMs: 30_000,
  });
  return parseControlData(stdout);
}
