// A/B of module builds in one Chromium page: each build's warm read of the
// benchmark series (tests/wasm/bench.mjs's data) on the page's thread,
// rounds alternating with native Go's warm read (tests/wasm/benchdata) and
// a plain fetch of the series' data range; prints medians (ms per read)
// and ratios to native. Usage:
//   node ab.mjs DATA_DIR NAME=MODULE_DIR[,GOGC=N] ... [ROUNDS=7 in the environment]
// e.g. node ab.mjs ../../out/wasm-bench old=../../out/wasm-before new=../../out/wasm new200=../../out/wasm,GOGC=200
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
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
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
const res = Object.fromEntries([...variants.map((v) => [v.name, []]), ['native', []], ['fetch', []]]);
try {
  const pages = [];
  for (const [i, v] of variants.entries()) {
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
      res[v.name].push(await pages[i].evaluate(async (id) => { const t = performance.now(); for (let k = 0; k < 3; k++) await window.repo.read([id]); return (performance.now() - t) / 3; }, sid));
    }
    res.fetch.push(await pages[0].evaluate(async ([u, range]) => { const t = performance.now(); for (let k = 0; k < 3; k++) await (await fetch(u, { headers: { Range: range } })).arrayBuffer(); return (performance.now() - t) / 3; }, [`${dataSrv.url}${dataPath}`, range]));
    res.native.push(JSON.parse((await run(benchdata, ['read', `${dataSrv.url}/repo`, sid, '3'])).stdout).warm_ms);
  }
} finally {
  await browser.close();
  await Promise.all([...servers, dataSrv].map((s) => s.close()));
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log('| build | median ms per read | min | ratio to native (medians) |\n|---|---|---|---|');
for (const [k, a] of Object.entries(res)) console.log(`| ${k} | ${med(a).toFixed(1)} | ${Math.min(...a).toFixed(1)} | ${(med(a) / med(res.native)).toFixed(2)}× |`);
