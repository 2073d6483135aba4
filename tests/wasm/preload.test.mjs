// preload() in Node: the answers it keeps stand in for the module's first
// requests (hints, latest manifests) exactly once, equal what the network
// gives, keep the errors' codes and messages, and never outlive their use
// or their maxAge (a version written afterwards is seen).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { startServer } from './server.mjs';
import { buildData, pipeTo, arrow, WASM_DIR } from './fixtures.mjs';

const { load, preload } = await import(join(WASM_DIR, 'kv0.mjs'));

let data, srv, mod;
before(async () => {
  data = await buildData();
  srv = await startServer({ root: data.dir });
  mod = await load();
});
after(async () => {
  await srv?.close();
  await data?.cleanup();
});

const isVersions = (r) => r.path.includes('/_versions/');

// readAll reads, then closes, a repository handle: the runs, the first
// run's series, their statistics and 40-point reads.
async function readAll(repo) {
  const out = { runs: await repo.runs() };
  out.series = await repo.series(out.runs[0].run_id);
  out.stats = await repo.stats(out.series.map((s) => s.series_id));
  out.points = await repo.read(out.series.map((s) => s.series_id), { maxPoints: 40 });
  await repo.close();
  return out;
}
const key = (r) => `${r.path} ${r.range}`;

// A small table to append, so that a dataset gets a new version.
function rows(from, n) {
  const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(from + i));
  return arrow.tableToIPC(new arrow.Table({
    id: arrow.makeVector(ids),
    name: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => `r${from + i}`), new arrow.Utf8()),
    score: arrow.makeVector(Float64Array.from({ length: n }, (_, i) => i * 0.5)),
    flag: arrow.vectorFromArray(Array.from({ length: n }, () => true), new arrow.Bool()),
    small: arrow.makeVector(Int32Array.from({ length: n }, (_, i) => i)),
  }), 'stream');
}

describe('preload', () => {
  it('a first open after preload sends nothing: preload and open together ask for each URL once', async () => {
    const url = `${srv.url}/${data.repo}`;
    srv.reset();
    const plain = await mod.openRepo(url);
    const plainOpen = srv.log.filter(isVersions).map(key).sort();
    assert.equal(plainOpen.length, 9, 'without preload: the hints, manifests and next-version probes of runs, series and metrics (the params table opens on its first read)');
    const want = await readAll(plain);

    srv.reset();
    assert.equal(await preload(url), 12);
    const preloaded = srv.log.map(key).sort();
    const ofParams = (k) => k.includes('params.lance/');
    assert.deepEqual(preloaded.filter((k) => !ofParams(k)), plainOpen, 'the preload asks for what the open would, with the same ranges');
    assert.equal(preloaded.filter(ofParams).length, 3, 'and for the params table\'s hint, manifest and probe (a first read of parameters, or prefetch)');
    const repo = await mod.openRepo(url);
    assert.equal(srv.requests, 12, 'the open itself sent nothing');
    const got = await readAll(repo);
    assert.deepEqual(got, want, 'the same answers as from the network');
  });

  it('datasets under V2 and V1 names read the same with and without preload, one hint fewer', async () => {
    const hints = (from) => srv.log.slice(from).filter((r) => r.path.endsWith('latest_version_hint.json')).length;
    // The large table's 30 MB of rows stay with the Node suite.
    for (const ds of data.datasets.filter((d) => !data.large.includes(d))) {
      const url = `${srv.url}/${ds}`;
      srv.reset();
      const want = [await mod.lance.info(url), await mod.lance.log(url), await mod.lance.cat(url)];
      const plainHints = hints(0);
      const plainVersions = srv.log.filter(isVersions).length;
      srv.reset();
      const kept = await preload(url, { datasets: [''] });
      assert.ok(kept >= 1, `${ds}: kept ${kept}`);
      const n = srv.requests;
      const got = [await mod.lance.info(url), await mod.lance.log(url), await mod.lance.cat(url)];
      assert.deepEqual(got, want, ds);
      assert.equal(hints(n), plainHints - 1, `${ds}: info's open took the hint from memory`);
      assert.equal(srv.log.slice(n).filter(isVersions).length, plainVersions - kept, `${ds}: every kept answer was used`);
    }
  });

  it('a preloaded 404 still rejects NotFound, with the message the network gives', async () => {
    const url = `${srv.url}/made/missing.lance`;
    const plain = await mod.lance.info(url).then(() => null, (e) => ({ code: e.code, message: e.message }));
    assert.equal(plain?.code, 'NotFound');
    srv.reset();
    assert.equal(await preload(url, { datasets: [''] }), 1, 'the 404 of the hint is kept');
    const got = await mod.lance.info(url).then(() => null, (e) => ({ code: e.code, message: e.message }));
    assert.deepEqual(got, plain);
    assert.match(got.message, /missing\.lance/);
    const hints = srv.log.filter((r) => r.path.endsWith('latest_version_hint.json'));
    assert.equal(hints.length, 1, 'the hint was asked for once, by the preload');
    // A repository that is not there: the same code and message too.
    const repoURL = `${srv.url}/norepo`;
    const want = await mod.openRepo(repoURL).then(() => null, (e) => ({ code: e.code, message: e.message }));
    await preload(repoURL);
    assert.deepEqual(await mod.openRepo(repoURL).then(() => null, (e) => ({ code: e.code, message: e.message })), want);
  });

  it('an answer is used once: a version written after the preload was used is seen', async () => {
    const rel = 'made/once.lance';
    await cp(join(data.dir, 'made/t.lance'), join(data.dir, rel), { recursive: true });
    const url = `${srv.url}/${rel}`;
    await preload(url, { datasets: [''] });
    const v = (await mod.lance.info(url)).version;
    await pipeTo(['lance', 'write', join(data.dir, rel), '--mode', 'append'], rows(1000, 5));
    // The preload kept "version v+1 is missing": reused, it would hide v+1.
    assert.equal((await mod.lance.info(url)).version, v + 1);
  });

  it('an expired answer is not used (maxAge: 0), and the network is asked', async () => {
    const rel = 'made/stale.lance';
    await cp(join(data.dir, 'made/t.lance'), join(data.dir, rel), { recursive: true });
    const url = `${srv.url}/${rel}`;
    const v = (await mod.lance.info(url)).version;
    srv.reset();
    assert.ok(await preload(url, { datasets: [''], maxAge: 0 }) >= 3);
    await pipeTo(['lance', 'write', join(data.dir, rel), '--mode', 'append'], rows(2000, 5));
    const n = srv.requests;
    assert.equal((await mod.lance.info(url)).version, v + 1);
    assert.ok(srv.log.slice(n).some((r) => r.path.endsWith('latest_version_hint.json')), 'the hint came from the network again');
  });

  it('a refused or failed preload is not kept: the module meets the server itself, with its code', async () => {
    const faulty = await startServer({ root: data.dir, faults: (p) => (p.startsWith('/repo/runs.lance/') ? { status: 403 } : p.startsWith('/repo/series.lance/') ? { status: 503 } : undefined) });
    try {
      const url = `${faulty.url}/repo`;
      const plain = await mod.openRepo(url).then(() => null, (e) => ({ code: e.code, message: e.message }));
      assert.equal(plain?.code, 'Forbidden');
      faulty.reset();
      const kept = await preload(url);
      assert.equal(kept, 6, 'params and metrics: hint and two manifests each; nothing of runs (403) or series (503)');
      const n = faulty.requests;
      const got = await mod.openRepo(url).then(() => null, (e) => ({ code: e.code, message: e.message }));
      assert.deepEqual(got, plain);
      assert.ok(faulty.log.slice(n).some((r) => r.path === '/repo/runs.lance/_versions/latest_version_hint.json'), 'the refused hint was asked for again');
    } finally {
      await faulty.close();
    }
  });

  it('a signed or bad location preloads nothing and never rejects', async () => {
    srv.reset();
    assert.equal(await preload({ signer: { url: `${srv.url}/sign`, token: 't' }, key: 'repo' }), 0);
    assert.equal(await preload('not a url'), 0);
    assert.equal(await preload('file:///tmp/x'), 0);
    assert.equal(srv.requests, 0);
  });
});
