// The npm package as a user gets it: `npm install kv0-wasm-VERSION.tgz`
// (make dist-npm) into a fresh folder with no network, then a script that
// imports '@kv0/wasm' reads a tracking repository in Node, as it is and
// bundled by esbuild for Node, and bundled for a browser page in Chromium.
// Every answer equals the kv0 CLI's, and a Node script ends once its calls
// have: no timer the Go runtime left behind (a request's 60 s deadline)
// holds it, so each run has 50 s to exit. NPM_TGZ names the tarball,
// ESBUILD the esbuild binary (web/package-lock.json's); make test-wasm sets
// both.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServer } from './server.mjs';
import { kv0 } from './fixtures.mjs';
import { chromiumOptions, haveChromium } from './chromium.mjs';

const run = promisify(execFile);
// A Node script of the package exits by itself well within this.
const exitWithin = 50_000;
const NPM_TGZ = process.env.NPM_TGZ;
const ESBUILD = process.env.ESBUILD ?? new URL('../../web/node_modules/.bin/esbuild', import.meta.url).pathname;
if (!NPM_TGZ && process.env.CI === 'true') throw new Error('NPM_TGZ (make dist-npm\'s kv0-wasm-VERSION.tgz) is required with CI=true');

// What the script prints: the runs, one run's series and the points of its
// first series, as the module answers them.
const script = `import { load } from '@kv0/wasm';
export async function read(url, opts) {
  const kv0 = await load(opts);
  const repo = await kv0.openRepo(url);
  const runs = await repo.runs();
  const first = runs.find((r) => r.name === 'resnet-cifar10-1');
  const series = await repo.series(first.run_id);
  const [points] = await repo.read([series[0].series_id]);
  return JSON.stringify({ runs, series, steps: Array.from(points.steps), values: Array.from(points.values) });
}
`;
const nodeMain = `import { read } from './read.mjs';
process.stdout.write(await read(process.argv[2]));
`;

describe('npm package', { skip: !NPM_TGZ && 'NPM_TGZ is not set (make test-wasm sets it)' }, () => {
  let dir, repo, srv, want;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kv0-npm-'));
    repo = join(dir, 'data', 'repo');
    await kv0(['demo', repo, '--runs', '3', '--steps', '40']);
    srv = await startServer({ root: join(dir, 'data') });
    const runs = JSON.parse((await kv0(['runs', repo, '--json'])).replace(/"series_id": (\d+)/g, '"series_id": "$1"'));
    const first = runs.find((r) => r.name === 'resnet-cifar10-1');
    const series = JSON.parse((await kv0(['series', repo, first.run_id, '--json'])).replace(/"series_id": (\d+)/g, '"series_id": "$1"'));
    const [points] = JSON.parse(await kv0(['metrics', repo, first.run_id, series[0].name, '--context', series[0].context, '--json']));
    want = { runs, series, steps: points.steps, values: points.values };
  });
  after(async () => {
    await srv?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const check = (out, how) => {
    const got = JSON.parse(out);
    assert.deepEqual(got.runs, want.runs, `${how}: runs`);
    assert.deepEqual(got.series, want.series, `${how}: series`);
    assert.deepEqual(got.steps, want.steps, `${how}: steps`);
    assert.equal(got.values.length, want.values.length, `${how}: points`);
    got.values.forEach((v, i) => assert.ok(Math.abs(v - want.values[i]) <= 1e-12 * Math.max(1, Math.abs(v)), `${how}: value ${i}: ${v} vs ${want.values[i]}`));
  };

  it('installs from the tarball offline, with the version of kv0 version, and reads a repository in Node', async () => {
    const app = join(dir, 'app');
    await mkdir(app);
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'kv0-npm-check', private: true, type: 'module' }));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', NPM_TGZ], { cwd: app });
    const pkg = JSON.parse(await readFile(join(app, 'node_modules/@kv0/wasm/package.json'), 'utf8'));
    const [, version] = /^kv0 (\S+) /.exec(await kv0(['version']));
    assert.equal(pkg.version, version, 'the npm package and kv0 version give one version');
    for (const f of ['kv0.mjs', 'kv0.wasm', 'wasm_exec.js', 'kv0.d.ts']) {
      assert.ok(existsSync(join(app, 'node_modules/@kv0/wasm', f)), `${f} is installed`);
    }
    await writeFile(join(app, 'read.mjs'), script);
    await writeFile(join(app, 'main.mjs'), nodeMain);
    const { stdout } = await run(process.execPath, ['main.mjs', `${srv.url}/repo`], { cwd: app, maxBuffer: 1 << 26, timeout: exitWithin });
    check(stdout, 'node');
  });

  it('bundled by esbuild for Node: the bundle alone with kv0.wasm and wasm_exec.js beside it', async () => {
    const app = join(dir, 'app');
    const out = join(dir, 'node-bundle'); // outside app: no node_modules to fall back on
    await mkdir(out);
    await run(ESBUILD, ['main.mjs', '--bundle', '--platform=node', '--format=esm', '--log-level=warning', `--outfile=${join(out, 'main.mjs')}`], { cwd: app });
    for (const f of ['kv0.wasm', 'wasm_exec.js']) await copyFile(join(app, 'node_modules/@kv0/wasm', f), join(out, f));
    const { stdout } = await run(process.execPath, [join(out, 'main.mjs'), `${srv.url}/repo`], { cwd: out, maxBuffer: 1 << 26, timeout: exitWithin });
    check(stdout, 'node bundle');
  });

  it('bundled by esbuild for a browser page: reads the repository in Chromium', { skip: !haveChromium && 'no Chromium' }, async () => {
    const app = join(dir, 'app');
    await writeFile(join(app, 'page.mjs'), `import { read } from './read.mjs';
read(new URL('repo', location.href).href, { worker: false }).then((v) => { window.kv0result = v; }, (e) => { window.kv0error = String(e); });
`);
    const web = join(dir, 'data'); // the page beside the repository, on the same static server
    await run(ESBUILD, ['page.mjs', '--bundle', '--platform=browser', '--format=esm', '--log-level=warning', `--outfile=${join(web, 'page.js')}`], { cwd: app });
    for (const f of ['kv0.wasm', 'wasm_exec.js']) await copyFile(join(app, 'node_modules/@kv0/wasm', f), join(web, f));
    await writeFile(join(web, 'index.html'), '<!doctype html><script type="module" src="page.js"></script>');
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch(chromiumOptions);
    try {
      const page = await browser.newPage();
      await page.goto(`${srv.url}/index.html`);
      await page.waitForFunction(() => window.kv0result || window.kv0error, null, { timeout: 60_000 });
      const err = await page.evaluate(() => window.kv0error);
      assert.equal(err, undefined);
      check(await page.evaluate(() => window.kv0result), 'browser bundle');
    } finally {
      await browser.close();
    }
  });
});
