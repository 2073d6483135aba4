// Shared pieces of the edge worker's suite and benchmark: the data (a
// tracking repository and Lance datasets written by the CLI), kv0 serve
// as the reference, a static origin with faults and added latency, a
// local R2 bucket filled through miniflare, and `wrangler dev --local`.
import { execFile, spawn } from 'node:child_process';
import { cp, mkdtemp, open, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = import.meta.dirname;
export const REPO = resolve(here, '../..');
export const KV0 = process.env.KV0 ?? join(REPO, 'bin/kv0');
export const EDGE_DIR = process.env.EDGE_DIR ?? join(REPO, 'out/edge');
export const WRANGLER = process.env.WRANGLER ?? join(REPO, 'edge/node_modules/.bin/wrangler');
export const SAMPLES = join(REPO, 'tests/testdata/lance-samples');
/** Tables lance 12 wrote, in format 2.2 but for packed21 and blob21 (their README). */
export const V22 = join(REPO, 'core/lancefile/testdata/v22');
/** Packages installed from edge/package-lock.json (miniflare, playwright-core). */
export const edgeRequire = createRequire(join(REPO, 'edge/package.json'));
/** Packages installed from tests/wasm/package-lock.json (apache-arrow; `make edge-deps` installs them). */
const wasmRequire = createRequire(join(REPO, 'tests/wasm/package.json'));

/** Runs the kv0 CLI and resolves to its stdout. */
export async function kv0(args) {
  const { stdout } = await run(KV0, args, { maxBuffer: 1 << 28, encoding: 'utf8' });
  return stdout;
}

/** Every file under dir, as slash-separated paths relative to it. */
export async function walk(dir) {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)).split(sep).join('/'));
  }
  return out.sort();
}

/** A free TCP port on the loopback interface. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * Starts a long-running child and resolves once `ready(url)` answers or
 * rejects when the child exits first. The child gets its own process group,
 * so stop() ends it and what it started (wrangler's workerd).
 */
const children = new Set();
function killChildren() {
  for (const c of children) {
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {}
  }
}
process.on('exit', killChildren);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    killChildren();
    process.exit(1);
  });
}

/** Stops every child still running (for after hooks whose set-up failed half-way). */
export async function stopAll() {
  await Promise.all([...children].map((c) => c.stopper()));
}

async function startChild(cmd, args, { env = {}, cwd, probe, what, timeoutMs = 90_000 }) {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  let exited = null;
  const exit = new Promise((r) => child.on('exit', (code, sig) => r((exited = `${what} exited (${code ?? sig})\n${log}`))));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) throw new Error(exited);
    if (Date.now() > deadline) {
      children.delete(child);
      process.kill(-child.pid, 'SIGKILL');
      throw new Error(`${what} did not become ready in ${timeoutMs} ms\n${log}`);
    }
    if (await probe(() => log)) break;
    await Promise.race([exit, new Promise((r) => setTimeout(r, 100))]);
  }
  const stop = async () => {
      if (exited) return;
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
      const t = setTimeout(() => {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
      }, 3000);
      await exit;
      clearTimeout(t);
  };
  child.stopper = stop;
  return { child, log: () => log, stop };
}

/** kv0 serve ROOT on a free port: { url, stop }. */
export async function startServe(root, extra = []) {
  let url;
  const c = await startChild(KV0, ['serve', root, '--listen', '127.0.0.1:0', ...extra], {
    what: 'kv0 serve',
    probe: async (log) => {
      const m = /at (http:\/\/127\.0\.0\.1:\d+)\//.exec(log());
      if (m) url = m[1];
      return Boolean(url);
    },
  });
  return { url, stop: c.stop };
}

/**
 * `wrangler dev --local` of out/edge on a free port, with --var NAME:VALUE
 * for each of vars and local state in persist (a local R2 bucket filled by
 * fillR2): { url, stop, log }.
 */
export async function startWorker({ vars = {}, persist, probePath = '/healthz' }) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ['dev', '--local', '--config', join(EDGE_DIR, 'wrangler.toml'), '--ip', '127.0.0.1', '--port', String(port),
    '--inspector-port', String(await freePort()),
    '--persist-to', persist, '--show-interactive-dev-session=false', '--log-level', 'log'];
  for (const [k, v] of Object.entries(vars)) args.push('--var', `${k}:${v}`);
  const c = await startChild(WRANGLER, args, {
    what: 'wrangler dev',
    env: { WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', CI: 'true', NO_COLOR: '1' },
    probe: async () => {
      try {
        return (await fetch(`${url}${probePath}`)).status === 200;
      } catch {
        return false;
      }
    },
  });
  return { url, stop: c.stop, log: c.log, pgid: c.child.pid };
}

/**
 * The dependent round trips of a set of request spans ({start, end}):
 * the longest chain of requests each sent after the previous one ended.
 * With until (a performance.now() time, when the client had its answer),
 * only the requests that ended by then count: a later one (the API's
 * check that the versions did not move while it built a kept answer,
 * made once the answer is sent) is no step of the answer.
 */
export function roundTrips(spans, until = Infinity) {
  return Math.max(0, ...waves(spans.filter((s) => s.end <= until).sort((a, b) => a.start - b.start)));
}

/**
 * The wave of each span of spans (sorted by start): 1 plus the deepest
 * wave of the spans that ended before it started.
 */
export function waves(s) {
  const depth = [];
  for (let i = 0; i < s.length; i++) {
    let d = 1;
    for (let j = 0; j < i; j++) if (s[j].end <= s[i].start) d = Math.max(d, depth[j] + 1);
    depth.push(d);
  }
  return depth;
}

/**
 * Writes every file under dir into the local R2 bucket of the worker's
 * binding (bucket "kv0", as out/edge/wrangler.toml names it) kept in
 * persist, under prefix; extra maps more keys to bytes.
 */
export async function fillR2(persist, dir, prefix, extra = {}) {
  const { Miniflare } = edgeRequire('miniflare');
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 204 }); } }',
    r2Buckets: { KV0_BUCKET: 'kv0' },
    r2Persist: join(persist, 'v3', 'r2'),
  });
  try {
    const bucket = await mf.getR2Bucket('KV0_BUCKET');
    for (const f of await walk(dir)) await bucket.put(prefix ? `${prefix}/${f}` : f, new Uint8Array(await readFile(join(dir, f))));
    for (const [k, v] of Object.entries(extra)) await bucket.put(k, v);
  } finally {
    await mf.dispose();
  }
}

/**
 * A static origin over root (GET with one Range, no listing, like a
 * bucket's public URL). fault(path) may return 500, 404, 'hang' (never answer), 'drop' (close the
 * connection without an answer) or 'cut' (send half the body of a longer
 * Content-Length, then close). latencyMs delays every answer. It records
 * each request's path and the peak of requests in flight.
 */
export async function startOrigin(root, { latencyMs = 0 } = {}) {
  const state = { fault: () => undefined, paths: [], spans: [], open: new Set(), inflight: 0, peak: 0, peakAt: [], latencyMs };
  const srv = createServer(async (req, res) => {
    state.inflight++;
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const span = { path, range: req.headers.range, start: performance.now(), end: Infinity };
    state.spans.push(span);
    state.open.add(span);
    if (state.inflight > state.peak) {
      state.peak = state.inflight;
      state.peakAt = [...state.open].map((sp) => `${sp.path} ${sp.range ?? ''}`); // what was in flight at the peak
    }
    // A request is in flight until its answer is complete: until res.end
    // is called (the events that follow, 'finish' and 'close', may come
    // after the client read the answer and sent its next request, which
    // would count the two at once), or until it is given up ('close').
    const done = () => {
      if (!state.open.delete(span)) return;
      state.inflight--;
      span.end = performance.now();
      span.status = res.statusCode;
    };
    const end = res.end.bind(res);
    res.end = (...args) => {
      done();
      return end(...args);
    };
    res.on('close', done);
    state.paths.push(path);
    if (state.latencyMs) await new Promise((r) => setTimeout(r, state.latencyMs));
    const f = state.fault(path);
    if (f === 'drop') return req.socket.destroy();
    if (f === 'hang') {
      // Never answer; the socket goes after a while so nothing leaks.
      setTimeout(() => req.socket.destroy(), 20_000).unref();
      return;
    }
    if (typeof f === 'number') {
      res.writeHead(f, { 'content-type': 'text/plain' });
      return res.end(`fault ${f}\n`);
    }
    const file = resolve(root, '.' + path);
    if (!file.startsWith(root + sep)) {
      res.writeHead(403);
      return res.end();
    }
    let fh, size;
    try {
      fh = await open(file, 'r');
      const st = await fh.stat();
      if (!st.isFile()) throw new Error('not a file');
      size = st.size;
    } catch {
      await fh?.close();
      res.writeHead(404, { 'content-type': 'text/plain' });
      return res.end('not found\n');
    }
    let status = 200;
    const headers = { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes' };
    let a = 0, b = size - 1;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (m) {
      a = Number(m[1]);
      b = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
      if (a >= size) {
        await fh.close();
        res.writeHead(416, { 'content-range': `bytes */${size}` });
        return res.end();
      }
      headers['content-range'] = `bytes ${a}-${b}/${size}`;
      status = 206;
    }
    // Only the range is read (data files are hundreds of MB).
    const data = Buffer.alloc(Math.max(b - a + 1, 0));
    try {
      if (data.length) await fh.read(data, 0, data.length, a);
    } finally {
      await fh.close();
    }
    headers['content-length'] = String(data.length);
    span.bytes = data.length;
    res.writeHead(status, headers);
    if (f === 'cut' && data.length > 1) {
      res.write(data.subarray(0, data.length >> 1));
      return setTimeout(() => req.socket.destroy(), 20);
    }
    res.end(data);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    state,
    close: () => new Promise((r) => {
      srv.closeAllConnections();
      srv.close(r);
    }),
  };
}

/**
 * Resolves once the origin of state has had no request in flight for
 * quietMs (requests a server makes after its answer), or after limitMs.
 */
export async function idle(state, { quietMs = 300, limitMs = 5000 } = {}) {
  const t0 = performance.now();
  let since = performance.now(), seen = state.spans.length;
  while (performance.now() - t0 < limitMs) {
    if (state.inflight > 0 || state.spans.length !== seen) {
      since = performance.now();
      seen = state.spans.length;
    } else if (performance.now() - since >= quietMs) {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The test data in a fresh folder base: the root base/root holds a
 * tracking repository (kv0 demo, small) with a tagged metrics version, the
 * lance 8 samples under fixtures/ and copies of one sample under fault/
 * for the fault tests, lance 12's tables under v22/, a 2.1 demo repository
 * under repo21/ and key-value databases in 2.2 and 2.1 under kv/ (formats:
 * the paths of these last three); base/secret.lance lies outside the root.
 */
export async function buildData({ runs = 2, steps = 3000 } = {}) {
  const base = await mkdtemp(join(tmpdir(), 'kv0-edge-'));
  const dir = join(base, 'root');
  await cp(join(SAMPLES, 'default', 'kv.lance'), join(base, 'secret.lance'), { recursive: true });
  await kv0(['demo', dir, '--runs', String(runs), '--steps', String(steps)]);
  await kv0(['lance', 'tag', 'create', join(dir, 'metrics.lance'), 'first', '--version', '2']);
  for (const s of ['default', 'v2_0', 'legacy', 'bigdel']) {
    await cp(join(SAMPLES, s), join(dir, 'fixtures', s), { recursive: true });
  }
  for (const f of ['a', 'b', 'c', 'd', 'e', 'f']) {
    await cp(join(SAMPLES, 'default', 'kv.lance'), join(dir, 'fault', `${f}.lance`), { recursive: true });
  }
  await writeZoned(join(dir, 'zoned.lance'));
  // Format 2.2 beside 2.1: lance 12's tables, and the tables of a 2.1 demo
  // repository and key-value databases of both formats written by kv0 (the
  // repository at the root is in 2.2, kv0's default).
  const v22 = [];
  for (const e of (await readdir(V22)).filter((f) => f.endsWith('.lance')).sort()) {
    await cp(join(V22, e), join(dir, 'v22', e), { recursive: true });
    v22.push(`v22/${e}`);
  }
  await kv0(['demo', join(dir, 'repo21'), '--runs', '1', '--steps', '200', '--format', '2.1']);
  for (const [db, format] of [['kv/db.lance', []], ['kv/db21.lance', ['--format', '2.1']]]) {
    const wal = ['--wal-dir', join(base, 'wal')];
    await kv0(['kv', 'put', join(dir, db), 'alpha', 'one', ...format, ...wal]);
    for (let i = 0; i < 8; i++) await kv0(['kv', 'put', join(dir, db), `key/${i}`, `value ${i}`, ...wal]);
    await kv0(['kv', 'delete', join(dir, db), 'key/3', ...wal]);
  }
  for (const [path, want] of [['metrics.lance', '2.2'], ['runs.lance', '2.2'], ['repo21/metrics.lance', '2.1'], ['kv/db.lance', '2.2'], ['kv/db21.lance', '2.1']]) {
    const got = JSON.parse(await kv0(['lance', 'info', join(dir, path), '--json'])).data_format;
    if (got !== want) throw new Error(`${path} is in format ${got}, not ${want}`);
  }
  const formats = [...v22, 'repo21/runs.lance', 'repo21/metrics.lance', 'kv/db.lance', 'kv/db21.lance'];
  return { base, root: dir, formats, cleanup: () => rm(base, { recursive: true, force: true }) };
}

/** A dataset with a timestamp column of a named zone: every 30 minutes
 * across New York's spring DST change of 2024 and a summer afternoon. */
async function writeZoned(path) {
  const arrow = wasmRequire('apache-arrow');
  const micros = [];
  for (const s of ['2024-03-10T04:00:00Z', '2024-07-01T15:00:00Z']) for (let k = 0; k < 12; k++) micros.push(BigInt(Date.parse(s) + k * 1800_000) * 1000n);
  const type = new arrow.TimestampMicrosecond('America/New_York');
  const t = new arrow.Table({
    ts: arrow.makeVector(arrow.makeData({ type, length: micros.length, nullCount: 0, data: BigInt64Array.from(micros) })),
    n: arrow.makeVector(Int32Array.from(micros, (_, i) => i)),
  });
  await new Promise((resolve, reject) => {
    const p = execFile(KV0, ['lance', 'write', path, '--mode', 'create'], (err, _out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve()));
    p.stdin.end(arrow.tableToIPC(t, 'stream'));
  });
}
