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
    expect(view.leader).toEqual({ name: 'pg-1', leaseId: '7587869000000000001', revision: '9' });
    expect(view.initialize).toBe('7412');
    expect(view.config).toEqual({ value: { ttl: 30 }, revision: '3' });
    expect(view.failover).toEqual({ value: {}, revision: '4' });
    expect(view.history).toBeUndefined();
  });
});
