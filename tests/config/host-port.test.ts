import { describe, expect, it } from 'vitest';
import { formatHostPort, HostPortError, parseHostPort } from '../../src/config/host-port.ts';

describe('parseHostPort', () => {
  it.each([
    ['127.0.0.1:5432', { host: '127.0.0.1', port: 5432 }],
    ['db1.example.com:1', { host: 'db1.example.com', port: 1 }],
    ['[::1]:65535', { host: '::1', port: 65535 }],
    ['*:5432', { host: '*', port: 5432 }],
    [' 10.0.0.1:2379 ', { host: '10.0.0.1', port: 2379 }],
  ])('parses %s', (text, expected) => {
    expect(parseHostPort(text)).toEqual(expected);
  });

  it.each([
    ['etcd2', 'port missing'],
    [':5432', 'host missing'],
    ['h:0', 'port 0 is outside 1..65535'],
    ['h:70000', 'port 70000 is outside 1..65535'],
    ['h:54x', 'port "54x" is not an integer'],
    ['h:-1', 'port "-1" is not an integer'],
    ['::1:5432', 'write IPv6 hosts in brackets'],
    ['[::1:5432', 'without closing'],
    ['my host:5432', 'host contains whitespace'],
  ])('refuses %s', (text, why) => {
    expect(() => parseHostPort(text)).toThrow(HostPortError);
    expect(() => parseHostPort(text)).toThrow(why);
  });

  it('formats back, bracketing IPv6 hosts', () => {
    expect(formatHostPort({ host: '::1', port: 8008 })).toBe('[::1]:8008');
    expect(formatHostPort(parseHostPort('127.0.0.1:8008'))).toBe('127.0.0.1:8008');
  });
});
