// The dashboard in headless Chromium (Debian's chromium, driven by
// playwright-core), in both modes on a repository this suite writes with the
// kv0 CLI (in format 2.2, kv0's default): api mode through `kv0 serve`,
// direct mode with the wasm module reading the same repository through kv0
// serve's /files/ (and, for a repository of format 2.1 and the fault cases,
// from another origin). The page's test hook (window.kv0dash)
// is checked against what the CLI prints; no test sleeps a fixed time: each
// waits on kv0dash.ready or the DOM. Screenshots go to out/web-screens.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from '../wasm/server.mjs';
import { kv0, kv0json, tracker, knownLoss, knownSmooth, serve, tempDir, within, SCREENS, WEB_DIR } from './fixtures.mjs';
import { chromiumOptions, haveChromium } from '../wasm/chromium.mjs';

if (!existsSync(join(WEB_DIR, 'index.html'))) throw new Error(`${WEB_DIR}/index.html is missing: run make web`);

const T = 30000;

const ready = (page) => within(page.evaluate(() => window.kv0dash.ready.then(() => true)), T, 'kv0dash.ready');
const hook = (page, name) => page.evaluate((n) => window.kv0dash[n](), name);

describe('dashboard', { skip: !haveChromium && 'no Chromium (set CI=true to make this an error)' }, () => {
  let tmp, repo, repo21, srv, faults, browser, ctx, liveWriter;
  let cliRuns, known, live, cliRuns21;
  const statsOf = new Map(); // `${run_id} ${name} ${context}` -> stats
  const statsOf21 = new Map(); // the same of the repository of format 2.1

  before(async () => {
    tmp = await tempDir();
    repo = join(tmp.dir, 'repo');
    await kv0(['demo', repo, '--runs', '10', '--steps', '300']);
    // A finished run of known series, then a running one kept open.
    const w = tracker(repo, ['--run', 'known', '--experiment', 'probe']);
    await w.write([{ params: { optimizer: { lr: 0.003 }, note: 'probe' } }, ...knownLoss(3000, Math.floor(Date.now() / 1000)), ...knownSmooth()]);
    await w.end();
    liveWriter = tracker(repo, ['--run', 'live', '--experiment', 'probe']);
    await liveWriter.write(Array.from({ length: 100 }, (_, s) => ({ name: 'live/loss', step: s, value: 1 / (s + 1) })));
    cliRuns = await kv0json(['runs', repo]);
    known = cliRuns.find((r) => r.name === 'known');
    live = cliRuns.find((r) => r.name === 'live');
    for (const r of cliRuns) for (const s of await kv0json(['series', repo, r.run_id])) statsOf.set(`${r.run_id} ${s.name} ${s.context}`, s.stats);
    // The repository above is in format 2.2 (kv0's default); another one in
    // 2.1, on the static origin below, for direct mode.
    repo21 = join(tmp.dir, 'data/repo21');
    await kv0(['demo', repo21, '--runs', '1', '--steps', '300', '--format', '2.1']);
    for (const [t, want] of [[join(repo, 'metrics.lance'), '2.2'], [join(repo, 'runs.lance'), '2.2'], [join(repo21, 'metrics.lance'), '2.1'], [join(repo21, 'runs.lance'), '2.1']]) {
      assert.equal(JSON.parse(await kv0(['lance', 'info', t, '--json'])).data_format, want, t);
    }
    cliRuns21 = await kv0json(['runs', repo21]);
    for (const r of cliRuns21) for (const s of await kv0json(['series', repo21, r.run_id])) statsOf21.set(`${r.run_id} ${s.name} ${s.context}`, s.stats);
    // A corrupt copy (the runs table's data files damaged) for the fault cases.
    await cp(repo, join(tmp.dir, 'data/bad'), { recursive: true });
    await cp(repo, join(tmp.dir, 'data/good'), { recursive: true });
    const dataDir = join(tmp.dir, 'data/bad/runs.lance/data');
    for (const f of await readdir(dataDir)) {
      const b = await readFile(join(dataDir, f));
      for (let i = 0; i < Math.min(b.length, 4000); i++) b[i] ^= 0xa5;
      await writeFile(join(dataDir, f), b);
    }
    // The built page copied to a static host (out/web holds the wasm module in wasm/).
    await cp(WEB_DIR, join(tmp.dir, 'data/site'), { recursive: true });
    srv = await serve(repo);
    // Another origin for direct mode's fault cases: 403 under /denied/, no
    // CORS headers under /nocors/.
    faults = await startServer({
      root: join(tmp.dir, 'data'),
      faults: (p) => (p.startsWith('/denied/') ? { status: 403 } : p.startsWith('/nocors/') ? { noCors: true } : undefined),
    });
    await mkdir(SCREENS, { recursive: true });
    browser = await chromium.launch(chromiumOptions);
    ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  });

  after(async () => {
    liveWriter?.kill();
    await browser?.close();
    await srv?.stop();
    await faults?.close();
    await tmp?.cleanup();
  });

  async function open(query, { expectError = false } = {}) {
    const page = await ctx.newPage();
    page.on('pageerror', (e) => console.error('page error:', e.message));
    await page.goto(`${srv.url}/${query}`);
    if (!expectError) await ready(page);
    return page;
  }

  /** Each drawn line holds its series' first and last step and its finite extremes. */
  function checkLines(charts, what, stats = statsOf) {
    let lines = 0;
    for (const c of charts) {
      for (const r of c.runs) {
        const st = stats.get(`${r.run_id} ${c.metric} ${c.context}`);
        assert.ok(st, `${what}: stats of ${r.run_id} ${c.metric} ${c.context}`);
        assert.equal(r.steps[0], st.first_step, `${what}: first step of ${c.metric} ${c.context}`);
        assert.equal(r.steps.at(-1), st.last_step, `${what}: last step of ${c.metric} ${c.context}`);
        const finite = r.values.filter(Number.isFinite);
        assert.equal(Math.min(...finite), st.min, `${what}: min of ${c.metric} ${c.context}`);
        assert.equal(Math.max(...finite), st.max, `${what}: max of ${c.metric} ${c.context}`);
        assert.ok(r.steps.length <= 1000 + 2, `${what}: at most ~1000 points`);
        assert.equal(r.steps.length, r.values.length);
        lines++;
      }
    }
    return lines;
  }

  async function checkFirstVisit(page, mode) {
    const rows = await hook(page, 'runs');
    // The table lists what `kv0 runs --json` prints, in its order.
    assert.deepEqual(rows.map((r) => r.run_id), cliRuns.map((r) => r.run_id), `${mode}: run ids`);
    assert.deepEqual(rows.map((r) => r.name), cliRuns.map((r) => r.name ?? ''), `${mode}: names`);
    const newest = [...cliRuns].sort((a, b) => (a.created_at < b.created_at ? 1 : -1)).slice(0, 10).map((r) => r.run_id).sort();
    assert.deepEqual(rows.filter((r) => r.selected).map((r) => r.run_id).sort(), newest, `${mode}: the 10 newest runs selected`);
    const panels = await hook(page, 'panels');
    assert.ok(panels.some((p) => p.metric === 'train/loss' && p.context === '{"subset":"train"}'), `${mode}: the train/loss panel`);
    assert.ok(panels.some((p) => p.metric === 'lr' && p.context === '{}'), `${mode}: a panel without context prints "{}"`);
    const drawn = panels.filter((p) => p.drawn);
    assert.ok(drawn.length >= 3, `${mode}: the panels on screen are drawn`);
    const charts = await hook(page, 'charts');
    assert.equal(charts.length, drawn.length);
    const lines = checkLines(charts, mode);
    assert.ok(lines >= 10, `${mode}: ${lines} lines`);
    // Panels off screen read nothing until they come into view.
    const off = panels.filter((p) => !p.drawn);
    assert.ok(off.length > 0, `${mode}: some panels start off screen`);
    await page.locator('.panel[data-metric="train/loss"]').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => window.kv0dash.panels().find((p) => p.metric === 'train/loss')?.drawn, null, { timeout: T });
    const loss = (await hook(page, 'charts')).find((c) => c.metric === 'train/loss');
    checkLines([loss], mode);
    const kr = loss.runs.find((r) => r.run_id === known.run_id);
    assert.ok(kr.steps.length > 900 && kr.steps.length <= 1002, `${mode}: 3000 points read as about 1000 (${kr.steps.length})`);
    assert.equal(loss.x, 'step');
  }

  it('api mode: the table equals kv0 runs, the panels hold each series\' first and last step and extremes', async () => {
    const page = await open('');
    assert.match(await page.textContent('#source'), /^API/);
    await checkFirstVisit(page, 'api');
    // A running run shows its live dot; the table is virtualised.
    assert.equal(await page.locator(`.rt-row[data-id="${live.run_id}"]`).count(), 0, 'the last row is not in the DOM before scrolling');
    assert.ok(await page.locator('.rt-row').count() < cliRuns.length, 'only the rows in view are in the DOM');
    await page.locator('.rt-body').evaluate((el) => { el.scrollTop = el.scrollHeight; });
    const liveRow = page.locator(`.rt-row[data-id="${live.run_id}"]`);
    await liveRow.waitFor({ timeout: T });
    assert.equal(await liveRow.locator('.live-dot').count(), 1, 'a running run has its live dot');
    assert.equal(await page.locator(`.rt-row[data-id="${cliRuns[0].run_id}"]`).count(), 0, 'the first row left the DOM');
    await page.screenshot({ path: join(SCREENS, 'charts-api.png') });
    // Dark from the system setting: the page and the runs' colours follow.
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor !== 'rgb(255, 255, 255)');
    await page.screenshot({ path: join(SCREENS, 'charts-dark.png') });
    await page.close();
  });

  /** Opens a page and lists the requests it started before kv0dash.ready (its resource timing). */
  async function openCounting(query) {
    const page = await open(query);
    const until = (await page.evaluate(() => {
      const at = performance.getEntriesByName('kv0:ready')[0].startTime;
      return [location.href, ...performance.getEntriesByType('resource').filter((e) => e.startTime <= at).map((e) => e.name)];
    })).map((u) => new URL(u));
    return { page, api: until.filter((u) => u.pathname.startsWith('/api/')), all: until };
  }

  /** Each series of the points requests is read once, only its drawn arrays. */
  function checkPointsRequests(api, what) {
    const points = api.filter((u) => u.pathname === '/api/v1/series/points');
    assert.ok(points.length >= 1, `${what}: points requests`);
    const ids = points.flatMap((u) => u.searchParams.get('ids').split(','));
    assert.equal(new Set(ids).size, ids.length, `${what}: a series read twice (${ids.length} ids, ${new Set(ids).size} distinct)`);
    for (const u of points) {
      assert.equal(u.searchParams.get('fields'), 'steps,values,mins,maxs', `${what}: points without timestamps and epochs when x is the step`);
      assert.equal(u.searchParams.get('format'), 'f64', `${what}: points in the binary form`);
      assert.ok(u.searchParams.get('ids').split(',').length <= 10, `${what}: at most 10 series a request`);
    }
    return points;
  }

  /**
   * The page's starter (early.js, inlined in index.html) sent the points
   * requests of the panels on screen, with the URLs app.js builds: app.js
   * took each of its answers and sent none of its own, and no points URL
   * was fetched twice.
   */
  async function checkStarterPoints(page, api, what) {
    const fetched = api.filter((u) => u.pathname === '/api/v1/series/points').map((u) => u.href);
    assert.equal(new Set(fetched).size, fetched.length, `${what}: a points URL fetched twice: ${fetched.join(' ')}`);
    const log = await page.evaluate(() => window.kv0early.log);
    const sent = log.sent.filter((u) => new URL(u).pathname === '/api/v1/series/points');
    assert.ok(sent.length >= 1, `${what}: the starter sent no points request`);
    const taken = new Set(log.taken);
    for (const u of sent) assert.ok(taken.has(u), `${what}: app.js did not take the starter's ${u}`);
    const bySent = new Set(sent);
    for (const u of fetched) assert.ok(bySent.has(u), `${what}: app.js sent ${u} itself (the starter's URLs differ, or it missed a panel on screen)`);
    return sent;
  }

  it('api mode: a first visit sends the versions, the runs and the newest runs\' series lists together, then the points', async () => {
    const { page, api, all } = await openCounting('');
    const paths = api.map((u) => u.pathname + (u.pathname === '/api/v1/series' ? u.search : ''));
    assert.deepEqual(paths.filter((p) => !p.startsWith('/api/v1/series/points')).sort(),
      ['/api/v1/runs', '/api/v1/series?newest=10', '/api/v1/versions'], `api requests before ready: ${paths.join(' ')}`);
    const points = checkPointsRequests(api, 'first visit');
    // The lines drawn came in those requests: one per panel of ≤ 10 lines,
    // sent by the starter as soon as the runs and their lists were in.
    const charts = await hook(page, 'charts');
    assert.ok(charts.length >= 3 && points.length >= charts.length, `${points.length} points requests for ${charts.length} drawn panels`);
    assert.equal((await checkStarterPoints(page, api, 'first visit')).length, points.length);
    const newest = new Set([...cliRuns].sort((a, b) => (a.created_at < b.created_at ? 1 : -1)).slice(0, 10).map((r) => r.run_id));
    assert.ok(charts.every((c) => c.runs.length > 0 && c.runs.every((r) => newest.has(r.run_id))), 'the drawn panels show the newest runs');
    // The page itself: the document, its script and its style (by their
    // hashed names), nothing else.
    const own = all.filter((u) => !u.pathname.startsWith('/api/')).map((u) => u.pathname).sort();
    assert.equal(own.length, 3, own.join(' '));
    assert.equal(own[0], '/');
    assert.ok(own.some((p) => /^\/app-[A-Z0-9]{8}\.css$/.test(p)) && own.some((p) => /^\/app-[A-Z0-9]{8}\.js$/.test(p)), own.join(' '));
    await page.close();
  });

  it('api mode: selected runs\' series lists come in one request with the first ones; a run that is gone is skipped', async () => {
    const other = cliRuns.find((r) => r.name !== 'known' && r.name !== 'live');
    const { page, api } = await openCounting(`?sel=${known.run_id},nope,${other.run_id}`);
    const series = api.filter((u) => u.pathname === '/api/v1/series');
    assert.equal(series.length, 1, `series requests: ${series.map((u) => u.search).join(' ')}`);
    assert.equal(series[0].searchParams.get('runs'), `${known.run_id},nope,${other.run_id}`);
    assert.equal(api.filter((u) => /^\/api\/v1\/runs\/[^/]+\/(series|params)$/.test(u.pathname)).length, 0, 'no request per run');
    checkPointsRequests(api, 'selected runs');
    await checkStarterPoints(page, api, 'selected runs');
    const drawn = await hook(page, 'charts');
    assert.ok(drawn.length > 0 && drawn.every((c) => c.runs.every((r) => r.run_id === known.run_id || r.run_id === other.run_id)));
    assert.equal(await page.locator('#errors .error').count(), 0, 'a selected run that is gone shows no error');
    await page.close();
  });

  it('api mode against a server without the binary points form: the page asks for JSON and draws the same lines', async () => {
    const page = await ctx.newPage();
    const refused = [];
    // A server of before format=f64 refuses the parameter, as parseQuery
    // refuses any it does not know.
    await page.route((u) => u.pathname === '/api/v1/series/points' && u.searchParams.get('format') === 'f64', (route) => {
      refused.push(route.request().url());
      return route.fulfill({ status: 400, contentType: 'application/json', body: JSON.stringify({ error: { code: 'Invalid', message: 'format: unknown parameter' } }) });
    });
    const json = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname === '/api/v1/series/points' && !u.searchParams.has('format')) json.push(u);
    });
    await page.goto(`${srv.url}/`);
    await ready(page);
    assert.ok(refused.length >= 1, 'the page asked for the binary form first');
    assert.ok(json.length >= 1, 'then for JSON');
    const lines = checkLines(await hook(page, 'charts'), 'JSON points');
    assert.ok(lines >= 3, `${lines} lines`);
    await page.close();
  });

  it('api mode: a binary points answer cut short is shown as an error on its panel; the next load draws', async () => {
    const page = await ctx.newPage();
    let cut = 0;
    // The real answer, its last bytes lost (the status and headers as sent).
    await page.route((u) => u.pathname === '/api/v1/series/points' && u.searchParams.get('format') === 'f64', async (route) => {
      const response = await route.fetch();
      const body = await response.body();
      cut++;
      return route.fulfill({ response, body: body.subarray(0, Math.floor(body.length * 0.6)) });
    });
    await page.goto(`${srv.url}/`);
    await ready(page);
    assert.ok(cut >= 1, 'a binary points answer was cut');
    const err = page.locator('#errors .error[data-code="Network"]').first();
    await err.waitFor({ timeout: T });
    const text = await err.innerText();
    assert.match(text, /arrived broken[\s\S]*\/api\/v1\/series\/points: the answer was cut short[\s\S]*reload/, text);
    assert.doesNotMatch(text, /CORS/, 'a broken answer is not blamed on CORS');
    const panels = await hook(page, 'panels');
    assert.ok(panels.some((p) => !p.drawn), 'a panel whose answer was cut is not drawn');
    await page.unrouteAll();
    await page.reload();
    await ready(page);
    const lines = checkLines(await hook(page, 'charts'), 'after the fault');
    assert.ok(lines >= 3, `${lines} lines`);
    assert.equal(await page.locator('#errors .error').count(), 0);
    await page.close();
  });

  it('direct mode: the wasm module reads the same repository to the same table and lines', async () => {
    const page = await open(`?repo=${srv.url}/files/`);
    assert.match(await page.textContent('#source'), /^direct/);
    await checkFirstVisit(page, 'direct');
    await page.screenshot({ path: join(SCREENS, 'charts-direct.png') });
    await page.close();
  });

  it('direct mode reads a repository of format 2.1 too: the table equals kv0 runs, its lines the CLI\'s statistics', async () => {
    const page = await open(`?repo=${faults.url}/repo21/`);
    assert.match(await page.textContent('#source'), /^direct/);
    const rows = await hook(page, 'runs');
    assert.deepEqual(rows.map((r) => r.run_id), cliRuns21.map((r) => r.run_id), 'run ids');
    assert.deepEqual(rows.map((r) => r.name), cliRuns21.map((r) => r.name ?? ''), 'names');
    const lines = checkLines(await hook(page, 'charts'), 'direct, 2.1', statsOf21);
    assert.ok(lines >= 3, `direct, 2.1: ${lines} lines`);
    assert.equal(await page.locator('#errors .error').count(), 0);
    await page.close();
  });

  it('a drag zooms every panel and re-reads only the visible step range at full resolution', async () => {
    const page = await open(`?sel=${known.run_id}&q=${encodeURIComponent('^train/loss$')}`);
    const points = [];
    page.on('request', (r) => { if (r.url().includes('/api/v1/series/points')) points.push(new URL(r.url())); });
    const over = page.locator('.panel[data-metric="train/loss"] .u-over');
    const box = await over.boundingBox();
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction(() => new URLSearchParams(location.search).has('zoom') && !document.querySelector('.panel.loading'), null, { timeout: T });
    const [lo, hi] = new URL(page.url()).searchParams.get('zoom').split(',').map(Number);
    assert.ok(lo > 1000 && hi < 2000 && hi - lo < 900, `zoom ${lo}..${hi}`);
    const from = Math.floor(lo), to = Math.floor(hi) + 1;
    await page.waitForFunction(([f]) => window.kv0dash.charts()[0]?.runs[0]?.steps[0] >= f, [from], { timeout: T });
    assert.equal(points.length, 1, 'one read for the one panel');
    assert.equal(points[0].searchParams.get('from_step'), String(from));
    assert.equal(points[0].searchParams.get('to_step'), String(to));
    assert.equal(points[0].searchParams.get('max_points'), '1000');
    const [c] = await hook(page, 'charts');
    const steps = c.runs[0].steps;
    // Under 1000 points in range: every step, raw.
    assert.deepEqual(steps, Array.from({ length: to - from }, (_, i) => from + i));
    const want = knownLoss(3000);
    c.runs[0].values.forEach((v, i) => assert.equal(v, want[steps[i]].value === 'NaN' ? NaN : want[steps[i]].value));
    // The spike at 1234 is in range and kept.
    if (from <= 1234 && 1234 < to) assert.ok(c.runs[0].values.includes(9.5));
    await page.screenshot({ path: join(SCREENS, 'charts-zoomed.png') });
    // Double-click resets the zoom and reads the whole series again.
    await over.dblclick();
    await page.waitForFunction(() => !new URLSearchParams(location.search).has('zoom') && window.kv0dash.charts()[0]?.runs[0]?.steps[0] === 0, null, { timeout: T });
    // The y range holds the spike; the robust range ignores the tails.
    const yMax = () => page.evaluate(() => document.querySelector('.panel[data-metric="train/loss"]').kv0plot.scales.y.max);
    assert.ok(await yMax() >= 9.5);
    await page.check('#robust');
    await page.waitForFunction(() => document.querySelector('.panel[data-metric="train/loss"]').kv0plot.scales.y.max < 9, null, { timeout: T });
    // On a wall-time axis a zoom re-reads the steps whose times are in view.
    await page.selectOption('#x-axis', 'wall');
    await page.waitForFunction(() => window.kv0dash.charts()[0]?.x === 'wall' && !document.querySelector('.panel.loading'), null, { timeout: T });
    points.length = 0;
    const box2 = await over.boundingBox();
    await page.mouse.move(box2.x + box2.width * 0.6, box2.y + 30);
    await page.mouse.down();
    await page.mouse.move(box2.x + box2.width * 0.7, box2.y + 30, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => new URLSearchParams(location.search).has('zoom') && !document.querySelector('.panel.loading'), null, { timeout: T });
    assert.equal(points.length, 1);
    const f = Number(points[0].searchParams.get('from_step')), t = Number(points[0].searchParams.get('to_step'));
    // Every point whose time is in view is in the steps read, and not the whole series.
    const [z0, z1] = new URL(page.url()).searchParams.get('zoom').split(',').map(Number);
    const id = statsOf.get(`${known.run_id} train/loss {"subset":"train"}`).series_id;
    const [all] = await (await fetch(`${srv.url}/api/v1/series/points?ids=${id}&max_points=0`)).json();
    const inView = all.steps.filter((st, i) => all.timestamps[i] / 1000 >= z0 && all.timestamps[i] / 1000 <= z1);
    assert.ok(inView.length > 0, 'points in view');
    assert.ok(f <= inView[0] && inView.at(-1) < t && (f > 0 || t < 3000), `wall-time zoom reads steps ${f}..${t} for ${inView[0]}..${inView.at(-1)}`);
    await page.close();
  });

  it('smoothing draws TensorBoard\'s debiased EMA of the points read', async () => {
    const w = 0.9;
    const page = await open(`?sel=${known.run_id}&s=${w}&q=${encodeURIComponent('^smooth$')}`);
    const got = await page.evaluate(() => {
      const u = document.querySelector('.panel[data-metric="smooth"]').kv0plot;
      const si = u.series.findIndex((s) => / \(smoothed\)$/.test(s.label));
      const ri = u.series.findIndex((s) => s.label === 'known');
      return { x: Array.from(u.data[0]), smooth: Array.from(u.data[si]), raw: Array.from(u.data[ri]), rawStroke: u.series[ri].stroke(), smoothStroke: u.series[si].stroke() };
    });
    // TensorBoard: last = last*w + (1-w)*v; shown = last / (1 - w^n), n the finite values so far.
    const values = knownSmooth().map((p) => (p.value === 'NaN' ? NaN : p.value));
    let last = 0, n = 0;
    const want = values.map((v) => { if (!Number.isFinite(v)) return null; last = last * w + (1 - w) * v; n++; return last / (1 - w ** n); });
    assert.deepEqual(got.x, values.map((_, i) => i));
    assert.equal(got.smooth.length, want.length);
    got.smooth.forEach((v, i) => {
      if (want[i] === null) assert.equal(v, null, `step ${i}: the NaN passes through`);
      else assert.ok(Math.abs(v - want[i]) <= 1e-12 * Math.max(1, Math.abs(want[i])), `step ${i}: ${v} vs ${want[i]}`);
    });
    assert.equal(got.raw[3], values[3], 'the raw line stays behind the smoothed one');
    // The hook gives the points before smoothing, NaN where not finite.
    const [c] = await hook(page, 'charts');
    assert.deepEqual(c.runs[0].values, values);
    assert.notEqual(got.rawStroke, got.smoothStroke, 'the raw line is faint');
    await page.screenshot({ path: join(SCREENS, 'charts-smoothed.png') });
    await page.close();
  });

  it('live: a writer appends points and starts a run, and the page shows both in place', async () => {
    // Polls a second apart: the bursts of requests of direct mode's polls
    // stay apart (below) unless a poll takes 850 ms, which load does not
    // make a quiet one take.
    const query = `?sel=${live.run_id},${known.run_id}&q=${encodeURIComponent('loss')}&poll=1000`;
    const page = await open(query);
    const direct = await open(`${query}&repo=${srv.url}/files/`);
    await page.waitForFunction(() => document.querySelector('#live')?.dataset.state === 'live', null, { timeout: T });
    for (const pg of [page, direct]) {
      const before = (await hook(pg, 'charts')).find((c) => c.metric === 'live/loss');
      assert.equal(before.runs[0].steps.at(-1), 99);
    }
    // A poll that finds nothing new costs one request in api mode. The
    // writer's heartbeat (a runs commit every 30 s) makes a poll that does
    // find something: a window in which the versions moved is measured again.
    for (let attempt = 0; ; attempt++) {
      const polls = [], responses = [];
      const onReq = (r) => polls.push(new URL(r.url()).pathname);
      page.on('request', onReq);
      for (let i = 0; i < 4; i++) responses.push(await page.waitForResponse((r) => r.url().endsWith('/api/v1/versions'), { timeout: T }));
      page.off('request', onReq);
      const answers = await Promise.all(responses.map((r) => r.text()));
      const quiet = answers.every((a) => a === answers[0]);
      if (!quiet && attempt < 3) continue;
      assert.ok(quiet, `the versions moved in every window: ${answers.join(' | ')}`);
      // The first request seen may belong to a poll begun before the window.
      assert.deepEqual(polls.filter((x) => x !== '/api/v1/versions'), [], `a quiet poll is one request: ${polls.join(', ')}`);
      break;
    }
    // In direct mode the wasm module's watch costs at most three requests a
    // quiet poll: the requests come in bursts 1 s apart; the first burst
    // seen may be cut, the last may still be running.
    // As in api mode, the writer's heartbeat can land in a window (a poll
    // that finds it reads the runs table): such a window is measured again.
    for (let attempt = 0; ; attempt++) {
      const times = [];
      const onDirect = (r) => times.push(Date.now());
      direct.on('request', onDirect);
      const bursts = () => times.reduce((b, t, i) => { if (i === 0 || t - times[i - 1] > 150) b.push(0); b[b.length - 1]++; return b; }, []);
      while (bursts().length < 4) await direct.waitForRequest(() => true, { timeout: T });
      direct.off('request', onDirect);
      const quiet = bursts()[1] <= 3 && bursts()[2] <= 3;
      if (!quiet && attempt < 3) continue;
      assert.ok(quiet, `quiet polls in direct mode: ${bursts()} requests`);
      break;
    }
    // Mark the other panel's chart: appending must not redraw it.
    await page.evaluate(() => { for (const m of ['train/loss', 'live/loss']) document.querySelector(`.panel[data-metric="${m}"]`).kv0plot.kv0mark = 1; });
    await liveWriter.write(Array.from({ length: 50 }, (_, i) => ({ name: 'live/loss', step: 100 + i, value: 1 / (101 + i) })));
    for (const pg of [page, direct]) await pg.waitForFunction(() => window.kv0dash.charts().find((c) => c.metric === 'live/loss')?.runs[0].steps.at(-1) === 149, null, { timeout: T });
    const after = (await hook(page, 'charts')).find((c) => c.metric === 'live/loss');
    assert.deepEqual(after.runs[0].steps, Array.from({ length: 150 }, (_, i) => i));
    assert.equal(await page.evaluate(() => document.querySelector('.panel[data-metric="train/loss"]').kv0plot.kv0mark), 1, 'the unchanged panel was not redrawn');
    assert.equal(await page.evaluate(() => document.querySelector('.panel[data-metric="live/loss"]').kv0plot.kv0mark), 1, 'the live panel took the new points into its chart');
    const late = tracker(repo, ['--run', 'late', '--experiment', 'probe']);
    await late.write([{ name: 'live/loss', step: 0, value: 0.5 }]);
    await late.end();
    for (const pg of [page, direct]) await pg.waitForFunction(() => window.kv0dash.runs().some((r) => r.name === 'late'), null, { timeout: T });
    await page.screenshot({ path: join(SCREENS, 'live.png') });
    // A hidden tab pauses polling.
    await page.evaluate(() => { Object.defineProperty(document, 'hidden', { configurable: true, get: () => true }); document.dispatchEvent(new Event('visibilitychange')); });
    await page.waitForFunction(() => document.querySelector('#live').dataset.state === 'paused', null, { timeout: T });
    await page.close();
    await direct.close();
  });

  it('a panel exports its points as CSV and PNG; the tooltip lists every run at the cursor', async () => {
    const page = await open(`?sel=${known.run_id},${cliRuns[0].run_id}&q=${encodeURIComponent('^(train/loss|loss)$')}`);
    const panel = page.locator('.panel[data-metric="train/loss"]');
    const [csv] = await Promise.all([page.waitForEvent('download'), panel.locator('[data-act="csv"]').click()]);
    const text = await readFile(await csv.path(), 'utf8');
    const [chart] = (await hook(page, 'charts')).filter((c) => c.metric === 'train/loss');
    const want = ['run_id,name,step,value', ...chart.runs.flatMap((r) => r.steps.map((st, i) => `${r.run_id},known,${st},${Number.isNaN(r.values[i]) ? 'NaN' : r.values[i]}`))];
    assert.deepEqual(text.trimEnd().split('\n'), want);
    const [png] = await Promise.all([page.waitForEvent('download'), panel.locator('[data-act="png"]').click()]);
    const bytes = await readFile(await png.path());
    assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
    // Hover: the tooltip names the step and each run of the panel with its value.
    const loss = page.locator('.panel[data-metric="loss"] .u-over').first();
    const box = await loss.boundingBox();
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
    const tip = page.locator('.tooltip');
    await tip.waitFor({ state: 'visible', timeout: T });
    const tipText = await tip.innerText();
    assert.match(tipText, /^step /);
    assert.ok(tipText.includes(cliRuns[0].name), tipText);
    await page.close();
  });

  it('grouping draws a mean with its band per group, and x can be wall time, time since start or another metric', async () => {
    const ids = cliRuns.filter((r) => /^(resnet|vit)/.test(r.name)).map((r) => r.run_id);
    const page = await open(`?sel=${ids.join(',')}&group=experiment&q=${encodeURIComponent('^lr$')}`);
    const legend = await page.locator('.panel[data-metric="lr"] .legend').innerText();
    assert.match(legend, /resnet-cifar10 \(10 runs\)/);
    assert.match(legend, /vit-cifar10 \(10 runs\)/);
    const seriesCount = () => page.evaluate(() => document.querySelector('.panel[data-metric="lr"]').kv0plot.series.length);
    assert.equal(await seriesCount(), 1 + 2 * 3, 'two groups, each a mean and a band');
    await page.screenshot({ path: join(SCREENS, 'charts-grouped.png') });
    // Expanding a group draws its runs again.
    await page.locator('.panel[data-metric="lr"] .legend-group', { hasText: 'vit-cifar10' }).click();
    await page.waitForFunction(() => document.querySelector('.panel[data-metric="lr"]').kv0plot.series.length > 7);
    assert.deepEqual(new URL(page.url()).searchParams.getAll('gx'), ['vit-cifar10']);
    for (const x of ['wall', 'rel', 'm:accuracy']) {
      await page.selectOption('#x-axis', x);
      await page.waitForFunction((want) => window.kv0dash.charts()[0]?.x === want && !document.querySelector('.panel.loading'), x, { timeout: T });
      const xs = await page.evaluate(() => Array.from(document.querySelector('.panel[data-metric="lr"]').kv0plot.data[0]));
      assert.ok(xs.length > 10 && xs.every((v, i) => i === 0 || v > xs[i - 1]), `${x}: ascending x values`);
      if (x === 'wall') assert.ok(xs[0] > 1.7e9, 'seconds since the epoch');
      if (x === 'rel') assert.ok(xs[0] >= 0 && xs.at(-1) < 3600, 'seconds since the start');
      if (x === 'm:accuracy') assert.ok(xs[0] >= 0 && xs.at(-1) <= 1, 'accuracy values');
    }
    await page.close();
  });

  it('views: the run page, compare of the selected runs, and parallel coordinates whose brush filters the table', async () => {
    const page = await open(`?view=run&run=${known.run_id}&sel=${known.run_id}`);
    await page.locator('.kv0v-run h2', { hasText: 'known' }).waitFor({ timeout: T });
    const text = await page.locator('#other-view').innerText();
    for (const want of ['probe', 'optimizer', 'train/loss', 'smooth']) assert.ok(text.includes(want), `the run page shows ${want}`);
    assert.deepEqual(await hook(page, 'panels'), [], 'no chart panels in the run view');
    await page.screenshot({ path: join(SCREENS, 'view-run.png'), fullPage: true });
    // Compare: the selected runs side by side.
    const two = cliRuns.filter((r) => /^resnet-cifar10-[12]$/.test(r.name));
    await page.goto(`${srv.url}/?view=compare&sel=${two.map((r) => r.run_id).join(',')}`);
    await ready(page);
    await page.locator('.kv0v-compare table').waitFor({ timeout: T });
    const header = await page.locator('.kv0v-compare thead').innerText();
    for (const r of two) assert.ok(header.includes(r.name), `compare names ${r.name}`);
    const firstKey = await page.locator('.kv0v-compare tbody tr th').first().innerText();
    const [pa, pb] = await Promise.all(two.map((r) => kv0json(['params', repo, r.run_id])));
    assert.notDeepEqual(pa[firstKey], pb[firstKey], `a differing parameter comes first (${firstKey})`);
    await page.screenshot({ path: join(SCREENS, 'view-compare.png'), fullPage: true });
    // Parallel coordinates over the listed runs; a keyboard brush filters the table.
    await page.goto(`${srv.url}/?view=parallel&exp=resnet-cifar10&pp=optimizer.lr,batch_size&pm=${encodeURIComponent('last:loss:{"subset":"train"}')}`);
    await ready(page);
    await page.waitForFunction(() => document.querySelectorAll('.kv0v-pc-line').length === 10, null, { timeout: T });
    const all = (await hook(page, 'runs')).length;
    assert.equal(all, 10);
    const axis = page.locator('.kv0v-pc-axis[data-axis="param:batch_size"]');
    await axis.focus();
    await page.keyboard.press('ArrowUp');
    await page.waitForFunction((n) => window.kv0dash.runs().length < n, all, { timeout: T });
    const kept = await hook(page, 'runs');
    const bs = await Promise.all(kept.map((r) => kv0json(['params', repo, r.run_id]).then((p) => p.batch_size)));
    assert.ok(kept.length > 0 && new Set(bs).size < 3, `the brush keeps runs of some batch sizes (${bs})`);
    await page.screenshot({ path: join(SCREENS, 'view-parallel.png'), fullPage: true });
    await page.keyboard.press('Escape');
    await page.waitForFunction((n) => window.kv0dash.runs().length === n, all, { timeout: T });
    await page.close();
  });

  it('the URL keeps the state: a reload shows the same selection, filter, smoothing, axes and zoom', async () => {
    const page = await open(`?sel=${known.run_id}`);
    await page.fill('#panel-filter', 'loss');
    await page.waitForFunction(() => window.kv0dash.panels().every((p) => /loss/.test(p.metric)) && new URLSearchParams(location.search).get('q') === 'loss', null, { timeout: T });
    await page.locator('#smoothing').evaluate((el) => { el.value = '0.6'; el.dispatchEvent(new Event('input', { bubbles: true })); });
    await page.check('#y-log');
    await page.check('#robust');
    // Select a second run from the table with the keyboard.
    const first = cliRuns[0];
    await page.locator(`.rt-row[data-id="${first.run_id}"] .rt-check`).click();
    await page.waitForFunction((id) => window.kv0dash.runs().find((r) => r.run_id === id)?.selected, first.run_id);
    // Its panels (loss, before train/loss) are laid out and drawn before the drag.
    await page.waitForFunction(() => window.kv0dash.panels().some((p) => p.metric === 'loss' && p.drawn) && !document.querySelector('.panel.loading'), null, { timeout: T });
    const over = page.locator('.panel[data-metric="train/loss"] .u-over');
    await over.scrollIntoViewIfNeeded();
    const box = await over.boundingBox();
    await page.mouse.move(box.x + box.width * 0.2, box.y + 40);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.3, box.y + 40, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => new URLSearchParams(location.search).has('zoom') && !document.querySelector('.panel.loading'), null, { timeout: T });
    const url = page.url();
    const q = new URL(url).searchParams;
    assert.equal(q.get('s'), '0.6');
    assert.equal(q.get('y'), 'log');
    assert.equal(q.get('robust'), '1');
    assert.deepEqual(q.get('sel').split(',').sort(), [known.run_id, first.run_id].sort());
    const lossChart = async () => {
      await page.locator('.panel[data-metric="train/loss"]').scrollIntoViewIfNeeded();
      await page.waitForFunction(() => window.kv0dash.panels().find((p) => p.metric === 'train/loss')?.drawn && !document.querySelector('.panel.loading'), null, { timeout: T });
      return (await hook(page, 'charts')).find((c) => c.metric === 'train/loss');
    };
    const chartsBefore = await lossChart();
    assert.ok(chartsBefore.runs[0].steps[0] > 0 && chartsBefore.runs[0].steps.at(-1) < 2999, 'the zoomed range was read');
    await page.reload();
    await ready(page);
    assert.equal(page.url(), url);
    assert.equal(await page.inputValue('#panel-filter'), 'loss');
    assert.equal(await page.inputValue('#smoothing'), '0.6');
    assert.ok(await page.isChecked('#y-log'));
    assert.ok(await page.isChecked('#robust'));
    assert.deepEqual((await hook(page, 'runs')).filter((r) => r.selected).map((r) => r.run_id).sort(), [known.run_id, first.run_id].sort());
    assert.deepEqual(await lossChart(), chartsBefore, 'the same zoomed points');
    await page.close();
  });

  it('filters: experiment, tag and parameter comparisons list what kv0 runs lists; search and sort work', async () => {
    const page = await open(`?exp=probe&param=${encodeURIComponent('optimizer.lr<0.01')}`);
    const want = await kv0json(['runs', repo, '--experiment', 'probe', '--param', 'optimizer.lr<0.01']);
    assert.deepEqual((await hook(page, 'runs')).map((r) => r.run_id), want.map((r) => r.run_id));
    await page.close();
    // Parameter and summary columns: the summary comes from the statistics.
    const p1 = await open(`?sel=${known.run_id}&pc=optimizer.lr&mc=${encodeURIComponent('last:train/loss:{"subset":"train"}')}&mc=${encodeURIComponent('max:train/loss:{"subset":"train"}')}&find=known`);
    const st = statsOf.get(`${known.run_id} train/loss {"subset":"train"}`);
    const row = p1.locator(`.rt-row[data-id="${known.run_id}"]`);
    await p1.waitForFunction((id) => [...document.querySelectorAll(`.rt-row[data-id="${id}"] .num`)].slice(1).every((c) => c.textContent !== ''), known.run_id, { timeout: T });
    const cells = await row.locator('.num').allInnerTexts();
    assert.deepEqual(cells.slice(1).map(Number), [0.003, +st.last_value.toPrecision(5), st.max]);
    await p1.close();
    const p2 = await open('?tag=baseline&sort=name:desc');
    const tagged = (await kv0json(['runs', repo, '--tag', 'baseline'])).map((r) => r.name).sort().reverse();
    assert.deepEqual((await hook(p2, 'runs')).map((r) => r.name), tagged);
    await p2.fill('#search', 'vit');
    await p2.waitForFunction(() => window.kv0dash.runs().length > 0 && window.kv0dash.runs().every((r) => r.name.includes('vit')));
    await p2.close();
  });

  it('an API with a token: the page asks for it, keeps it in sessionStorage, never in the URL', async () => {
    const tokenFile = join(tmp.dir, 'token');
    await writeFile(tokenFile, 'sesame-0123456789\n');
    const guarded = await serve(repo, ['--token-file', tokenFile]);
    try {
      // kv0 serve --token-file guards its own copy of the page too: the page
      // comes from another origin and names the API.
      const page = await ctx.newPage();
      await page.goto(`${srv.url}/?api=${guarded.url}/`);
      await page.locator('#token-dialog[open]').waitFor({ timeout: T });
      await page.fill('#token-input', 'wrong');
      await page.click('#token-dialog button');
      await page.locator('#token-dialog[open]').waitFor({ timeout: T });
      assert.match(await page.locator('#token-why').innerText(), /refused/);
      await page.fill('#token-input', 'sesame-0123456789');
      await page.click('#token-dialog button');
      await ready(page);
      assert.deepEqual((await hook(page, 'runs')).map((r) => r.run_id), (await kv0json(['runs', repo])).map((r) => r.run_id));
      assert.ok(!page.url().includes('sesame'), 'the token is not in the URL');
      await page.reload();
      await ready(page);
      assert.equal(await page.locator('#token-dialog[open]').count(), 0, 'no second prompt after a reload');
      await page.close();
    } finally {
      await guarded.stop();
    }
  });

  it('on a static host: direct mode loads the module from ./wasm/ beside the page; without a source the page says what to add', async () => {
    const page = await ctx.newPage();
    await page.goto(`${faults.url}/site/index.html?repo=${faults.url}/good`);
    await ready(page);
    assert.match(await page.textContent('#source'), /^direct/);
    assert.equal((await hook(page, 'runs')).length, cliRuns.length);
    assert.ok(faults.log.some((r) => r.path === '/site/wasm/kv0.wasm'), 'the module came from the static host');
    await page.goto(`${faults.url}/site/index.html`);
    const code = await within(page.evaluate(() => window.kv0dash.ready.then(() => 'resolved', (e) => e.code)), T, 'ready rejecting');
    assert.equal(code, 'NoSource');
    assert.match(await page.locator('#errors .error').first().innerText(), /\?api=[\s\S]*\?repo=/);
    await page.close();
  });

  const errorCases = [
    ['404', () => `?repo=${srv.url}/files/nothing/here`, 'NotFound', /Not found[\s\S]*nothing\/here/],
    ['403 expired signature', () => `?repo=${faults.url}/denied/repo`, 'Forbidden', /refused[\s\S]*expired/],
    ['CORS', () => `?repo=${faults.url}/nocors/good`, 'Network', /CORS/],
    ['corrupt', () => `?repo=${faults.url}/bad`, 'Corrupt', /corrupt[\s\S]*runs\.lance/i],
    ['network', () => `?api=http://127.0.0.1:9/`, 'Network', /could not be reached[\s\S]*127\.0\.0\.1:9/],
    ['api 404', () => `?api=${srv.url}/nothing/`, 'NotFound', /Not found/],
  ];
  for (const [name, query, code, text] of errorCases) {
    it(`error: ${name} is shown on the page in words that say what to fix, and ready rejects`, async () => {
      const page = await open(query(), { expectError: true });
      const rejected = await within(page.evaluate(() => window.kv0dash.ready.then(() => 'resolved', (e) => e.code ?? 'no code')), T, 'ready rejecting');
      assert.equal(rejected, code);
      const err = page.locator('#errors .error').first();
      await err.waitFor({ timeout: T });
      assert.equal(await err.getAttribute('data-code'), code);
      assert.match(await err.innerText(), text);
      await page.screenshot({ path: join(SCREENS, `error-${name.split(' ')[0]}.png`) });
      await page.close();
    });
  }
});
