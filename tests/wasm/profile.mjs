// CPU profile of the wasm module's warm series read (or scan) in headless
// Chromium, through the DevTools protocol's Profiler: prints the functions
// with the most self time. Build a module with its name section first
// (make wasm-prof writes out/wasm-prof). Usage:
//   node profile.mjs MODULE_DIR DATA_DIR read|cold|scan [N]   (cold: openRepo, read and close each time)
//   (TOP=n self-time rows, INCL=n inclusive rows, GOENV=JSON, FLAGS='chromium flags ...',
//   WARM=n calls before the profiled ones, default 1: V8 keeps tiering the module up for ~20 reads)
import { chromium } from 'playwright-core';
import { mkdtemp, rm, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startServer } from './server.mjs';

const [moduleDir, dataDir, what = 'read', nArg = '10'] = process.argv.slice(2);
const n = Number(nArg);
const sid = (await readFile(join(dataDir, 'sid'), 'utf8')).trim();
const PAGE = `<!doctype html><script type="module">
const { load } = await import('./kv0.mjs');
window.kv0 = await load({ worker: ${process.env.WORKER === '1'}, env: ${process.env.GOENV ?? '{}'} }); // the page's thread unless WORKER=1 (the profile shows the page's thread)
window.ready = true;
</script>`;
const pageSrv = await startServer({ root: resolve(moduleDir), files: { '/p.html': PAGE } });
const dataSrv = await startServer({ root: resolve(dataDir) });
const userDir = await mkdtemp(join(tmpdir(), 'kv0-prof-chromium-'));
const ctx = await chromium.launchPersistentContext(userDir, {
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', ...(process.env.FLAGS ? process.env.FLAGS.split(' ') : [])],
});
try {
  const page = await ctx.newPage();
  await page.goto(`${pageSrv.url}/p.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  const body = what === 'cold'
    ? async ([u, id, n]) => { const t = performance.now(); for (let i = 0; i < n; i++) { const r = await window.kv0.openRepo(u + '/repo'); await r.read([id]); await r.close(); } return (performance.now() - t) / n; }
    : what === 'read'
    ? async ([u, id, n]) => { const r = await window.kv0.openRepo(u + '/repo'); await r.read([id]); const t = performance.now(); window.p = 1; for (let i = 0; i < n; i++) await r.read([id]); const ms = (performance.now() - t) / n; await r.close(); return ms; }
    : async ([u, id, n]) => { await window.kv0.lance.scan(u + '/metrics.lance'); const t = performance.now(); for (let i = 0; i < n; i++) await window.kv0.lance.scan(u + '/metrics.lance'); return (performance.now() - t) / n; };
  await page.evaluate(body, [dataSrv.url, sid, Number(process.env.WARM ?? 1)]);
  await cdp.send('Profiler.start');
  const ms = await page.evaluate(body, [dataSrv.url, sid, n]);
  const { profile } = await cdp.send('Profiler.stop');
  const self = new Map();
  const dt = new Map();
  for (let i = 0; i < profile.samples.length; i++) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  let total = 0;
  for (const node of profile.nodes) {
    const t = dt.get(node.id) ?? 0;
    const name = node.callFrame.functionName || `(${node.callFrame.url.split('/').pop()}:${node.callFrame.lineNumber})`;
    self.set(name, (self.get(name) ?? 0) + t);
    total += t;
  }
  // Inclusive time: a function counts once per sample however deep it recurs.
  const byId = new Map(profile.nodes.map((nd) => [nd.id, nd]));
  const parent = new Map();
  for (const nd of profile.nodes) for (const c of nd.children ?? []) parent.set(c, nd.id);
  const incl = new Map();
  for (const [id, t] of dt) {
    const seen = new Set();
    for (let x = id; x !== undefined; x = parent.get(x)) {
      const f = byId.get(x).callFrame.functionName || '(anonymous)';
      if (!seen.has(f)) { seen.add(f); incl.set(f, (incl.get(f) ?? 0) + t); }
    }
  }
  // The longest run of consecutive samples in which the thread was busy
  // (neither idle nor sampling the garbage of an empty stack): the longest
  // task it ran, as the profiler saw it.
  const idleIds = new Set(profile.nodes.filter((nd) => nd.callFrame.functionName === '(idle)').map((nd) => nd.id));
  let run = 0, longestBusy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const d = profile.timeDeltas[i + 1] ?? 0;
    run = idleIds.has(profile.samples[i]) ? 0 : run + d;
    longestBusy = Math.max(longestBusy, run);
  }
  console.log(`${what}: ${ms.toFixed(1)} ms per call; profile ${(total / 1000).toFixed(0)} ms; longest busy stretch of the page's thread ${(longestBusy / 1000).toFixed(1)} ms`);
  if (process.env.INCL) {
    for (const [name, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.INCL))) {
      console.log(`incl ${(100 * t / total).toFixed(1).padStart(5)}%  ${(t / 1000 / n).toFixed(2).padStart(7)} ms  ${name}`);
    }
  }
  for (const [name, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 45))) {
    console.log(`${(100 * t / total).toFixed(1).padStart(5)}%  ${(t / 1000 / n).toFixed(2).padStart(7)} ms  ${name}`);
  }
} finally {
  await ctx.close();
  await Promise.all([pageSrv.close(), dataSrv.close()]);
  await rm(userDir, { recursive: true, force: true });
}
