// Bundles the dashboard into OUT (default ../out/web): index.html and the
// files it loads, app-HASH.js and app-HASH.css (esbuild's content hash in
// their names, so a server may let browsers keep them for good; each with
// .gz and .br copies and a source map), and a copy of the wasm module (WASM,
// default ../out/wasm) in wasm/ when it exists, so the folder deploys to
// any static host. The output depends only on the sources (esbuild's is
// deterministic): web/assets embeds it in kv0 (make assets).
import * as esbuild from 'esbuild';
import { cp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import zlib, { brotliCompressSync, gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { basename, dirname, join, resolve } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.env.OUT ?? join(here, '../out/web'));
const wasm = resolve(process.env.WASM ?? join(here, '../out/wasm'));

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
const app = await esbuild.build({
  entryPoints: { app: join(here, 'src/main.js') },
  entryNames: '[name]-[hash]',
  metafile: true,
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  outdir: out,
  logLevel: 'warning',
  legalComments: 'none',
});
// The starter (src/early.js) goes inline in the page, so that api mode's
// first requests leave with the page's own, not after app.js has loaded.
const early = await esbuild.build({
  entryPoints: [join(here, 'src/early.js')],
  bundle: true,
  format: 'iife',
  target: 'es2022',
  minify: true,
  write: false,
  logLevel: 'warning',
  legalComments: 'none',
});
const starter = early.outputFiles[0].text.trim().replace(/<\/script/gi, '<\\/script');
// The page loads the hashed names of app.js and app.css.
const built = Object.keys(app.metafile.outputs).map((p) => basename(p));
const hashed = (ext) => {
  const names = built.filter((n) => n.startsWith('app-') && n.endsWith(ext));
  if (names.length !== 1) throw new Error(`esbuild wrote ${names.length} app-*${ext} files: ${built.join(', ')}`);
  return names[0];
};
const [appJS, appCSS] = [hashed('.js'), hashed('.css')];
let page = await readFile(join(here, 'index.html'), 'utf8');
const marker = /<!--kv0:early[^>]*-->/;
if (!marker.test(page)) throw new Error('web/index.html: the <!--kv0:early--> marker is missing');
for (const [ref, name] of [['href="app.css"', appCSS], ['src="app.js"', appJS]]) {
  if (!page.includes(ref)) throw new Error(`web/index.html: ${ref} is missing`);
  page = page.replace(ref, () => ref.replace(/app\.(css|js)/, name));
}
await writeFile(join(out, 'index.html'), page.replace(marker, () => `<script>${starter}</script>`));
// Precompressed copies beside the page's files: kv0 serve (and the test
// servers) answer .br or .gz when the browser accepts it, so the script
// arrives in a third of the bytes.
for (const name of ['index.html', appJS, appCSS]) {
  const raw = await readFile(join(out, name));
  await writeFile(join(out, `${name}.gz`), gzipSync(raw, { level: 9 }));
  await writeFile(join(out, `${name}.br`), brotliCompressSync(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }));
}
try {
  await stat(join(wasm, 'kv0.mjs'));
  await cp(wasm, join(out, 'wasm'), { recursive: true });
} catch {
  console.warn(`web: no wasm module at ${wasm} (make wasm): direct mode needs ?wasm= or a wasm/ folder beside the page`);
}
console.log(`web: wrote ${out}`);
