// The dashboard's benchmarks (make bench-web; figures in docs/benchmarks.md),
// in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core):
//
//   first   time to first chart, cold cache, 20 runs × 4 metrics × 100k steps (optimized), 1,000 points
//           per line, every request delayed 50 ms: api mode (kv0 serve behind a delaying proxy) and direct
//           mode (the wasm module, from a static server); requests and bytes of each
//   many    100 runs × 1 metric × 100k steps in one panel: time to draw, then the frame times while a
//           zoom is dragged (requestAnimationFrame intervals; each frame's main-thread work, from its first
//           input handler to a message posted from its animation frame; Event Timing of the pointer events) and
//           the time until the zoomed range is drawn again
//   live    a run appending 1,000 points/s through kv0 track: the lag between a point's commit and its
//           display, and the requests of a poll that finds nothing new (api and direct mode)
//   scroll  the runs table of 10,000 runs (SCROLL_RUNS) scrolled end to end by the wheel: the rows in the
//           DOM, frame intervals and each frame's main-thread work
//
// The page says when it is drawn through window.kv0dash (ready, charts()); nothing waits a fixed time.
// Usage: node bench.mjs [first|many|live|scroll ...] (default all); the results are printed as JSON and kept in
// DATA_DIR/results.json. Environment: KV0 (default bin/kv0),
// WEB_DIR (out/web), WASM_DIR (out/wasm), DATA_DIR (out/webbench, reused when present), RUNS (cold
// loads per mode, default 5), MANY_RUNS (pages of many, default 1), WEB_DIR_B (another build of the
// dashboard measured side by side in api mode and many), LIVE_SECONDS (default 30), CHROMIUM (default
// /usr/bin/chromium).
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { startProxy, startStatic } from './servers.mjs';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const KV0 = resolve(process.env.KV0 ?? join(root, 'bin/kv0'));
const WEB_DIR = resolve(process.env.WEB_DIR ?? join(root, 'out/web'));
const WASM_DIR = resolve(process.env.WASM_DIR ?? join(root, 'out/wasm'));
const DATA_DIR = resolve(process.env.DATA_DIR ?? join(root, 'out/webbench'));
const RUNS = Number(process.env.RUNS ?? 5);
const LIVE_SECONDS = Number(process.env.LIVE_SECONDS ?? 30);
const which = process.argv.slice(2).length ? process.argv.slice(2) : ['first', 'many', 'live', 'scroll'];

for (const [what, dir] of [['the dashboard (make web)', WEB_DIR], ['the wasm module (make wasm)', WASM_DIR]]) {
  if (!existsSync(join(dir, what.includes('wasm') ? 'kv0.wasm' : 'index.html'))) {
    console.error(`bench-web: ${what} is not built in ${dir}`);
    process.exit(1);
  }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN; };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };
const r1 = (x) => Math.round(x * 10) / 10;

/** The repository of a benchmark, written once by benchdata and cached. */
async function dataset(name, runs, metrics, steps, { cleanup = true } = {}) {
  const dir = join(DATA_DIR, name);
  const idsFile = join(dir, 'ids');
  if (!existsSync(idsFile)) {
    const gen = join(root, 'bin/webbenchdata');
    await run('go', ['build', '-o', gen, './tests/webbench/benchdata'], { cwd: root });
    await rm(dir, { recursive: true, force: true });
    console.error(`bench-web: writing ${runs} runs × ${metrics} metrics × ${steps} steps to ${dir}/repo ...`);
    const { stdout } = await run(gen, [join(dir, 'repo'), String(runs), String(metrics), String(steps)], { maxBuffer: 16 << 20 });
    // Only the optimized version is read: drop the ones before it.
    if (cleanup) await run(KV0, ['lance', 'cleanup', join(dir, 'repo', 'metrics.lance'), '--older-than', '1s']);
    await writeFile(idsFile, stdout);
  }
  return { repo: join(dir, 'repo'), ids: (await readFile(idsFile, 'utf8')).trim().split('\n') };
}

/** Starts kv0 serve on repo (port 0) with the dashboard in web, and resolves with its URL and a stop function. */
async function serve(repo, web = WEB_DIR) {
  const p = spawn(KV0, ['serve', repo, '--listen', '127.0.0.1:0', '--web', web, '--wasm', WASM_DIR], { stdio: ['ignore', 'pipe', 'pipe'] });
  let errText = '';
  p.stderr.on('data', (d) => { errText += d; });
  const url = await new Promise((res, rej) => {
    const rl = createInterface({ input: p.stdout });
    rl.on('line', (l) => { const m = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(l); if (m) res(m[1]); });
    p.on('exit', (code) => rej(new Error(`kv0 serve exited with ${code}: ${errText}`)));
  });
  // CPU time the server process has used (user + system, ms), from /proc.
  const cpu = async () => {
    const f = (await readFile(`/proc/${p.pid}/stat`, 'utf8')).split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // clock ticks of 10 ms
  };
  return { url, cpu, stop: () => new Promise((r) => { p.once('exit', r); p.kill('SIGTERM'); }) };
}

// The page-side recorder, installed before the app runs: when the app sets
// window.kv0dash, the time its ready promise resolves (ms since navigation
// start); with firstChart, the first animation frame at which panels()
// reports a drawn panel.
function recorder({ firstChart }) {
  const b = (window.__bench = { readyAt: null, firstChartAt: null, error: null });
  let hook;
  Object.defineProperty(window, 'kv0dash', {
    configurable: true,
    get() { return hook; },
    set(v) {
      hook = v;
      Promise.resolve(v && v.ready).then(() => { b.readyAt = performance.now(); }, (e) => { b.error = String((e && e.message) || e); });
    },
  });
  if (firstChart) {
    const tick = () => {
      try {
        // panels() is cheap (no points copied); a drawn panel has its lines.
        if (hook && hook.panels().some((p) => p.drawn)) { b.firstChartAt = performance.now(); return; }
      } catch { /* not yet */ }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }
}

async function waitReady(page, timeout = 120000) {
  await page.waitForFunction(() => window.__bench && (window.__bench.readyAt !== null || window.__bench.error !== null), null, { timeout, polling: 10 });
  const b = await page.evaluate(() => ({ ...window.__bench, origin: performance.timeOrigin }));
  if (b.error) throw new Error(`kv0dash.ready rejected: ${b.error}`);
  return b;
}

const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
const results = {};
const loadStart = (await readFile('/proc/loadavg', 'utf8').catch(() => '')).trim();

/** One cold load of url (a new browser context: empty HTTP cache): ready, first chart, requests, bytes. */
async function coldLoad(url, srv, { firstChart = true, viewport = { width: 1400, height: 900 }, server } = {}) {
  const ctx = await browser.newContext({ viewport });
  const page = await ctx.newPage();
  await page.addInitScript(recorder, { firstChart });
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Performance.enable');
  if (PROFILE) { await cdp.send('Profiler.enable'); await cdp.send('Profiler.setSamplingInterval', { interval: 200 }); await cdp.send('Profiler.start'); }
  srv.reset();
  const cpu0 = server ? await server.cpu() : 0;
  await page.goto(url);
  const b = await waitReady(page);
  const profile = PROFILE ? topFunctions((await cdp.send('Profiler.stop')).profile) : undefined;
  const serverCPU = server ? (await server.cpu()) - cpu0 : null;
  // The page's main-thread time until now (CDP's cumulative durations, s).
  const m = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
  const until = srv.upTo(b.origin + b.readyAt);
  const atFirst = b.firstChartAt === null ? null : srv.upTo(b.origin + b.firstChartAt);
  // Where the time went, from the server's log (ms after navigation start):
  // the app's script, the wasm module, the first and last request for
  // points (api) or metrics data files (direct), and the page's own work
  // after the last answer before ready.
  const rel = (t) => r1(t - b.origin);
  const isData = (p) => p.includes('/series/points') || p.includes('/metrics.lance/data/');
  const ends = until.entries.filter((e) => e.end !== undefined);
  const find = (re) => ends.find((e) => re.test(e.path));
  const data = ends.filter((e) => isData(e.path));
  const lastEnd = Math.max(...ends.map((e) => e.end));
  const phases = {
    app_loaded_ms: find(/\/app\.js$/) ? rel(find(/\/app\.js$/).end) : null,
    module_loaded_ms: find(/kv0\.wasm$/) ? rel(find(/kv0\.wasm$/).end) : null,
    first_data_request_ms: data.length ? rel(Math.min(...data.map((e) => e.at))) : null,
    last_data_response_ms: data.length ? rel(Math.max(...data.map((e) => e.end))) : null,
    last_response_ms: rel(lastEnd),
    after_last_response_ms: r1(b.readyAt - (lastEnd - b.origin)),
  };
  // api mode: the wait from the series lists' answer to the first points request, and how many
  // points requests the page's starter sent (web/src/early.js; null for a page without its log).
  const lists = ends.find((e) => /\/api\/v1\/series\?/.test(e.path));
  const apiPoints = data.filter((e) => e.path.includes('/series/points'));
  phases.lists_to_points_ms = lists && apiPoints.length ? r1(Math.min(...apiPoints.map((e) => e.at)) - lists.end) : null;
  phases.starter_points = await page.evaluate(() => window.kv0early?.log?.sent.filter((u) => u.includes('/series/points')).length ?? null);
  const charts = await page.evaluate(() => window.kv0dash.charts().map((c) => ({ metric: c.metric, runs: c.runs.length, points: c.runs.map((r) => r.steps.length) })));
  const panels = await page.evaluate(() => window.kv0dash.panels().length);
  await ctx.close();
  // The waterfall: each request's arrival and end, ms after navigation start.
  const waterfall = until.entries.map((e) => `${Math.round(e.at - b.origin)}-${Math.round((e.end ?? NaN) - b.origin)} ${e.bytes}B ${e.path.slice(0, 60)}`);
  phases.waves = until.waves;
  // What the first line needed: the requests (and waves) that arrived before it was drawn.
  phases.first_chart_waves = atFirst?.waves ?? null;
  phases.first_chart_requests = atFirst?.requests ?? null;
  phases.first_chart_bytes = atFirst?.bytes ?? null;
  phases.server_cpu_ms = serverCPU;
  phases.page_task_ms = r1(m.TaskDuration * 1000);
  phases.page_script_ms = r1(m.ScriptDuration * 1000);
  phases.page_layout_paint_ms = r1((m.LayoutDuration + m.RecalcStyleDuration) * 1000);
  return { ready_ms: b.readyAt, first_chart_ms: b.firstChartAt, requests: until.requests, bytes: until.bytes, paths: until.paths, charts, panels, waterfall, phases, profile };
}

// PROFILE=1: a CPU profile of the page's main thread during each cold load
// (CDP Profiler, 200 µs samples), reported as the functions with the most
// self time.
const PROFILE = process.env.PROFILE === '1';
function topFunctions(profile, n = 15) {
  const self = new Map();
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const dt = profile.timeDeltas;
  profile.samples.forEach((id, i) => {
    const f = byId.get(id).callFrame;
    const k = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
    self.set(k, (self.get(k) ?? 0) + (dt[i] ?? 0) / 1000);
  });
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, ms]) => `${Math.round(ms)} ms ${k}`);
}

function summarize(loads) {
  return {
    ready_ms: r1(median(loads.map((l) => l.ready_ms))), ready_min_ms: r1(Math.min(...loads.map((l) => l.ready_ms))),
    first_chart_ms: r1(median(loads.map((l) => l.first_chart_ms))),
    requests: median(loads.map((l) => l.requests)), bytes: median(loads.map((l) => l.bytes)),
    phases: Object.fromEntries(Object.keys(loads[0].phases).map((k) => [k, loads[0].phases[k] === null ? null : r1(median(loads.map((l) => l.phases[k])))])),
    drawn: loads[0].charts.map((c) => `${c.metric}: ${c.runs} lines, ≤${Math.max(...c.points)} points`),
    panels: loads[0].panels,
  };
}

// FIRST_MODES=api,direct,... picks the page loads of benchFirst (default all four).
const modes = (n) => !process.env.FIRST_MODES || process.env.FIRST_MODES.split(',').includes(n);

// WEB_DIR_B: a second build of the dashboard (another commit's out/web), measured side by side with
// WEB_DIR: in api mode each cold load of WEB_DIR is followed by one of WEB_DIR_B, from its own kv0 serve
// (the same binary and repository) behind its own delaying proxy; its results are the modes' "_b" entries.
const WEB_DIR_B = process.env.WEB_DIR_B ? resolve(process.env.WEB_DIR_B) : null;

/** The waterfall of the load whose first chart is the median's. */
const medianWaterfall = (loads) => {
  const m = median(loads.map((l) => l.first_chart_ms));
  return loads.find((l) => l.first_chart_ms === m)?.waterfall ?? loads[0].waterfall;
};

async function benchFirst() {
  const { repo, ids } = await dataset('first', 20, 4, 100_000);
  const out = {};
  // api: kv0 serve behind a proxy adding 50 ms to every request.
  const sides = [];
  for (const web of WEB_DIR_B ? [WEB_DIR, WEB_DIR_B] : [WEB_DIR]) {
    const kv = await serve(repo, web);
    sides.push({ kv, proxy: await startProxy({ target: kv.url, delayMs: 50 }), suffix: sides.length ? '_b' : '' });
  }
  try {
    for (const [name, query] of [['api', ''], ['api_all20', `?sel=${ids.join(',')}`]].filter(([n]) => modes(n))) {
      const loads = sides.map(() => []);
      for (let i = 0; i < RUNS; i++) {
        for (const [k, { kv, proxy }] of sides.entries()) loads[k].push(await coldLoad(`${proxy.url}/${query}`, proxy, { server: kv }));
      }
      for (const [k, { suffix }] of sides.entries()) {
        out[name + suffix] = summarize(loads[k]);
        out[name + suffix].waterfall = medianWaterfall(loads[k]);
        if (PROFILE) out[name + suffix].profile = loads[k].at(-1).profile;
      }
    }
  } finally { for (const { kv, proxy } of sides) { await proxy.close(); await kv.stop(); } }
  // direct: the page, the module and the repository from a static server adding 50 ms.
  const web = existsSync(join(WEB_DIR, 'wasm', 'kv0.wasm')) ? [] : [['/wasm/', WASM_DIR]];
  const st = await startStatic({ mounts: [['/', WEB_DIR], ...web, ['/repo/', repo]], delayMs: 50 });
  try {
    for (const [name, query] of [['direct', '?repo=/repo'], ['direct_all20', `?repo=/repo&sel=${ids.join(',')}`]].filter(([n]) => modes(n))) {
      const loads = [];
      for (let i = 0; i < RUNS; i++) loads.push(await coldLoad(`${st.url}/${query}`, st));
      out[name] = summarize(loads);
      out[name].waterfall = medianWaterfall(loads);
      if (PROFILE) out[name].profile = loads.at(-1).profile;
      const wasm = loads[0].paths.filter((p) => p.includes('.wasm'));
      out[name].module_requests = wasm.length;
    }
  } finally { await st.close(); }
  return out;
}

/**
 * Records animation frames in the page until stopFrames: their intervals, each
 * frame's main-thread work, slow events (Event Timing) and long animation frames.
 */
async function startFrames(page) {
  await page.evaluate(() => {
    const f = (window.__frames = { t: [], work: [], events: [], loaf: [], on: true });
    // A frame's main-thread work: from its first input handler (or its
    // animation-frame callbacks, when no input came) to a message posted
    // from the callback, which runs once the frame's style, layout and
    // paint are done.
    let start = null;
    const mark = () => { if (start === null) start = performance.now(); };
    for (const type of ['pointermove', 'mousemove', 'pointerdown', 'mousedown', 'wheel', 'keydown']) addEventListener(type, mark, { capture: true });
    const ch = new MessageChannel();
    ch.port1.onmessage = () => { if (start !== null) f.work.push(performance.now() - start); start = null; };
    const tick = (t) => { f.t.push(t); mark(); ch.port2.postMessage(0); if (f.on) requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    new PerformanceObserver((l) => { for (const e of l.getEntries()) f.events.push({ name: e.name, duration: e.duration, processing: e.processingEnd - e.processingStart, delay: e.processingStart - e.startTime }); })
      .observe({ type: 'event', durationThreshold: 16 });
    try {
      new PerformanceObserver((l) => { for (const e of l.getEntries()) f.loaf.push({ duration: e.duration, blocking: e.blockingDuration, scripts: (e.scripts ?? []).map((s) => `${s.invoker} ${Math.round(s.duration)}ms ${s.sourceFunctionName ?? ''}@${(s.sourceURL ?? '').split('/').pop()}:${s.sourceCharPosition}`) }); })
        .observe({ type: 'long-animation-frame' });
    } catch { /* not supported */ }
  });
}

/** Stops startFrames's recorder and summarises what it saw. */
async function stopFrames(page) {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const frames = await page.evaluate(() => { const f = window.__frames; f.on = false; return { t: f.t, work: f.work, events: f.events, loaf: f.loaf }; });
  const iv = frames.t.slice(1).map((t, i) => t - frames.t[i]);
  const work = frames.work.slice(1);
  return {
    frames: iv.length, frame_p50_ms: r1(median(iv)), frame_p95_ms: r1(pct(iv, 0.95)), frame_max_ms: r1(Math.max(...iv)),
    work_p50_ms: r1(median(work)), work_p95_ms: r1(pct(work, 0.95)), work_max_ms: r1(Math.max(...work)),
    frames_over_16_7ms: iv.filter((x) => x > 16.7 * 1.5).length,
    slow_events: frames.events.length, slow_event_max_ms: frames.events.length ? Math.max(...frames.events.map((e) => e.duration)) : 0,
    slow_event_names: [...new Set(frames.events.map((e) => e.name))],
    long_frames: frames.loaf.slice(0, 5),
  };
}

// MANY_RUNS: pages of benchMany (default 1; each a fresh server, browser context and drag). With
// WEB_DIR_B each page of WEB_DIR is followed by one of WEB_DIR_B.
const MANY_RUNS = Number(process.env.MANY_RUNS ?? 1);

async function benchMany() {
  const { repo, ids } = await dataset('many', 100, 1, 100_000);
  if (MANY_RUNS === 1 && !WEB_DIR_B) return manyOnce(repo, ids, WEB_DIR);
  const runs = { a: [], b: [] };
  for (let i = 0; i < MANY_RUNS; i++) {
    runs.a.push(await manyOnce(repo, ids, WEB_DIR));
    if (WEB_DIR_B) runs.b.push(await manyOnce(repo, ids, WEB_DIR_B));
  }
  const sum = (list) => ({
    draw_ms: list.map((r) => r.draw_ms), frame_p50_ms: list.map((r) => r.drag.frame_p50_ms), frame_p95_ms: list.map((r) => r.drag.frame_p95_ms),
    frame_max_ms: list.map((r) => r.drag.frame_max_ms), work_p95_ms: list.map((r) => r.drag.work_p95_ms), frames_over_25ms: list.map((r) => r.drag.frames_over_16_7ms), zoom_redraw_ms: list.map((r) => r.zoom.redraw_ms),
  });
  return { web: WEB_DIR, summary: sum(runs.a), runs: runs.a, ...(WEB_DIR_B ? { web_b: WEB_DIR_B, summary_b: sum(runs.b), runs_b: runs.b } : {}) };
}

async function manyOnce(repo, ids, web) {
  const out = {};
  const kv = await serve(repo, web);
  const proxy = await startProxy({ target: kv.url, delayMs: 0 });
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  try {
    const page = await ctx.newPage();
    await page.addInitScript(recorder, { firstChart: false });
    proxy.reset();
    await page.goto(`${proxy.url}/?sel=${ids.join(',')}`);
    const b = await waitReady(page);
    out.draw_ms = r1(b.readyAt);
    const drawn = await page.evaluate(() => window.kv0dash.charts().map((c) => ({ metric: c.metric, runs: c.runs.length, points: c.runs.reduce((s, r) => s + r.steps.length, 0) })));
    out.drawn = drawn;
    // What uPlot was given: one x array (the union of the lines' x values)
    // and a column of that length per line and band edge.
    out.plot = await page.evaluate(() => {
      const el = [...document.querySelectorAll('*')].find((e) => e.kv0plot);
      return el ? { x_values: el.kv0plot.data[0].length, columns: el.kv0plot.data.length - 1 } : null;
    });
    const until = proxy.upTo(b.origin + b.readyAt);
    out.requests = until.requests;
    out.bytes = until.bytes;
    // Where the time went: the series lists (one request per run, or one for many: /api/v1/series?runs=), then the points.
    const lists = until.entries.filter((e) => /\/series(\?|$)/.test(e.path));
    const points = until.entries.filter((e) => e.path.includes('/series/points'));
    out.series_lists = { requests: lists.length, first_ms: r1(lists[0]?.at - b.origin), last_end_ms: r1(Math.max(...lists.map((e) => e.end)) - b.origin) };
    out.points_requests = points.map((e) => `${Math.round(e.at - b.origin)}-${Math.round(e.end - b.origin)} ms, ${e.bytes} B`);
    // Drag a zoom across the middle half of the panel's plot area.
    const over = page.locator('.u-over').first();
    await over.scrollIntoViewIfNeeded();
    const box = await over.boundingBox();
    if (!box) throw new Error('no uPlot plot area (.u-over) on the page');
    await startFrames(page);
    const y = box.y + box.height / 2;
    const x0 = box.x + box.width * 0.25, x1 = box.x + box.width * 0.75;
    await page.mouse.move(x0, y);
    await page.mouse.down();
    const t0 = Date.now();
    await page.mouse.move(x1, y, { steps: 60 });
    const dragMs = Date.now() - t0;
    out.drag = { drag_ms: dragMs, ...(await stopFrames(page)) };
    // Release: the zoom re-reads the visible range at full resolution.
    const before = await page.evaluate(() => window.kv0dash.charts()[0].runs[0].steps.length);
    const t1 = await page.evaluate(() => performance.now());
    await page.mouse.up();
    await page.waitForFunction(() => {
      const z = new URL(location.href).searchParams.get('zoom');
      if (!z) return false;
      const [lo, hi] = z.split(',').map(Number);
      const c = window.kv0dash.charts()[0];
      const m = (hi - lo) * 0.01 + 1;
      return c && c.runs.length > 0 && c.runs.every((r) => r.steps.length > 0 && r.steps[0] >= lo - m && r.steps[r.steps.length - 1] <= hi + m);
    }, null, { timeout: 60000, polling: 'raf' });
    const t2 = await page.evaluate(() => performance.now());
    const zoomed = await page.evaluate(() => {
      const z = new URL(location.href).searchParams.get('zoom');
      const c = window.kv0dash.charts()[0];
      return { zoom: z, runs: c.runs.length, points_per_line: c.runs[0].steps.length, first: c.runs[0].steps[0], last: c.runs[0].steps.at(-1) };
    });
    out.zoom = { redraw_ms: r1(t2 - t1), ...zoomed, points_before: before };
  } finally { await ctx.close(); await proxy.close(); await kv.stop(); }
  return out;
}

// SCROLL_RUNS: runs of the scroll benchmark's repository (default 10,000).
const SCROLL_RUNS = Number(process.env.SCROLL_RUNS ?? 10_000);

/** The runs table of SCROLL_RUNS runs: its load, its DOM, and the frames while it is scrolled end to end. */
async function benchScroll() {
  // No cleanup: removing the repository's ~10,000 versions (a commit per
  // run) takes longer than the benchmark, and the page reads the latest
  // versions only.
  const { repo } = await dataset(`scroll-${SCROLL_RUNS}`, SCROLL_RUNS, 1, 10, { cleanup: false });
  const out = {};
  const kv = await serve(repo);
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  try {
    const page = await ctx.newPage();
    await page.addInitScript(recorder, { firstChart: false });
    await page.goto(`${kv.url}/`);
    const b = await waitReady(page);
    out.ready_ms = r1(b.readyAt);
    out.runs = await page.evaluate(() => window.kv0dash.runs().length);
    if (out.runs !== SCROLL_RUNS) throw new Error(`the table lists ${out.runs} runs of ${SCROLL_RUNS}`);
    const body = page.locator('.rt-body');
    const box = await body.boundingBox();
    if (!box) throw new Error('no runs table (.rt-body) on the page');
    out.rows_in_dom = await page.locator('.rt-row').count();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await startFrames(page);
    // Wheel steps of 600 px, one per frame, until the end of the table.
    const t0 = Date.now();
    let steps = 0;
    for (; steps < 2000; steps++) {
      await page.mouse.wheel(0, 600);
      const end = await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => {
        const el = document.querySelector('.rt-body');
        r(el.scrollTop + el.clientHeight >= el.scrollHeight - 1);
      })));
      if (end) break;
    }
    out.scroll = { wheel_steps: steps + 1, scroll_ms: Date.now() - t0, ...(await stopFrames(page)) };
    out.rows_in_dom_after = await page.locator('.rt-row').count();
    // The last run (the oldest: the table lists the newest first) is drawn at the end.
    const last = await page.evaluate(() => window.kv0dash.runs().at(-1).run_id);
    out.last_row_shown = await page.locator(`.rt-row[data-id="${last}"]`).isVisible();
    if (!out.last_row_shown) throw new Error('the last run is not shown at the end of the table');
  } finally { await ctx.close(); await kv.stop(); }
  return out;
}

async function benchLive() {
  const dir = join(DATA_DIR, 'live');
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'wal'), { recursive: true });
  const repo = join(dir, 'repo');
  const env = { ...process.env, KV0_WAL_DIR: join(dir, 'wal') };
  const writer = spawn(KV0, ['track', repo, '--run', 'live', '--experiment', 'live', '--flush-interval', '200ms', '--ack'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const acks = []; // [line, ms since the epoch]
  createInterface({ input: writer.stdout }).on('line', (l) => acks.push([Number(l), Date.now()]));
  const runID = await new Promise((res, rej) => {
    createInterface({ input: writer.stderr }).on('line', (l) => { const m = /^run (\w+)/.exec(l); if (m) res(m[1]); });
    writer.on('exit', (c) => rej(new Error(`kv0 track exited with ${c}`)));
  });
  const written = []; // written[step] = ms since the epoch
  let step = 0;
  const t0 = Date.now();
  const feed = setInterval(() => {
    const due = Math.floor((Date.now() - t0)); // 1,000 points/s
    let lines = '';
    for (; step < due; step++) {
      lines += `{"name":"loss","value":${(1 + Math.sin(step / 500) + Math.random() * 0.1).toFixed(5)},"step":${step}}\n`;
      written[step] = Date.now();
    }
    if (lines) writer.stdin.write(lines);
  }, 10);
  const out = { rate_points_per_s: 1000 };
  const kv = await serve(repo);
  const proxy = await startProxy({ target: kv.url, delayMs: 50 });
  const st = await startStatic({ mounts: [['/', WEB_DIR], ...(existsSync(join(WEB_DIR, 'wasm', 'kv0.wasm')) ? [] : [['/wasm/', WASM_DIR]]), ['/repo/', repo]], delayMs: 50 });
  const pages = [];
  try {
    for (const [mode, srv, query] of [['api', proxy, `?sel=${runID}`], ['direct', st, `?repo=/repo&sel=${runID}`]]) {
      const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const page = await ctx.newPage();
      await page.addInitScript(recorder, { firstChart: false });
      await page.goto(`${srv.url}/${query}`);
      await waitReady(page);
      // Each change of the drawn line's last step, seen every 20 ms.
      await page.evaluate(() => {
        window.__live = [];
        let last = -1;
        setInterval(() => {
          const c = window.kv0dash.charts().find((x) => x.metric === 'loss');
          const s = c && c.runs[0] ? c.runs[0].steps.at(-1) : -1;
          if (s !== last) { last = s; window.__live.push([performance.timeOrigin + performance.now(), s]); }
        }, 20);
      });
      pages.push({ mode, srv, ctx, page });
    }
    // The writer runs for LIVE_SECONDS while both pages follow it.
    await new Promise((r) => setTimeout(r, LIVE_SECONDS * 1000)); // the measurement's duration, not a wait for the page
    clearInterval(feed);
    const lastStep = step - 1;
    writer.stdin.end();
    await new Promise((r) => writer.once('exit', r));
    const commitOf = (s) => { const a = acks.find(([line]) => line >= s + 1); return a ? a[1] : NaN; };
    for (const p of pages) {
      // The final point shows (the run also finishes, which changes the runs table).
      await p.page.waitForFunction((s) => window.__live.length && window.__live.at(-1)[1] === s, lastStep, { timeout: 30000, polling: 50 });
      const samples = await p.page.evaluate(() => window.__live);
      const lags = samples.filter(([, s]) => s >= 0 && written[s] !== undefined).map(([t, s]) => ({ t, s, write: t - written[s], commit: t - commitOf(s) }));
      const half = t0 + LIVE_SECONDS * 500;
      out[p.mode] = {
        updates: lags.length,
        lag_from_write_p50_ms: r1(median(lags.map((l) => l.write))), lag_from_write_max_ms: r1(Math.max(...lags.map((l) => l.write))),
        lag_from_commit_p50_ms: r1(median(lags.map((l) => l.commit))), lag_from_commit_max_ms: r1(Math.max(...lags.map((l) => l.commit))),
        lag_first_half_p50_ms: r1(median(lags.filter((l) => l.t < half).map((l) => l.write))),
        lag_second_half_p50_ms: r1(median(lags.filter((l) => l.t >= half).map((l) => l.write))),
        // How old the newest point shown was, at worst: just before each update.
        staleness_max_ms: r1(Math.max(...lags.slice(1).map((l, i) => l.t - written[lags[i].s]))),
        staleness_p50_ms: r1(median(lags.slice(1).map((l, i) => l.t - written[lags[i].s]))),
        points_behind_max: Math.max(...lags.map((l) => { let n = 0; while (written[l.s + 1 + n] !== undefined && written[l.s + 1 + n] <= l.t) n++; return n; })),
      };
    }
    // Polls that find nothing new: the requests between two polls once
    // nothing changes (a poll starts with the versions request in api
    // mode; in direct mode a poll is every request burst 1 s apart).
    for (const p of pages) {
      p.srv.reset();
      const isPoll = p.mode === 'api' ? (path) => path.includes('/api/v1/versions') : null;
      await waitPolls(p.srv, isPoll, 4);
      const bursts = pollBursts(p.srv.log, isPoll);
      const idle = bursts.slice(1, -1);
      out[p.mode].idle_poll_requests = idle.map((b) => b.length);
      out[p.mode].idle_poll_bytes = idle.map((b) => b.reduce((s, e) => s + e.bytes, 0));
      out[p.mode].idle_poll_paths = idle[0]?.map((e) => e.path);
      out[p.mode].poll_interval_ms = r1(median(bursts.slice(1).map((b, i) => b[0].at - bursts[i][0].at)));
    }
  } finally {
    clearInterval(feed);
    for (const p of pages) await p.ctx.close();
    await proxy.close(); await st.close(); await kv.stop();
    if (writer.exitCode === null) { writer.kill('SIGTERM'); await new Promise((r) => writer.once('exit', r)); }
  }
  return out;
}

// Splits a request log into polls: at each request isPoll says starts one
// (api), or at each request 500 ms or more after the one before (direct).
function pollBursts(log, isPoll) {
  const bursts = [];
  for (const e of log) {
    const prev = bursts.at(-1)?.at(-1);
    if (!prev || (isPoll ? isPoll(e.path) : e.at - prev.at >= 500)) bursts.push([e]);
    else bursts.at(-1).push(e);
  }
  return bursts;
}

async function waitPolls(srv, isPoll, n) {
  const deadline = Date.now() + 60000;
  while (pollBursts(srv.log, isPoll).length < n + 1) {
    if (Date.now() > deadline) throw new Error(`fewer than ${n} polls in 60 s: ${srv.log.map((e) => e.path).join(' ')}`);
    await new Promise((r) => setTimeout(r, 50)); // polling the server's request log
  }
}

try {
  if (which.includes('first')) results.first = await benchFirst();
  if (which.includes('many')) results.many = await benchMany();
  if (which.includes('live')) results.live = await benchLive();
  if (which.includes('scroll')) results.scroll = await benchScroll();
} finally {
  await browser.close();
}
// The machine's load, since every figure depends on it (2 shared cores here).
results.loadavg_start = loadStart;
results.loadavg = (await readFile('/proc/loadavg', 'utf8').catch(() => '')).trim();
results.when = new Date().toISOString();
await mkdir(DATA_DIR, { recursive: true });
await writeFile(join(DATA_DIR, 'results.json'), JSON.stringify(results, null, 2) + '\n');
console.log(JSON.stringify(results, null, 2));
