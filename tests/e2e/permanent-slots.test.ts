/**
 * Permanent replication slots (issue 14, docs/ha.md "Replication slots") on real etcd, PostgreSQL
 * 15 and agents: a permanent logical slot (`slots: {cdc: {type: logical, ...}}`) is created on
 * the leader, copied to the replicas (state file + restart) and advanced there from
 * `status.slots`; after a failover (kill -9 of the leader's agent and postmaster) and after a
 * switchover the new primary holds the slot and every change the consumer had not confirmed is
 * still decoded, with the changes made afterwards. Also: `ignore_slots`, `status` (`slots`,
 * `retain_slots`) and the lost member's slot kept on the new leader (member_slots_ttl).
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';
import { loseMember } from './support/sync.ts';

const lsnNum = (s: string): bigint => {
  const [hi, lo] = s.trim().split('/');
  return (BigInt('0x' + hi) << 32n) + BigInt('0x' + lo);
};

async function slotRow(c: TestCluster, name: string, slot: string): Promise<string> {
  return (
    await c
      .psql(
        name,
        `select slot_type || ' ' || coalesce(confirmed_flush_lsn::text, restart_lsn::text, '') from pg_replication_slots where slot_name = '${slot}'`,
      )
      .catch(() => '')
  ).trim();
}

/** Waits until `name` holds `slot` of `type` at or past `lsn`. */
async function waitSlotAt(c: TestCluster, name: string, slot: string, type: string, lsn: bigint, ms = 120_000): Promise<void> {
  await waitFor(
    async () => {
      const r = await slotRow(c, name, slot);
      return r.startsWith(type + ' ') && lsnNum(r.split(' ')[1]!) >= lsn;
    },
    ms,
    `${slot} on ${name} at ${lsn}`,
  );
}

const changes = async (c: TestCluster, name: string): Promise<string> =>
  c.psql(
    name,
    "select string_agg(data, E'\\n') from pg_logical_slot_get_changes('cdc', null, null) where data like 'table public.t:%'",
    15_000,
  );

describe('permanent slots', () => {
  it(
    'a permanent logical slot survives a failover and a switchover without skipping unconfirmed changes',
    { timeout: 420_000 },
    async () => {
      const c = await TestCluster.create({
        nodes: 3,
        ttl: 10,
        loopWait: 2,
        retryTimeout: 3,
        dcsExtra: [
          'slots: {cdc: {type: logical, database: postgres, plugin: test_decoding}, keep_phys: {type: physical}}',
          'database: { parameters: { wal_level: logical }, remove_data_directory_on_diverged_timelines: true }',
          'ignore_slots: [{name: ext_keep, type: logical}]',
        ],
      });
      try {
        c.startAll();
        const first = await c.settled();
        const [r1, r2] = c.nodes.map((n) => n.name).filter((n) => n !== first) as [string, string];
        await c.waitForStreaming([r1, r2]);
        await waitFor(async () => (await slotRow(c, first, 'cdc')).startsWith('logical'), 60_000, 'cdc on the leader');
        expect(await slotRow(c, first, 'keep_phys')).toMatch(/^physical/);
        // ignore_slots: a slot it matches stays; an unknown inactive one is dropped.
        await c.psql(
          first,
          "select pg_create_logical_replication_slot('ext_keep', 'test_decoding'), pg_create_logical_replication_slot('stray', 'test_decoding')",
        );
        await waitFor(async () => (await slotRow(c, first, 'stray')) === '', 30_000, 'stray dropped');
        expect(await slotRow(c, first, 'ext_keep')).toMatch(/^logical/);
        // status: the cdc position and retain_slots naming every member.
        await waitFor(
          async () => {
            const st = JSON.parse((await c.etcdGet('status')) ?? '{}');
            return typeof st.slots?.cdc === 'number' && JSON.stringify(st.retain_slots) === JSON.stringify(['node1', 'node2', 'node3']);
          },
          30_000,
          'status with slots.cdc and retain_slots',
        );
        await c.psql(first, 'create table t (id int primary key)');
        await c.psql(first, 'insert into t values (1), (2)');
        // A replica copies the slot only once its own WAL holds the slot's restart_lsn (docs/ha.md
        // "Replication slots", as the reference on PostgreSQL < 17). The slot may have been created
        // before the replicas' base backups, and its restart_lsn moves only when decoding passes a
        // running-transactions record: a CHECKPOINT logs one (LogStandbySnapshot), and consuming
        // past it moves restart_lsn after the base backups. Without it the copy waited on the
        // bgwriter's 15 s snapshots and the consumer's timing (2 CI runs in 5 timed out here).
        const afterBackups = lsnNum(await c.psql(first, 'select pg_current_wal_lsn()'));
        await c.psql(first, 'checkpoint');
        await c.psql(first, 'insert into t values (0)');
        const seen1 = await changes(c, first);
        expect(seen1).toContain('id[integer]:1');
        expect(seen1).toContain('id[integer]:2');
        // One consuming call moves restart_lsn at most to the first running-transactions record it
        // decodes: PostgreSQL keeps one restart candidate at a time and applies it when the call
        // confirms (LogicalIncreaseRestartDecodingForSlot). With several such records between the
        // slot's creation and the checkpoint, one call left restart_lsn before the base backups and
        // the copy was refused for the whole wait (3 runs in 4, stop 37). A consumer that keeps
        // consuming, as a real one does, moves it past them.
        for (let i = 0; i < 10; i++) {
          const restart = (await c.psql(first, "select restart_lsn from pg_replication_slots where slot_name = 'cdc'")).trim();
          if (lsnNum(restart) >= afterBackups) {
            console.log(`permanent slots: cdc's restart_lsn ${restart} past the base backups after ${i} more consuming calls`);
            break;
          }
          await c.psql(first, 'checkpoint');
          await c.psql(first, "select pg_logical_emit_message(false, 'tick', 'x')");
          await changes(c, first);
        }
        const confirmed = lsnNum(
          (await c.psql(first, "select confirmed_flush_lsn from pg_replication_slots where slot_name = 'cdc'")).trim(),
        );
        await c.psql(first, 'insert into t values (3)'); // not consumed before the failover
        // Both replicas copy the slot (restart) and advance it to what the consumer confirmed. A copy
        // is tried at most every 30 s (replica-slots.ts COPY_INTERVAL_MS), and its interval doubles
        // after a copy that did not load: up to 30 + 60 + 120 s with one refusal and one retry.
        for (const r of [r1, r2]) {
          await waitSlotAt(c, r, 'cdc', 'logical', confirmed, 240_000).catch((e: unknown) => {
            const lines = c
              .node(r)
              .output.split('\n')
              .filter((l) => /slot|restart|cdc/i.test(l))
              .slice(-40);
            throw new Error(`${String(e)}\n${r}'s last log lines about slots and restarts:\n${lines.join('\n')}`);
          });
        }
        await waitFor(async () => (await slotRow(c, r1, 'keep_phys')).startsWith('physical'), 30_000, 'keep_phys on a replica');
        for (const r of [r1, r2]) {
          expect(c.node(r).output).toContain('copied logical slot cdc from');
          expect((await c.psql(r, 'show hot_standby_feedback')).trim()).toBe('on');
        }

        // Failover: kill -9 of the leader's agent and postmaster.
        await loseMember(c, first);
        const second = await c.waitForLeader(90_000, first);
        await waitFor(async () => (await c.get(second, '/primary')).status === 200, 60_000, `${second} primary`);
        expect(await slotRow(c, second, 'cdc')).toMatch(/^logical/);
        // member_slots_ttl: the lost member's slot is kept on the new leader while it is away.
        await waitFor(async () => (await slotRow(c, second, first)).startsWith('physical'), 30_000, `slot ${first} retained on ${second}`);
        await c.psql(second, 'insert into t values (4)');
        const seen2 = await changes(c, second);
        expect(seen2).toContain('id[integer]:3'); // unconfirmed before the failover: not skipped
        expect(seen2).toContain('id[integer]:4');

        // The lost member comes back; then a switchover to the remaining replica.
        c.start(first);
        const third = second === r1 ? r2 : r1;
        await c.psql(second, 'insert into t values (5)'); // not consumed before the switchover
        const confirmed2 = lsnNum(
          (await c.psql(second, "select confirmed_flush_lsn from pg_replication_slots where slot_name = 'cdc'")).trim(),
        );
        await waitSlotAt(c, third, 'cdc', 'logical', confirmed2);
        await c.settled(120_000);
        const sw = await c.post(second, '/switchover', { leader: second, candidate: third });
        expect(sw.status, sw.body).toBe(200);
        await waitFor(async () => (await c.get(third, '/primary')).status === 200, 90_000, `${third} primary`);
        await c.psql(third, 'insert into t values (6)');
        const seen3 = await changes(c, third);
        expect(seen3).toContain('id[integer]:5');
        expect(seen3).toContain('id[integer]:6');
        expect(seen3).not.toContain('id[integer]:4'); // confirmed on the previous primary and published
      } finally {
        await c.destroy();
      }
    },
  );
});
