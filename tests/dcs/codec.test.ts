import { describe, expect, it } from 'vitest';
import {
  decodeConfig,
  decodeFailover,
  decodeFailsafe,
  decodeHistory,
  decodeInitialize,
  decodeLeader,
  decodeMember,
  decodeStatus,
  decodeSync,
  encodeMember,
  encodeStatus,
  isEmptyFailover,
  parseFailover,
} from '../../src/dcs/codec.ts';
import { clusterPrefix } from '../../src/dcs/dcs.ts';
import { absoluteKey, memberKey, memberNameOf, relativeKey } from '../../src/dcs/keys.ts';
import { buildClusterView, type StoredKv } from '../../src/dcs/view.ts';

const kv = (value: string, modRevision = '5', lease = '0'): StoredKv => ({ value, modRevision, createRevision: '2', lease });

const memberJson =
  '{"conn_url":"postgres://10.0.0.1:5432/postgres","api_url":"http://10.0.0.1:8008/ha","state":"running","role":"replica","version":"0.1.0"}';

describe('keys', () => {
  it('builds and splits keys under the collapsed prefix', () => {
    const p = clusterPrefix('/service/', 'demo');
    expect(p).toBe('/service/demo/');
    expect(absoluteKey(p, memberKey('pg-1'))).toBe('/service/demo/members/pg-1');
    expect(relativeKey(p, '/service/demo/leader')).toBe('leader');
    expect(relativeKey(p, '/service/demo2/leader')).toBeUndefined();
    expect(memberNameOf('members/pg-1')).toBe('pg-1');
    expect(memberNameOf('members/')).toBeUndefined();
    expect(memberNameOf('leader')).toBeUndefined();
  });
});

describe('codec', () => {
  it.each([
    ['valid member', memberJson, true],
    ['member with unknown extra keys', memberJson.replace('}', ',"proxy_url":"x"}'), true],
    ['not JSON', '{"conn_url"', false],
    ['missing state', '{"conn_url":"a","api_url":"b","role":"replica","version":"1"}', false],
    ['unknown state', memberJson.replace('"running"', '"dancing"'), false],
    ['fractional LSN', memberJson.replace('}', ',"xlog_location":1.5}'), false],
    ['JSON array', '[]', false],
  ])('decodes %s: %s', (_name, raw, ok) => {
    expect(decodeMember(raw) !== undefined).toBe(ok);
  });

  it("reads the reference's member key (Patroni 3.0.2) in our words", () => {
    // As Patroni 3.0.2 writes it (ha.py touch_member): role master, states with spaces.
    const ref = (role: string, state: string) =>
      `{"conn_url":"postgres://127.0.0.1:29001/postgres","api_url":"http://127.0.0.1:28001/patroni","state":"${state}","role":"${role}","version":"3.0.2","xlog_location":50331744,"timeline":1}`;
    expect(decodeMember(ref('master', 'running'))).toMatchObject({ role: 'primary', state: 'running', version: '3.0.2', timeline: 1 });
    expect(decodeMember(ref('promoted', 'running'))?.role).toBe('primary');
    expect(decodeMember(ref('demoted', 'stopped'))?.role).toBe('replica');
    expect(decodeMember(ref('replica', 'creating replica'))?.state).toBe('creating_replica');
    expect(decodeMember(ref('replica', 'start failed'))?.state).toBe('start_failed');
    expect(decodeMember(ref('replica', 'restart failed (running)'))?.state).toBe('restart_failed');
    expect(decodeMember(ref('uninitialized', 'initializing new cluster'))?.state).toBe('initdb');
    expect(decodeMember(ref('master', 'running custom bootstrap script'))?.state).toBe('custom_bootstrap');
    expect(decodeMember(ref('replica', 'stop failed'))?.state).toBe('stop_failed');
    // Neither ours nor the reference's: still refused.
    expect(decodeMember(ref('captain', 'running'))).toBeUndefined();
    expect(decodeMember(ref('replica', 'dancing'))).toBeUndefined();
  });

  it('encodes member data as compact JSON and reads it back', () => {
    const data = decodeMember(memberJson)!;
    expect(encodeMember(data)).toBe(memberJson);
  });

  it('treats leader and initialize as plain text', () => {
    expect(decodeLeader('pg-1')).toBe('pg-1');
    expect(decodeLeader('')).toBeUndefined();
    expect(decodeInitialize('')).toBe('');
    expect(decodeInitialize('7412345678901234567')).toBe('7412345678901234567');
    expect(decodeInitialize('"7412"')).toBeUndefined();
  });

  it('reads {} and empty failover as no request', () => {
    expect(decodeFailover('{}')).toEqual({});
    expect(decodeFailover('')).toEqual({});
    expect(isEmptyFailover(decodeFailover(''))).toBe(true);
    expect(decodeFailover('{"member":"pg-2","scheduled_at":"2030-01-01T00:00:00+00:00"}')).toEqual({
      member: 'pg-2',
      scheduled_at: '2030-01-01T00:00:00+00:00',
    });
    expect(isEmptyFailover({ member: 'pg-2' })).toBe(false);
    expect(decodeFailover('{"member":3}')).toBeUndefined();
  });

  it.each([
    ['not JSON', '{"member":', 'not JSON: "{\\"member\\":"'],
    ['null', 'null', 'must be a JSON object, got null'],
    ['a number', '42', 'must be a JSON object, got 42'],
    ['a string', '"pg-2"', 'must be a JSON object, got "pg-2"'],
    ['a list', '["pg-2"]', 'must be a JSON object, got ["pg-2"]'],
    ['leader not a string', '{"leader":1,"member":"pg-2"}', 'leader: must be a string, got 1'],
    ['member not a string', '{"member":["pg-2"]}', 'member: must be a string, got ["pg-2"]'],
    ['both not strings', '{"leader":true,"member":null}', 'leader: must be a string, got true; member: must be a string, got null'],
    ['scheduled_at not a string', '{"member":"pg-2","scheduled_at":1893456000}', 'scheduled_at: must be a string, got 1893456000'],
    ['scheduled_at null', '{"member":"pg-2","scheduled_at":null}', 'scheduled_at: must be a string, got null'],
    ['scheduled_at garbage', '{"leader":"pg-1","scheduled_at":"garbage"}', 'scheduled_at: "garbage" is not an ISO 8601 date-time'],
    ['scheduled_at empty', '{"leader":"pg-1","scheduled_at":""}', 'scheduled_at: "" is not an ISO 8601 date-time'],
    [
      'scheduled_at impossible date',
      '{"member":"pg-2","scheduled_at":"2030-02-30T10:00:00Z"}',
      'scheduled_at: "2030-02-30T10:00:00Z" is not an ISO 8601 date-time',
    ],
    [
      'scheduled_at without offset',
      '{"member":"pg-2","scheduled_at":"2030-01-01T10:00:00"}',
      'scheduled_at: "2030-01-01T10:00:00" has no timezone offset',
    ],
  ])('refuses a failover value that is not a request (%s), naming the field and value', (_name, raw, reason) => {
    expect(parseFailover(raw)).toEqual({ ok: false, reason });
    expect(decodeFailover(raw)).toBeUndefined();
  });

  it('accepts failover requests, with scheduled_at in any ISO 8601 form with an offset (even past)', () => {
    expect(parseFailover('{}')).toEqual({ ok: true, value: {} });
    expect(parseFailover('  ')).toEqual({ ok: true, value: {} });
    expect(parseFailover('{"leader":"pg-1","member":"pg-2"}')).toEqual({ ok: true, value: { leader: 'pg-1', member: 'pg-2' } });
    for (const at of ['2030-01-01T00:00:00Z', '2030-01-01 12:00+02:00', '2030-01-01T10:00:00.250-0130', '2001-01-01T00:00:00+00:00']) {
      expect(parseFailover(JSON.stringify({ member: 'pg-2', scheduled_at: at }))).toEqual({
        ok: true,
        value: { member: 'pg-2', scheduled_at: at },
      });
    }
    // unknown keys are kept (looseObject), as for every key of the layout
    expect(parseFailover('{"member":"pg-2","by":"hactl"}')).toEqual({ ok: true, value: { member: 'pg-2', by: 'hactl' } });
  });

  it('cuts a long value in the reason', () => {
    const r = parseFailover(JSON.stringify({ scheduled_at: 'x'.repeat(500) }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason.length).toBeLessThan(140);
  });

  it('omits empty status parts when encoding and validates on decoding', () => {
    expect(encodeStatus({ optime: 10, slots: {}, retain_slots: [] })).toBe('{"optime":10}');
    expect(encodeStatus({ optime: 10, slots: { s: 9 }, retain_slots: ['s'] })).toBe('{"optime":10,"slots":{"s":9},"retain_slots":["s"]}');
    expect(decodeStatus('{"optime":10,"slots":{"s":9}}')).toEqual({ optime: 10, slots: { s: 9 } });
    expect(decodeStatus('{"slots":{}}')).toBeUndefined();
  });

  it('decodes sync, history, config and failsafe', () => {
    expect(decodeSync('{"leader":"a","sync_standby":null}')).toEqual({ leader: 'a', sync_standby: null });
    expect(decodeSync('{"leader":"a","sync_standby":"b,c","quorum":1}')).toEqual({ leader: 'a', sync_standby: 'b,c', quorum: 1 });
    expect(decodeSync('{"leader":"a"}')).toBeUndefined();
    expect(decodeHistory('[]')).toEqual([]);
    expect(decodeHistory('[[1,100,"no recovery target specified"],[2,200,"x","2024-01-01T00:00:00+00:00","b"]]')).toEqual([
      [1, 100, 'no recovery target specified'],
      [2, 200, 'x', '2024-01-01T00:00:00+00:00', 'b'],
    ]);
    expect(decodeHistory('[[1,"x"]]')).toBeUndefined();
    expect(decodeConfig('{"ttl":30}')).toEqual({ ttl: 30 });
    expect(decodeConfig('[1]')).toBeUndefined();
    expect(decodeFailsafe('{"a":"http://a/ha"}')).toEqual({ a: 'http://a/ha' });
    expect(decodeFailsafe('{"a":1}')).toBeUndefined();
  });
});

describe('buildClusterView', () => {
  it('parses every key, sorts members and skips what does not parse', () => {
    const raw = new Map<string, StoredKv>([
      ['members/pg-2', kv(memberJson)],
      ['members/pg-1', kv(memberJson)],
      ['members/bad', kv('{')],
      ['leader', kv('pg-1', '9', '7587869000000000001')],
      ['initialize', kv('7412')],
      ['config', kv('{"ttl":30}', '3')],
      ['failover', kv('{}', '4')],
      ['optime/leader', kv('123')],
      ['history', kv('nonsense')],
    ]);
    const view = buildClusterView(raw);
    expect(view.members.map((m) => m.name)).toEqual(['pg-1', 'pg-2']);
    expect(view.leader).toEqual({ name: 'pg-1', leaseId: '7587869000000000001', revision: '9', createRevision: '2' });
    expect(view.initialize).toBe('7412');
    expect(view.config).toEqual({ value: { ttl: 30 }, revision: '3' });
    expect(view.failover).toEqual({ value: {}, revision: '4' });
    expect(view.failoverInvalid).toBeUndefined();
    expect(view.history).toBeUndefined();
  });

  it('keeps a valid failover request as failover', () => {
    const view = buildClusterView(
      new Map([['failover', kv('{"leader":"pg-1","member":"pg-2","scheduled_at":"2030-01-01T00:00:00+00:00"}', '8')]]),
    );
    expect(view.failover).toEqual({ value: { leader: 'pg-1', member: 'pg-2', scheduled_at: '2030-01-01T00:00:00+00:00' }, revision: '8' });
    expect(view.failoverInvalid).toBeUndefined();
  });

  it.each([
    ['garbage scheduled_at', '{"leader":"pg-1","scheduled_at":"now please"}', 'scheduled_at: "now please" is not an ISO 8601 date-time'],
    ['member not a string', '{"member":7}', 'member: must be a string, got 7'],
    ['not an object', '"pg-2"', 'must be a JSON object, got "pg-2"'],
    ['not JSON', 'pg-2', 'not JSON: "pg-2"'],
  ])('puts a failover value that is not a request (%s) in failoverInvalid, never in failover', (_name, value, reason) => {
    const view = buildClusterView(new Map([['failover', kv(value, '12')]]));
    expect(view.failover).toBeUndefined();
    expect(view.failoverInvalid).toEqual({ reason, revision: '12' });
  });
});
