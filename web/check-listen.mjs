// `make run` checks its LISTEN address with this before it builds anything:
// node web/check-listen.mjs HOST:PORT exits 0 when kv0 could listen there
// now, else prints why and exits 1.
import { createServer } from 'node:net';

const addr = process.argv[2] ?? '';
const m = /^\[?([^\]]*)\]?:(\d+)$/.exec(addr);
if (!m) {
  console.error(`make run: LISTEN=${addr} is not HOST:PORT (e.g. LISTEN=127.0.0.1:8080)`);
  process.exit(1);
}
const [, host, port] = m;
const srv = createServer();
srv.once('error', (err) => {
  const why = err.code === 'EADDRINUSE' ? 'it is in use (another make run or kv0 serve?)' : `${err.code ?? err.message}`;
  console.error(`make run: cannot listen on ${addr}: ${why}; choose another with make run LISTEN=127.0.0.1:8081`);
  process.exit(1);
});
srv.listen({ host: host || undefined, port: Number(port), exclusive: true }, () => srv.close());
