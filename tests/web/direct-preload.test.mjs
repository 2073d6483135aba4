// The dashboard's direct mode on a static host with the starter's preload
// (web/src/early.js calls kv0.mjs's preload): the tables' hints, manifests
// and data files' footers are fetched while the module starts, and the
// module's requests for them are answered from memory, so no data file
// range is fetched twice, and the page's own resource timeline (not the
// Worker's) holds those requests. The page shows what the CLI lists.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from '../wasm/server.mjs';
import { kv0, kv0json, tempDir, within, WEB_DIR } from './fixtures.mjs';
import { chromiumOptions, haveChromium } from '../wasm/chromium.mjs';

if (!existsSync(join(WEB_DIR, 'index.html'))) throw new Error(`${WEB_DIR}/index.html is missing: run make web`);

const T = 30000;

describe('direct mode with preload', { skip: !haveChromium && 'no Chromium (set CI=true to make this an error)' }, () => {
  let tmp, srv, browser, cliRuns;
  before(async () => {
    tmp = await tempDir();
    const repo = join(tmp.dir, 'data/repo');
    await kv0(['demo', repo, '--runs', '4', '--steps', '300']);
    await kv0(['optimize', repo]);
    cliRuns = await kv0json(['runs', repo]);
    await cp(WEB_DIR, join(tmp.dir, 'data/site'), { recursive: true });
    srv = await startServer({ root: join(tmp.dir, 'data'), delayMs: 20 });
    browser = await chromium.launch(chromiumOptions);
  });
  after(async () => {
    await browser?.close();
    await srv?.close();
    await tmp?.cleanup();
  });

  it('a first visit: the page fetches the hints, manifests and data file footers, the module none of them again', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      const page = await ctx.newPage();
      page.on('pageerror', (e) => console.error('page error:', e.message));
      srv.reset();
      await page.goto(`${srv.url}/site/index.html?repo=${srv.url}/repo`);
      await within(page.evaluate(() => window.kv0dash.ready.then(() => true)), T, 'kv0dash.ready');
      const rows = await page.evaluate(() => window.kv0dash.runs());
      assert.deepEqual(rows.map((r) => r.run_id), cliRuns.map((r) => r.run_id));
      const log = srv.log.map((r, i) => ({ ...r, i }));
      assert.ok(log.every((r) => r.method === 'GET'), 'only GETs');
      // Data files never change: each range of one is asked for once (a
      // preload the module did not use would show as a second request).
      const seen = new Map();
      for (const r of log.filter((x) => x.path.startsWith('/repo/') && x.path.includes('/data/'))) {
        const k = `${r.path} ${r.range}`;
        seen.set(k, (seen.get(k) ?? 0) + 1);
      }
      assert.ok(seen.size >= 4, `data files read (${seen.size})`);
      assert.deepEqual([...seen].filter(([, n]) => n > 1), [], 'no data file range fetched twice');
      // The page fetched them (the Worker's own requests are in the
      // Worker's resource timeline, not the page's): every table's hint,
      // its two manifests and its data files' footers.
      const byPage = new Set(await page.evaluate(() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)));
      for (const t of ['runs', 'params', 'series', 'metrics']) {
        const mine = log.filter((r) => r.path.startsWith(`/repo/${t}.lance/`));
        const hint = mine.filter((r) => r.path.endsWith('/_versions/latest_version_hint.json'));
        assert.ok(hint.length >= 1 && byPage.has(hint[0].path), `${t}: the page fetched its hint`);
        const first = mine.findIndex((r) => r.path.includes('/data/'));
        const manifests = mine.slice(0, first < 0 ? undefined : first).filter((r) => r.path.endsWith('.manifest'));
        assert.equal(manifests.length, 2, `${t}: the latest and the missing next manifest before its data files, once each`);
        assert.ok(manifests.every((r) => byPage.has(r.path)), `${t}: the page fetched its manifests`);
        const files = mine.filter((r) => r.path.includes('/data/'));
        assert.ok(files.length >= 1 && files.every((r, i) => files.findIndex((x) => x.path === r.path) !== i || byPage.has(r.path)), `${t}: the page fetched each data file's footer`);
      }
    } finally {
      await ctx.close();
    }
  });
});
