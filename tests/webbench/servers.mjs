// The servers of the dashboard benchmarks: a static server (folders
// mounted at URL prefixes, single Range requests, precompressed .br/.gz,
// CORS) and a reverse proxy in front of kv0 serve. Both add delayMs to
// every request before answering and log each request (arrival time, path,
// bytes of the body sent), so that a benchmark counts what a page needed.
import { createServer, request as httpRequest } from 'node:http';
import { open, stat } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm', '.svg': 'image/svg+xml',
};

function counters(delayMs) {
  const st = { delayMs, log: [], inFlight: 0 };
  st.reset = () => { st.log = []; };
  // Requests that arrived at or before t (ms since the epoch), and their bytes.
  st.upTo = (t = Infinity) => {
    const l = st.log.filter((e) => e.at <= t);
    return { requests: l.length, bytes: l.reduce((s, e) => s + e.bytes, 0), waves: l.filter((e) => e.wave).length, paths: l.map((e) => e.path), entries: l };
  };
  return st;
}

// Logs a request. A wave is a request that arrives while none is in
// flight: requests issued together count once, so waves count the
// dependent round trips a page needed.
function arrive(st, req, res) {
  const entry = { at: Date.now(), path: req.url, bytes: 0, wave: st.inFlight === 0 };
  st.inFlight++;
  res.on('close', () => { st.inFlight--; });
  st.log.push(entry);
  return entry;
}

function listen(server, st) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    st.url = `http://127.0.0.1:${server.address().port}`;
    st.close = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
    resolve(st);
  }));
}

/** Serves mounts ([[prefix, folder], ...], longest prefix first) with delayMs per request. */
export function startStatic({ mounts, delayMs = 0 }) {
  const st = counters(delayMs);
  mounts = [...mounts].sort((a, b) => b[0].length - a[0].length);
  const server = createServer(async (req, res) => {
    const entry = arrive(st, req, res);
    if (st.delayMs) await new Promise((r) => setTimeout(r, st.delayMs));
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', 'Content-Range, Content-Length, ETag');
    res.setHeader('Cache-Control', 'no-cache');
    if (req.method !== 'GET' && req.method !== 'HEAD') { res.writeHead(405); res.end(); return; }
    let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const m = mounts.find(([p]) => path.startsWith(p));
    if (!m) { res.writeHead(404); res.end(); return; }
    let file = normalize(join(m[1], path.slice(m[0].length)));
    if (!file.startsWith(normalize(m[1]))) { res.writeHead(403); res.end(); return; }
    let info;
    try {
      info = await stat(file);
      if (info.isDirectory()) { file = join(file, 'index.html'); info = await stat(file); }
    } catch { res.writeHead(404); res.end('not found'); return; }
    const range = req.headers.range;
    let start = 0, end = info.size - 1, status = 200, send = file;
    if (range) {
      const r = /^bytes=(\d+)-(\d*)$/.exec(range);
      if (!r) { res.writeHead(400); res.end('only single ranges'); return; }
      start = Number(r[1]);
      end = r[2] === '' ? info.size - 1 : Math.min(Number(r[2]), info.size - 1);
      if (start >= info.size) { res.writeHead(416, { 'Content-Range': `bytes */${info.size}` }); res.end(); return; }
      status = 206;
      res.setHeader('Content-Range', `bytes ${start}-${end}/${info.size}`);
    } else {
      const accept = req.headers['accept-encoding'] ?? '';
      for (const [suffix, name] of [['.br', 'br'], ['.gz', 'gzip']]) {
        if (!new RegExp(`\\b${name}\\b`).test(accept)) continue;
        try {
          const c = await stat(file + suffix);
          send = file + suffix; start = 0; end = c.size - 1;
          res.setHeader('Content-Encoding', name);
          res.setHeader('Vary', 'Accept-Encoding');
          break;
        } catch { /* not precompressed */ }
      }
    }
    res.setHeader('Content-Type', types[extname(file)] ?? 'application/octet-stream');
    res.setHeader('ETag', `"${info.size}-${info.mtimeMs}"`);
    const n = end - start + 1;
    res.setHeader('Content-Length', String(n));
    res.writeHead(status);
    if (req.method === 'HEAD') { res.end(); return; }
    const fh = await open(send);
    const buf = Buffer.alloc(n);
    await fh.read(buf, 0, n, start);
    await fh.close();
    entry.bytes = n;
    res.end(buf, () => { entry.end = Date.now(); });
  });
  return listen(server, st);
}

/** A reverse proxy to target (http://host:port) adding delayMs to every request. */
export function startProxy({ target, delayMs = 0 }) {
  const st = counters(delayMs);
  const to = new URL(target);
  const agent = undefined;
  const server = createServer(async (req, res) => {
    const entry = arrive(st, req, res);
    if (st.delayMs) await new Promise((r) => setTimeout(r, st.delayMs));
    const up = httpRequest({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent }, (ures) => {
      res.writeHead(ures.statusCode, ures.headers);
      ures.on('data', (c) => { entry.bytes += c.length; res.write(c); });
      ures.on('end', () => { entry.end = Date.now(); res.end(); });
    });
    up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
    req.pipe(up);
  });
  return listen(server, st);
}
