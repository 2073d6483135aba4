// Bundles the dashboard into OUT (default ../out/web): index.html, app.js,
// app.css, and a copy of the wasm module (WASM, default ../out/wasm) in
// wasm/ when it exists, so the folder deploys to any static host.
import * as esbuild from 'esbuild';
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.env.OUT ?? join(here, '../out/web'));
const wasm = resolve(process.env.WASM ?? join(here, '../out/wasm'));

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await esbuild.build({
  entryPoints: { app: join(here, 'src/main.js') },
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  outdir: out,
  logLevel: 'warning',
  legalComments: 'none',
});
await cp(join(here, 'index.html'), join(out, 'index.html'));
try {
  await stat(join(wasm, 'kv0.mjs'));
  await cp(wasm, join(out, 'wasm'), { recursive: true });
} catch {
  console.warn(`web: no wasm module at ${wasm} (make wasm): direct mode needs ?wasm= or a wasm/ folder beside the page`);
}
console.log(`web: wrote ${out}`);
