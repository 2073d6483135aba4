// A static HTTP server for the wasm suites: serves a folder with single
// Range requests (206 + Content-Range), CORS headers for any origin, and
// faults and latency chosen per request path prefix. It counts requests.
import { createServer } from 'node:http';
import { open, readFile, stat } from 'node:fs/promises';
import { join, normalize, extname } from 'node:path';

const types = { '.wasm': 'application/wasm', '.mjs': 'text/javascript', '.js': 'text/javascript', '.html': 'text/html', '.json': 'application/json' };

/**
 * Starts a server on 127.0.0.1. opts: root (folder), files (extra paths
 * served from memory: { '/page.html': text }), cors (default true),
 * delayMs (added to every request), faults: a function (urlPath) =>
 * undefined | { status } | { noCors: true } | { truncate: true } |
 * { corrupt: true }; gzip (serve FILE.gz for FILE when the client accepts
 * it); cacheControl (default no-cache). It counts requests, bytes and
 * waves (requests arriving while none is in flight), and logs each request
 * (method, path, range, origin; start and end in ms since the last reset).
 * Setting state.hold to a function (urlPath) => a promise or undefined
 * holds each answer until its promise settles.
 */
export async function startServer(opts) {
  const state = { requests: 0, bytes: 0, waves: 0, inFlight: 0, log: [], epoch: performance.now(), faults: opts.faults ?? (() => undefined), delayMs: opts.delayMs ?? 0 };
  const server = createServer(async (req, res) => {
    state.requests++;
    // A wave is a request that arrives while none is in flight: requests
    // issued together count once (dependent round trips).
    if (state.inFlight++ === 0) state.waves++;
    const url = new URL(req.url, 'http://x');
    const path = decodeURIComponent(url.pathname);
    const entry = { method: req.method, path, range: req.headers.range ?? '', origin: req.headers.origin ?? '', start: performance.now() - state.epoch, end: 0 };
    state.log.push(entry);
    res.on('close', () => { state.inFlight--; entry.end = performance.now() - state.epoch; });
    if (state.delayMs) await new Promise((r) => setTimeout(r, state.delayMs));
    if (state.hold) await state.hold(path);
    const fault = state.faults(path) ?? {};
    if (opts.cors !== false && !fault.noCors) {
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.setHeader('Access-Control-Expose-Headers', 'Content-Range, Content-Length, ETag');
    }
    if (req.method === 'OPTIONS') {
      // The module must never need a preflight: make one fail loudly.
      res.writeHead(405); res.end(); return;
    }
    if (req.method !== 'GET') { res.writeHead(405); res.end(); return; }
    if (fault.status) { res.writeHead(fault.status, { 'Content-Type': 'text/plain' }); res.end(`fault ${fault.status}`); return; }
    if (opts.files && path in opts.files) {
      res.writeHead(200, { 'Content-Type': types[extname(path)] ?? 'text/plain', 'Cache-Control': 'no-cache' });
      res.end(opts.files[path]);
      return;
    }
    const file = normalize(join(opts.root, path));
    if (!file.startsWith(normalize(opts.root))) { res.writeHead(403); res.end(); return; }
    let st;
    try { st = await stat(file); } catch { res.writeHead(404); res.end('not found'); return; }
    if (!st.isFile()) { res.writeHead(404); res.end('not found'); return; }
    let start = 0, end = st.size - 1, status = 200;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (req.headers.range && !m) { res.writeHead(400); res.end('only simple ranges'); return; }
    if (m) {
      start = Number(m[1]);
      end = m[2] === '' ? st.size - 1 : Math.min(Number(m[2]), st.size - 1);
      if (start >= st.size) { res.writeHead(416, { 'Content-Range': `bytes */${st.size}` }); res.end(); return; }
      status = 206;
      res.setHeader('Content-Range', `bytes ${start}-${end}/${st.size}`);
    }
    const n = end - start + 1;
    res.setHeader('Content-Type', types[extname(file)] ?? 'application/octet-stream');
    res.setHeader('Cache-Control', opts.cacheControl ?? 'no-cache');
    if (opts.gzip && status === 200 && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) {
      // Precompressed: FILE.gz beside FILE.
      try {
        const gz = await readFile(file + '.gz');
        res.setHeader('Content-Encoding', 'gzip');
        res.setHeader('Content-Length', String(gz.length));
        res.setHeader('ETag', `"${st.size}-${st.mtimeMs}"`);
        if (req.headers['if-none-match'] === `"${st.size}-${st.mtimeMs}"`) { res.writeHead(304); res.end(); return; }
        state.bytes += gz.length;
        res.writeHead(200);
        res.end(gz);
        return;
      } catch { /* no .gz: serve as is */ }
    }
    res.setHeader('Content-Length', String(n));
    const fh = await open(file);
    const buf = Buffer.alloc(n);
    await fh.read(buf, 0, n, start);
    await fh.close();
    if (fault.corrupt) for (let i = 0; i < n; i += 7) buf[i] ^= 0x5a;
    state.bytes += n;
    res.writeHead(status);
    if (fault.truncate) { res.write(buf.subarray(0, Math.floor(n / 2))); res.socket.destroy(); return; }
    res.end(buf);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${server.address().port}`;
  state.close = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
  state.reset = () => { state.requests = 0; state.bytes = 0; state.waves = 0; state.log = []; state.epoch = performance.now(); };
  return state;
}
