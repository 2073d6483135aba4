// The first cold read against later ones, in headless Chromium, across
// configurations tried in alternation (a new browser for every trial): for
// each, the median time of a page's first cold read of the bench series
// (a new handle, 50 ms added to every request, right after load()) and of a
// second one from another new handle, when V8 has compiled the read path and
// the browser holds connections to the server. Usage:
//   CONFIGS='[{"name":"base"},{"name":"eager","flags":["--js-flags=--no-wasm-lazy-compilation"]}]' \
//   K=7 node coldab.mjs [DATA_DIR]
// A configuration: name; dir (a module folder, default out/wasm); flags
// (Chromium's); env (the Go program's); preconnect (that many parallel
// fetches to the data server before the first read); visited (a page of the
// same browser profile first made 30 reads and waited 3 s: the module's
// optimized code is then in Chromium's code cache).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { WASM_DIR } from './fixtures.mjs';

const dataDir = resolve(process.argv[2] ?? join(import.meta.dirname, '../../out/wasm-bench'));
const sid = (await readFile(join(dataDir, 'sid'), 'utf8')).trim();
const configs = JSON.parse(process.env.CONFIGS ?? '[{"name":"default"}]');
const K = Number(process.env.K ?? 5);
const dataSrv = await startServer({ root: dataDir });
const servers = new Map();
for (const c of configs) {
  const page = `<!doctype html><script type="module">
const { load } = await import('./kv0.mjs');
window.kv0 = await load({ worker: false, env: ${JSON.stringify(c.env ?? {})} });
window.ready = true;
</script>`;
  servers.set(c.name, await startServer({ root: resolve(c.dir ?? WASM_DIR), files: { '/ab.html': page }, gzip: true, cacheControl: 'max-age=3600' }));
}
const times = new Map(configs.map((c) => [c.name, { first: [], second: [] }]));
try {
  for (let k = 0; k < K; k++) {
    for (const c of configs) {
      const userDir = await mkdtemp(join(tmpdir(), 'kv0-coldab-'));
      const ctx = await chromium.launchPersistentContext(userDir, {
        executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', ...(c.flags ?? [])],
      });
      const open = async () => {
        const page = await ctx.newPage();
        await page.goto(`${servers.get(c.name).url}/ab.html`);
        await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
        return page;
      };
      const read = (page) => page.evaluate(async ([u, id]) => {
        const t0 = performance.now();
        const repo = await window.kv0.openRepo(u);
        await repo.read([id]);
        const ms = performance.now() - t0;
        await repo.close();
        return ms;
      }, [`${dataSrv.url}/repo`, sid]);
      try {
        dataSrv.delayMs = 0;
        if (c.visited) {
          const before = await open();
          for (let i = 0; i < 30; i++) await read(before);
          await before.evaluate(() => new Promise((r) => setTimeout(r, 3000)));
          await before.close();
        }
        const page = await open();
        if (c.preconnect) {
          await page.evaluate(([u, n]) => Promise.all(Array.from({ length: n }, () => fetch(u).then((r) => r.arrayBuffer()))), [`${dataSrv.url}/sid`, c.preconnect]);
        }
        dataSrv.delayMs = 50;
        for (const which of ['first', 'second']) times.get(c.name)[which].push(await read(page));
      } finally {
        await ctx.close();
        await rm(userDir, { recursive: true, force: true });
      }
    }
  }
} finally {
  await Promise.all([dataSrv.close(), ...[...servers.values()].map((s) => s.close())]);
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log('| configuration | first cold read, median (all) | second cold read, median |\n|---|---|---|');
for (const c of configs) {
  const t = times.get(c.name);
  console.log(`| ${c.name} | ${median(t.first).toFixed(0)} ms (${t.first.map((x) => x.toFixed(0)).join(' ')}) | ${median(t.second).toFixed(0)} ms |`);
}
