/**
 * `ha`: the node agent's command line.
 *   ha run <ha.yml>         run one node agent (etcd v3 DCS)
 *   ha demo                 a 3-node cluster on the in-process DCS with real PostgreSQL
 *   ha chart <machine>      print a machine's state chart (mermaid | dot | svg | json)
 *   ha replay <journal>     rebuild machine states from a journal file
 *   ha simulate             deterministic simulation over random fault schedules (src/sim/)
 *   ha config check <file>  validate a configuration file of either dialect (ours, or the reference's patroni.yml)
 *   ha config convert <file> print a configuration file of either dialect in the native form
 * Exit codes: 0 success, 1 runtime failure, 2 configuration or usage error.
 */
import { Command, CommanderError } from 'commander';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { VERSION } from '../version.ts';

// Each command loads what it needs when it runs (an idle agent never renders a chart or replays a
// journal; see docs/performance.md "Idle agent").
const MACHINE_NAMES = ['database', 'switchover', 'restart'] as const;
type MachineName = (typeof MACHINE_NAMES)[number];
const CHART_FORMAT_NAMES = ['mermaid', 'dot', 'svg', 'json'] as const;

async function machines() {
  const { databaseMachine, switchoverMachine, restartMachine } = await import('@ha/machines');
  return { database: databaseMachine, switchover: switchoverMachine, restart: restartMachine } as const;
}

function fail(message: string, code: number): never {
  process.stderr.write(message.endsWith('\n') ? message : message + '\n');
  process.exit(code);
}

/** Stops `stop` on SIGTERM/SIGINT, then exits 0. */
function onSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (sig: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`received ${sig}, shutting down\n`);
    stop().then(
      () => process.exit(0),
      (e) => fail(`shutdown failed: ${String(e)}`, 1),
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}

async function main(argv: string[]): Promise<void> {
  const program = new Command('ha').version(VERSION).description('PostgreSQL high-availability node agent').exitOverride();

  program
    .command('run')
    .argument('[config]', 'path of ha.yml (else HA_CONFIGURATION / HA_* variables)')
    .description('run the node agent')
    .action(async (path: string | undefined) => {
      const [{ ConfigError, loadConfig }, { startAgent }] = await Promise.all([
        import('../config/index.ts'),
        import('../node/agent/agent.ts'),
      ]);
      let config;
      try {
        config = await loadConfig(path);
      } catch (e) {
        if (e instanceof ConfigError) fail(e.message, 2);
        throw e;
      }
      const agent = await startAgent(config, { reloadConfig: () => loadConfig(path) }).catch((e: unknown) =>
        fail(`could not start: ${e instanceof Error ? e.message : String(e)}`, 1),
      );
      process.on('SIGHUP', () => {
        loadConfig(path).then(
          (next) =>
            agent
              .reload(next)
              .catch((e: unknown) => process.stderr.write(`reload failed: ${e instanceof Error ? e.message : String(e)}\n`)),
          (e) => process.stderr.write(`reload failed: ${String(e)}\n`),
        );
      });
      onSignals(() => agent.stop());
    });

  const configCommand = program
    .command('config')
    .description("configuration files: check either dialect (ours, or the reference's patroni.yml), convert to ours");
  configCommand
    .command('check')
    .argument('<file>', "a configuration file (ha.yml, or the reference's patroni.yml)")
    .description('validate FILE as `ha run FILE` would (HA_* and PATRONI_* variables applied); every problem named by its field, exit 2')
    .action(async (file: string) => {
      const [{ ConfigError }, { checkConfigText }] = await Promise.all([import('../config/index.ts'), import('../config/load.ts')]);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (e) {
        fail(`${file}: cannot read the file (${e instanceof Error ? e.message : String(e)})`, 2);
      }
      try {
        const r = checkConfigText(text, process.env, file);
        const dcs = r.dcsDialect === r.dialect ? '' : `, bootstrap.dcs in the ${r.dcsDialect} dialect`;
        process.stdout.write(`${file}: valid (${r.dialect} dialect${dcs}): member ${r.config.name} of cluster ${r.config.scope}\n`);
      } catch (e) {
        if (e instanceof ConfigError) fail(e.message, 2);
        throw e;
      }
    });
  configCommand
    .command('convert')
    .argument('<file>', "a configuration file of either dialect (the reference's patroni.yml)")
    .description(
      'print FILE in the native form (postgresql → database, use_pg_rewind → use_db_rewind, …), comments kept; refuses, naming each, the keys that are not implemented; validated as `ha config check` does (exit 2)',
    )
    .action(async (file: string) => {
      const [{ ConfigError }, { checkConfigText }, { convertConfigText }] = await Promise.all([
        import('../config/index.ts'),
        import('../config/load.ts'),
        import('../config/convert.ts'),
      ]);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (e) {
        fail(`${file}: cannot read the file (${e instanceof Error ? e.message : String(e)})`, 2);
      }
      try {
        checkConfigText(text, process.env, file);
        process.stdout.write(convertConfigText(text, file));
      } catch (e) {
        if (e instanceof ConfigError) fail(e.message, 2);
        throw e;
      }
    });

  program
    .command('demo')
    .description('a 3-node cluster on the in-process DCS with real PostgreSQL, in a temporary directory')
    .option('--nodes <n>', 'number of nodes', '3')
    .action(async (o: { nodes: string }) => {
      const { runDemo } = await import('./demo.ts');
      const demo = await runDemo({ nodes: Number(o.nodes), out: (l) => process.stdout.write(l + '\n') }).catch((e: unknown) =>
        fail(e instanceof Error ? e.message : String(e), 1),
      );
      onSignals(() => demo.stop());
    });

  program
    .command('chart')
    .argument('<machine>', `one of ${MACHINE_NAMES.join(', ')}`)
    .option('--format <format>', `one of ${CHART_FORMAT_NAMES.join(', ')}`, 'mermaid')
    .description("print a machine's state chart, generated from its definition")
    .action(async (name: string, o: { format: string }) => {
      if (!(MACHINE_NAMES as readonly string[]).includes(name))
        fail(`unknown machine '${name}': expected one of ${MACHINE_NAMES.join(', ')}`, 2);
      const [{ CHART_FORMATS, chartLayoutOf, chartModel, isChartFormat, renderChart }, { dotToSvg }, all] = await Promise.all([
        import('@ha/machines'),
        import('@ha/machines/svg'),
        machines(),
      ]);
      if (!isChartFormat(o.format)) fail(`unknown format '${o.format}': expected one of ${CHART_FORMATS.join(', ')}`, 2);
      const machine = all[name as MachineName];
      // DOT and SVG in the machine's readable layout, as /ui draws it (docs/charts.md "Layout").
      process.stdout.write((await renderChart(machine, o.format, { dotToSvg, layout: chartLayoutOf(chartModel(machine)) })) + '\n');
    });

  program
    .command('replay')
    .argument('<journal>', 'a journal file (JSON lines)')
    .description("rebuild the machines' states from a journal")
    .action(async (file: string) => {
      const [{ stateName, parseJournal, replayMachine }, all] = await Promise.all([import('@ha/machines'), machines()]);
      const entries = parseJournal(await readFile(file, 'utf8'));
      for (const [name, machine] of Object.entries(all)) {
        const snap = replayMachine(machine, name, entries);
        if (!snap) continue;
        process.stdout.write(`${name}: ${stateName(snap.value)} ${JSON.stringify(snap.context)}\n`);
      }
    });

  program
    .command('simulate')
    .description("deterministic simulation: the agent's own code over random fault schedules (docs/simulation.md)")
    .option('--schedules <n>', 'number of schedules', '100')
    .option('--seed <s>', 'seed of the first schedule (schedule i uses seed S+i)', '1')
    .option('--nodes <k>', 'members per cluster', '3')
    .option('--steps <m>', 'fault steps per schedule (500 ms each)', '60')
    .option(
      '--freeze',
      'draw agent freeze/thaw and agent outages longer than the lease (the default since findings 16 and 17: docs/simulation.md "Freeze")',
    )
    .option('--no-freeze', 'do not draw them: agent outages stay shorter than the lease (the draw before findings 16 and 17)')
    .option(
      '--kinds <list>',
      'draw only these fault kinds (comma-separated: dcs-partition,net-partition,pg-crash,agent-crash,switchover,freeze,heal,slow-loop,net-delay)',
    )
    .option('--faults <json>', 'run this schedule (JSON array, as printed by a failing run) instead of drawing one')
    .option('--journal <file>', "where to write the failing run's journal (JSONL)")
    .option(
      '--sync <mode>',
      'run every schedule in this synchronous mode (off, true, quorum, true+strict, quorum+strict; default: drawn from each seed)',
    )
    .option('--failsafe <on|off|draw>', 'failsafe_mode of every schedule: on, off, or draw (default: drawn from each seed)')
    .option(
      '--quorum-failover <on|off|draw>',
      'quorum_failover_window of every strict schedule: on, off, or draw (default: drawn from each seed)',
    )
    .option('--watchdog <mode>', 'watchdog.mode of every agent (the simulated fence): automatic (default), required, off')
    .option(
      '--workers <n>',
      `worker threads to run the schedules on (default: the machine's cores, here ${availableParallelism()}; 1 runs them in this process); standard output does not depend on it`,
    )
    .action(
      async (o: {
        schedules: string;
        seed: string;
        nodes: string;
        steps: string;
        freeze?: boolean;
        kinds?: string;
        faults?: string;
        journal?: string;
        sync?: string;
        failsafe?: string;
        quorumFailover?: string;
        watchdog?: string;
        workers?: string;
      }) => {
        const int = (name: string, v: string, min: number) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < min) fail(`--${name}: expected an integer >= ${min}, got '${v}'`, 2);
          return n;
        };
        const workers = o.workers === undefined ? availableParallelism() : int('workers', o.workers, 1);
        const { simulate, parseFaults, parseFaultKinds, parseSyncMode, ScheduleFailure } = await import('../sim/run.ts');
        let faults;
        let faultKinds;
        let sync;
        try {
          faults = o.faults !== undefined ? parseFaults(o.faults) : undefined;
          faultKinds = o.kinds !== undefined ? parseFaultKinds(o.kinds) : undefined;
          sync = o.sync !== undefined ? parseSyncMode(o.sync) : undefined;
          if (o.failsafe !== undefined && !['on', 'off', 'draw'].includes(o.failsafe))
            throw new Error(`--failsafe: expected on, off or draw, got '${o.failsafe}'`);
          if (o.quorumFailover !== undefined && !['on', 'off', 'draw'].includes(o.quorumFailover))
            throw new Error(`--quorum-failover: expected on, off or draw, got '${o.quorumFailover}'`);
          if (o.watchdog !== undefined && !['off', 'automatic', 'required'].includes(o.watchdog))
            throw new Error(`--watchdog: expected off, automatic or required, got '${o.watchdog}'`);
        } catch (e) {
          fail(e instanceof Error ? e.message : String(e), 2);
        }
        const summary = await simulate({
          workers,
          schedules: int('schedules', o.schedules, 1),
          seed: int('seed', o.seed, 0),
          nodes: int('nodes', o.nodes, 2),
          steps: int('steps', o.steps, 0),
          freeze: o.freeze !== false,
          ...(faults ? { faults } : {}),
          ...(faultKinds ? { faultKinds } : {}),
          ...(o.journal ? { journalPath: o.journal } : {}),
          ...(sync ? { sync } : {}),
          ...(o.failsafe !== undefined ? { failsafe: o.failsafe === 'draw' ? ('draw' as const) : o.failsafe === 'on' } : {}),
          ...(o.quorumFailover !== undefined
            ? { quorumFailover: o.quorumFailover === 'draw' ? ('draw' as const) : o.quorumFailover === 'on' }
            : {}),
          ...(o.watchdog !== undefined ? { watchdog: o.watchdog as 'off' | 'automatic' | 'required' } : {}),
          out: (l) => process.stdout.write(l + '\n'),
          err: (l) => process.stderr.write(l + '\n'),
        }).catch((e: unknown) => (e instanceof ScheduleFailure ? fail(e.message, 2) : Promise.reject(e)));
        process.exitCode = summary.exitCode;
      },
    );

  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2);
    throw e;
  }
}

main(process.argv).catch((e: unknown) => fail(e instanceof Error ? (e.stack ?? e.message) : String(e), 1));
