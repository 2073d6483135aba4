// The wasm module in headless Chromium: the page on one origin, the data on
// another (CORS), against a static Range server. Answers equal the CLI's;
// faults reject with their codes, never hang, and leave the module working;
// no request needs a CORS preflight; repo.watch sees a writer's commits.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp, readdir, readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { buildData, kv0, KV0, WASM_DIR } from './fixtures.mjs';
import { chromiumOptions, haveChromium } from './chromium.mjs';
import { startS3, startSigner, ACCESS, SECRET } from './s3.mjs';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';


const PAGE = `<!doctype html><meta charset="utf-8"><title>kv0 wasm test</title>
<script type="module">
import { load } from './kv0.mjs';
// call runs a method path on the module and returns { ok } or { code, message }.
window.call = async (path, ...args) => {
  try {
    let target = window.kv0, fn = target;
    for (const p of path.split('.')) { target = fn; fn = fn[p]; }
    const v = await fn.apply(target, args);
    return { ok: v instanceof Uint8Array ? v.length : v };
  } catch (e) {
    return { code: e.code ?? 'none', message: String(e.message) };
  }
};
window.ready = load({ worker: new URLSearchParams(location.search).has('worker') }).then((m) => { window.kv0 = m; return true; });
</script>`;

// load() with no options: whether the module runs on the page's thread
// shows in the page's globals (wasm_exec.js defines Go where it runs).
const defaultPage = (moduleURL) => `<!doctype html><meta charset="utf-8"><script type="module">
window.ready = import(${JSON.stringify(moduleURL)}).then(({ load }) => load()).then(async (m) => {
  const cat = await m.lance.cat(new URLSearchParams(location.search).get('t'));
  return { onPage: typeof globalThis.Go === 'function', cat };
}, (e) => ({ code: e.code, message: String(e.message) }));
</script>`;

// Every call gets a deadline, so a hang fails the test instead of stalling it.
async function inPage(page, fn, arg, ms = 30000) {
  let timer;
  const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms (a hang)`)), ms); });
  try {
    return await Promise.race([page.evaluate(fn, arg), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
const call = (page, path, ...args) => inPage(page, ([p, a]) => window.call(p, ...a), [path, args]);

describe('browser', { skip: !haveChromium && 'no Chromium (set CI=true to make this an error)' }, () => {
  let data, pageSrv, dataSrv, plainSrv, browser, page, userDir;
  const faults = new Map(); // path prefix -> fault
  before(async () => {
    data = await buildData();
    const d = data.dir;
    // A corrupted manifest (the newest one) and corrupted pages.
    await cp(join(d, 'made/t.lance'), join(d, 'bad/manifest.lance'), { recursive: true });
    await cp(join(d, 'made/t.lance'), join(d, 'bad/page.lance'), { recursive: true });
    const versions = (await readdir(join(d, 'bad/manifest.lance/_versions'))).filter((f) => f.endsWith('.manifest')).sort();
    const mf = join(d, 'bad/manifest.lance/_versions', versions[0]);
    const mb = await readFile(mf);
    for (let i = 0; i < mb.length - 16; i += 5) mb[i] ^= 0xff;
    await writeFile(mf, mb);
    for (const f of await readdir(join(d, 'bad/page.lance/data'))) {
      const p = join(d, 'bad/page.lance/data', f);
      const b = await readFile(p);
      for (let i = 0; i < Math.min(b.length / 2, 4000); i++) b[i] ^= 0xa5;
      await writeFile(p, b);
    }
    pageSrv = await startServer({ root: WASM_DIR, files: { '/test.html': PAGE, '/default.html': defaultPage('./kv0.mjs') } });
    dataSrv = await startServer({
      root: d,
      files: { '/default-xorigin.html': defaultPage(`${pageSrv.url}/kv0.mjs`) },
      faults: (path) => {
        for (const [prefix, f] of faults) if (path.startsWith(prefix)) return f;
        return undefined;
      },
    });
    plainSrv = await startServer({ root: d, cors: false });
    userDir = await mkdtemp(join(tmpdir(), 'kv0-chromium-'));
    // A fresh profile per suite (playwright passes it as --user-data-dir).
    browser = await chromium.launchPersistentContext(userDir, chromiumOptions);
    page = await browser.newPage();
    page.on('pageerror', (e) => console.error('page error:', e));
    await page.goto(`${pageSrv.url}/test.html`);
    await inPage(page, () => window.ready);
  });
  after(async () => {
    await browser?.close();
    await Promise.all([pageSrv?.close(), dataSrv?.close(), plainSrv?.close()]);
    await data?.cleanup();
    if (userDir) await rm(userDir, { recursive: true, force: true });
  });

  it('cat, info and log equal the CLI across origins, with no preflight and no HEAD', async () => {
    dataSrv.reset();
    // The large table's 30 MB of rows stay with the Node suite.
    for (const ds of data.datasets.filter((d) => !data.large.includes(d))) {
      const url = `${dataSrv.url}/${ds}`;
      assert.deepEqual(await call(page, 'lance.cat', url), { ok: await kv0(['lance', 'cat', url]) }, ds);
      assert.deepEqual(await call(page, 'lance.info', url), { ok: JSON.parse(await kv0(['lance', 'info', url, '--json'])) }, ds);
      assert.deepEqual(await call(page, 'lance.log', url), { ok: JSON.parse(await kv0(['lance', 'log', url, '--json'])) }, ds);
    }
    const url = `${dataSrv.url}/made/t.lance`;
    const opts = { where: 'small > 0', columns: ['id', 'name'], limit: 9 };
    assert.deepEqual(await call(page, 'lance.cat', url, opts), { ok: await kv0(['lance', 'cat', url, '--where', 'small > 0', '--columns', 'id,name', '--limit', '9']) });
    const scanned = await inPage(page, async (u) => (await window.kv0.lance.scan(u)).length, url);
    assert.ok(scanned > 0);
    const methods = new Set(dataSrv.log.map((r) => r.method));
    assert.deepEqual([...methods], ['GET'], 'only GETs: no OPTIONS (preflight), no HEAD');
    assert.ok(dataSrv.log.every((r) => r.range === '' || /^bytes=\d+-\d+$/.test(r.range)), 'no suffix ranges');
    // The CLI's requests carry no Origin; the page's all carry its own.
    const fromPage = dataSrv.log.filter((r) => r.origin !== '');
    assert.ok(fromPage.length > 20 && fromPage.every((r) => r.origin === pageSrv.url), 'cross-origin requests');
  });

  it('requests of one URL in flight together are not held back by the HTTP cache', async () => {
    // Chromium lets one request of a URL at a time use its cache entry: two
    // calls reading the same files would go one request after the other.
    // The server answers neither hint request before both have arrived
    // (or 20 s have passed, as they would when the second waits for the
    // first), so no load can make the two miss each other.
    const url = `${dataSrv.url}/made/t.lance`;
    let arrived = 0;
    let release;
    const both = new Promise((r) => { release = r; });
    const giveUp = setTimeout(release, 20000);
    dataSrv.hold = (p) => {
      if (!p.endsWith('/latest_version_hint.json')) return undefined;
      if (++arrived === 2) release();
      return both;
    };
    dataSrv.reset();
    let got;
    try {
      got = await inPage(page, (u) => Promise.all([window.call('lance.info', u), window.call('lance.info', u)]), url, 60000);
    } finally {
      dataSrv.hold = undefined;
      clearTimeout(giveUp);
      release();
    }
    assert.ok(got[0].ok, JSON.stringify(got[0]));
    assert.deepEqual(got[1], got[0]);
    const hints = dataSrv.log.filter((r) => r.path.endsWith('/made/t.lance/_versions/latest_version_hint.json'));
    assert.equal(hints.length, 2, 'each call asks for the hint');
    const [a, b] = hints.sort((x, y) => x.start - y.start);
    assert.ok(b.start < a.end, `the second hint request started ${(b.start - a.end).toFixed(0)} ms after the first one's answer ended`);
    assert.deepEqual([...new Set(dataSrv.log.map((r) => r.method))], ['GET'], 'no preflight');
  });

  it('tracking reads equal the CLI', async () => {
    const url = `${dataSrv.url}/${data.repo}`;
    const quote = (s) => JSON.parse(s.replace(/"series_id": (\d+)/g, '"series_id": "$1"'));
    const got = await inPage(page, async (u) => {
      const repo = await window.kv0.openRepo(u);
      const runs = await repo.runs();
      const series = await repo.series(runs[0].run_id);
      const pts = await repo.read([series[0].series_id], { maxPoints: 50 });
      const out = { runs, params: await repo.params(runs[0].run_id), series, n: pts[0].steps.length, typed: pts[0].values instanceof Float64Array };
      await repo.close();
      return out;
    }, url);
    assert.deepEqual(got.runs, JSON.parse(await kv0(['runs', url, '--json'])));
    const id = got.runs[0].run_id;
    assert.deepEqual(got.params, JSON.parse(await kv0(['params', url, id, '--json'])));
    assert.deepEqual(got.series, quote(await kv0(['series', url, id, '--json'])));
    assert.ok(got.typed && got.n > 2 && got.n <= 50);
  });

  it('faults reject with their codes, name the file, never hang, and the next call succeeds', async () => {
    const good = `${dataSrv.url}/made/t.lance`;
    const want = await kv0(['lance', 'cat', good, '--limit', '3']);
    const cases = [
      ['404', `${dataSrv.url}/nothing.lance`, null, 'NotFound', /nothing\.lance/],
      ['403', `${dataSrv.url}/made/t.lance`, ['/made/t.lance/_versions', { status: 403 }], 'Forbidden', /made\/t\.lance\/_versions/],
      ['no CORS headers', `${plainSrv.url}/made/t.lance`, null, 'Network', /made\/t\.lance/],
      ['body cut short', `${dataSrv.url}/made/t.lance`, ['/made/t.lance/data/', { truncate: true }], 'Network', /made\/t\.lance\/data\//],
      ['corrupt manifest', `${dataSrv.url}/bad/manifest.lance`, null, 'Corrupt', /bad\/manifest\.lance.*_versions\/\d+\.manifest/],
      ['corrupt page', `${dataSrv.url}/bad/page.lance`, null, 'Corrupt', /bad\/page\.lance.*data\/\w+\.lance/],
      ['bad filter', good, null, 'Invalid', /where/, { where: 'id >' }],
    ];
    for (const [name, url, fault, code, re, opts] of cases) {
      if (fault) faults.set(...fault);
      const r = await call(page, 'lance.cat', url, opts);
      faults.clear();
      assert.equal(r.code, code, `${name}: ${JSON.stringify(r)}`);
      assert.match(r.message, re, name);
      assert.doesNotMatch(r.message, /\?/, `${name}: no query strings in messages`);
      assert.deepEqual(await call(page, 'lance.cat', good, { limit: 3 }), { ok: want }, `after ${name}`);
    }
  });

  it('repo.watch sees appended points and a new run by the poll after the commit; an idle poll costs at most 3 requests', async () => {
    const live = join(data.dir, 'live');
    const track = (args, lines) => new Promise((resolve, reject) => {
      const p = spawn(process.env.KV0 ?? join(import.meta.dirname, '../../bin/kv0'), ['track', live, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
      let out = '';
      p.stdout.on('data', (b) => { out += b; });
      p.on('exit', (c) => (c === 0 ? resolve(out) : reject(new Error(`kv0 track exited ${c}`))));
      p.stdin.end(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    });
    const points = (from, to) => Array.from({ length: to - from }, (_, i) => ({ name: 'loss', step: from + i, value: 1 / (from + i + 1) }));
    await track(['--run', 'base', '--no-wal'], [{ params: { lr: 0.1 } }, ...points(0, 50)]);
    const [base] = JSON.parse(await kv0(['runs', live, '--json']));
    const interval = 500;
    await inPage(page, async ([u, interval]) => {
      window.repo = await window.kv0.openRepo(u);
      window.changes = [];
      window.polls = 0;
      let wake = null;
      window.nextPoll = () => new Promise((r) => { wake = r; });
      window.stop = window.repo.watch((c) => window.changes.push({ polls: window.polls, c }), {
        interval,
        onPoll: () => { window.polls++; if (wake) { const w = wake; wake = null; w(); } },
        onError: (e) => window.changes.push({ at: Date.now(), error: `${e.code} ${e.message}` }),
      });
      await window.nextPoll();
    }, [`${dataSrv.url}/live`, interval]);

    // An idle poll: the requests between two poll completions.
    await inPage(page, () => window.nextPoll());
    const before = dataSrv.requests;
    await inPage(page, () => window.nextPoll());
    const idle = dataSrv.requests - before;
    assert.ok(idle >= 1 && idle <= 3, `an idle poll cost ${idle} requests`);

    // A writer appends points to the run.
    await track(['--resume', base.run_id, '--no-wal'], points(50, 80));
    const pollsAtCommit = await inPage(page, () => window.polls);
    const seen = await inPage(page, () => new Promise((resolve) => {
      const check = () => (window.changes.length ? resolve(window.changes.shift()) : setTimeout(check, 20));
      check();
    }), undefined, interval + 30000);
    assert.equal(seen.error, undefined, seen.error);
    // Counted in polls, not milliseconds (a loaded machine stretches those):
    // the poll under way at the commit may miss it, the one after may not.
    assert.ok(seen.polls - pollsAtCommit <= 1, `seen ${seen.polls - pollsAtCommit} polls after the commit`);
    const [series] = JSON.parse((await kv0(['series', live, base.run_id, '--json'])).replace(/"series_id": (\d+)/g, '"series_id": "$1"'));
    assert.ok(seen.c.series.includes(series.series_id), JSON.stringify(seen.c));
    assert.ok(seen.c.versions.metrics >= 2);

    // Then a new run starts.
    const out = await track(['--run', 'second', '--no-wal'], points(0, 5));
    const pollsAtStart = await inPage(page, () => window.polls);
    const next = await inPage(page, () => new Promise((resolve) => {
      const check = () => (window.changes.length ? resolve(window.changes.shift()) : setTimeout(check, 20));
      check();
    }), undefined, interval + 30000);
    const runs = JSON.parse(await kv0(['runs', live, '--json']));
    const second = runs.find((r) => r.name === 'second');
    assert.ok(next.c.runs.includes(second.run_id), `${JSON.stringify(next.c)} ${out}`);
    assert.ok(next.polls - pollsAtStart <= 1, `run seen ${next.polls - pollsAtStart} polls after`);
    await inPage(page, async () => { window.stop(); await window.repo.close(); });
  });

  it('signed mode: versitygw with CORS rules and kv0 sign-server answer as the CLI does', async () => {
    const s3 = await startS3();
    let signer;
    try {
      const bucket = 'kv0-wasm';
      await promisify(execFile)('go', ['run', './tests/wasm/s3setup', '-endpoint', s3.endpoint, '-bucket', bucket, '-origin', pageSrv.url,
        '-dir', data.dir, '-prefix', 'data'], { cwd: join(import.meta.dirname, '../..'), env: { ...process.env, AWS_ACCESS_KEY_ID: ACCESS, AWS_SECRET_ACCESS_KEY: SECRET } });
      signer = await startSigner(KV0, s3.endpoint, `s3://${bucket}/data`, pageSrv.url);
      const at = (key, token = signer.token) => ({ signer: { url: signer.url, token }, key });
      for (const ds of ['made/t.lance', 'samples/default/kv.lance']) {
        const local = join(data.dir, ds);
        assert.deepEqual(await call(page, 'lance.cat', at(ds)), { ok: await kv0(['lance', 'cat', local]) }, ds);
        assert.deepEqual(await call(page, 'lance.log', at(ds)), { ok: JSON.parse(await kv0(['lance', 'log', local, '--json'])) }, ds);
        const info = JSON.parse(await kv0(['lance', 'info', local, '--json']));
        assert.deepEqual(await call(page, 'lance.info', at(ds)), { ok: { ...info, path: ds } }, ds);
      }
      const runs = await inPage(page, async (loc) => {
        const repo = await window.kv0.openRepo(loc);
        try { return await repo.runs(); } finally { await repo.close(); }
      }, at(data.repo));
      assert.deepEqual(runs, JSON.parse(await kv0(['runs', join(data.dir, data.repo), '--json'])));
      const bad = await call(page, 'lance.cat', at('made/t.lance', 'wrong-token-0123456789'));
      assert.equal(bad.code, 'Forbidden', JSON.stringify(bad));
      assert.match(bad.message, new RegExp(signer.url.replace(/[.:/]/g, '\\$&')));
      assert.doesNotMatch(bad.message, /wrong-token/);
      const missing = await call(page, 'lance.info', at('nothing.lance'));
      assert.equal(missing.code, 'NotFound', JSON.stringify(missing));
      assert.deepEqual(await call(page, 'lance.cat', at('made/t.lance'), { limit: 2 }), { ok: await kv0(['lance', 'cat', join(data.dir, 'made/t.lance'), '--limit', '2']) });

      // Stable signing windows: a second read through a new handle (whose
      // URLs the sign server signs again) asks for the same URLs, and the
      // HTTP cache answers them (the bucket marks data files immutable).
      const cdp = await browser.newCDPSession(page);
      await cdp.send('Network.enable');
      const seen = [];
      cdp.on('Network.responseReceived', (e) => seen.push(e.response));
      const want = await kv0(['lance', 'cat', join(data.dir, 'made/t.lance')]);
      const dataFile = (r) => /\/data\/made\/t\.lance\/data\/[^/]+\.lance$/.test(new URL(r.url).pathname);
      const signedAt = (rs) => new Set(rs.map((r) => new URL(r.url).searchParams.get('X-Amz-Date')));
      let reads;
      for (let attempt = 0; attempt < 2; attempt++) {
        reads = [];
        for (let i = 0; i < 2; i++) {
          seen.length = 0;
          assert.deepEqual(await call(page, 'lance.cat', at('made/t.lance')), { ok: want });
          reads.push(seen.filter(dataFile));
          // Let the clock pass into the next second, so that a URL signed at
          // the current time (not at its window's start) would differ.
          if (i === 0) await new Promise((r) => setTimeout(r, 1005 - (Date.now() % 1000)));
        }
        // A window ending between the two reads changes every URL: read again.
        if (signedAt([...reads[0], ...reads[1]]).size === 1) break;
      }
      await cdp.detach();
      assert.ok(reads[0].length > 0, 'the reads fetch data files');
      assert.deepEqual(reads[1].map((r) => r.url).sort(), reads[0].map((r) => r.url).sort(), 'the same presigned URLs in one window');
      assert.ok(reads[1].every((r) => r.fromDiskCache), `the second read is served from the HTTP cache: ${JSON.stringify(reads[1].map((r) => [r.status, r.fromDiskCache, r.headers['cache-control']]))}`);
    } finally {
      await signer?.stop();
      await s3.stop();
    }
  });

  it('load() decodes in a Worker by default, and on the page thread when the module comes from another origin', async () => {
    const t = `${dataSrv.url}/made/t.lance`;
    const want = await kv0(['lance', 'cat', t]);
    for (const [at, onPage] of [[`${pageSrv.url}/default.html`, false], [`${dataSrv.url}/default-xorigin.html`, true]]) {
      const p = await browser.newPage();
      try {
        await p.goto(`${at}?t=${encodeURIComponent(t)}`);
        const got = await inPage(p, () => window.ready);
        assert.deepEqual(got, { onPage, cat: want }, at);
      } finally {
        await p.close();
      }
    }
  });

  it('worker mode: the same answers, typed arrays and error codes, decoding off the page thread', async () => {
    const wpage = await browser.newPage();
    try {
      await wpage.goto(`${pageSrv.url}/test.html?worker`);
      await inPage(wpage, () => window.ready);
      const url = `${dataSrv.url}/made/t.lance`;
      assert.deepEqual(await call(wpage, 'lance.cat', url, { where: 'small > 0' }), { ok: await kv0(['lance', 'cat', url, '--where', 'small > 0']) });
      assert.deepEqual(await call(wpage, 'lance.info', url), { ok: JSON.parse(await kv0(['lance', 'info', url, '--json'])) });
      const bad = await call(wpage, 'lance.cat', url, { columns: ['nope'] });
      assert.equal(bad.code, 'Invalid');
      const got = await inPage(wpage, async (u) => {
        const repo = await window.kv0.openRepo(u);
        const [run] = await repo.runs();
        const series = await repo.series(run.run_id);
        const [s] = await repo.read([series[0].series_id]);
        const scanned = await window.kv0.lance.scan(u.replace(/repo$/, 'made/t.lance'));
        await repo.close();
        const closed = await repo.runs().then(() => 'resolved', (e) => e.code);
        return { typed: s.values instanceof Float64Array, n: s.steps.length, count: series[0].stats.count, bytes: scanned instanceof Uint8Array && scanned.length, closed };
      }, `${dataSrv.url}/${data.repo}`);
      assert.ok(got.typed && got.bytes > 0);
      assert.equal(got.n, got.count);
      assert.equal(got.closed, 'Closed');
    } finally {
      await wpage.close();
    }
  });
});
