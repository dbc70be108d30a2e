/**
 * Making this member's data directory a replica's (the database machine's `clone` with method
 * basebackup; docs/backups.md "Replica creation"): the replica creation methods tried in order
 * (src/domain/replica-methods.ts planMethods), the built-in pg_basebackup or an operator's command
 * (pgBackRest's delta restore, …). A method that fails falls back to the next one, its reason
 * logged at warn and journaled (`ha.clone.methodFailed`); when every method failed, the data
 * directory is emptied (a half-restored directory is never started) and the clone rejects with
 * every reason. Progress goes to the ProgressTracker.
 */
import {
  BASEBACKUP,
  methodCommandLine,
  planMethods,
  resolveMethods,
  type ReplicaMethod,
  type ReplicaMethodsConfig,
} from '../../domain/replica-methods.ts';
import type { PgControl, Upstream } from '../../postgres/types.ts';
import type { Notice } from '../node-core.ts';
import type { ProgressTracker } from './progress.ts';

/** What one clone is (the replication source says). */
export interface CloneRequest {
  /** Where basebackup copies from and what `--connstring` names; undefined: no source (only no_leader methods run). */
  from: Upstream | undefined;
  /** An operator's reinitialize `from-leader`: basebackup alone. */
  basebackupOnly?: boolean;
  /** A standby cluster's bootstrap: `standby_cluster.create_replica_methods` instead of this member's list. */
  standbyMethods?: string[];
}

/** What the creator reads and calls. */
export interface ReplicaCreationDeps {
  scope: string;
  pg: Pick<PgControl, 'dataDir' | 'basebackup' | 'hasData' | 'removeData' | 'runCommand' | 'sourceConninfo'>;
  /** This member's methods, read at each clone (a reload may change them). */
  methods(): ReplicaMethodsConfig;
  /** Logs (warn) and journals a notice (`clone.methodFailed`, `clone.methodSkipped`). */
  notice: Notice;
  /** Epoch ms. */
  now(): number;
  /** Logs what succeeded (info). */
  log: { info(obj: object, msg: string): void };
  progress?: Pick<ProgressTracker, 'begin' | 'output' | 'end'>;
}

/** Error of a clone whose every method failed (or none could run). */
export class ReplicaCreationError extends Error {
  readonly code = 'replica_creation_failed';
}

export class ReplicaCreator {
  constructor(private readonly d: ReplicaCreationDeps) {}

  /** The methods `req` tries, in order, and those skipped with why. */
  plan(req: CloneRequest): { tries: ReplicaMethod[]; skipped: { name: string; reason: string }[] } {
    const cfg = this.d.methods();
    const { methods, missing } = resolveMethods(req.standbyMethods ?? cfg.list, cfg.sections);
    return planMethods(methods, { hasSource: req.from !== undefined, ...(req.basebackupOnly ? { basebackupOnly: true } : {}), missing });
  }

  /**
   * Creates the data directory by the first method of the plan that succeeds. The caller has made
   * sure no postmaster of this node runs.
   * @throws ReplicaCreationError naming every method's failure (the data directory emptied).
   */
  async create(req: CloneRequest): Promise<void> {
    const { pg, notice } = this.d;
    const { tries, skipped } = this.plan(req);
    for (const s of skipped) notice('clone.methodSkipped', `replica creation method ${s.name} skipped: ${s.reason}`);
    const failures: string[] = skipped.map((s) => `${s.name}: skipped (${s.reason})`);
    for (let n = 0; n < tries.length; n++) {
      const m = tries[n]!;
      const next = tries[n + 1]?.name;
      const t0 = this.d.now();
      try {
        await this.run(m, req.from);
        this.d.log.info(
          { method: m.name, ms: this.d.now() - t0, ...(req.from ? { source: req.from.name } : {}) },
          `replica created by method ${m.name}`,
        );
        return;
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        failures.push(`${m.name}: ${why}`);
        notice(
          'clone.methodFailed',
          `replica creation method ${m.name} failed after ${Math.round((this.d.now() - t0) / 1000)} s: ${why}${next ? `; falling back to ${next}` : ''}`,
        );
      } finally {
        this.d.progress?.end();
      }
    }
    await pg.removeData().catch(() => undefined);
    throw new ReplicaCreationError(
      tries.length === 0
        ? `no replica creation method could run: ${failures.join('; ') || 'none configured'}`
        : `every replica creation method failed: ${failures.join('; ')}`,
    );
  }

  /** Runs one method into the data directory (emptied first unless keep_data). */
  private async run(m: ReplicaMethod, from: Upstream | undefined): Promise<void> {
    const { pg, progress } = this.d;
    const onOutput = progress ? (text: string) => progress.output(text) : undefined;
    if (m.name === BASEBACKUP || m.command === undefined) {
      if (!from) throw new Error('no running member to copy from');
      if (await pg.hasData()) await pg.removeData();
      progress?.begin('clone', BASEBACKUP, `copying from ${from.name}`);
      await pg.basebackup(from, onOutput ? { onOutput } : {});
      return;
    }
    if (!pg.runCommand) throw new Error('this PostgreSQL control runs no commands');
    if (!m.keepData && (await pg.hasData())) await pg.removeData();
    const connstring = from && pg.sourceConninfo ? pg.sourceConninfo(from) : undefined;
    const line = methodCommandLine(m, { scope: this.d.scope, dataDir: pg.dataDir, ...(connstring !== undefined ? { connstring } : {}) });
    progress?.begin('clone', m.name, m.keepData ? 'restoring (delta)' : 'restoring', { sample: true });
    await pg.runCommand(line, {
      replicationPassword: true,
      env: { HA_ROLE: 'replica', ...(connstring !== undefined ? { HA_CONNSTRING: connstring } : {}) },
      ...(onOutput ? { onOutput } : {}),
    });
    if (!(await pg.hasData()))
      throw new Error(`${m.command.split(/\s+/)[0]} exited 0 but left no cluster in the data directory (no PG_VERSION)`);
  }
}
