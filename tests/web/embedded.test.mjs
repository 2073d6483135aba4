// The dashboard and wasm module inside the kv0 binary under test (KV0; make
// test-web builds it with a plain `go build` into a temporary folder): run
// from an empty folder with no --web or --wasm, kv0 serve answers / and
// /wasm/ with exactly what make web and make wasm build from the sources
// (WEB_DIR, WASM_DIR): gzip to a client that accepts it and plain to one
// that does not, an ETag per form answered with 304, and the page's hashed
// files kept for a year. Needs no browser.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { kv0, serve, tempDir, SERVE_WEB, WASM_DIR, WEB_DIR } from './fixtures.mjs';

/** GET url with exactly these headers (no decompression). */
function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`GET ${url}: no answer in 30 s`)));
    req.end();
  });
}

describe('the dashboard inside kv0', { skip: SERVE_WEB ? 'SERVE_WEB serves a folder instead' : false }, () => {
  let tmp, srv;
  before(async () => {
    tmp = await tempDir();
    await kv0(['demo', join(tmp.dir, 'repo'), '--runs', '2', '--steps', '10']);
    srv = await serve(join(tmp.dir, 'repo'));
  });
  after(async () => {
    await srv?.stop();
    await tmp?.cleanup();
  });

  // Each file: [URL path, the built file, Content-Type, immutable].
  const files = async () => {
    const page = await readFile(join(WEB_DIR, 'index.html'), 'utf8');
    const refs = [...page.matchAll(/(?:src|href)="(app-[A-Z0-9]{8}\.(?:js|css))"/g)].map((m) => m[1]);
    assert.equal(refs.length, 2, `index.html loads app-HASH.js and app-HASH.css: ${refs}`);
    return [
      ['/', join(WEB_DIR, 'index.html'), 'text/html; charset=utf-8', false],
      ...refs.map((r) => [`/${r}`, join(WEB_DIR, r), r.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8', true]),
      ['/wasm/kv0.wasm', join(WASM_DIR, 'kv0.wasm'), 'application/wasm', false],
      ['/wasm/kv0.mjs', join(WASM_DIR, 'kv0.mjs'), 'text/javascript; charset=utf-8', false],
      ['/wasm/wasm_exec.js', join(WASM_DIR, 'wasm_exec.js'), 'text/javascript; charset=utf-8', false],
    ];
  };

  it('says it serves the embedded dashboard', () => {
    assert.ok(srv.out.some((l) => /dashboard: embedded/.test(l)), srv.out.join('\n'));
    assert.ok(srv.out.some((l) => /wasm module: embedded/.test(l)), srv.out.join('\n'));
  });

  it('answers / and /wasm/ with the built files, gzip or plain, with ETags and caching', async () => {
    for (const [path, built, type, immutable] of await files()) {
      const want = await readFile(built);
      const gz = await get(srv.url + path, { 'accept-encoding': 'gzip, deflate, br' });
      assert.equal(gz.status, 200, path);
      assert.equal(gz.headers['content-encoding'], 'gzip', path);
      assert.match(gz.headers.vary ?? '', /Accept-Encoding/, path);
      assert.equal(gz.headers['content-type'], type, path);
      assert.ok(gunzipSync(gz.body).equals(want), `${path}: the gzip answer is not ${built}`);
      const plain = await get(srv.url + path, {});
      assert.equal(plain.status, 200, path);
      assert.equal(plain.headers['content-encoding'], undefined, path);
      assert.ok(plain.body.equals(want), `${path}: the plain answer is not ${built}`);
      assert.equal(Number(plain.headers['content-length']), want.length, path);
      for (const r of [gz, plain]) {
        assert.match(r.headers.etag ?? '', /^"[^"]+"$/, `${path}: ETag`);
        assert.equal(r.headers['cache-control'], immutable ? 'public, max-age=31536000, immutable' : 'no-cache', path);
      }
      assert.notEqual(gz.headers.etag, plain.headers.etag, `${path}: one ETag for two forms`);
      const again = await get(srv.url + path, { 'accept-encoding': 'gzip', 'if-none-match': gz.headers.etag });
      assert.equal(again.status, 304, `${path}: If-None-Match of its ETag`);
      assert.equal(again.body.length, 0, path);
      const stale = await get(srv.url + path, { 'if-none-match': '"something-else"' });
      assert.equal(stale.status, 200, `${path}: another ETag`);
    }
  });

  it('answers a missing file with 404 and a JSON error, and lists no folder', async () => {
    for (const path of ['/app.js', '/wasm/kv0.wasm.br', '/wasm/package.json', '/nope/']) {
      const r = await get(srv.url + path, { 'accept-encoding': 'gzip' });
      assert.equal(r.status, 404, path);
      assert.equal(typeof JSON.parse(r.body.toString()).error?.message, 'string', path);
    }
  });
});
