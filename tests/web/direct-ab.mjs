// Direct mode's first load, two or three page builds side by side (WEB_A,
// default out/web, WEB_B and optionally WEB_C), alternating, N cold loads each (default 6), over the
// repository bench-web writes (REPO, default out/webbench/first/repo) from a
// static server adding 50 ms per request. Per load: when the module's Worker
// answered its start (go, ms after navigation start), when kv0dash.ready
// resolved (first), the difference (after: the part the module's own
// requests take), and the server's requests and waves; then medians.
//   cd tests/web && WEB_B=<other out/web> N=6 node direct-ab.mjs
import { chromium } from 'playwright-core';
import { startServer } from '../wasm/server.mjs';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
const sides = {};
for (const [name, w] of [['a', process.env.WEB_A ?? new URL('../../out/web', import.meta.url).pathname], ['b', process.env.WEB_B], ['c', process.env.WEB_C]].filter(([, w]) => w)) {
  const dir = await mkdtemp(join(tmpdir(), 'kv0-try-'));
  await symlink(w, join(dir, 'site'));
  await symlink(process.env.REPO ?? new URL('../../out/webbench/first/repo', import.meta.url).pathname, join(dir, 'repo'));
  sides[name] = { dir, srv: await startServer({ root: dir, delayMs: 50 }), rows: [] };
}
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const N = Number(process.env.N ?? 6);
for (let i = 0; i < N; i++) {
  for (const [name, side] of Object.entries(sides)) {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await ctx.newPage();
    await page.addInitScript(() => {
      const W = window.Worker;
      window.__goReady = null;
      window.Worker = function (...a) { const w = new W(...a); w.addEventListener('message', () => { if (window.__goReady === null) window.__goReady = performance.now(); }); return w; };
      window.Worker.prototype = W.prototype;
    });
    side.srv.reset();
    await page.goto(`${side.srv.url}/site/index.html?repo=/repo`);
    await page.waitForFunction(() => window.kv0dash && window.kv0dash.ready, null, { timeout: 30000 });
    const first = await page.evaluate(() => window.kv0dash.ready.then(() => performance.now()));
    const go = await page.evaluate(() => window.__goReady);
    side.rows.push({ go: Math.round(go), first: Math.round(first), after: Math.round(first - go), req: side.srv.requests, waves: side.srv.waves });
    await ctx.close();
  }
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
for (const [name, side] of Object.entries(sides)) {
  console.log(name, JSON.stringify(side.rows));
  console.log(name, 'median go_ready', med(side.rows.map((r) => r.go)), 'first', med(side.rows.map((r) => r.first)), 'first-go', med(side.rows.map((r) => r.after)), 'req', med(side.rows.map((r) => r.req)), 'waves', med(side.rows.map((r) => r.waves)));
  await side.srv.close();
  await rm(side.dir, { recursive: true, force: true });
}
await browser.close();
