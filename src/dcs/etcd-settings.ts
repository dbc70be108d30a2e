/**
 * The etcd connection settings (ha.yml's `etcd3` section has this shape) turned into the
 * client's security settings: certificate files read (afresh on every call), etcd user and
 * password. Used by the agent and by hactl. The DCS layer names the settings it reads itself
 * (EtcdSettings): it does not import the configuration module.
 */
import { readTlsFiles } from '../net/tls-files.ts';
import { securedHosts, type EtcdSecurity } from './etcd-client.ts';

/**
 * The etcd settings this module reads, as ha.yml's `etcd3` section has them (src/config's
 * Etcd3Config is one): the endpoints (`host:port`), the protocol (`https` when `cacert` or `cert`
 * is set, unless given), the paths of the PEM files (CA bundle, client certificate for etcd's
 * `--client-cert-auth`, its key) and the etcd user with its password (secret).
 */
export type EtcdSettings = { hosts: string[]; protocol?: 'http' | 'https' } & Partial<
  Record<'cacert' | 'cert' | 'key' | 'username' | 'password', string>
>;

/**
 * Reads the files named by `etcd3.cacert`, `etcd3.cert`, `etcd3.key`.
 * Throws TlsFileError (`etcd3.cacert: cannot read <path> (ENOENT)`) when a file cannot be read.
 */
export async function etcdSecurityOf(etcd3: EtcdSettings): Promise<EtcdSecurity> {
  const files = await readTlsFiles({
    ...(etcd3.cert !== undefined ? { cert: { key: 'etcd3.cert', path: etcd3.cert } } : {}),
    ...(etcd3.key !== undefined ? { key: { key: 'etcd3.key', path: etcd3.key } } : {}),
    ...(etcd3.cacert !== undefined ? { ca: { key: 'etcd3.cacert', path: etcd3.cacert } } : {}),
  });
  return {
    ...(etcd3.protocol !== undefined ? { protocol: etcd3.protocol } : {}),
    ...(files.ca ? { ca: files.ca } : {}),
    ...(files.cert ? { cert: files.cert } : {}),
    ...(files.key ? { key: files.key } : {}),
    ...(etcd3.username !== undefined ? { auth: { username: etcd3.username, password: etcd3.password ?? '' } } : {}),
  };
}

/**
 * The etcd endpoints and security settings of `etcd3`: pass both to createDcs
 * (`{ kind: 'etcd3', hosts, security }`). Throws TlsFileError as {@link etcdSecurityOf}.
 */
export async function etcdBackendOf(etcd3: EtcdSettings): Promise<{ hosts: string[]; security: EtcdSecurity }> {
  const security = await etcdSecurityOf(etcd3);
  return { hosts: securedHosts(etcd3.hosts, security), security };
}
