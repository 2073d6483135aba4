// Size and speed of the edge worker under `wrangler dev --local` (workerd),
// side by side with kv0 serve on the same data in the same run
// (docs/benchmarks.md, "Edge worker"). Usage: node bench.mjs DATA_DIR
// (make bench-edge). DATA_DIR keeps the 10 runs × 10 series × 100k points
// repository (tests/wasm/benchdata) and the local R2 state between runs.
import { execFile, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EDGE_DIR, fillR2, freePort, idle, REPO, roundTrips, startOrigin, startServe, startWorker, stopAll, WRANGLER } from './lib.mjs';

const run = promisify(execFile);
const dataDir = process.argv[2] ?? join(REPO, 'out/edge-bench');
const WARM = Number(process.env.WARM ?? 30);
const CPU_N = Number(process.env.CPU_N ?? 300);
await mkdir(dataDir, { recursive: true });

// The data: the wasm benchmark's repository, written once.
const repo = join(dataDir, 'repo');
let sid;
if (!existsSync(join(dataDir, 'target.txt'))) {
  const benchdata = join(REPO, 'bin/benchdata');
  await run('go', ['build', '-o', benchdata, './tests/wasm/benchdata'], { cwd: REPO });
  await rm(repo, { recursive: true, force: true });
  const { stdout } = await run(benchdata, ['repo', repo], { maxBuffer: 1 << 20 });
  await writeFile(join(dataDir, 'target.txt'), stdout.trim());
}
sid = (await readFile(join(dataDir, 'target.txt'), 'utf8')).trim();
const r2State = join(dataDir, 'r2state');
if (!existsSync(join(dataDir, 'r2state.done'))) {
  await rm(r2State, { recursive: true, force: true });
  await fillR2(r2State, repo, 'bench');
  await writeFile(join(dataDir, 'r2state.done'), 'ok');
}
const series = `/api/v1/series/points?ids=${sid}`; // max_points defaults to 1,000

const ms = (t0) => Math.round((performance.now() - t0) * 100) / 100;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
async function timed(url) {
  const t0 = performance.now();
  const r = await fetch(url);
  const body = await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${new TextDecoder().decode(body).slice(0, 300)}`);
  return { ms: ms(t0), bytes: body.byteLength, body: new Uint8Array(body) };
}
async function warm(url) {
  const t = [];
  for (let i = 0; i < WARM; i++) t.push((await timed(url)).ms);
  return median(t);
}

// CPU seconds of a process group's workerd processes (utime + stime).
async function workerdCPU(pgid) {
  const { stdout } = await run('ps', ['-o', 'pid=,comm=', '-g', String(pgid)]);
  let ticks = 0;
  for (const line of stdout.trim().split('\n')) {
    const [pid, comm] = line.trim().split(/\s+/);
    if (comm !== 'workerd') continue;
    try {
      const f = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return ticks / 100;
}
async function cpuPerRequest(w, path) {
  const c0 = await workerdCPU(w.pgid);
  for (let i = 0; i < CPU_N; i++) await timed(w.url + path);
  return Math.round(((await workerdCPU(w.pgid)) - c0) / CPU_N * 1e5) / 100; // ms
}

// The worker in workerd alone (no wrangler, no inspector, no proxy worker),
// KV0_ORIGIN only (workerd has no R2 of its own): { url, pid, stop }. With
// empty set, a worker of a few lines of JavaScript instead, answering
// every request with "ok": what workerd itself holds with one isolate.
async function bareWorkerd(originURL, { empty = false } = {}) {
  const dir = join(dataDir, empty ? 'workerd-empty' : 'workerd');
  await mkdir(dir, { recursive: true });
  if (empty) {
    await writeFile(join(dir, 'main.mjs'), "export default { fetch() { return new Response('ok'); } };\n");
  } else {
    for (const f of ['worker.mjs', 'wasm_exec.js', 'kv0edge.wasm']) await writeFile(join(dir, f), await readFile(join(EDGE_DIR, f)));
    // The benchmark's entry: the worker as shipped, and /__memory, the
    // byte length of the Go program's wasm memory (its heap, which it
    // never gives back). instances.mjs, evaluated before worker.mjs,
    // keeps the instances the worker makes.
    await writeFile(join(dir, 'instances.mjs'), `export const made = [];
// A proxy of the constructor, so that instanceof still holds (Go.run checks it).
WebAssembly.Instance = new Proxy(WebAssembly.Instance, {
  construct(target, args, newTarget) {
    const inst = Reflect.construct(target, args, newTarget);
    made.push(inst);
    return inst;
  },
});
`);
    await writeFile(join(dir, 'main.mjs'), `import { made } from './instances.mjs';
import worker from './worker.mjs';
export default {
  fetch(req, env, ctx) {
    if (new URL(req.url).pathname === '/__memory') {
      return Response.json({ wasm_bytes: made.map((i) => i.exports.mem.buffer.byteLength) });
    }
    return worker.fetch(req, env, ctx);
  },
};
`);
  }
  const port = await freePort();
  await writeFile(join(dir, 'config.capnp'), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .w), (name = "internet", network = (allow = ["public", "private", "local"]))],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const w :Workerd.Worker = (
  modules = [
    (name = "main.mjs", esModule = embed "main.mjs"),${empty ? '' : `
    (name = "instances.mjs", esModule = embed "instances.mjs"),
    (name = "worker.mjs", esModule = embed "worker.mjs"),
    (name = "wasm_exec.js", esModule = embed "wasm_exec.js"),
    (name = "kv0edge.wasm", wasm = embed "kv0edge.wasm"),`}
  ],
  compatibilityDate = "2026-04-01",
  bindings = [(name = "KV0_ORIGIN", text = "${originURL}")],
  globalOutbound = "internet",
);
`);
  const child = spawn(join(REPO, 'edge/node_modules/.bin/workerd'), ['serve', 'config.capnp'], { cwd: dir, stdio: 'ignore' });
  const deadline = Date.now() + 60_000;
  for (;;) { // listening, without a request (which would start Go)
    const up = await new Promise((r) => {
      const s = connect(port, '127.0.0.1', () => (s.end(), r(true)));
      s.on('error', () => r(false));
    });
    if (up) break;
    if (Date.now() > deadline) throw new Error('workerd did not listen');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `http://127.0.0.1:${port}`, pid: child.pid, stop: () => child.kill('SIGKILL') };
}

// The resident memory of a process, now and at its peak (MiB): workerd
// alone holds one isolate, so this bounds what the isolate uses (its heap,
// the wasm module's memory) from above.
async function memory(pid) {
  const st = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(st)?.[1] ?? NaN);
  return { rss_mib: Math.round(kb('VmRSS') / 102.4) / 10, peak_rss_mib: Math.round(kb('VmHWM') / 102.4) / 10 };
}

async function pidCPU(pid) {
  const f = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const results = { series_id: sid };
const origin = await startOrigin(dataDir);
try {
  // Size, as wrangler reports the upload.
  const { stdout } = await run(WRANGLER, ['deploy', '--dry-run', '--outdir', join(dataDir, 'dry-run'), '--config', join(EDGE_DIR, 'wrangler.toml')],
    { env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } });
  const m = /Total Upload: ([\d.]+ KiB) \/ gzip: ([\d.]+ KiB)/.exec(stdout);
  results.upload = m ? { raw: m[1], gzip: m[2] } : stdout;

  const persistFor = (mode) => (mode === 'r2' ? r2State : join(dataDir, 'origin-state'));
  const varsFor = (mode) => (mode === 'r2' ? { KV0_PREFIX: 'bench' } : { KV0_ORIGIN: `${origin.url}/repo` });

  // A fresh isolate's start: the first request that enters Go (after the
  // worker is up, probed through a static asset) against a warm one.
  {
    const w = await startWorker({ vars: varsFor('origin'), persist: persistFor('origin'), probePath: '/' });
    const first = (await timed(`${w.url}/healthz`)).ms;
    results.start = { first_healthz_ms: first, warm_healthz_ms: await warm(`${w.url}/healthz`) };
    results.cpu_healthz_ms = await cpuPerRequest(w, '/healthz');
    await w.stop();
  }

  // workerd alone: a fresh isolate's first request, the CPU of warm ones.
  {
    const b = await bareWorkerd(`${origin.url}/repo`);
    try {
      const first = (await timed(`${b.url}/healthz`)).ms;
      const started = await memory(b.pid); // Go started, nothing read
      await timed(b.url + series);
      await timed(b.url + series);
      let c0 = await pidCPU(b.pid);
      for (let i = 0; i < CPU_N; i++) await timed(b.url + series);
      const seriesCPU = ((await pidCPU(b.pid)) - c0) / CPU_N * 1000;
      c0 = await pidCPU(b.pid);
      for (let i = 0; i < CPU_N; i++) await timed(`${b.url}/healthz`);
      const healthCPU = ((await pidCPU(b.pid)) - c0) / CPU_N * 1000;
      results.workerd = { first_healthz_ms: first, cpu_warm_series_ms: Math.round(seriesCPU * 100) / 100, cpu_healthz_ms: Math.round(healthCPU * 100) / 100, warm_series_ms: await warm(b.url + series), rss_started_mib: started.rss_mib, ...(await memory(b.pid)) };
      // The Go heap's share of the isolate: its wasm memory after every
      // read above.
      const mem = await (await fetch(`${b.url}/__memory`)).json();
      results.workerd.wasm_memory_mib = Math.round(Math.max(...mem.wasm_bytes) / (1 << 20) * 10) / 10;
    } finally {
      b.stop();
    }
    // What workerd holds with an isolate of its own that does nothing: the
    // kv0 isolate's share is the difference.
    const e = await bareWorkerd(`${origin.url}/repo`, { empty: true });
    try {
      for (let i = 0; i < 5; i++) await timed(`${e.url}/`);
      const base = await memory(e.pid);
      results.workerd.rss_empty_worker_mib = base.rss_mib;
      results.workerd.isolate_mib = Math.round((results.workerd.peak_rss_mib - base.rss_mib) * 10) / 10;
    } finally {
      e.stop();
    }
  }

  // One 1,000-point series: cold isolate (its first request), warm isolate.
  let reference;
  for (const mode of ['origin', 'r2']) {
    const w = await startWorker({ vars: varsFor(mode), persist: persistFor(mode), probePath: '/' });
    const cold = await timed(w.url + series);
    reference ??= cold.body;
    if (Buffer.compare(Buffer.from(cold.body), Buffer.from(reference)) !== 0) throw new Error(`${mode}: another answer`);
    results[`worker_${mode}`] = { cold_ms: cold.ms, warm_ms: await warm(w.url + series), bytes: cold.bytes };
    if (mode === 'origin') results.cpu_warm_series_ms = await cpuPerRequest(w, series);
    await w.stop();
  }
  for (const [name, where] of [['serve_disk', repo], ['serve_origin', `${origin.url}/repo`]]) {
    const s = await startServe(where);
    const cold = await timed(s.url + series);
    if (Buffer.compare(Buffer.from(cold.body), Buffer.from(reference)) !== 0) throw new Error(`${name}: another answer`);
    results[name] = { cold_ms: cold.ms, warm_ms: await warm(s.url + series) };
    await s.stop();
  }

  // 50 ms added to every origin request: the cold read's dependent round
  // trips, the worker's against kv0 serve's over the same origin.
  origin.state.latencyMs = 50;
  {
    const w = await startWorker({ vars: varsFor('origin'), persist: persistFor('origin'), probePath: '/' });
    // Requests made after the answer (kv0 serve's check of the versions
    // before it keeps an answer) are counted apart, once the origin is idle.
    const measure = async (url) => {
      origin.state.spans = [];
      const cold = await timed(url);
      const until = performance.now();
      await idle(origin.state);
      const spans = origin.state.spans;
      const before = spans.filter((sp) => sp.end <= until);
      return {
        cold_ms: cold.ms, origin_requests: before.length, origin_requests_after: spans.length - before.length,
        origin_bytes: before.reduce((n, sp) => n + (sp.bytes ?? 0), 0), round_trips: roundTrips(spans, until),
      };
    };
    results.latency50_worker = { ...(await measure(w.url + series)), browser_requests: 1 };
    await w.stop();
    const s = await startServe(`${origin.url}/repo`);
    results.latency50_serve = await measure(s.url + series);
    await s.stop();
  }
} finally {
  await stopAll();
  await origin.close();
}

const r = results;
const ratio = (a, b) => (a / b).toFixed(2);
console.log(JSON.stringify(results, null, 2));
console.log(`
| | cold (ms) | warm (ms, median of ${WARM}) |
|---|---|---|
| worker via KV0_ORIGIN | ${r.worker_origin.cold_ms} | ${r.worker_origin.warm_ms} |
| worker via local R2 | ${r.worker_r2.cold_ms} | ${r.worker_r2.warm_ms} |
| kv0 serve, root on disk | ${r.serve_disk.cold_ms} | ${r.serve_disk.warm_ms} |
| kv0 serve, root = the same origin | ${r.serve_origin.cold_ms} | ${r.serve_origin.warm_ms} |

ratios (worker / kv0 serve on disk): origin cold ${ratio(r.worker_origin.cold_ms, r.serve_disk.cold_ms)}, warm ${ratio(r.worker_origin.warm_ms, r.serve_disk.warm_ms)}; R2 cold ${ratio(r.worker_r2.cold_ms, r.serve_disk.cold_ms)}, warm ${ratio(r.worker_r2.warm_ms, r.serve_disk.warm_ms)}
upload ${r.upload.raw} / gzip ${r.upload.gzip}; first request of a fresh isolate ${r.start.first_healthz_ms} ms (warm ${r.start.warm_healthz_ms} ms)
workerd CPU per warm request (under wrangler): series ${r.cpu_warm_series_ms} ms, /healthz ${r.cpu_healthz_ms} ms
workerd alone: first request ${r.workerd.first_healthz_ms} ms; CPU per warm request: series ${r.workerd.cpu_warm_series_ms} ms, /healthz ${r.workerd.cpu_healthz_ms} ms; warm series ${r.workerd.warm_series_ms} ms; resident ${r.workerd.rss_mib} MiB (peak ${r.workerd.peak_rss_mib} MiB; ${r.workerd.rss_started_mib} MiB once started; an empty worker's workerd ${r.workerd.rss_empty_worker_mib} MiB, so the kv0 isolate at its peak ≈ ${r.workerd.isolate_mib} MiB, of which the Go program's wasm memory ${r.workerd.wasm_memory_mib} MiB)
50 ms per origin request: worker ${r.latency50_worker.round_trips} round trips (${r.latency50_worker.origin_requests} requests, ${r.latency50_worker.origin_bytes} bytes, ${r.latency50_worker.cold_ms} ms; ${r.latency50_worker.origin_requests_after} after the answer), kv0 serve ${r.latency50_serve.round_trips} (${r.latency50_serve.origin_requests} requests, ${r.latency50_serve.origin_bytes} bytes, ${r.latency50_serve.cold_ms} ms; ${r.latency50_serve.origin_requests_after} after the answer), browser 1`);
