// The wasm module in Node: every answer equals the kv0 CLI's on the same
// data, read through a static HTTP server (Range requests, no listing).
import { describe, it, before, after } from 'node:test';
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startServer } from './server.mjs';
import { buildData, dataFormat, kv0, kv0Status, WASM_DIR, arrow, pipeTo } from './fixtures.mjs';
import { encodeTableLines } from '../interop/jsonl.mjs';

const { load } = await import(join(WASM_DIR, 'kv0.mjs'));

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

// Series ids are numbers in the CLI's JSON and decimal strings in the
// module's: quote them before parsing so no digit is lost.
const quoteIDs = (s) => s.replace(/"series_id": (\d+)/g, '"series_id": "$1"');
const cliJSON = async (args) => JSON.parse(quoteIDs(await kv0(args)));

// tracker(repo) returns track(args, lines): `kv0 track repo args` fed the
// lines as JSON, resolving when it exits 0.
function tracker(repo) {
  return (args, lines) => new Promise((resolve, reject) => {
    const p = spawn(process.env.KV0 ?? join(import.meta.dirname, '../../bin/kv0'), ['track', repo, ...args, '--no-wal'], { stdio: ['pipe', 'ignore', 'inherit'] });
    p.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`kv0 track exited ${c}`))));
    p.stdin.end(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  });
}

// checkRead asserts that repo.read of the series ids of run r (listed in
// series), full or down to maxPoints, equals kv0 metrics --csv point for
// point.
async function checkRead(repo, url, r, series, ids, maxPoints) {
  const got = await repo.read(ids, maxPoints ? { maxPoints } : undefined);
  assert.equal(got.length, ids.length);
  for (let i = 0; i < ids.length; i++) {
    const s = series.find((x) => x.series_id === ids[i]);
    assert.equal(got[i].seriesId, ids[i]);
    assert.ok(got[i].values instanceof Float64Array);
    const down = maxPoints && s.stats.count > maxPoints;
    assert.equal(got[i].mins !== undefined, !!down, 'mins and maxs exactly when downsampled');
    if (down) {
      got[i].values.forEach((v, k) => assert.ok(got[i].mins[k] <= v && v <= got[i].maxs[k]));
      assert.equal(Math.min(...got[i].mins), s.stats.min);
      assert.equal(Math.max(...got[i].maxs), s.stats.max);
    }
    const flags = ['metrics', url, r.run_id, s.name, '--csv', '--context', s.context];
    if (maxPoints) flags.push('--max-points', String(maxPoints));
    // name,context,step,epoch,timestamp,value: the last four hold no commas.
    const lines = (await kv0(flags)).trim().split('\n').slice(1).map((l) => l.split(',').slice(-4));
    assert.equal(got[i].steps.length, lines.length, `${s.name} ${s.context}`);
    lines.forEach(([step, epoch, ts, value], k) => {
      assert.equal(got[i].steps[k], Number(step));
      assert.equal(Object.is(got[i].epochs[k], NaN) ? '' : String(got[i].epochs[k]), epoch);
      assert.equal(got[i].values[k], Number(value));
      // Milliseconds with the microseconds as a fraction, exactly.
      const [, whole, frac = ''] = ts.match(/^(.*?:\d\d)(?:\.(\d+))?Z$/);
      const us = Date.parse(whole + 'Z') * 1000 + Number(frac.padEnd(6, '0').slice(0, 6));
      assert.equal(got[i].timestamps[k], us / 1000, ts);
    });
  }
}

describe('package', () => {
  it('installs as @kv0/wasm: exports and types resolve, the module loads by name', async () => {
    const { mkdtemp, mkdir, symlink, writeFile, readFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const pkg = JSON.parse(await readFile(join(WASM_DIR, 'package.json'), 'utf8'));
    assert.equal(pkg.name, '@kv0/wasm');
    assert.equal(pkg.types, './kv0.d.ts');
    assert.equal(pkg.exports['.'].import, './kv0.mjs');
    for (const f of pkg.files) await readFile(join(WASM_DIR, f)); // every listed file is there
    // What `npm install ./out/wasm` makes: a link under node_modules.
    const dir = await mkdtemp(join(tmpdir(), 'kv0-pkg-'));
    try {
      await mkdir(join(dir, 'node_modules/@kv0'), { recursive: true });
      await symlink(WASM_DIR, join(dir, 'node_modules/@kv0/wasm'));
      await writeFile(join(dir, 'use.mjs'), `import { load } from '@kv0/wasm';
const kv0 = await load();
export const info = await kv0.lance.info(process.env.KV0_URL);`);
      process.env.KV0_URL = `${srv.url}/made/t.lance`;
      const { info } = await import(join(dir, 'use.mjs'));
      assert.deepEqual(info, await mod.lance.info(`${srv.url}/made/t.lance`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('lance', () => {
  it('cat, info and log equal the CLI byte for byte on every dataset', async () => {
    for (const ds of data.datasets) {
      const url = `${srv.url}/${ds}`;
      assert.equal(await mod.lance.cat(url), await kv0(['lance', 'cat', url]), `cat ${ds}`);
      assert.deepEqual(await mod.lance.info(url), JSON.parse(await kv0(['lance', 'info', url, '--json'])), `info ${ds}`);
      assert.equal(JSON.stringify(await mod.lance.info(url)) + '\n', await kv0(['lance', 'info', url, '--json']), `info bytes ${ds}`);
      assert.equal(JSON.stringify(await mod.lance.log(url)) + '\n', await kv0(['lance', 'log', url, '--json']), `log ${ds}`);
    }
  });

  it('cat options equal the CLI flags', async () => {
    const url = `${srv.url}/made/t.lance`;
    const cases = [
      [{ version: 1 }, ['--version', '1']],
      [{ tag: 'first' }, ['--tag', 'first']],
      [{ columns: ['score', 'id'] }, ['--columns', 'score,id']],
      [{ limit: 7 }, ['--limit', '7']],
      [{ limit: 0 }, ['--limit', '0']],
      [{ where: 'small > 10 and flag' }, ['--where', 'small > 10 and flag']],
      [{ where: 'name is null', columns: ['id'], limit: 3 }, ['--where', 'name is null', '--columns', 'id', '--limit', '3']],
      [{ version: 2, where: 'id >= 100 and id < 125' }, ['--version', '2', '--where', 'id >= 100 and id < 125']],
    ];
    for (const [opts, flags] of cases) {
      assert.equal(await mod.lance.cat(url, opts), await kv0(['lance', 'cat', url, ...flags]), JSON.stringify(opts));
    }
    for (const fixture of ['default', 'v2_2']) {
      const s = `${srv.url}/samples/${fixture}/kv.lance`;
      for (const v of [1, 2, 3, 4, 6]) {
        const want = await kv0(['lance', 'cat', s, '--version', String(v)]);
        assert.ok(want.length > 0, `${fixture} version ${v}`);
        assert.equal(await mod.lance.cat(s, { version: v }), want, `${fixture} version ${v}`);
        assert.deepEqual(await mod.lance.info(s, { version: v }), JSON.parse(await kv0(['lance', 'info', s, '--json', '--version', String(v)])));
      }
    }
  });

  it('where on a timestamp column of a named zone equals the CLI (zone offsets from Intl, DST changes included)', async () => {
    // Every 30 minutes across New York's two DST changes of 2024, and a day
    // in winter and one in summer.
    const starts = ['2024-03-10T04:00:00Z', '2024-11-03T03:00:00Z', '2024-01-15T15:00:00Z', '2024-07-01T15:00:00Z'];
    const micros = [];
    for (const s of starts) for (let k = 0; k < 12; k++) micros.push(BigInt(Date.parse(s) + k * 1800_000) * 1000n);
    const type = new arrow.TimestampMicrosecond('America/New_York');
    const t = new arrow.Table({
      ts: arrow.makeVector(arrow.makeData({ type, length: micros.length, nullCount: 0, data: BigInt64Array.from(micros) })),
      n: arrow.makeVector(Int32Array.from(micros, (_, i) => i)),
    });
    const path = join(data.dir, 'made', 'zoned.lance');
    await pipeTo(['lance', 'write', path, '--mode', 'create'], arrow.tableToIPC(t, 'stream'));
    const url = `${srv.url}/made/zoned.lance`;
    for (const where of [
      "ts >= '2024-03-10 01:30:00' and ts <= '2024-03-10 03:30:00'", // 02:00-03:00 does not exist that day
      "ts = '2024-03-10 02:30:00'",
      "ts >= '2024-11-03 01:00:00' and ts < '2024-11-03 02:00:00'", // 01:00-02:00 happens twice
      "ts = '2024-11-03 01:30:00'",
      "ts < '2024-01-15 12:00:00'",
      "ts > TIMESTAMP '2024-07-01 12:30:00'",
      "ts > '2024-07-01T16:00:00Z'",
      "ts < DATE '2024-03-11'",
    ]) {
      const want = await kv0(['lance', 'cat', url, '--where', where]);
      assert.ok(want.length > 0 || where.includes("= '2024-03-10 02:30:00'"), where);
      assert.equal(await mod.lance.cat(url, { where }), want, where);
    }
  });

  it('scan is an Arrow IPC stream of the rows cat prints', async () => {
    for (const ds of [...data.datasets, 'made/t.lance?where', 'v22/dict.lance?where']) {
      const [path, hasWhere] = ds.split('?');
      const url = `${srv.url}/${path}`;
      const opts = !hasWhere ? {} : path === 'made/t.lance' ? { where: 'small < 0', columns: ['name', 'score', 'id'] }
        : { where: "cat = 'red' AND i64d > 0", columns: ['sd', 'cat', 'ld', 'u64d'] };
      const table = arrow.tableFromIPC(await mod.lance.scan(url, opts));
      const want = await mod.lance.cat(url, opts);
      assert.ok(want.length > 0, ds);
      assert.equal(table.numRows, want.split('\n').length - 1, ds);
      // The canonical JSON Lines of the Arrow table (the twin of core/jsonl)
      // are cat's, value for value.
      assert.equal([...encodeTableLines(table)].join(''), want, ds);
    }
    // limit 0: no batches, and the schema of the columns asked for.
    const none = arrow.tableFromIPC(await mod.lance.scan(`${srv.url}/made/t.lance`, { limit: 0, columns: ['score', 'id'] }));
    assert.equal(none.numRows, 0);
    assert.deepEqual(none.schema.fields.map((f) => f.name), ['score', 'id']);
  });

  it('bad input rejects with a code naming the location; the module keeps working', async () => {
    const url = `${srv.url}/made/t.lance`;
    const cases = [
      [() => mod.lance.cat(url, { columns: ['nope'] }), 'Invalid', /nope/],
      [() => mod.lance.cat(url, { where: 'id >' }), 'Invalid', /where/],
      [() => mod.lance.cat(url, { version: 99 }), 'NotFound', /99/],
      [() => mod.lance.cat(url, { tag: 'missing' }), 'NotFound', /missing/],
      [() => mod.lance.cat(url, { version: 0 }), 'Invalid', /version/],
      [() => mod.lance.cat(url, { version: 1, tag: 'first' }), 'Invalid', /exclude/],
      [() => mod.lance.cat(url, { bogus: 1 }), 'Invalid', /bogus/],
      [() => mod.lance.info(`${srv.url}/nothing/here.lance`), 'NotFound', /nothing\/here\.lance/],
      [() => mod.lance.cat(`${srv.url}/samples/legacy/kv.lance`), 'Unsupported', /legacy\/kv\.lance/],
      [() => mod.lance.info('ftp://example.com/x'), 'Invalid', /http/],
      [() => mod.lance.info(42), 'Invalid', /location/],
      [() => mod.lance.info('{"signer":{"url":"http://127.0.0.1:1","token":"t"},"key":"k"}'), 'Invalid', /object/],
      [() => mod.lance.info('http://127.0.0.1:1/x.lance'), 'Network', /127\.0\.0\.1:1\/x\.lance/],
      // Values JSON cannot carry, or would carry as null, are named.
      [() => mod.lance.cat(url, { limit: 0, columns: ['nope'] }), 'Invalid', /nope/], // limit 0 checks its columns too
      [() => mod.lance.scan(url, { limit: 0, where: 'id >' }), 'Invalid', /where/],
      [() => mod.lance.cat(url, { limit: NaN }), 'Invalid', /limit is NaN/],
      [() => mod.lance.cat(url, { version: Infinity }), 'Invalid', /version is Infinity/],
      [() => mod.lance.scan(url, { limit: 10n }), 'Invalid', /limit is a BigInt/],
      [() => { const o = { where: {} }; o.where.self = o; return mod.lance.cat(url, o); }, 'Invalid', /circular/],
      [() => mod.lance.info(url, { limit: 3 }), 'Invalid', /unknown option "limit"/],
      [() => mod.lance.log(url, { version: 1 }), 'Invalid', /unknown option "version"/],
      [() => mod.openRepo(`${srv.url}/repo`, { bogus: 1 }), 'Invalid', /unknown option "bogus"/],
      [() => load(null), 'Invalid', /options/],
      [() => load({ wasmURL: new URL('file:///nonexistent/kv0.wasm') }), 'NotFound', /nonexistent/],
    ];
    for (const [fn, code, re] of cases) {
      await assert.rejects(fn, (e) => {
        assert.equal(e.code, code, `${e.message}`);
        assert.match(e.message, re);
        return true;
      });
      assert.equal(await mod.lance.cat(url, { limit: 1 }), await kv0(['lance', 'cat', url, '--limit', '1']));
    }
    // A getter that throws while the argument is read rejects the call.
    const evil = { signer: { get url() { throw new Error('boom'); }, token: 't' }, key: 'k' };
    await assert.rejects(mod.lance.info(evil), /boom/);
    await assert.rejects(mod.lance.cat({ signer: { url: 1, token: 't' } }), (e) => e.code === 'Invalid');
    await assert.rejects(mod.openRepo(null), (e) => e.code === 'Invalid');
    // A panic inside the Go code (forced by the test hook) rejects only its
    // own call; the module keeps serving.
    const other = await load({ env: { KV0_WASM_TEST_PANIC: '/panic-here/' } });
    for (let i = 0; i < 3; i++) {
      await assert.rejects(other.lance.info(`${srv.url}/panic-here/t.lance`), (e) => e.code === 'Corrupt' && /internal error/.test(e.message));
      assert.equal(await other.lance.cat(url, { limit: 1 }), await kv0(['lance', 'cat', url, '--limit', '1']));
    }
    // The CLI refuses the same arguments.
    assert.notEqual((await kv0Status(['lance', 'cat', url, '--columns', 'nope'])).code, 0);
  });
});

describe('tracking', () => {
  let repo, url;
  before(async () => {
    url = `${srv.url}/${data.repo}`;
    repo = await mod.openRepo(url);
  });
  after(async () => repo?.close());

  it('runs with filters equal kv0 runs --json', async () => {
    const all = await cliJSON(['runs', url, '--json']);
    assert.ok(all.length >= 4);
    assert.deepEqual(await repo.runs(), all);
    const first = all[0];
    const cases = [
      [{ experiment: first.experiment }, ['--experiment', first.experiment]],
      [{ status: 'finished' }, ['--status', 'finished']],
      [{ tags: [first.tags[0]] }, ['--tag', first.tags[0]]],
      [{ tags: first.tags }, first.tags.flatMap((t) => ['--tag', t])],
      [{ archived: false }, ['--archived', 'false']],
      [{ archived: true }, ['--archived', 'true']],
      [{ params: [{ key: 'batch_size', op: '>=', value: 128 }] }, ['--param', 'batch_size>=128']],
      [{ params: [{ key: 'model.name', op: '=', value: 'resnet18' }] }, ['--param', 'model.name=resnet18']],
      [{ params: [{ key: 'amp', op: '=', value: true }, { key: 'epochs', op: '<', value: 100 }] }, ['--param', 'amp=true', '--param', 'epochs<100']],
    ];
    for (const [f, flags] of cases) {
      const want = JSON.parse(await kv0(['runs', url, '--json', ...flags])) ?? [];
      assert.deepEqual(await repo.runs(f), want, JSON.stringify(f));
    }
    assert.ok((await repo.runs(cases[6][0])).length > 0, 'a parameter filter that matches');
  });

  it('runs matching nothing is an empty list, as in the CLI', async () => {
    assert.deepEqual(await repo.runs({ experiment: 'no-such-experiment' }), []);
    assert.deepEqual(await cliJSON(['runs', url, '--experiment', 'no-such-experiment', '--json']), []);
  });

  it('run, params, series and stats equal the CLI; series ids are strings', async () => {
    for (const r of await repo.runs()) {
      assert.deepEqual(await repo.run(r.run_id), await cliJSON(['run', url, r.run_id, '--json']));
      assert.deepEqual(await repo.run(r.name), await cliJSON(['run', url, r.name, '--json']));
      assert.deepEqual(await repo.params(r.run_id), await cliJSON(['params', url, r.run_id, '--json']));
      const series = await repo.series(r.run_id);
      assert.deepEqual(series, await cliJSON(['series', url, r.run_id, '--json']));
      assert.ok(series.length > 0);
      for (const s of series) assert.match(s.series_id, /^\d+$/);
      const stats = await repo.stats(series.map((s) => s.series_id));
      assert.deepEqual(stats, series.map((s) => s.stats ?? null));
    }
  });

  it('series whose last value is NaN or that hold no finite value: series and stats equal the CLI, such values as strings', async () => {
    const track = tracker(join(data.dir, 'nonfinite-node'));
    await track(['--run', 'diverged'], [{ name: 'loss', step: 0, value: 1.5 }, { name: 'loss', step: 1, value: 'NaN' },
      { name: 'inf', step: 0, value: 'Infinity' }]);
    const url = `${srv.url}/nonfinite-node`;
    const r = await mod.openRepo(url);
    try {
      const [run] = await r.runs();
      const series = await r.series(run.run_id);
      assert.deepEqual(series, await cliJSON(['series', url, run.run_id, '--json']));
      const stats = Object.fromEntries(series.map((s) => [s.name, s.stats]));
      assert.deepEqual([stats.loss.last_value, stats.loss.min, stats.loss.max, stats.loss.non_finite], ['NaN', 1.5, 1.5, 1]);
      assert.deepEqual([stats.inf.last_value, stats.inf.min, stats.inf.max], ['Infinity', 'Infinity', '-Infinity']);
      assert.deepEqual(await r.stats(series.map((s) => s.series_id)), series.map((s) => s.stats));
    } finally {
      await r.close();
    }
  });

  it('a parameter named series_id keeps its value (only series and stats answers quote ids)', async () => {
    const track = tracker(join(data.dir, 'param-ids-node'));
    await track(['--run', 'p'], [{ params: { series_id: 7, nested: { series_id: 5.5 }, list: [{ series_id: 1 }] } }]);
    const url = `${srv.url}/param-ids-node`;
    const r = await mod.openRepo(url);
    try {
      const [run] = await r.runs();
      const params = await r.params(run.run_id);
      assert.deepEqual(params, JSON.parse(await kv0(['params', url, run.run_id, '--json'])));
      assert.deepEqual([params.series_id, params['nested.series_id'], params.list], [7, 5.5, [{ series_id: 1 }]]);
    } finally {
      await r.close();
    }
  });

  it('read equals kv0 metrics, full and downsampled, in the order given', async () => {
    const [r] = await repo.runs();
    const series = await repo.series(r.run_id);
    const ids = series.map((s) => s.series_id).reverse();
    for (const maxPoints of [undefined, 40]) await checkRead(repo, url, r, series, ids, maxPoints);
    const steps = await repo.read([ids[0]], { steps: [10, 20] });
    assert.deepEqual([...steps[0].steps], Array.from({ length: 10 }, (_, k) => 10 + k).filter((x) => (series.find((s) => s.series_id === ids[0]).stats.first_step <= x)));
    // A time range [from, to) in milliseconds selects by timestamp.
    const big = series.find((x) => x.stats && x.stats.count >= 10);
    const [full] = await repo.read([big.series_id]);
    const from = full.timestamps[3], to = full.timestamps[8];
    const [part] = await repo.read([big.series_id], { time: [from, to] });
    assert.deepEqual([...part.steps], [...full.steps].filter((_, k) => full.timestamps[k] >= from && full.timestamps[k] < to));
    assert.ok(part.steps.length > 0);
    await assert.rejects(repo.read([123]), (e) => e.code === 'Invalid');
    await assert.rejects(repo.run('no-such-run'), (e) => e.code === 'NotFound' && /no-such-run/.test(e.message));
    // A series no run has: NotFound naming it, in read and in stats.
    await assert.rejects(repo.read([big.series_id, '12345']), (e) => e.code === 'NotFound' && /12345/.test(e.message));
    await assert.rejects(repo.read(['12345'], { maxPoints: 10 }), (e) => e.code === 'NotFound' && /12345/.test(e.message));
    await assert.rejects(repo.stats(['12345']), (e) => e.code === 'NotFound' && /12345/.test(e.message));
    // Arguments of the wrong kind reject Invalid (watch, which returns at
    // once, throws), naming what was wrong.
    for (const [fn, re] of [
      [() => repo.run(123), /run id must be a non-empty string/], [() => repo.run(), /run id/], [() => repo.params({}), /run id/],
      [() => repo.series([r.run_id]), /run id/], [() => repo.records(5), /records table/],
      [() => repo.read([big.series_id], { maxPoints: NaN }), /maxPoints/], [() => repo.read([big.series_id], { maxPoints: -1 }), /maxPoints/],
      [() => repo.read([big.series_id], { steps: [100, 10] }), /steps/], [() => repo.read([big.series_id], { steps: [1] }), /steps/],
      [() => repo.read([big.series_id], { steps: [null, 5] }), /steps/], [() => repo.read([big.series_id], { time: [Date.now(), 0] }), /time/],
      [() => repo.read([123n]), /BigInt/], [() => repo.read([big.series_id], { max: 3 }), /unknown option "max"/],
      [() => repo.runs({ experment: 'x' }), /unknown option "experment"/],
    ]) {
      await assert.rejects(fn, (e) => e.code === 'Invalid' && re.test(e.message));
    }
    for (const [fn, re] of [
      [() => repo.watch(123), /onChange/], [() => repo.watch(() => {}, null), /options/],
      [() => repo.watch(() => {}, { interval: 'abc' }), /interval/], [() => repo.watch(() => {}, { interval: -5 }), /interval/],
      [() => repo.watch(() => {}, { interval: NaN }), /interval/], [() => repo.watch(() => {}, { onPoll: 1 }), /onPoll/],
      [() => repo.watch(() => {}, { every: 1 }), /unknown option "every"/],
    ]) {
      assert.throws(fn, (e) => e.code === 'Invalid' && re.test(e.message));
    }
    assert.equal((await repo.read([big.series_id]))[0].steps.length, full.steps.length); // and the handle reads on
  });

  it('a read owns its arrays: later reads, which reuse the module\'s conversion buffer, leave them as they were', async () => {
    const [r] = await repo.runs();
    const series = (await repo.series(r.run_id)).filter((s) => s.stats?.count > 0);
    assert.ok(series.length >= 2);
    const [a] = await repo.read([series[0].series_id]);
    const copy = { steps: [...a.steps], values: [...a.values], timestamps: [...a.timestamps] };
    // Other series, larger and smaller reads, and the same one again.
    await repo.read(series.map((s) => s.series_id));
    await repo.read([series[1].series_id], { maxPoints: 4 });
    const [again] = await repo.read([series[0].series_id]);
    assert.deepEqual([...a.steps], copy.steps);
    assert.deepEqual([...a.values], copy.values);
    assert.deepEqual([...a.timestamps], copy.timestamps);
    assert.deepEqual([...again.values], copy.values);
    assert.notEqual(again.values.buffer, a.values.buffer);
  });

  it('two watches of one handle each see a commit; a throwing callback does not stop watching', { timeout: 60000 }, async () => {
    const track = tracker(join(data.dir, 'live-node'));
    await track(['--run', 'w'], [{ name: 'loss', step: 0, value: 1 }]);
    const r = await mod.openRepo(`${srv.url}/live-node`);
    const seen = [[], []];
    const started = [];
    const stops = [0, 1].map((k) => {
      let resolveStart;
      started.push(new Promise((res) => { resolveStart = res; }));
      let polls = 0;
      return r.watch((c) => { seen[k].push(c); if (k === 0) throw new Error('callback failure'); }, {
        interval: 200,
        onPoll: () => { if (++polls === 1) resolveStart(); },
        onError: (e) => seen[k].push({ error: e.message }),
      });
    });
    await Promise.all(started);
    await track(['--run', 'v'], [{ name: 'acc', step: 0, value: 0.5 }]);
    const [v] = (await r.runs()).filter((x) => x.name === 'v');
    const waitFor = (k, pred) => new Promise((resolve) => { const t = () => (seen[k].some(pred) ? resolve() : setTimeout(t, 20)); t(); });
    await Promise.all([0, 1].map((k) => waitFor(k, (c) => c.runs?.includes(v.run_id))));
    await waitFor(0, (c) => c.error === 'callback failure');
    // Watch 0 goes on after its callback threw: a second commit reaches it.
    await track(['--run', 'u'], [{ name: 'acc', step: 0, value: 0.25 }]);
    const [u] = (await r.runs()).filter((x) => x.name === 'u');
    await Promise.all([0, 1].map((k) => waitFor(k, (c) => c.runs?.includes(u.run_id))));
    stops.forEach((s) => s());
    await r.close();
  });

  it('watch polls every interval, counted from each poll\'s start: slow answers do not stretch the cadence', { timeout: 60000 }, async () => {
    const track = tracker(join(data.dir, 'cadence-node'));
    await track(['--run', 'c'], [{ name: 'loss', step: 0, value: 1 }]);
    const delay = 1200;
    const slow = await startServer({ root: data.dir, delayMs: delay });
    try {
      const r = await mod.openRepo(`${slow.url}/cadence-node`);
      const interval = 2000;
      const at = [];
      await new Promise((resolve, reject) => {
        const stop = r.watch(() => {}, {
          interval,
          onPoll: () => { at.push(performance.now()); if (at.length === 7) { stop(); resolve(); } },
          onError: reject,
        });
      });
      await r.close();
      // Each quiet poll waits 1,200 ms for its probes: counted from its end
      // the polls would be ≥ 3,200 ms apart, counted from its start 2,000.
      // The bound between them leaves a loaded machine 600 ms of late
      // timers (or 1,400 ms of a poll's own work) on the median gap.
      const gaps = at.slice(2).map((t, i) => t - at[i + 1]);
      const sorted = [...gaps].sort((a, b) => a - b);
      assert.ok(sorted[Math.floor(sorted.length / 2)] < interval + delay / 2, `gaps between polls: ${gaps.map(Math.round)} ms`);
    } finally {
      await slow.close();
    }
  });

  it('versionTTL: reads keep the version confirmed within it; versions() ends its grace', { timeout: 60000 }, async () => {
    const track = tracker(join(data.dir, 'ttl-node'));
    await track(['--run', 'a'], [{ name: 'loss', step: 0, value: 1 }]);
    await assert.rejects(mod.openRepo(`${srv.url}/ttl-node`, { versionTTL: -1 }), (e) => e.code === 'Invalid' && /versionTTL/.test(e.message));
    const held = await mod.openRepo(`${srv.url}/ttl-node`, { versionTTL: 3_600_000, prefetch: true });
    const fresh = await mod.openRepo(`${srv.url}/ttl-node`);
    assert.equal((await held.runs()).length, 1);
    assert.equal((await fresh.runs()).length, 1);
    await track(['--run', 'b'], [{ name: 'loss', step: 0, value: 2 }]);
    assert.equal((await fresh.runs()).length, 2, 'a handle without a TTL sees the commit at once');
    assert.equal((await held.runs()).length, 1, 'within its TTL a handle keeps the version it confirmed');
    await held.versions();
    assert.equal((await held.runs()).length, 2, 'after versions() found a newer version, reads see it');
    await held.close();
    await fresh.close();
  });

  it('versions, and Closed after close', async () => {
    const v = await repo.versions();
    for (const k of ['runs', 'params', 'series', 'metrics']) assert.ok(v[k] >= 1, k);
    const other = await mod.openRepo(url);
    await other.close();
    await assert.rejects(other.runs(), (e) => e.code === 'Closed');
    assert.ok((await repo.runs()).length > 0);
    await assert.rejects(mod.openRepo(`${srv.url}/made`), (e) => e.code === 'NotFound');
  });
});

describe('tracking, format 2.1', () => {
  // The repository above is in format 2.2 (kv0's default); this one is the
  // same demo written in 2.1, which the module reads as well.
  let repo, url;
  before(async () => {
    url = `${srv.url}/${data.repo21}`;
    repo = await mod.openRepo(url);
  });
  after(async () => repo?.close());

  it('runs, run, params, series, stats and reads equal the CLI', async () => {
    const all = await cliJSON(['runs', url, '--json']);
    assert.ok(all.length >= 4);
    assert.deepEqual(await repo.runs(), all);
    const want = JSON.parse(await kv0(['runs', url, '--json', '--param', 'batch_size>=128'])) ?? [];
    assert.ok(want.length > 0, 'a parameter filter that matches');
    assert.deepEqual(await repo.runs({ params: [{ key: 'batch_size', op: '>=', value: 128 }] }), want);
    for (const r of all) {
      assert.deepEqual(await repo.run(r.run_id), await cliJSON(['run', url, r.run_id, '--json']));
      assert.deepEqual(await repo.params(r.run_id), await cliJSON(['params', url, r.run_id, '--json']));
      const series = await repo.series(r.run_id);
      assert.deepEqual(series, await cliJSON(['series', url, r.run_id, '--json']));
      assert.ok(series.length > 0);
      assert.deepEqual(await repo.stats(series.map((s) => s.series_id)), series.map((s) => s.stats ?? null));
    }
    const series = await repo.series(all[0].run_id);
    const ids = series.map((s) => s.series_id).reverse();
    for (const maxPoints of [undefined, 40]) await checkRead(repo, url, all[0], series, ids, maxPoints);
  });
});

for (const format of ['2.2', '2.1']) describe(`records, format ${format}`, () => {
  // A repository with records tables (written by tests/wasm/recordsrepo:
  // the CLI writes no records), read over the static server and compared
  // with what was written and with the HTTP API's answers.
  let repo, ids, api;
  before(async () => {
    const { execFile, spawn } = await import('node:child_process');
    const root = new URL('../..', import.meta.url).pathname;
    const dir = join(data.dir, `records-repo-${format}`);
    const out = await new Promise((resolve, reject) => execFile(process.env.GO ?? 'go', ['run', './tests/wasm/recordsrepo', dir, format],
      { cwd: root, encoding: 'utf8' }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))));
    ids = JSON.parse(out);
    for (const t of ['runs.lance', 'records/evals.lance']) assert.equal(await dataFormat(join(dir, t)), format, t);
    repo = await mod.openRepo(`${srv.url}/records-repo-${format}`);
    // kv0 serve over the same folder, for the API's answers.
    const p = spawn(process.env.KV0 ?? join(import.meta.dirname, '../../bin/kv0'), ['serve', dir, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const url = await new Promise((resolve, reject) => {
      let buf = '';
      p.stdout.on('data', (b) => {
        buf += b;
        const m = /at (http:\/\/\S+)/.exec(buf);
        if (m) resolve(m[1].replace(/\/$/, ''));
      });
      p.on('exit', (c) => reject(new Error(`kv0 serve exited ${c}`)));
    });
    api = { url, stop: () => new Promise((r) => { p.on('exit', r); p.kill('SIGTERM'); }) };
  });
  after(async () => {
    await repo?.close();
    await api?.stop();
  });
  const apiJSON = async (path) => {
    const res = await fetch(api.url + path);
    assert.equal(res.status, 200, path);
    return res.json();
  };

  it('records(table) gives the live records, newest write winning, deleted ones and deleted runs left out', async () => {
    const got = await repo.records('evals');
    const want = [
      ['', 'shared', 42],
      [ids.a, 'i1', { score: 0.75, v: 2 }],
      [ids.a, 'i2', { prompt: '2+2 <b> & "q"', answer: '4' }],
      [ids.a, 'ids', { series_id: 7, nested: { series_id: 8 } }],
      [ids.b, 'i1', [1, 'two', null, true]],
    ].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
    assert.deepEqual(got.map((r) => [r.run_id ?? '', r.item_id, r.data]), want);
    for (const r of got) {
      assert.equal(r.table, 'evals');
      assert.match(r.seq, /^\d{19}$/, 'seq is the decimal string of a 64-bit nanosecond sequence');
      assert.ok(!Number.isNaN(Date.parse(r.created_at)), r.created_at);
      if (r.item_id === 'shared') assert.ok(!('run_id' in r), 'no run_id for a record of no run');
    }
    // The overwrite is newer than the first writes.
    const seqOf = (item) => BigInt(got.find((r) => r.item_id === item && r.run_id === ids.a).seq);
    assert.ok(seqOf('i1') > seqOf('i2'));
    assert.deepEqual((await repo.records('samples-2')).map((r) => [r.run_id, r.item_id, r.data]), [[ids.b, 's', { text: 'é' }]]);
  });

  it('records(table, { run }) selects one run; equal to the HTTP API', async () => {
    for (const [name, items] of [['a', ['i1', 'i2', 'ids']], ['b', ['i1']], ['c', []]]) {
      const got = await repo.records('evals', { run: ids[name] });
      assert.deepEqual(got.map((r) => r.item_id), items, name);
      assert.ok(got.every((r) => r.run_id === ids[name]));
      assert.deepEqual(got, await apiJSON(`/api/v1/records/evals?run=${ids[name]}`), `API, run ${name}`);
    }
    assert.deepEqual(await repo.records('evals', { run: 'no-such-run' }), []);
    assert.deepEqual(await repo.records('evals'), await apiJSON('/api/v1/records/evals'));
    assert.deepEqual(await apiJSON('/api/v1/records'), ['evals', 'samples-2']);
  });

  it('recordTables needs a listing; bad arguments reject with their codes', async () => {
    await assert.rejects(repo.recordTables(), (e) => e.code === 'Unsupported' && /static host/.test(e.message) && e.message.includes('records-repo'));
    const cases = [
      [() => repo.records('nope'), 'NotFound', /nope/],
      [() => repo.records('a.b'), 'Invalid', /table: "a\.b"/],
      [() => repo.records('../runs'), 'Invalid', /table/],
      [() => repo.records(''), 'Invalid', /table/],
      [() => repo.records('evals', { run: '' }), 'Invalid', /run/],
      [() => repo.records('evals', { bogus: 1 }), 'Invalid', /bogus/],
    ];
    for (const [fn, code, re] of cases) {
      await assert.rejects(fn, (e) => {
        assert.equal(e.code, code, e.message);
        assert.match(e.message, re);
        return true;
      });
    }
    assert.equal((await repo.records('evals', { run: ids.b })).length, 1, 'the handle keeps working');
    // The API answers the same bad names with 400 and unknown tables with 404.
    assert.equal((await fetch(`${api.url}/api/v1/records/a.b`)).status, 400);
    assert.equal((await fetch(`${api.url}/api/v1/records/nope`)).status, 404);
  });
});
