// preload() in headless Chromium with the module in a Worker, as the
// dashboard uses it: the page fetches the hints, manifests and data files'
// footers (on another origin, with no preflight) while the module starts,
// hands them to the Worker, and the Worker's requests for them are answered
// from memory: each URL and range is fetched once, the answers equal those
// of a page without preload, and a missing repository fails the same way.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { buildData, WASM_DIR } from './fixtures.mjs';
import { chromiumOptions, haveChromium } from './chromium.mjs';


// window.run(repo, withPreload) preloads (or not), loads the module in a
// Worker, opens the repository with prefetch and reads runs, series, stats
// and points; it returns the answers or the error's code and message.
const PAGE = `<!doctype html><meta charset="utf-8"><script type="module">
import { load, preload } from './kv0.mjs';
window.run = async (repo, withPreload) => {
  const kept = withPreload ? preload(repo, { files: true }) : Promise.resolve(0);
  const kv0 = await load({ worker: true });
  try {
    // A long version TTL: one open of each table, so both pages send the
    // same requests but for what the preload answered.
    const r = await kv0.openRepo(repo, { versionTTL: 3600000, prefetch: true });
    const runs = await r.runs();
    const series = await r.series(runs[0].run_id);
    const ids = series.map((s) => s.series_id);
    const stats = await r.stats(ids);
    const points = (await r.read(ids, { maxPoints: 30 })).map((s) => ({ id: s.seriesId, steps: [...s.steps], values: [...s.values] }));
    await r.close();
    return { kept: await kept, ok: { runs, series, stats, points } };
  } catch (e) {
    return { kept: await kept, code: e.code, message: String(e.message) };
  }
};
</script>`;

describe('preload in a Worker', { skip: !haveChromium && 'no Chromium (set CI=true to make this an error)' }, () => {
  let data, pageSrv, dataSrv, browser, userDir;
  before(async () => {
    data = await buildData();
    pageSrv = await startServer({ root: WASM_DIR, files: { '/preload.html': PAGE } });
    dataSrv = await startServer({ root: data.dir, delayMs: 20 });
    userDir = await mkdtemp(join(tmpdir(), 'kv0-chromium-'));
    browser = await chromium.launchPersistentContext(userDir, chromiumOptions);
  });
  after(async () => {
    await browser?.close();
    await Promise.all([pageSrv?.close(), dataSrv?.close()]);
    await data?.cleanup();
    if (userDir) await rm(userDir, { recursive: true, force: true });
  });

  // A fresh page each time: the module, its Worker and its preloads are new.
  async function run(repo, withPreload) {
    const page = await browser.newPage();
    try {
      page.on('pageerror', (e) => console.error('page error:', e));
      await page.goto(`${pageSrv.url}/preload.html`);
      dataSrv.reset();
      const got = await page.evaluate(([u, p]) => window.run(u, p), [repo, withPreload]);
      return { got, log: dataSrv.log.map((r) => ({ ...r, key: `${r.path} ${r.range}` })) };
    } finally {
      await page.close();
    }
  }

  it('the Worker takes the page\'s preloads: each URL and range fetched once, the same answers', async () => {
    const repo = `${dataSrv.url}/${data.repo}`;
    const plain = await run(repo, false);
    const pre = await run(repo, true);
    assert.ok(plain.got.ok, JSON.stringify(plain.got));
    assert.deepEqual(pre.got.ok, plain.got.ok, 'the same answers');
    assert.ok(pre.got.kept > 12, `hints, manifests and data files kept (${pre.got.kept})`);
    for (const r of pre.log) assert.notEqual(r.method, 'OPTIONS', 'no preflight');
    const seen = new Map();
    for (const r of pre.log) seen.set(r.key, (seen.get(r.key) ?? 0) + 1);
    assert.deepEqual([...seen].filter(([, n]) => n > 1), [], 'no URL and range fetched twice');
    const versions = (l) => l.filter((r) => r.path.includes('/_versions/')).map((r) => r.key).sort();
    assert.deepEqual(versions(pre.log), versions(plain.log), 'the hints and manifests asked for once, by the preload');
    assert.ok(pre.log.length <= plain.log.length, `requests: ${pre.log.length} with preload, ${plain.log.length} without`);
  });

  it('a missing repository rejects NotFound with the same message, its preloaded 404s used once', async () => {
    const repo = `${dataSrv.url}/missing-repo`;
    const plain = await run(repo, false);
    const pre = await run(repo, true);
    assert.equal(plain.got.code, 'NotFound');
    assert.deepEqual({ code: pre.got.code, message: pre.got.message }, { code: plain.got.code, message: plain.got.message });
    assert.equal(pre.got.kept, 4, 'four hints kept (404)');
    const hints = (l) => l.filter((r) => r.path.endsWith('latest_version_hint.json')).length;
    // The open reads runs, series and metrics; the preload also fetched the
    // params table's hint, which the open does not ask for.
    const notParams = (l) => l.filter((r) => !r.path.includes('params.lance/'));
    assert.equal(hints(notParams(pre.log)), hints(plain.log), 'the open asked the network for no hint the preload had');
  });
});
