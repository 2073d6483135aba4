// Shared set-up of the wasm suites: a temporary folder holding the
// project's lance 8 fixtures, lance 12's tables of format 2.2, datasets, a
// key-value database and a tracking repository written by the kv0 CLI in
// formats 2.2 and 2.1, and a helper that runs the CLI.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, symlink, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as arrow from 'apache-arrow';

const run = promisify(execFile);
export const KV0 = process.env.KV0 ?? new URL('../../bin/kv0', import.meta.url).pathname;
export const WASM_DIR = process.env.WASM_DIR ?? new URL('../../out/wasm', import.meta.url).pathname;
export const SAMPLES = new URL('../testdata/lance-samples', import.meta.url).pathname;
/** Tables lance 12 wrote, in format 2.2 but for packed21 and blob21 (its README). */
export const V22 = new URL('../../core/lancefile/testdata/v22', import.meta.url).pathname;

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

/** The data file format of a dataset's latest version, as `kv0 lance info` gives it. */
export async function dataFormat(path) {
  return JSON.parse(await kv0(['lance', 'info', path, '--json'])).data_format;
}

/**
 * Builds the data folder: samples/ (the lance 8 fixtures), v22/ (copies of
 * lance 12's tables), made/t.lance and made/t21.lance (kv0-written in
 * formats 2.2 and 2.1: create, append, delete, a tag), kv/db.lance and
 * kv/db21.lance (key-value databases in 2.2 and 2.1), repo/ and repo21/
 * (kv0 demo, then an optimize, in 2.2 and 2.1). Each kv0-written dataset is
 * checked to be in its format, so that the suites read both. Returns { dir,
 * datasets: [relative paths], v22: [those of lance 12's tables], large:
 * [datasets whose rows are tens of MB], repo: 'repo', repo21: 'repo21' }.
 */
export async function buildData() {
  const dir = await mkdtemp(join(tmpdir(), 'kv0-wasm-'));
  await symlink(SAMPLES, join(dir, 'samples'));
  const v22 = [];
  for (const e of (await readdir(V22)).filter((f) => f.endsWith('.lance')).sort()) {
    await cp(join(V22, e), join(dir, 'v22', e), { recursive: true });
    v22.push(`v22/${e}`);
  }
  if (v22.length === 0) throw new Error(`no lance 12 tables in ${V22}`);
  const made = async (name, format) => {
    const t = join(dir, 'made', name);
    await pipeTo(['lance', 'write', t, '--mode', 'create', ...format], arrow.tableToIPC(table(0, 300), 'stream'));
    await pipeTo(['lance', 'write', t, '--mode', 'append'], arrow.tableToIPC(table(300, 450), 'stream'));
    await kv0(['lance', 'delete', t, '--where', 'id >= 100 and id < 120']);
    await kv0(['lance', 'tag', 'create', t, 'first', '--version', '1']);
  };
  const kvdb = async (name, format) => {
    const db = join(dir, 'kv', name);
    const wal = ['--wal-dir', join(dir, 'wal')];
    await kv0(['kv', 'put', db, 'alpha', 'one', ...format, ...wal]);
    for (let i = 0; i < 12; i++) await kv0(['kv', 'put', db, `key/${String(i).padStart(3, '0')}`, `value ${i}`, ...wal]);
    await kv0(['kv', 'put', db, 'alpha', 'two', ...wal]);
    await kv0(['kv', 'delete', db, 'key/003', '--end', 'key/007', ...wal]);
  };
  const repo = async (name, format) => {
    await kv0(['demo', join(dir, name), '--runs', '1', '--steps', '300', ...format]);
    await kv0(['optimize', join(dir, name)]);
  };
  await Promise.all([
    made('t.lance', []), made('t21.lance', ['--format', '2.1']),
    kvdb('db.lance', []), kvdb('db21.lance', ['--format', '2.1']),
    repo('repo', []), repo('repo21', ['--format', '2.1']),
  ]);
  for (const [path, want] of [['made/t.lance', '2.2'], ['made/t21.lance', '2.1'], ['kv/db.lance', '2.2'], ['kv/db21.lance', '2.1'],
    ['repo/metrics.lance', '2.2'], ['repo21/metrics.lance', '2.1'], ['repo/runs.lance', '2.2'], ['repo21/runs.lance', '2.1']]) {
    const got = await dataFormat(join(dir, path));
    if (got !== want) throw new Error(`${path} is in format ${got}, not ${want}`);
  }
  const datasets = [
    'samples/default/kv.lance', // 2.1, V2 names, deletions, compaction
    'samples/v2_0/kv.lance', // 2.0
    'samples/v1paths/kv.lance', // V1 names
    'samples/bigdel/t.lance', // roaring deletion file
    'samples/bigdel/t2.lance', // Arrow deletion file
    'made/t.lance', // kv0-written in 2.2, with a tag
    'made/t21.lance', // the same in 2.1
    'kv/db.lance', // a key-value database's operation log, 2.2
    'kv/db21.lance', // the same in 2.1
    ...v22, // lance 12: constants, dictionaries, nested, packed, maps, blobs, decimals
  ];
  const large = ['v22/pages.lance']; // 30 MB of JSON Lines: 21,000 rows of 1,000-byte strings
  return { dir, datasets, v22, large, repo: 'repo', repo21: 'repo21', cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export { pipeTo, arrow };
