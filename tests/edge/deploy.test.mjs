// `make edge` writes a folder that deploys as it is: a copy of out/edge
// alone (no repository around it, no node_modules) passes `wrangler deploy
// --dry-run`, which bundles the worker with its wasm module and reads the
// dashboard as its static assets without uploading anything, and the
// bundle it leaves holds the worker and the module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EDGE_DIR, WRANGLER, walk } from './lib.mjs';

const run = promisify(execFile);

test('out/edge deploys with wrangler deploy from a copy of the folder alone (--dry-run)', async () => {
  const tmp = await mkdtemp(join(tmpdir(), 'kv0-edge-deploy-'));
  try {
    const site = join(tmp, 'edge');
    await cp(EDGE_DIR, site, { recursive: true });
    const outdir = join(tmp, 'bundle');
    const { stdout, stderr } = await run(WRANGLER, ['deploy', '--dry-run', '--outdir', outdir], {
      cwd: site,
      env: { ...process.env, HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' },
      maxBuffer: 1 << 24,
      timeout: 300_000,
    });
    const said = stdout + stderr;
    assert.match(said, /--dry-run: exiting now/, said);
    assert.match(said, /KV0_BUCKET/, `the R2 binding is declared:\n${said}`);
    const out = await readdir(outdir);
    assert.ok(out.includes('worker.js'), `the bundle: ${out}`);
    const wasm = out.filter((f) => f.endsWith('.wasm'));
    assert.equal(wasm.length, 1, `one wasm module in the bundle: ${out}`);
    assert.equal((await stat(join(outdir, wasm[0]))).size, (await stat(join(site, 'kv0edge.wasm'))).size, 'the worker\'s module as built');
    // The static assets: the dashboard as make web wrote it.
    const assets = await walk(join(site, 'web'));
    assert.ok(assets.includes('index.html') && assets.includes('wasm/kv0.wasm'), assets.join(' '));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
});
