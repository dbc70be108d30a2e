import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { clusterDocumentOf, clusterTitle, listFooter, listRows, renderList } from '../../src/ctl/list.ts';
import { renderPretty, renderTsv } from '../../src/ctl/table.ts';
import { memberData, threeNodeView } from './fixtures.ts';

describe('tables', () => {
  it('pretty: borders, title in the top border, numbers right-aligned', () => {
    const lines = renderPretty(
      ['Name', 'N'],
      [
        ['a', 1],
        ['bbbbbb', 22],
        ['c', undefined],
      ],
      'T',
    );
    expect(lines).toEqual([
      '+ T -----+----+',
      '| Name   | N  |',
      '+--------+----+',
      '| a      |  1 |',
      '| bbbbbb | 22 |',
      '| c      |    |',
      '+--------+----+',
    ]);
  });

  it('pretty: a title longer than the table extends the top border', () => {
    expect(renderPretty(['A'], [], 'a long title')[0]).toBe('+ a long title +');
  });

  it('tsv: header and rows, tabs in cells become spaces', () => {
    expect(renderTsv(['a', 'b'], [['x\ty', 2]])).toEqual(['a\tb', 'x y\t2']);
  });
});

describe('list', () => {
  it('rows: roles, states, host:port when ports differ from 5432, lags in MB', () => {
    const { columns, rows } = listRows(threeNodeView(), 'demo', { extended: false });
    expect(columns).toEqual(['Cluster', 'Member', 'Host', 'Role', 'State', 'TL', 'Receive LSN', 'Receive Lag', 'Replay LSN', 'Replay Lag']);
    expect(rows[0]).toEqual({ Cluster: 'demo', Member: 'node1', Host: '127.0.0.1:5432', Role: 'Leader', State: 'running', TL: 1 });
    expect(rows[1]).toMatchObject({ Role: 'Replica', State: 'streaming', 'Receive LSN': '0/3000000', 'Receive Lag': 0 });
    expect(rows[2]).toMatchObject({ 'Replay LSN': '0/2E00000', 'Replay Lag': 2 });
  });

  it('sync standby role while synchronous_mode is on; hosts without port when all are 5432 on distinct hosts', () => {
    const v = threeNodeView({
      config: { value: { synchronous_mode: true }, revision: '3' },
      sync: { value: { leader: 'node1', sync_standby: 'node2' }, revision: '4' },
    });
    v.members = v.members.map((m, i) => ({ ...m, data: { ...m.data, conn_url: `postgres://10.0.0.${i + 1}:5432/postgres` } }));
    const { rows } = listRows(v, 'demo', { extended: false });
    expect(rows.map((r) => r['Role'])).toEqual(['Leader', 'Sync Standby', 'Replica']);
    expect(rows.map((r) => r['Host'])).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
  });

  it('pending restart, scheduled restart and tags columns appear when a member has them, or with --extended', () => {
    const v = threeNodeView();
    v.members[1]!.data = {
      ...v.members[1]!.data,
      pending_restart: true,
      pending_restart_reason: { max_connections: { old_value: '100', new_value: '120' } },
      scheduled_restart: { schedule: '2030-01-01T00:00:00+00:00' },
      tags: { zone: 'east', nofailover: true },
    };
    const { columns, rows } = listRows(v, 'demo', { extended: false });
    expect(columns.slice(10)).toEqual(['Pending restart', 'Pending restart reason', 'Scheduled restart', 'Tags']);
    expect(rows[1]).toMatchObject({
      'Pending restart': '*',
      'Pending restart reason': 'max_connections: 100->120',
      'Scheduled restart': '2030-01-01T00:00:00+00:00',
      Tags: 'zone: east, nofailover: true',
    });
    expect(listRows(threeNodeView(), 'demo', { extended: true }).columns).toHaveLength(14);
  });

  it('title: system identifier, initializing or uninitialized', () => {
    expect(clusterTitle(threeNodeView(), 'demo')).toBe('Cluster: demo (7300000000000000001)');
    expect(clusterTitle({ members: [], initialize: '' }, 'demo')).toBe('Cluster: demo (initializing)');
    expect(clusterTitle({ members: [] }, 'demo')).toBe('Cluster: demo (uninitialized)');
  });

  it('footer: maintenance mode and a scheduled switchover with aligned from/to', () => {
    const v = threeNodeView({
      config: { value: { pause: true }, revision: '2' },
      failover: { value: { leader: 'node1', member: 'node2', scheduled_at: '2030-01-01T10:00:00+00:00' }, revision: '9' },
    });
    expect(listFooter(v, 'demo')).toEqual([
      ' Maintenance mode: on',
      ' Switchover scheduled at: 2030-01-01T10:00:00+00:00',
      '                    from: node1',
      '                      to: node2',
    ]);
    const pretty = renderList(v, 'demo', { format: 'pretty', extended: false });
    expect(pretty[0]).toMatch(/^\+ Cluster: demo \(7300000000000000001\) /);
    expect(pretty[1]).toBe('| Member | Host           | Role    | State     | TL | Receive LSN | Lag | Replay LSN | Lag |');
    expect(pretty.at(-4)).toBe(' Maintenance mode: on');
  });

  it('json and yaml give the same rows; an empty cluster is []', () => {
    const json = JSON.parse(renderList(threeNodeView(), 'demo', { format: 'json', extended: false })[0]!);
    const yaml = YAML.parse(renderList(threeNodeView(), 'demo', { format: 'yaml', extended: false }).join('\n'));
    expect(yaml).toEqual(json);
    expect(renderList({ members: [] }, 'demo', { format: 'yaml', extended: false })).toEqual(['[]']);
    expect(renderList({ members: [] }, 'demo', { format: 'json', extended: false })).toEqual(['[]']);
  });

  it('state: a running replica that does not stream shows for how long (nowMs from the options)', () => {
    const now = Date.UTC(2030, 0, 1, 12, 0, 0);
    const v = threeNodeView();
    v.members[1]!.data = memberData(5433, { not_streaming_since: new Date(now - 42_000).toISOString() });
    const { rows } = listRows(v, 'demo', { extended: false, nowMs: now });
    expect(rows[1]!['State']).toBe('running, not streaming for 42 s');
    expect(listRows(v, 'demo', { extended: false, nowMs: now + 60_000 }).rows[1]!['State']).toBe('running, not streaming for 102 s');
    // The other members are untouched.
    expect(rows[0]!['State']).toBe('running');
    expect(rows[2]!['State']).toBe('streaming');
    const json = JSON.parse(renderList(v, 'demo', { format: 'json', extended: false })[0]!) as Array<Record<string, unknown>>;
    expect(json[1]!['State']).toMatch(/^running, not streaming for \d+ s$/);
  });

  it('state: a member in a long operation shows its progress line from the member key (issue 25)', () => {
    const v = threeNodeView();
    v.members[2]!.data = memberData(5434, {
      state: 'creating_replica',
      progress: 'clone basebackup: copying from node1 1.2 GB / 5.0 GB (24%)',
    });
    const { rows } = listRows(v, 'demo', { extended: false });
    expect(rows[2]!['State']).toBe('creating replica, clone basebackup: copying from node1 1.2 GB / 5.0 GB (24%)');
    expect(clusterDocumentOf(v, 'demo').members[2]!.progress).toBe('clone basebackup: copying from node1 1.2 GB / 5.0 GB (24%)');
  });

  it("state: a diverged member shows ', diverged'; both marks combine", () => {
    const now = Date.UTC(2030, 0, 1, 12, 0, 0);
    const v = threeNodeView();
    v.members[2]!.data = memberData(5434, {
      state: 'stopped',
      diverged: 'diverged from leader node1: local WAL (600) goes past the switch point (500) of timeline 1',
    });
    v.members[1]!.data = memberData(5433, { not_streaming_since: new Date(now - 5_000).toISOString(), diverged: 'x' });
    const { rows } = listRows(v, 'demo', { extended: false, nowMs: now });
    expect(rows[2]!['State']).toBe('stopped, diverged');
    expect(rows[1]!['State']).toBe('running, not streaming for 5 s, diverged');
    expect(rows[0]!['State']).toBe('running');
    const pretty = renderList(v, 'demo', { format: 'pretty', extended: false }).join('\n');
    expect(pretty).toContain('stopped, diverged');
  });

  it('a failed database action: its reason under the table, and as Failure in json (issue 30, item 2)', () => {
    const v = threeNodeView();
    const failure = "initdb failed: the PostgreSQL user 'postgres' cannot reach /var/tmp/ha-demo/n3/data";
    v.members[2]!.data = memberData(5434, { state: 'initdb_failed', role: 'uninitialized', failure });
    const pretty = renderList(v, 'demo', { format: 'pretty', extended: false });
    expect(pretty.some((l) => l.includes('initdb failed |') || l.includes('initdb failed '))).toBe(true);
    expect(pretty).toContain(` node3: ${failure}`);
    const json = JSON.parse(renderList(v, 'demo', { format: 'json', extended: false })[0]!) as Array<Record<string, unknown>>;
    expect(json[2]!['Failure']).toBe(failure);
    expect(json[0]!['Failure']).toBeUndefined();
    expect(listFooter(threeNodeView(), 'demo')).toEqual([]);
  });

  it('topology: replicas under the leader, replicatefrom under their upstream', () => {
    const v = threeNodeView();
    v.members.push({ name: 'node0', data: memberData(5435, { tags: { replicatefrom: 'node3' } }) });
    v.members.sort((a, b) => a.name.localeCompare(b.name));
    const { rows } = listRows(v, 'demo', { extended: false, topology: true });
    expect(rows.map((r) => r['Member'])).toEqual(['node1', '+ node2', '+ node3', '  + node0']);
  });
});
