// The wasm benchmarks (make bench-wasm; figures in docs/benchmarks.md), in
// headless Chromium against native Go (tests/wasm/benchdata) in one run:
//   startup   fetch-to-ready of the module (compile + instantiate + Go start), cold and warm HTTP cache
//   series    cold read of one 100k-point series of 10 runs × 10 series × 100k points (optimized) through
//             a static server adding 50 ms to every request: waves (dependent round trips), requests, bytes;
//             then the time per decoded point of warm reads (no added latency)
//   scan      a 1M-row metrics-shaped table into an Arrow IPC stream: rows/s, and the longest main-thread
//             stretch without a timer tick (a long task) during the scans; and a new page's first scan with
//             20 ms per request (its time, and how many requests of the data file ran at once)
//   decode    the series read with no I/O (tests/wasm/decodebench from a memory store): native Go against the
//             same program built for js/wasm and run by Node (V8, as Chromium), alternating, best of each
// Usage: node bench.mjs [DATA_DIR] (default out/wasm-bench, reused when present);
// TIMELINE=1 also prints each cold read's requests with their start and end
// at the server.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile, readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { WASM_DIR } from './fixtures.mjs';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const dataDir = resolve(process.argv[2] ?? join(root, 'out/wasm-bench'));
const benchdata = join(root, 'bin/benchdata');
await run('go', ['build', '-o', benchdata, './tests/wasm/benchdata'], { cwd: root });
if (!existsSync(join(dataDir, 'sid'))) {
  console.error(`writing the benchmark data to ${dataDir} ...`);
  const { stdout } = await run(benchdata, ['repo', join(dataDir, 'repo')], { maxBuffer: 1 << 20 });
  await run(benchdata, ['table', dataDir]);
  await writeFile(join(dataDir, 'sid'), stdout.trim());
}
const sid = (await readFile(join(dataDir, 'sid'), 'utf8')).trim();

const PAGE = `<!doctype html><meta charset="utf-8"><script type="module">
// The longest gap between 5 ms timer ticks: how long the main thread was
// busy at a stretch (a long task), measured where the observer is absent.
window.longest = 0;
// The Long Tasks API too, where the browser reports them (headless Chromium
// may not): the longest task over 50 ms since the last reset.
window.longtask = 0;
try {
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longtask = Math.max(window.longtask, e.duration); }).observe({ type: 'longtask' });
} catch { window.longtask = -1; }
let last = performance.now();
setInterval(() => { const now = performance.now(); window.longest = Math.max(window.longest, now - last - 5); last = now; }, 5);
const t0 = performance.now();
const { load } = await import('./kv0.mjs');
// ?thread: the module on the page's thread; else load()'s default (a Worker).
window.kv0 = await load(new URLSearchParams(location.search).has('thread') ? { worker: false } : {});
window.startup = performance.now() - t0;
</script>`;
const pageSrv = await startServer({ root: WASM_DIR, files: { '/bench.html': PAGE }, gzip: true, cacheControl: 'max-age=3600' });
const dataSrv = await startServer({ root: dataDir });
const userDir = await mkdtemp(join(tmpdir(), 'kv0-bench-chromium-'));
const ctx = await chromium.launchPersistentContext(userDir, {
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const results = { loadavg_start: loadavg().map((x) => +x.toFixed(2)) };
try {
  const page = await ctx.newPage();
  const startup = async () => { await page.waitForFunction(() => window.startup !== undefined, null, { timeout: 60000 }); return page.evaluate(() => window.startup); };
  pageSrv.reset();
  await page.goto(`${pageSrv.url}/bench.html?thread`);
  results.startup_cold_ms = await startup();
  results.startup_cold_bytes = pageSrv.bytes;
  const warm = [];
  for (let i = 0; i < 3; i++) { pageSrv.reset(); await page.reload(); warm.push(await startup()); }
  results.startup_warm_ms = Math.min(...warm);
  results.startup_warm_bytes = pageSrv.bytes;

  // Cold read with 50 ms per request.
  const repoURL = `${dataSrv.url}/repo`;
  dataSrv.delayMs = 50; dataSrv.reset();
  const coldRead = () => page.evaluate(async ([u, id]) => {
    const t0 = performance.now();
    const repo = await window.kv0.openRepo(u);
    const [s] = await repo.read([id]);
    const ms = performance.now() - t0;
    await repo.close();
    return { ms, points: s.steps.length };
  }, [repoURL, sid]);
  const w = await coldRead();
  results.wasm_cold = { ...w, waves: dataSrv.waves, requests: dataSrv.requests, bytes: dataSrv.bytes };
  const wasmLog = dataSrv.log;
  dataSrv.reset();
  const n = JSON.parse((await run(benchdata, ['read', repoURL, sid, '0'])).stdout);
  results.native_cold = { ms: n.ms, points: n.points, waves: dataSrv.waves, requests: dataSrv.requests, bytes: dataSrv.bytes };
  const nativeLog = dataSrv.log;
  // The same read from a new handle again: the same requests, but V8 has
  // compiled the read path (it compiles a function when first called) and
  // the browser holds connections to the server.
  dataSrv.reset();
  results.wasm_cold_again = { ...(await coldRead()), waves: dataSrv.waves, requests: dataSrv.requests };
  if (process.env.TIMELINE) {
    // Each cold read's requests: arrival and end at the server, ms after the first.
    for (const [name, log] of [['wasm', wasmLog], ['native', nativeLog], ['wasm, second handle', dataSrv.log]]) {
      const t0 = log[0]?.start ?? 0;
      console.error(`${name} cold read:`);
      for (const r of log) console.error(`  ${(r.start - t0).toFixed(1).padStart(7)} ${(r.end - t0).toFixed(1).padStart(7)}  ${r.path} ${r.range}`);
    }
  }

  // Decoding: warm reads without added latency.
  dataSrv.delayMs = 0;
  // Then the same after 20 more reads: V8 keeps compiling the module's
  // hot functions with its optimizing tier for about that long.
  [results.wasm_warm_ms, results.wasm_steady_ms] = await page.evaluate(async ([u, id]) => {
    const repo = await window.kv0.openRepo(u);
    await repo.read([id]);
    let t0 = performance.now();
    for (let i = 0; i < 5; i++) await repo.read([id]);
    const ms = (performance.now() - t0) / 5;
    for (let i = 0; i < 20; i++) await repo.read([id]);
    t0 = performance.now();
    for (let i = 0; i < 5; i++) await repo.read([id]);
    const steady = (performance.now() - t0) / 5;
    await repo.close();
    return [ms, steady];
  }, [repoURL, sid]);
  results.native_warm_ms = JSON.parse((await run(benchdata, ['read', repoURL, sid])).stdout).warm_ms;

  // Scan rate.
  const tableURL = `${dataSrv.url}/metrics.lance`;
  const s = await page.evaluate(async (u) => {
    let best = Infinity, bytes = 0;
    window.longest = 0;
    window.longtask = Math.min(window.longtask, 0);
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      bytes = (await window.kv0.lance.scan(u)).length;
      best = Math.min(best, performance.now() - t0);
    }
    await new Promise((r) => setTimeout(r, 20)); // a last tick
    return { ms: best, bytes, longest: window.longest, longtask: window.longtask };
  }, tableURL);
  results.wasm_scan = s;
  // A first scan in a new page, with 20 ms per request: how many of its
  // requests of the table's data file the browser lets run at once (a
  // module that has scanned the table before reads it in fewer requests).
  const lpage = await ctx.newPage();
  await lpage.goto(`${pageSrv.url}/bench.html?thread`);
  await lpage.waitForFunction(() => window.startup !== undefined, null, { timeout: 60000 });
  dataSrv.delayMs = 20; dataSrv.reset();
  results.wasm_scan_latency_ms = await lpage.evaluate(async (u) => {
    const t0 = performance.now();
    await window.kv0.lance.scan(u);
    return performance.now() - t0;
  }, tableURL);
  const scanData = dataSrv.log.filter((e) => e.path.includes('/data/'));
  results.wasm_scan_parallel = Math.max(...scanData.map((e) => scanData.filter((o) => o.start <= e.start && o.end > e.start).length));
  results.wasm_scan_requests = scanData.length;
  dataSrv.delayMs = 0;
  await lpage.close();
  // The heartbeat's own check: a 120 ms busy loop must show.
  results.longtask_check_ms = await page.evaluate(async () => {
    window.longest = 0;
    window.longtask = Math.min(window.longtask, 0);
    const t = performance.now();
    while (performance.now() - t < 120);
    await new Promise((r) => setTimeout(r, 20));
    return [window.longest, window.longtask];
  });
  results.native_scan = JSON.parse((await run(benchdata, ['scan', tableURL])).stdout);

  // The same scans with the module in a Web Worker: the page's thread only
  // receives the bytes.
  const wpage = await ctx.newPage();
  await wpage.goto(`${pageSrv.url}/bench.html`);
  await wpage.waitForFunction(() => window.startup !== undefined, null, { timeout: 60000 });
  results.worker_warm_ms = await wpage.evaluate(async ([u, id]) => {
    const repo = await window.kv0.openRepo(u);
    await repo.read([id]);
    const t0 = performance.now();
    for (let i = 0; i < 5; i++) await repo.read([id]);
    const ms = (performance.now() - t0) / 5;
    await repo.close();
    return ms;
  }, [repoURL, sid]);
  results.worker_scan = await wpage.evaluate(async (u) => {
    let best = Infinity, bytes = 0;
    window.longest = 0;
    window.longtask = Math.min(window.longtask, 0);
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      bytes = (await window.kv0.lance.scan(u)).length;
      best = Math.min(best, performance.now() - t0);
    }
    await new Promise((r) => setTimeout(r, 20));
    return { ms: best, bytes, longest: window.longest, longtask: window.longtask };
  }, tableURL);
  // Decoding alone, no I/O: native and js/wasm (Node) alternating.
  const dbin = join(root, 'bin/decodebench'), dwasm = join(root, 'bin/decodebench.wasm');
  await run('go', ['build', '-o', dbin, './tests/wasm/decodebench'], { cwd: root });
  await run('go', ['build', '-tags', 'kv0_readonly', '-o', dwasm, './tests/wasm/decodebench'], { cwd: root, env: { ...process.env, GOOS: 'js', GOARCH: 'wasm' } });
  const goroot = (await run('go', ['env', 'GOROOT'])).stdout.trim();
  const dargs = [join(dataDir, 'repo'), sid];
  const best = (a, b) => (!a || b.read_ms < a.read_ms ? { ...b, convert_ms: Math.min(b.convert_ms, a?.convert_ms ?? Infinity) } : { ...a, convert_ms: Math.min(a.convert_ms, b.convert_ms) });
  for (let i = 0; i < 3; i++) {
    results.decode_native = best(results.decode_native, JSON.parse((await run(dbin, dargs)).stdout));
    results.decode_wasm = best(results.decode_wasm, JSON.parse((await run('node', [join(goroot, 'lib/wasm/wasm_exec_node.js'), dwasm, ...dargs], { maxBuffer: 1 << 20 })).stdout));
  }
} finally {
  await ctx.close();
  await Promise.all([pageSrv.close(), dataSrv.close()]);
  await rm(userDir, { recursive: true, force: true });
}
results.loadavg_end = loadavg().map((x) => +x.toFixed(2));
const r = results;
const pts = r.wasm_cold.points;
console.log(JSON.stringify(r, null, 2));
console.log(`
load average ${r.loadavg_start.join(' ')} at the start, ${r.loadavg_end.join(' ')} at the end

| figure | Chromium (wasm) | native Go | ratio |
|---|---|---|---|
| startup, cold HTTP cache (fetch to ready) | ${r.startup_cold_ms.toFixed(0)} ms, ${r.startup_cold_bytes} bytes | | |
| startup, warm HTTP cache | ${r.startup_warm_ms.toFixed(0)} ms, ${r.startup_warm_bytes} bytes | | |
| cold read of one 100k-point series, 50 ms per request: dependent round trips | ${r.wasm_cold.waves} | ${r.native_cold.waves} | |
| same: requests | ${r.wasm_cold.requests} | ${r.native_cold.requests} | |
| same: bytes | ${r.wasm_cold.bytes} | ${r.native_cold.bytes} | ${(r.wasm_cold.bytes / r.native_cold.bytes).toFixed(2)}× |
| same: time | ${r.wasm_cold.ms.toFixed(0)} ms | ${r.native_cold.ms.toFixed(0)} ms | ${(r.wasm_cold.ms / r.native_cold.ms).toFixed(2)}× |
| same, a second cold handle (code compiled, connections open): time | ${r.wasm_cold_again.ms.toFixed(0)} ms (${r.wasm_cold_again.waves} waves, ${r.wasm_cold_again.requests} requests) | | ${(r.wasm_cold_again.ms / r.native_cold.ms).toFixed(2)}× |
| warm read (decoding), per point | ${(r.wasm_warm_ms * 1e6 / pts).toFixed(0)} ns | ${(r.native_warm_ms * 1e6 / pts).toFixed(0)} ns | ${(r.wasm_warm_ms / r.native_warm_ms).toFixed(2)}× |
| same, after 25 reads (V8's optimizing tier done) | ${(r.wasm_steady_ms * 1e6 / pts).toFixed(0)} ns | | ${(r.wasm_steady_ms / r.native_warm_ms).toFixed(2)}× |
| same, load()'s default (a Web Worker) | ${(r.worker_warm_ms * 1e6 / pts).toFixed(0)} ns | | ${(r.worker_warm_ms / r.native_warm_ms).toFixed(2)}× |
| decoding alone (no I/O, ReadMany from a memory store; wasm in Node), per point | ${(r.decode_wasm.read_ms * 1e6 / r.decode_wasm.points).toFixed(0)} ns | ${(r.decode_native.read_ms * 1e6 / r.decode_native.points).toFixed(0)} ns | ${(r.decode_wasm.read_ms / r.decode_native.read_ms).toFixed(2)}× |
| same: the conversion to one Float64Array's bytes, per point | ${(r.decode_wasm.convert_ms * 1e6 / r.decode_wasm.points).toFixed(1)} ns | ${(r.decode_native.convert_ms * 1e6 / r.decode_native.points).toFixed(1)} ns | ${(r.decode_wasm.convert_ms / r.decode_native.convert_ms).toFixed(2)}× |
| scan of 1M rows into Arrow IPC, module on the page thread | ${(1e6 / r.wasm_scan.ms * 1000 / 1e6).toFixed(2)} M rows/s | ${(r.native_scan.rows / r.native_scan.ms * 1000 / 1e6).toFixed(2)} M rows/s | ${(r.native_scan.ms / r.wasm_scan.ms).toFixed(2)}× |
| same, load()'s default (a Web Worker) | ${(1e6 / r.worker_scan.ms * 1000 / 1e6).toFixed(2)} M rows/s | | ${(r.native_scan.ms / r.worker_scan.ms).toFixed(2)}× |
| first scan of a new page, 20 ms per request: time; data-file requests, the most in flight at once | ${r.wasm_scan_latency_ms.toFixed(0)} ms; ${r.wasm_scan_requests}, ${r.wasm_scan_parallel} | | |
| longest main-thread stretch during the scans, default (Worker) | ${r.worker_scan.longest.toFixed(0)} ms (longest long task: ${r.worker_scan.longtask.toFixed(0)} ms) | | |
| same, module on the page thread | ${r.wasm_scan.longest.toFixed(0)} ms (longest long task: ${r.wasm_scan.longtask.toFixed(0)} ms; check: a 120 ms busy loop showed as ${r.longtask_check_ms[0].toFixed(0)} ms, long task ${r.longtask_check_ms[1].toFixed(0)} ms) | | |
`);
