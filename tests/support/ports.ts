/** Free TCP ports on 127.0.0.1, picked at run time (the same helper the demo uses). */
export { freePort, freePorts } from '../../src/net/free-port.ts';
