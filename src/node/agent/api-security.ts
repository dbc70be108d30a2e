/**
 * The node API's security settings built from ha.yml (`restapi`, `ctl`): the TLS options of the
 * server, the access policy of the API (src/http/api-guard.ts) and the client settings for
 * member-to-member calls. Built at start and again on every reload (POST /reload, SIGHUP), so
 * rotated certificates and changed credentials apply without a restart.
 */
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import type { AgentConfig } from '../../config/index.ts';
import { compileAllowlist, type Resolve } from '../../http/allowlist.ts';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_UNSAFE_REQUESTS, type ApiGuardPolicy } from '../../http/api-guard.ts';
import type { ApiClientOptions } from '../../net/api-client.ts';
import { readTlsFiles } from '../../net/tls-files.ts';

/** Everything the agent needs to serve and call the API securely. */
export interface ApiSecurity {
  /** TLS options of the server (cert, key, ca, client verification); undefined = plain HTTP. */
  serverTls?: HttpsServerOptions;
  /** The access policy of the API. */
  policy: ApiGuardPolicy;
  /** How this node calls other members (CA, client certificate). */
  memberClient: ApiClientOptions;
  /** `https` with TLS, else `http` (scheme of this member's api_url). */
  scheme: 'http' | 'https';
}

/**
 * Reads the certificate files and compiles the allowlist of `config`.
 * Throws TlsFileError (`restapi.certfile: cannot read <path> (ENOENT)`) or AllowlistError.
 */
export async function buildApiSecurity(config: AgentConfig, resolve?: Resolve): Promise<ApiSecurity> {
  const r = config.restapi;
  const tls = r.certfile !== undefined;
  const server = await readTlsFiles({
    ...(r.certfile !== undefined ? { cert: { key: 'restapi.certfile', path: r.certfile } } : {}),
    ...(r.keyfile !== undefined ? { key: { key: 'restapi.keyfile', path: r.keyfile } } : {}),
    ...(r.cafile !== undefined ? { ca: { key: 'restapi.cafile', path: r.cafile } } : {}),
    ...(r.keyfile_password !== undefined ? { passphrase: r.keyfile_password } : {}),
  });
  const verifyClient = r.verify_client ?? 'none';
  const serverTls: HttpsServerOptions | undefined = tls
    ? {
        ...server,
        // `optional`: ask for a certificate, accept the handshake without one (unsafe requests
        // are refused by the guard); `required`: the handshake fails without a valid one.
        requestCert: verifyClient !== 'none',
        rejectUnauthorized: verifyClient === 'required',
      }
    : undefined;
  const allowlist =
    r.allowlist !== undefined || r.allowlist_include_members === true
      ? await compileAllowlist(r.allowlist ?? [], r.allowlist_include_members === true, resolve)
      : undefined;
  const policy: ApiGuardPolicy = {
    ...(r.authentication ? { authentication: r.authentication } : {}),
    ...(allowlist ? { allowlist } : {}),
    verifyClient,
    extraHeaders: { ...r.http_extra_headers, ...(tls ? r.https_extra_headers : {}) },
    maxBodyBytes: r.max_body_bytes ?? DEFAULT_MAX_BODY_BYTES,
    maxUnsafeRequests: r.max_unsafe_requests ?? DEFAULT_MAX_UNSAFE_REQUESTS,
  };
  return { ...(serverTls ? { serverTls } : {}), policy, memberClient: await memberClientOf(config), scheme: tls ? 'https' : 'http' };
}

/**
 * Client settings for calls to members (patroni.md §1.2, last paragraph): CA `ctl.cacert`, else
 * `restapi.cafile`; client certificate `ctl.certfile`/`keyfile`, else the node's own
 * `restapi.certfile`/`keyfile` (so members with `verify_client: required` accept it);
 * credentials `ctl.authentication`, else `restapi.authentication`; `ctl.insecure` skips
 * verification. Throws TlsFileError for an unreadable file.
 */
export async function memberClientOf(config: AgentConfig): Promise<ApiClientOptions> {
  const r = config.restapi;
  const ctl = config.ctl ?? {};
  const certPath = ctl.certfile ?? r.certfile;
  const keyPath = ctl.certfile !== undefined ? ctl.keyfile : r.keyfile;
  const keyKey = ctl.certfile !== undefined ? 'ctl.keyfile' : 'restapi.keyfile';
  const passphrase = ctl.certfile !== undefined ? ctl.keyfile_password : r.keyfile_password;
  const caPath = ctl.cacert ?? r.cafile;
  const tls = await readTlsFiles({
    ...(certPath !== undefined ? { cert: { key: ctl.certfile !== undefined ? 'ctl.certfile' : 'restapi.certfile', path: certPath } } : {}),
    ...(keyPath !== undefined ? { key: { key: keyKey, path: keyPath } } : {}),
    ...(caPath !== undefined ? { ca: { key: ctl.cacert !== undefined ? 'ctl.cacert' : 'restapi.cafile', path: caPath } } : {}),
    ...(passphrase !== undefined ? { passphrase } : {}),
  });
  const auth = ctl.authentication ?? r.authentication;
  return { tls, ...(ctl.insecure === true ? { insecure: true } : {}), ...(auth ? { auth } : {}) };
}
