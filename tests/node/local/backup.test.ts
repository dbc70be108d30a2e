/**
 * POST /backup (docs/backups.md "Backups"): the route (src/http/restart-routes.ts) over fake
 * commands, and the runner (src/node/local/backup.ts) over a PostgreSQL control that records the
 * command lines: `create` first only when asked, one backup at a time, failures with the step and
 * the reason journaled.
 */
import { describe, expect, it } from 'vitest';
import { BackupRunner } from '../../../src/node/local/backup.ts';
import { appFor, FakeCommands, send, streamingReplica } from '../../http/fixtures.ts';

function runner(config: { command: string; create?: string } | undefined, fail?: (line: string) => string | undefined) {
  const lines: string[] = [];
  const notices: Array<[string, string]> = [];
  let release: () => void = () => undefined;
  let hold = false;
  const r = new BackupRunner({
    pg: {
      runCommand: async (line: string) => {
        lines.push(line);
        if (hold) await new Promise<void>((res) => (release = res));
        const why = fail?.(line);
        if (why) throw new Error(why);
      },
    },
    config: () => config,
    notice: (type, text) => notices.push([type, text]),
    now: () => 0,
  });
  return { r, lines, notices, holdNext: () => (hold = true), release: () => release() };
}

describe('BackupRunner', () => {
  const cfg = { command: 'pgbackrest --stanza=demo backup', create: 'pgbackrest --stanza=demo stanza-create' };

  it('runs create only when asked, then the backup command', async () => {
    const a = runner(cfg);
    expect(await a.r.run({ create: false })).toEqual({ ok: true, ms: 0 });
    expect(a.lines).toEqual(['pgbackrest --stanza=demo backup']);
    const b = runner(cfg);
    await b.r.run({ create: true });
    expect(b.lines).toEqual(['pgbackrest --stanza=demo stanza-create', 'pgbackrest --stanza=demo backup']);
    expect(b.notices.map((n) => n[0])).toEqual(['backup.done']);
  });

  it('says which step failed and why, journaled; refuses a second backup while one runs; none without a section', async () => {
    const f = runner(cfg, (l) => (l.endsWith('stanza-create') ? 'sh exited 1: ERROR: [055]: unable to load info file' : undefined));
    expect(await f.r.run({ create: true })).toEqual({
      ok: false,
      reason: 'backup.create failed: sh exited 1: ERROR: [055]: unable to load info file',
    });
    expect(f.lines).toHaveLength(1);
    expect(f.notices).toEqual([['backup.failed', 'backup.create failed: sh exited 1: ERROR: [055]: unable to load info file']]);
    const busy = runner(cfg);
    busy.holdNext();
    const first = busy.r.run({ create: false });
    expect(await busy.r.run({ create: false })).toEqual({ ok: false, reason: 'a backup is already running on this member' });
    busy.release();
    expect((await first).ok).toBe(true);
    expect((await runner(undefined).r.run({ create: false })).ok).toBe(false);
  });
});

describe('POST /backup', () => {
  async function post(body: unknown, commands: FakeCommands & { backup?: unknown }) {
    const { app } = appFor(streamingReplica(), commands);
    const res = await send(app, 'POST', '/backup', body);
    return { status: res.status, text: await res.text() };
  }

  it('runs the backup and answers when it ends; 404 without a backup section; 503 with the reason; 400 for another key', async () => {
    const asked: unknown[] = [];
    const c = Object.assign(new FakeCommands(), {
      backup: async (o: { create: boolean }) => {
        asked.push(o);
        return { ok: true as const, ms: 2500 };
      },
    });
    expect(await post({ create: true }, c)).toEqual({ status: 200, text: 'backup done in 2.5 s' });
    expect(asked).toEqual([{ create: true }]);
    const none = Object.assign(new FakeCommands(), {
      backup: async () => ({ ok: false as const, reason: 'no backup section in this member configuration: nothing to run' }),
    });
    expect((await post(undefined, none)).status).toBe(404);
    const failing = Object.assign(new FakeCommands(), {
      backup: async () => ({ ok: false as const, reason: 'backup.command failed: sh exited 1' }),
    });
    expect(await post({}, failing)).toEqual({ status: 503, text: 'backup.command failed: sh exited 1' });
    expect(await post({ full: true }, c)).toEqual({ status: 400, text: 'Unknown option for backup: full' });
  });
});
