/**
 * Backups on this member (POST /backup; docs/backups.md "Backups"): the `backup` section of ha.yml
 * names the commands, run through /bin/sh as the PostgreSQL OS user (PgControl.runCommand):
 * `create` first when the request asks for it (pgBackRest's `stanza-create`, which is idempotent),
 * then `command` (e.g. `pgbackrest --stanza=<scope> backup`). One backup at a time per member. Each
 * outcome is logged and journaled (`ha.backup.done`, `ha.backup.failed`); the agent keeps no
 * schedule of its own (a cron job or a systemd timer calls the API).
 */
import type { BackupConfig } from '../../config/archive-keys.ts';
import type { BackupOutcome } from '../../http/commands.ts';
import type { PgControl } from '../../postgres/types.ts';
import type { Notice } from '../node-core.ts';

/** What the runner reads and calls. */
export interface BackupDeps {
  pg: Pick<PgControl, 'runCommand'>;
  /** The `backup` section in force (POST /reload may change it); undefined: none configured. */
  config(): BackupConfig | undefined;
  notice: Notice;
  /** Epoch ms. */
  now(): number;
}

/** Options of one backup (POST /backup body). */
export interface BackupRequest {
  /** Run `backup.create` first (create the repository's stanza). */
  create: boolean;
}

export class BackupRunner {
  private running = false;

  constructor(private readonly d: BackupDeps) {}

  /**
   * Runs `backup.create` (when asked) then `backup.command`, awaited. Resolves `{ok: true}` when
   * both exit 0, else `{ok: false, reason}`: no `backup` section, a backup already running here,
   * or the command's failure (its exit status and the tail of its output, as PgToolError says).
   * Never rejects.
   */
  async run(req: BackupRequest): Promise<BackupOutcome> {
    const cfg = this.d.config();
    if (!cfg) return { ok: false, reason: 'no backup section in this member configuration: nothing to run' };
    if (!this.d.pg.runCommand) return { ok: false, reason: 'this PostgreSQL control runs no commands' };
    if (this.running) return { ok: false, reason: 'a backup is already running on this member' };
    this.running = true;
    const t0 = this.d.now();
    let current: 'create' | 'command' = req.create && cfg.create !== undefined ? 'create' : 'command';
    try {
      if (req.create && cfg.create !== undefined) {
        await this.d.pg.runCommand(cfg.create);
        current = 'command';
      }
      await this.d.pg.runCommand(cfg.command);
      const ms = this.d.now() - t0;
      this.d.notice('backup.done', `backup done in ${(ms / 1000).toFixed(1)} s${req.create ? ' (stanza created first)' : ''}`, 'info');
      return { ok: true, ms };
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      const reason = `backup.${current} failed: ${why}`;
      this.d.notice('backup.failed', reason);
      return { ok: false, reason };
    } finally {
      this.running = false;
    }
  }
}
