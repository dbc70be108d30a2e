/**
 * Test certificates made with `openssl` into a temp dir: one CA, a server certificate for
 * 127.0.0.1/localhost (used by etcd and the agents), and client certificates. An "other" CA
 * signs a client certificate that our CA must refuse. The caller removes the dir.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '../../support/processes.ts';

/** Paths of the PEM files. */
export interface TestCerts {
  dir: string;
  ca: string;
  caKey: string;
  /** Server certificate with SAN IP:127.0.0.1, IP:127.0.0.2, DNS:localhost (also usable as a client certificate). */
  serverCert: string;
  serverKey: string;
  /** A client certificate signed by the CA (CN `client`). */
  clientCert: string;
  clientKey: string;
  /** A client certificate signed by another CA (refused). */
  rogueCert: string;
  rogueKey: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run('openssl', args, { cwd });
}

async function signed(dir: string, name: string, cn: string, caCert: string, caKey: string, ext: string): Promise<void> {
  await openssl(
    ['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`],
    dir,
  );
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      caCert,
      '-CAkey',
      caKey,
      '-CAcreateserial',
      '-days',
      '2',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    ],
    dir,
  );
}

/** Makes the CA and the certificates in `dir` (which must exist). */
export async function makeCerts(dir: string): Promise<TestCerts> {
  for (const ca of ['ca', 'other-ca']) {
    await openssl(
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${ca}.key`,
        '-out',
        `${ca}.pem`,
        '-days',
        '2',
        '-subj',
        `/CN=ha test ${ca}`,
      ],
      dir,
    );
  }
  const both = 'extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,IP:127.0.0.2,DNS:localhost\n';
  await signed(dir, 'server', 'localhost', 'ca.pem', 'ca.key', both);
  await signed(dir, 'client', 'client', 'ca.pem', 'ca.key', 'extendedKeyUsage=clientAuth\n');
  await signed(dir, 'rogue', 'client', 'other-ca.pem', 'other-ca.key', 'extendedKeyUsage=clientAuth\n');
  const p = (f: string) => join(dir, f);
  return {
    dir,
    ca: p('ca.pem'),
    caKey: p('ca.key'),
    serverCert: p('server.pem'),
    serverKey: p('server.key'),
    clientCert: p('client.pem'),
    clientKey: p('client.key'),
    rogueCert: p('rogue.pem'),
    rogueKey: p('rogue.key'),
  };
}
