// The edge worker (out/edge) under `wrangler dev --local` (workerd), side
// by side with kv0 serve over the same data: one worker reads a static
// origin (KV0_ORIGIN), one a local R2 bucket filled through miniflare
// (KV0_BUCKET + KV0_PREFIX, with KV0_TOKEN). tests/edge/README.md.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildData, edgeRequire, fillR2, startOrigin, startServe, startWorker, stopAll, walk } from './lib.mjs';
import { chromiumOptions } from '../wasm/chromium.mjs';

const TOKEN = 'edge-test-token-7f3a';
const auth = { authorization: `Bearer ${TOKEN}` };

let data, base, root, origin, refOrigin, serve, serveHTTP, serveTok, viaOrigin, viaR2, persist, tokFile;
let routes; // [path] every API route with the data's ids
let formatRoutes; // [path] rows of the datasets of formats 2.2 and 2.1: each answers 200 with rows

/** GET url+path with the exact bytes of path (no client-side normalising). */
function rawGet(url, path, headers = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), complete: res.complete }));
      res.on('error', (e) => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), error: e }));
    });
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error(`GET ${path}: no answer in 60 s`)));
    req.end();
  });
}

/** Status, type and bytes of an answer as a comparable string. */
const summary = (r, withCache) =>
  `${r.status} ${r.headers['content-type'] ?? '-'}${withCache ? ` ${r.headers['cache-control'] ?? '-'} ${r.headers.etag ?? '-'}` : ''}\n${r.body.toString('latin1')}`;

function assertSame(got, want, path, withCache = true) {
  if (summary(got, withCache) !== summary(want, withCache)) {
    assert.fail(`${path}: the worker answered\n${summary(got, withCache).slice(0, 600)}\nkv0 serve answered\n${summary(want, withCache).slice(0, 600)}`);
  }
  assert.ok(!got.error, `${path}: the worker's body broke: ${got.error}`);
}

function assertErrorBody(r, status, code, path) {
  assert.equal(r.status, status, `${path}: status ${r.status} (${r.body})`);
  const j = JSON.parse(r.body.toString());
  assert.equal(typeof j.error?.message, 'string', `${path}: ${r.body}`);
  if (code) assert.equal(j.error.code, code, `${path}: ${r.body}`);
}

before(async () => {
  data = await buildData();
  ({ base, root } = data);
  tokFile = join(base, 'token');
  await writeFile(tokFile, TOKEN);
  origin = await startOrigin(base);
  persist = await mkdtemp(join(tmpdir(), 'kv0-edge-state-'));
  await fillR2(join(persist, 'r2'), root, 'repo', Object.fromEntries(
    (await walk(join(base, 'secret.lance'))).map((f) => [`secret.lance/${f}`, new Uint8Array([1, 2, 3])]),
  ));
  // The references: kv0 serve over the root on disk (the R2 bucket holds
  // the same files: it lists as a folder does) and over a static origin of
  // the same files as the worker's (a static host cannot list: no tags in
  // /log); an origin of its own, so that what kv0 serve reads (it checks
  // the versions again after an answer it keeps) is not counted as the
  // worker's.
  refOrigin = await startOrigin(base);
  [serve, serveHTTP, serveTok] = await Promise.all([startServe(root), startServe(`${refOrigin.url}/root`),
    startServe(root, ['--token-file', tokFile])]);
  // One wrangler at a time: each starts its own workerd and state.
  viaOrigin = await startWorker({ vars: { KV0_ORIGIN: `${origin.url}/root`, KV0_ORIGIN_TIMEOUT_MS: '2000' }, persist: join(persist, 'origin') });
  viaR2 = await startWorker({ vars: { KV0_PREFIX: 'repo', KV0_TOKEN: TOKEN }, persist: join(persist, 'r2') });

  // Every route, with the data's own ids and parameters.
  const runs = JSON.parse(await (await fetch(`${serve.url}/api/v1/runs`)).text());
  const r0 = runs[0];
  const series = JSON.parse(await (await fetch(`${serve.url}/api/v1/runs/${r0.run_id}/series`)).text());
  const ids = series.map((s) => s.series_id);
  const datasets = ['runs.lance', 'params.lance', 'series.lance', 'metrics.lance', 'fixtures/default/kv.lance',
    'fixtures/v2_0/kv.lance', 'fixtures/legacy/kv.lance', 'fixtures/bigdel/t.lance', 'fixtures/bigdel/t2.lance'];
  routes = [
    '/healthz', '/api/v1/versions',
    '/api/v1/runs', `/api/v1/runs?experiment=${encodeURIComponent(r0.experiment)}`, '/api/v1/runs?status=finished',
    `/api/v1/runs?tag=${encodeURIComponent(r0.tags[0])}`, '/api/v1/runs?archived=false',
    `/api/v1/runs?param=${encodeURIComponent('optimizer.lr<0.05')}`, `/api/v1/runs?param=${encodeURIComponent('optimizer.name=adamw')}&param=${encodeURIComponent('batch_size>=64')}`,
    `/api/v1/runs/${r0.run_id}`, `/api/v1/runs/${encodeURIComponent(r0.name)}`, `/api/v1/runs/${r0.run_id}/params`, `/api/v1/runs/${r0.run_id}/series`,
    `/api/v1/series/points?ids=${ids[0]}`, `/api/v1/series/points?ids=${ids.slice(0, 4).join(',')}&max_points=100`,
    `/api/v1/series/points?ids=${ids[1]}&max_points=0`, `/api/v1/series/points?ids=${ids[2]}&from_step=100&to_step=900`,
    `/api/v1/series/points?ids=${ids[0]}&from_time=2000-01-01T00:00:00Z&max_points=50`,
    `/api/v1/series/points?ids=${ids.slice(0, 2).join(',')}&max_points=100&fields=steps,values,mins,maxs`,
    `/api/v1/series/points?ids=${ids.slice(0, 3).join(',')}&max_points=100&format=f64`, `/api/v1/series/points?ids=${ids[1]}&max_points=0&format=f64`,
    `/api/v1/series?runs=${r0.run_id},no-such-run,${encodeURIComponent(r0.name)}`, '/api/v1/series?newest=2',
    `/api/v1/stats?ids=${ids.join(',')}`,
    '/api/v1/datasets/metrics.lance/rows?version=2&limit=20', '/api/v1/datasets/metrics.lance/rows?tag=first&limit=5&format=arrow',
    '/api/v1/datasets/metrics.lance/info?version=1', '/api/v1/datasets/metrics.lance/info?tag=first',
    '/api/v1/datasets/metrics.lance/rows?columns=series_id,step,value&limit=100',
    `/api/v1/datasets/metrics.lance/rows?where=${encodeURIComponent('step < 50')}&limit=30`,
    '/api/v1/datasets/metrics.lance/rows', // long enough to stream in pieces
    // A named zone: literals without an offset read in it (JavaScript's Intl in the worker).
    `/api/v1/datasets/zoned.lance/rows?where=${encodeURIComponent("ts >= '2024-03-10 01:30:00' and ts <= '2024-03-10 03:30:00'")}`,
    `/api/v1/datasets/zoned.lance/rows?where=${encodeURIComponent("ts > '2024-07-01 12:30:00'")}&format=arrow`,
    // errors, as kv0 serve answers them
    '/api/v1/runs/no-such-run', '/api/v1/series/points?ids=notanumber', '/api/v1/series/points?ids=1&max_points=-3',
    `/api/v1/series/points?ids=${ids[0]}&format=csv`, '/api/v1/datasets/none.lance/info', '/api/v1/datasets/metrics.lance/rows?format=xml', '/api/v1/datasets/metrics.lance/info?version=999',
    '/api/v1/runs?archived=maybe', '/api/v1/nothing-here',
  ];
  // Format 2.2 and 2.1 side by side; a filter on lance 12's dictionary columns.
  formatRoutes = [`/api/v1/datasets/v22/dict.lance/rows?where=${encodeURIComponent("cat = 'red' AND i64d > 0")}&columns=sd,cat,ld,u64d`];
  for (const d of data.formats) {
    formatRoutes.push(`/api/v1/datasets/${d}/rows?limit=40`, `/api/v1/datasets/${d}/rows?limit=40&format=arrow`);
  }
  routes.push(...formatRoutes);
  for (const d of [...datasets, ...data.formats]) {
    routes.push(`/api/v1/datasets/${d}/info`, `/api/v1/datasets/${d}/log`, `/api/v1/datasets/${d}/rows?limit=40`,
      `/api/v1/datasets/${d}/rows?limit=40&format=arrow`);
  }
});

after(async () => {
  // The workers' logs, for a failure's post-mortem.
  if (process.env.EDGE_LOGS) {
    await writeFile(join(process.env.EDGE_LOGS, 'origin-worker.log'), viaOrigin?.log() ?? '');
    await writeFile(join(process.env.EDGE_LOGS, 'r2-worker.log'), viaR2?.log() ?? '');
  }
  await stopAll();
  await origin?.close();
  await refOrigin?.close();
  await data?.cleanup();
  if (persist) await rm(persist, { recursive: true, force: true });
});

describe('via KV0_ORIGIN', () => {
  test('every route answers what kv0 serve answers, at most six origin connections per request', async () => {
    let peak = 0;
    for (const p of routes) {
      origin.state.peak = 0;
      const got = await rawGet(viaOrigin.url, p);
      peak = Math.max(peak, origin.state.peak);
      assert.ok(origin.state.peak <= 6, `${p}: ${origin.state.peak} origin requests in flight at once: ${origin.state.peakAt.join(', ')}`);
      assertSame(got, await rawGet(serveHTTP.url, p), p);
      if (formatRoutes.includes(p)) assert.ok(got.status === 200 && got.body.length > 100, `${p}: ${got.status} ${got.body.toString().slice(0, 300)}`);
    }
    assert.ok(peak >= 2, `the worker never read in parallel (peak ${peak})`);
  });

  test('concurrent requests share the one Go instance and get their own answers', async () => {
    const ps = routes.filter((p) => p.startsWith('/api/')).slice(0, 24);
    const want = await Promise.all(ps.map((p) => rawGet(serveHTTP.url, p)));
    const got = await Promise.all(ps.map((p) => rawGet(viaOrigin.url, p)));
    ps.forEach((p, i) => assertSame(got[i], want[i], p));
  });

  test('an answer at an explicit version is not immutable, and reading it again reads only its manifest', async () => {
    const p = '/api/v1/datasets/metrics.lance/rows?version=3&limit=500';
    const first = await rawGet(viaOrigin.url, p);
    assertSame(first, await rawGet(serveHTTP.url, p), p);
    assert.ok(!/immutable/.test(first.headers['cache-control'] ?? ''),
      `${p}: Cache-Control ${first.headers['cache-control']}: a cleanup or purge may remove the version`);
    // Kept by the worker (edge/answers.go) and revalidated: the version's
    // manifest is read again (once VersionTTL passed), its data is not.
    origin.state.paths = [];
    const again = await rawGet(viaOrigin.url, p);
    assertSame(again, first, p);
    const more = origin.state.paths.filter((x) => !x.includes('/_versions/'));
    assert.deepEqual(more, [], `reading it again read more than its manifest: ${more.slice(0, 5)}`);
  });

  test('bad paths and parameters are refused, and nothing outside the root is read', async () => {
    origin.state.paths = [];
    const bad = [
      '/api/v1/datasets/%2e%2e%2fsecret.lance/info', '/api/v1/datasets/..%2fsecret.lance/info',
      '/api/v1/datasets/fixtures%2f..%2f..%2fsecret.lance/log', '/api/v1/datasets/fixtures%2f%2e%2e%2fsecret.lance/info',
      '/api/v1/datasets/%5csecret.lance/info', '/api/v1/datasets/fixtures%5c..%5c..%5csecret.lance/info',
      '/api/v1/datasets/secret.lance%00/info', '/api/v1/datasets//secret.lance/info', '/api/v1/datasets/%2fsecret.lance/info',
      '/api/v1/datasets/C:%5csecret.lance/rows', '/api/v1/runs/%00', '/files/..%2fsecret.lance/_versions/1.manifest',
      '/files//secret.lance/_versions/1.manifest',
      '/api/v1/series/points?ids=1&max_points=abc', '/api/v1/series/points?ids=1&from_step=x', '/api/v1/series/points',
      '/api/v1/stats?ids=', '/api/v1/datasets/metrics.lance/rows?limit=-1', '/api/v1/datasets/metrics.lance/rows?version=1&tag=first',
      '/api/v1/datasets/metrics.lance/rows?columns=nope', '/api/v1/datasets/metrics.lance/rows?where=%28%28',
      '/api/v1/runs?unknown=1',
    ];
    for (const p of bad) {
      const got = await rawGet(viaOrigin.url, p);
      assertSame(got, await rawGet(serveHTTP.url, p), p);
      assert.ok(got.status >= 400 && got.status < 500, `${p}: ${got.status}`);
    }
    // Spellings the runtime normalises before the worker sees them still
    // reach nothing outside the root.
    for (const p of ['/api/v1/datasets/../secret.lance/info', '/api/v1/datasets/fixtures/../../secret.lance/info',
      '/api/v1/datasets/..\\secret.lance/info', '/files/../secret.lance/_versions/1.manifest', '/api/v1/datasets/%2e%2e/secret.lance/info',
      '/api/v1/datasets/fixtures/%2e%2e/%2e%2e/secret.lance/info', '/files/%2e%2e/secret.lance/_versions/1.manifest']) {
      const got = await rawGet(viaOrigin.url, p);
      assert.ok(got.status >= 400 && got.status < 500, `${p}: ${got.status} ${got.body}`);
    }
    const outside = origin.state.paths.filter((x) => !x.startsWith('/root/'));
    assert.deepEqual(outside, [], 'the worker read outside its root');
  });

  test('origin faults answer the API error body with the right status, and the next request works', async () => {
    const cases = [
      ['a', 500, 502, 'StoreFailed'],
      ['b', 404, 404, 'NotFound'],
      ['c', 'drop', 502, 'StoreFailed'],
      ['d', 'cut', 502, 'StoreFailed'],
      ['f', 'hang', 502, 'StoreFailed'], // the worker's deadline (KV0_ORIGIN_TIMEOUT_MS, 2 s here)
    ];
    for (const [name, fault, status, code] of cases) {
      const p = `/api/v1/datasets/fault/${name}.lance/rows?limit=7`;
      origin.state.fault = (path) => (path.startsWith(`/root/fault/${name}.lance/`) ? fault : undefined);
      const got = await rawGet(viaOrigin.url, p);
      assertErrorBody(got, status, code, `${p} (${fault})`);
      assert.equal(got.headers['content-type'], 'application/json');
      origin.state.fault = () => undefined;
      assertSame(await rawGet(viaOrigin.url, p), await rawGet(serveHTTP.url, p), `${p} after the ${fault} fault`);
    }
    // A body cut short in the middle of a streamed answer breaks the
    // worker's answer: it never ends as if complete.
    const p = '/api/v1/datasets/fault/e.lance/rows';
    origin.state.fault = (path) => (path.includes('/fault/e.lance/data/') ? 'cut' : undefined);
    const got = await rawGet(viaOrigin.url, p);
    origin.state.fault = () => undefined;
    assert.ok(got.status !== 200 || got.error || !got.complete, `a cut data file gave a complete answer: ${got.status}`);
    if (got.status !== 200) assertErrorBody(got, 502, 'StoreFailed', p);
    assertSame(await rawGet(viaOrigin.url, p), await rawGet(serveHTTP.url, p), p);
  });

  test('the dashboard loads from the worker in Chromium and draws a chart', async () => {
    const { chromium } = edgeRequire('playwright-core');
    const userDir = await mkdtemp(join(tmpdir(), 'kv0-edge-chromium-'));
    const browser = await chromium.launchPersistentContext(userDir, chromiumOptions);
    try {
      const page = await browser.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${viaOrigin.url}/`);
      await page.waitForFunction(() => window.kv0dash, null, { timeout: 30_000 });
      await page.evaluate(() => window.kv0dash.ready);
      const charts = await page.evaluate(() => window.kv0dash.charts());
      const drawn = charts.filter((c) => c.runs.some((r) => r.steps.length > 0 && r.values.length === r.steps.length));
      assert.ok(drawn.length > 0, `no chart with points: ${JSON.stringify(charts).slice(0, 300)}`);
      const runs = await page.evaluate(() => window.kv0dash.runs());
      const want = JSON.parse(await (await fetch(`${serve.url}/api/v1/runs`)).text());
      assert.equal(runs.length, want.length);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await rm(userDir, { recursive: true, force: true });
    }
  });
});

describe('via the R2 binding', () => {
  test('every route answers what kv0 serve answers', async () => {
    for (const p of routes) {
      const got = await rawGet(viaR2.url, p, auth);
      assertSame(got, await rawGet(serveTok.url, p, auth), p);
      if (formatRoutes.includes(p)) assert.ok(got.status === 200 && got.body.length > 100, `${p}: ${got.status} ${got.body.toString().slice(0, 300)}`);
    }
  });

  test('the token: 401 without it or with a wrong one, 200 with it', async () => {
    for (const p of ['/api/v1/runs', '/api/v1/versions', '/api/v1/datasets/metrics.lance/rows?version=2&limit=20']) {
      await rawGet(viaR2.url, p, auth); // kept by the worker: what it keeps must not bypass the token
      for (const h of [{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN }]) {
        const got = await rawGet(viaR2.url, p, h);
        assertErrorBody(got, 401, 'Unauthorized', `${p} ${JSON.stringify(h)}`);
        assertSame(got, await rawGet(serveTok.url, p, h), p);
      }
      const ok = await rawGet(viaR2.url, p, auth);
      assert.equal(ok.status, 200, `${p}: ${ok.body}`);
    }
    assert.equal((await rawGet(viaR2.url, '/healthz')).status, 200);
    assert.equal((await rawGet(viaR2.url, '/')).status, 200, 'the dashboard needs no token');
  });

  test('bad paths reach nothing outside the prefix', async () => {
    for (const p of ['/api/v1/datasets/..%2fsecret.lance/info', '/api/v1/datasets/%2e%2e%2fsecret.lance/log',
      '/api/v1/datasets/%5csecret.lance/info', '/api/v1/datasets/secret.lance%00/info', '/api/v1/datasets//secret.lance/info',
      '/files/..%2fsecret.lance/_versions/1.manifest', '/api/v1/datasets/../secret.lance/info', '/api/v1/datasets/secret.lance/info']) {
      const got = await rawGet(viaR2.url, p, auth);
      assert.ok(got.status === 400 || got.status === 404, `${p}: ${got.status} ${got.body}`);
      JSON.parse(got.body.toString());
    }
  });
});
