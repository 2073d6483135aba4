// Shared set-up of the wasm suites: a temporary folder holding the
// project's lance 8 fixtures, datasets and a tracking repository written by
// the kv0 CLI, and a helper that runs the CLI.
import { execFile } from 'node:child_process';
import { mkdtemp, symlink, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as arrow from 'apache-arrow';

const run = promisify(execFile);
export const KV0 = process.env.KV0 ?? new URL('../../bin/kv0', import.meta.url).pathname;
export const WASM_DIR = process.env.WASM_DIR ?? new URL('../../out/wasm', import.meta.url).pathname;
export const SAMPLES = new URL('../testdata/lance-samples', import.meta.url).pathname;

/** Runs the kv0 CLI; resolves to its stdout (rejects on a non-zero exit). */
export async function kv0(args, opts = {}) {
  const { stdout } = await run(KV0, args, { maxBuffer: 1 << 28, encoding: 'utf8', ...opts });
  return stdout;
}

/** Runs the CLI and returns { code, stdout, stderr } without throwing. */
export async function kv0Status(args) {
  try {
    const { stdout, stderr } = await run(KV0, args, { maxBuffer: 1 << 28, encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (e) {
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function pipeTo(args, input) {
  return new Promise((resolve, reject) => {
    const p = execFile(KV0, args, { encoding: 'utf8' }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
    p.stdin.end(input);
  });
}

/** A table of the kinds of columns kv0 writes, rows [from, to). */
function table(from, to) {
  const n = to - from;
  const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(from + i));
  const score = Float64Array.from({ length: n }, (_, i) => ((from + i) % 7 === 3 ? NaN : (from + i) * 0.25 - 3));
  return new arrow.Table({
    id: arrow.makeVector(ids),
    name: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => ((from + i) % 5 === 0 ? null : `row-${from + i} "q" é`)), new arrow.Utf8()),
    score: arrow.makeVector(score),
    flag: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (from + i) % 3 === 0), new arrow.Bool()),
    small: arrow.makeVector(Int32Array.from({ length: n }, (_, i) => (from + i) % 100 - 50)),
  });
}

/**
 * Builds the data folder: samples/ (the lance 8 fixtures), made/t.lance
 * (kv0-written: create, append, delete, a tag), repo/ (kv0 demo, then an
 * optimize). Returns { dir, datasets: [relative paths], repo: 'repo' }.
 */
export async function buildData() {
  const dir = await mkdtemp(join(tmpdir(), 'kv0-wasm-'));
  await symlink(SAMPLES, join(dir, 'samples'));
  const t = join(dir, 'made', 't.lance');
  await pipeTo(['lance', 'write', t, '--mode', 'create'], arrow.tableToIPC(table(0, 300), 'stream'));
  await pipeTo(['lance', 'write', t, '--mode', 'append'], arrow.tableToIPC(table(300, 450), 'stream'));
  await kv0(['lance', 'delete', t, '--where', 'id >= 100 and id < 120']);
  await kv0(['lance', 'tag', 'create', t, 'first', '--version', '1']);
  await kv0(['demo', join(dir, 'repo'), '--runs', '1', '--steps', '300']);
  await kv0(['optimize', join(dir, 'repo')]);
  const datasets = [
    'samples/default/kv.lance', // 2.1, V2 names, deletions, compaction
    'samples/v2_0/kv.lance', // 2.0
    'samples/v1paths/kv.lance', // V1 names
    'samples/bigdel/t.lance', // roaring deletion file
    'samples/bigdel/t2.lance', // Arrow deletion file
    'made/t.lance', // kv0-written, with a tag
  ];
  return { dir, datasets, repo: 'repo', cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export { pipeTo, arrow };
