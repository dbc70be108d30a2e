import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import { GOOD_YAML } from './fixtures.ts';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

const withRestapi = (extra: string) => GOOD_YAML.replace('  listen: 127.0.0.1:8008', `  listen: 127.0.0.1:8008\n${extra}`);
const withEtcd = (extra: string) => GOOD_YAML.replace('  hosts: [127.0.0.1:2379]', `  hosts: [127.0.0.1:2379]\n${extra}`);

describe('security settings in ha.yml', () => {
  it('reads restapi TLS, authentication, allowlist and headers', () => {
    const c = parseConfig(
      withRestapi(
        [
          '  certfile: /etc/ha/api.pem',
          '  keyfile: /etc/ha/api.key',
          '  cafile: /etc/ha/ca.pem',
          '  verify_client: optional',
          '  authentication: { username: admin, password: "123" }',
          '  allowlist: [10.0.0.0/8, 127.0.0.1]',
          '  allowlist_include_members: true',
          '  https_extra_headers: { Strict-Transport-Security: max-age=31536000 }',
          '  max_body_bytes: 4096',
          '  max_unsafe_requests: 2',
        ].join('\n'),
      ),
      {},
    );
    expect(c.restapi).toMatchObject({
      certfile: '/etc/ha/api.pem',
      verify_client: 'optional',
      authentication: { username: 'admin', password: '123' },
      allowlist: ['10.0.0.0/8', '127.0.0.1'],
      allowlist_include_members: true,
      https_extra_headers: { 'Strict-Transport-Security': 'max-age=31536000' },
      max_body_bytes: 4096,
      max_unsafe_requests: 2,
    });
  });

  it('etcd3 with a CA becomes https; a certificate without key, a user without password are refused', () => {
    expect(parseConfig(withEtcd('  cacert: /etc/ha/etcd-ca.pem'), {}).etcd3.protocol).toBe('https');
    expect(problemsOf(() => parseConfig(withEtcd('  cert: /c.pem\n  username: root'), {}))).toEqual([
      'etcd3.key: required with etcd3.cert',
      'etcd3.password: required with etcd3.username',
    ]);
    expect(problemsOf(() => parseConfig(withEtcd('  protocol: http\n  cacert: /ca.pem'), {}))).toEqual([
      'etcd3.protocol: is http but etcd3.cacert/cert are set; use https',
    ]);
  });

  it('refuses TLS keys without certfile and client verification without a CA', () => {
    expect(problemsOf(() => parseConfig(withRestapi('  keyfile: /k.pem\n  verify_client: required'), {}))).toEqual([
      'restapi.keyfile: needs restapi.certfile (TLS is off without it)',
      'restapi.verify_client: needs restapi.certfile (client certificates need TLS)',
      'restapi.cafile: required with verify_client: required (the CA that signs client certificates)',
    ]);
  });

  it('never shows a numeric password in a problem', () => {
    const problems = problemsOf(() => parseConfig(withRestapi('  authentication: { username: admin, password: 987654321 }'), {}));
    expect(problems).toEqual(['restapi.authentication.password: must be a string (quote it), got a number']);
    expect(problems.join('\n')).not.toContain('987654321');
  });

  it('takes every password and TLS setting from HA_* variables', () => {
    const c = parseConfig(GOOD_YAML, {
      HA_RESTAPI_USERNAME: 'admin',
      HA_RESTAPI_PASSWORD: 'api-pw',
      HA_RESTAPI_CERTFILE: '/etc/ha/api.pem',
      HA_RESTAPI_KEYFILE_PASSWORD: 'key-pw',
      HA_RESTAPI_ALLOWLIST: '10.0.0.1, 10.0.0.2',
      HA_RESTAPI_ALLOWLIST_INCLUDE_MEMBERS: 'true',
      HA_RESTAPI_HTTP_EXTRA_HEADERS: '{X-Frame-Options: DENY}',
      HA_ETCD3_USERNAME: 'root',
      HA_ETCD3_PASSWORD: 'etcd-pw',
      HA_ETCD3_CACERT: '/etc/ha/etcd-ca.pem',
      HA_CTL_USERNAME: 'op',
      HA_CTL_PASSWORD: 'ctl-pw',
      HA_CTL_INSECURE: 'true',
      HA_SUPERUSER_PASSWORD: 'su-pw',
      HA_REPLICATION_PASSWORD: 'repl-pw',
    });
    expect(c.restapi).toMatchObject({
      authentication: { username: 'admin', password: 'api-pw' },
      certfile: '/etc/ha/api.pem',
      keyfile_password: 'key-pw',
      allowlist: ['10.0.0.1', '10.0.0.2'],
      allowlist_include_members: true,
      http_extra_headers: { 'X-Frame-Options': 'DENY' },
    });
    expect(c.etcd3).toMatchObject({ username: 'root', password: 'etcd-pw', protocol: 'https' });
    expect(c.ctl).toEqual({ authentication: { username: 'op', password: 'ctl-pw' }, insecure: true });
    expect(c.database.authentication.superuser.password).toBe('su-pw');
    expect(c.database.authentication.replication.password).toBe('repl-pw');
  });

  it('reports a variable that is not valid YAML without echoing its value', () => {
    const problems = problemsOf(() => parseConfig(GOOD_YAML, { HA_RESTAPI_HTTP_EXTRA_HEADERS: '{X-Secret: hunter2' }));
    expect(problems).toEqual(['restapi.http_extra_headers: HA_RESTAPI_HTTP_EXTRA_HEADERS is not valid YAML']);
    expect(problems.join('\n')).not.toContain('hunter2');
  });
});
