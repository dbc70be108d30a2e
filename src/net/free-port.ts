/** Free TCP ports on 127.0.0.1, picked at run time by binding port 0 (demo, tests). */
import { createServer } from 'node:net';

/** Returns a port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** `n` distinct free ports. */
export async function freePorts(n: number): Promise<number[]> {
  const out = new Set<number>();
  while (out.size < n) out.add(await freePort());
  return [...out];
}
