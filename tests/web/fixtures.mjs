// Set-up of the dashboard suite: a tracking repository written by the kv0
// CLI (kv0 demo, and kv0 track for series whose values the tests know), one
// `kv0 serve` over it serving the dashboard, and a helper that runs the CLI.
//
// KV0 is the binary under test (make test-web: a plain `go build` in a
// temporary folder). kv0 serve runs from a temporary folder of its own and
// serves the dashboard and wasm module the binary embeds, unless SERVE_WEB
// names a built dashboard folder (out/web) to serve instead (--web, with
// its wasm/ as --wasm). WEB_DIR and WASM_DIR are the outputs of make web and
// make wasm, which the static-host cases serve and embedded.test.mjs
// compares the binary's answers with.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const KV0 = process.env.KV0 ?? new URL('../../bin/kv0', import.meta.url).pathname;
export const WEB_DIR = process.env.WEB_DIR ?? new URL('../../out/web', import.meta.url).pathname;
export const WASM_DIR = process.env.WASM_DIR ?? new URL('../../out/wasm', import.meta.url).pathname;
export const SERVE_WEB = process.env.SERVE_WEB ?? '';
// The working folder of every kv0 serve: empty, outside the repository.
const serveCwd = mkdtempSync(join(tmpdir(), 'kv0-web-cwd-'));
process.on('exit', () => rmSync(serveCwd, { recursive: true, force: true }));
export const SCREENS = process.env.SCREENS ?? new URL('../../out/web-screens', import.meta.url).pathname;

/** Runs the kv0 CLI; resolves to its stdout. */
export async function kv0(args) {
  const { stdout } = await run(KV0, args, { maxBuffer: 1 << 28, encoding: 'utf8' });
  return stdout;
}

/** `kv0 ... --json` parsed, with 64-bit series ids kept as strings. */
export async function kv0json(args) {
  return JSON.parse((await kv0([...args, '--json'])).replace(/"series_id": (\d+)/g, '"series_id": "$1"'));
}

/**
 * A `kv0 track` writer kept open: write(lines) sends JSON Lines and
 * resolves once a commit covers them (--ack); end() finishes the run.
 */
export function tracker(repo, args) {
  const p = spawn(KV0, ['track', repo, ...args, '--ack', '--flush-interval', '100ms'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let sent = 0, acked = 0;
  const waiters = [];
  createInterface({ input: p.stdout }).on('line', (l) => {
    acked = Number(l);
    for (let i = waiters.length - 1; i >= 0; i--) if (acked >= waiters[i].n) { waiters[i].resolve(); waiters.splice(i, 1); }
  });
  const exited = new Promise((resolve) => p.on('exit', resolve));
  return {
    write(objs) {
      p.stdin.write(objs.map((o) => JSON.stringify(o)).join('\n') + '\n');
      sent += objs.length;
      const n = sent;
      return acked >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
    },
    async end() { p.stdin.end(); return exited; },
    kill() { p.kill('SIGKILL'); },
  };
}

/**
 * Steps 0..n-1 of a series with a known spike (max) and dip (min) and a NaN,
 * 10 ms apart from base (seconds since the epoch), so wall time is uniform.
 */
export function knownLoss(n, base = 0) {
  const out = [];
  for (let s = 0; s < n; s++) {
    let v = 2 * Math.exp(-s / 700) + 0.05 * Math.sin(s / 7);
    if (s === 1234) v = 9.5; // the maximum, in the middle of a bucket
    if (s === 2222) v = -3.25; // the minimum
    if (s === 500) v = NaN;
    const p = { name: 'train/loss', step: s, value: Number.isNaN(v) ? 'NaN' : v, context: { subset: 'train' } };
    if (base) p.timestamp = base + s / 100;
    out.push(p);
  }
  return out;
}

/** The series the smoothing test checks: 200 points with a NaN at step 50. */
export function knownSmooth() {
  return Array.from({ length: 200 }, (_, s) => ({ name: 'smooth', step: s, value: s === 50 ? 'NaN' : Math.sin(s / 9) * 3 + (s % 5) * 0.4 }));
}

/**
 * Starts `kv0 serve ROOT` on a free port from an empty working folder;
 * resolves to { url, stop, out } (out: what it printed so far).
 */
export async function serve(root, extra = []) {
  const dash = SERVE_WEB ? ['--web', SERVE_WEB, '--wasm', join(SERVE_WEB, 'wasm')] : [];
  const p = spawn(KV0, ['serve', root, '--listen', '127.0.0.1:0', ...dash, ...extra], { stdio: ['ignore', 'pipe', 'pipe'], cwd: serveCwd });
  let err = '';
  const out = [];
  p.stderr.on('data', (d) => { err += d; });
  const url = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: p.stdout });
    rl.on('line', (l) => { out.push(l); const m = /at (http:\/\/\S+?)\/?$/.exec(l); if (m) resolve(m[1]); });
    p.on('exit', (c) => reject(new Error(`kv0 serve exited with ${c}: ${err}`)));
  });
  return { url, out, stop: () => new Promise((resolve) => { p.on('exit', resolve); p.kill('SIGTERM'); }) };
}

export async function tempDir() {
  const dir = await mkdtemp(join(tmpdir(), 'kv0-web-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

// Every wait has a deadline, so a hang fails the test instead of stalling it.
export async function within(p, ms, what) {
  let timer;
  const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms); });
  try { return await Promise.race([p, deadline]); } finally { clearTimeout(timer); }
}
