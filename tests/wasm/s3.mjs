// versitygw (a real S3 server on a POSIX folder) and `kv0 sign-server` for
// the signed-mode suite. versitygw is found on PATH or in the cache folder
// make s3-deps installs it into (outside CI, installed there with `go install`
// if absent).
import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MODULE = 'github.com/versity/versitygw/cmd/versitygw@v1.8.0';
export const ACCESS = 'kv0wasmaccess';
export const SECRET = 'kv0wasmsecret0123456789';

async function versitygw() {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, 'versitygw'))) return join(dir, 'versitygw');
  const gobin = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'kv0', 'tools', 'versitygw-v1.8.0');
  const bin = join(gobin, 'versitygw');
  if (!existsSync(bin)) {
    // make test installs it first (make s3-deps), as a step of its own
    // with a generous time limit; under CI a missing one is an error.
    if (process.env.CI === 'true') throw new Error(`versitygw is not installed in ${gobin}: make s3-deps installs it (make test does first)`);
    await run('go', ['install', MODULE], { cwd: tmpdir(), env: { ...process.env, GOBIN: gobin, GOFLAGS: '-mod=mod', GOWORK: 'off' }, timeout: 8 * 60e3 });
  }
  return bin;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function waitPort(port, proc) {
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}`);
    const ok = await new Promise((resolve) => {
      const c = connect(port, '127.0.0.1', () => { c.end(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50)); // polling a port that is not yet bound
  }
}

/** Starts versitygw; resolves to { endpoint, stop }. */
export async function startS3() {
  const bin = await versitygw();
  const dir = await mkdtemp(join(tmpdir(), 'kv0-wasm-s3-'));
  const port = await freePort();
  const proc = spawn(bin, ['--port', `127.0.0.1:${port}`, 'posix', dir], {
    env: { ...process.env, ROOT_ACCESS_KEY: ACCESS, ROOT_SECRET_KEY: SECRET }, stdio: 'ignore',
  });
  await waitPort(port, proc);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => { proc.kill('SIGKILL'); await new Promise((r) => (proc.exitCode !== null || proc.signalCode ? r() : proc.on('exit', r))); await rm(dir, { recursive: true, force: true }); },
  };
}

/** Starts `kv0 sign-server` for s3://bucket/prefix; resolves to { url, token, stop }. */
export async function startSigner(kv0Bin, endpoint, bucketURI, origin) {
  const dir = await mkdtemp(join(tmpdir(), 'kv0-wasm-signer-'));
  const token = 'tok-' + Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);
  await writeFile(join(dir, 'token'), token + '\n');
  const proc = spawn(kv0Bin, ['sign-server', '--bucket-uri', bucketURI, '--token-file', join(dir, 'token'), '--listen', '127.0.0.1:0',
    '--endpoint', endpoint, '--region', 'us-east-1', '--path-style', '--allow-http', '--allow-origin', origin], {
    env: { ...process.env, AWS_ACCESS_KEY_ID: ACCESS, AWS_SECRET_ACCESS_KEY: SECRET }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (b) => { out += b; const m = /on (http:\/\/\S+)/.exec(out); if (m) resolve(m[1]); });
    proc.on('exit', (c) => reject(new Error(`kv0 sign-server exited with ${c}`)));
  });
  return {
    url, token,
    stop: async () => { proc.kill('SIGTERM'); await new Promise((r) => (proc.exitCode !== null ? r() : proc.on('exit', r))); await rm(dir, { recursive: true, force: true }); },
  };
}
