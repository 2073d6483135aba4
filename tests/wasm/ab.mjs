// A/B of module builds: each build's warm read of the benchmark series
// (tests/wasm/bench.mjs's data) on the page's thread of its own Chromium,
// rounds alternating with native Go's warm read (tests/wasm/benchdata) and
// a plain fetch of the series' data range; prints medians (ms per read)
// and ratios to native, wall-clock and CPU time (every process of the
// build's Chromium, against the benchdata process's; the static server's
// is in neither). Usage:
//   node ab.mjs DATA_DIR NAME=MODULE_DIR[,GOGC=N] ... [ROUNDS=7 in the environment]
// e.g. node ab.mjs ../../out/wasm-bench old=../../out/wasm-before new=../../out/wasm new200=../../out/wasm,GOGC=200
import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const [dataArg, ...specs] = process.argv.slice(2);
const dataDir = resolve(dataArg);
const rounds = Number(process.env.ROUNDS ?? 7);
const variants = specs.map((s) => {
  const [name, rest] = s.split('=', 2).length === 2 ? [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)] : [s, s];
  const [dir, ...envs] = rest.split(',');
  return { name, dir: resolve(dir), env: Object.fromEntries(envs.map((e) => e.split('='))) };
});
const sid = (await readFile(join(dataDir, 'sid'), 'utf8')).trim();
const benchdata = join(root, 'bin/benchdata');
await run('go', ['build', '-o', benchdata, './tests/wasm/benchdata'], { cwd: root });

const servers = await Promise.all(variants.map((v) => startServer({ root: v.dir, files: { '/ab.html': `<!doctype html><script type="module">
const { load } = await import('./kv0.mjs');
window.kv0 = await load({ worker: false, env: ${JSON.stringify(v.env)} });
window.ready = true;
</script>` } })));
const dataSrv = await startServer({ root: dataDir });
// CPU time (ms) of a process and its descendants, from /proc.
async function treeCPU(root) {
  const procs = new Map();
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = await readFile(`/proc/${d}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(d), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch { /* gone */ }
  }
  let ticks = 0;
  const inTree = (pid) => { for (let p = pid; p > 1; p = procs.get(p)?.ppid ?? 0) if (p === root) return true; return false; };
  for (const [pid, p] of procs) if (inTree(pid)) ticks += p.ticks;
  return ticks * 10; // USER_HZ is 100
}
async function browserPid(tag) {
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try { if ((await readFile(`/proc/${d}/cmdline`, 'utf8')).includes(`--kv0-ab=${tag}`)) return Number(d); } catch { /* gone */ }
  }
  throw new Error(`no Chromium with --kv0-ab=${tag}`);
}
const browsers = [];
const res = Object.fromEntries([...variants.map((v) => [v.name, []]), ['native', []], ['fetch', []]]);
const cpu = Object.fromEntries([...variants.map((v) => [v.name, []]), ['native', []]]);
try {
  const pages = [];
  for (const [i, v] of variants.entries()) {
    const tag = `${process.pid}-${i}`;
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', `--kv0-ab=${tag}`] });
    browsers.push({ browser, pid: await browserPid(tag) });
    const page = await browser.newPage();
    await page.goto(`${servers[i].url}/ab.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 120000 });
    await page.evaluate(async ([u, id]) => { window.repo = await window.kv0.openRepo(u); await window.repo.read([id]); }, [`${dataSrv.url}/repo`, sid]);
    pages.push(page);
  }
  // The data file and range of the warm read, from the log of one read.
  dataSrv.reset();
  await pages[0].evaluate((id) => window.repo.read([id]), sid);
  const { path: dataPath, range } = dataSrv.log.find((l) => l.path.includes('/metrics.lance/data/'));
  for (let r = 0; r < rounds; r++) {
    for (const [i, v] of variants.entries()) {
      const c0 = await treeCPU(browsers[i].pid);
      res[v.name].push(await pages[i].evaluate(async (id) => { const t = performance.now(); for (let k = 0; k < 3; k++) await window.repo.read([id]); return (performance.now() - t) / 3; }, sid));
      cpu[v.name].push((await treeCPU(browsers[i].pid) - c0) / 3);
    }
    res.fetch.push(await pages[0].evaluate(async ([u, range]) => { const t = performance.now(); for (let k = 0; k < 3; k++) await (await fetch(u, { headers: { Range: range } })).arrayBuffer(); return (performance.now() - t) / 3; }, [`${dataSrv.url}${dataPath}`, range]));
    const nat = JSON.parse((await run(benchdata, ['read', `${dataSrv.url}/repo`, sid, '3'])).stdout);
    res.native.push(nat.warm_ms);
    cpu.native.push(nat.warm_cpu_ms);
  }
} finally {
  for (const b of browsers) await b.browser.close();
  await Promise.all([...servers, dataSrv].map((s) => s.close()));
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log('| build | median ms per read | min | ratio to native (medians) | median CPU ms per read | ratio to native (CPU) |\n|---|---|---|---|---|---|');
for (const [k, a] of Object.entries(res)) {
  const c = cpu[k] ? `${med(cpu[k]).toFixed(1)} | ${(med(cpu[k]) / med(cpu.native)).toFixed(2)}×` : ' | ';
  console.log(`| ${k} | ${med(a).toFixed(1)} | ${Math.min(...a).toFixed(1)} | ${(med(a) / med(res.native)).toFixed(2)}× | ${c} |`);
}
