/**
 * Certificate files read into Node's TLS options. Files are read afresh on every call, so a
 * rotated certificate is picked up by the next call (POST /reload, SIGHUP, the next hactl run).
 * Errors name the configuration key and the path, never a file's content or a passphrase.
 */
import { readFile } from 'node:fs/promises';

/** PEM contents for a TLS server or client (Node's `SecureContextOptions` subset). */
export interface TlsMaterial {
  cert?: Buffer;
  key?: Buffer;
  passphrase?: string;
  ca?: Buffer;
}

/** Paths of the PEM files, each labelled with the configuration key it came from. */
export interface TlsFiles {
  cert?: { key: string; path: string };
  key?: { key: string; path: string };
  ca?: { key: string; path: string };
  /** Passphrase of the key (a secret: never placed in an error). */
  passphrase?: string;
}

/** Error reading a certificate file: `<config key>: cannot read <path> (<code>)`. */
export class TlsFileError extends Error {
  override readonly name = 'TlsFileError';
}

async function readPem(f: { key: string; path: string }): Promise<Buffer> {
  try {
    return await readFile(f.path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new TlsFileError(`${f.key}: cannot read ${f.path} (${code})`, { cause: e });
  }
}

/**
 * Reads the files of `files`. A `cert` without `key` uses the cert file as the key too (one PEM
 * holding both, as the reference allows). Throws TlsFileError naming the key and path.
 */
export async function readTlsFiles(files: TlsFiles): Promise<TlsMaterial> {
  const out: TlsMaterial = {};
  if (files.cert) {
    out.cert = await readPem(files.cert);
    out.key = await readPem(files.key ?? files.cert);
  }
  if (files.ca) out.ca = await readPem(files.ca);
  if (files.passphrase !== undefined) out.passphrase = files.passphrase;
  return out;
}
