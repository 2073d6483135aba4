// The origin requests of one cold series read, with their start and end
// times relative to the client's request and the dependent wave each falls
// in (docs/benchmarks.md, "Edge worker"). Usage:
//   node trace.mjs DATA_DIR [serve|worker ...] (default: both)
// DATA_DIR is bench.mjs's (make bench-edge writes it first). LATENCY_MS
// (default 50) is added to every origin request.
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { idle, REPO, startOrigin, startServe, startWorker, stopAll, waves } from './lib.mjs';

const dataDir = resolve(process.argv[2] ?? join(REPO, 'out/edge-bench'));
const modes = process.argv.length > 3 ? process.argv.slice(3) : ['serve', 'worker'];
const sid = (await readFile(join(dataDir, 'target.txt'), 'utf8')).trim();
const series = `/api/v1/series/points?ids=${sid}`;
const origin = await startOrigin(dataDir, { latencyMs: Number(process.env.LATENCY_MS ?? 50) });
try {
  for (const mode of modes) {
    const s = mode === 'serve'
      ? await startServe(`${origin.url}/repo`)
      : await startWorker({ vars: { KV0_ORIGIN: `${origin.url}/repo` }, persist: join(dataDir, 'origin-state'), probePath: '/' });
    origin.state.spans = [];
    const t0 = performance.now();
    const r = await fetch(s.url + series);
    const body = await r.arrayBuffer();
    const until = performance.now();
    await idle(origin.state);
    const spans = [...origin.state.spans].sort((a, b) => a.start - b.start);
    const depth = waves(spans);
    const before = spans.filter((sp) => sp.end <= until);
    const bytes = before.reduce((n, sp) => n + (sp.bytes ?? 0), 0);
    console.log(`${mode}: ${r.status}, ${body.byteLength} bytes in ${Math.round(until - t0)} ms; before the answer ${before.length} origin requests (${bytes} bytes) in ${Math.max(0, ...waves(before))} waves; after it ${spans.length - before.length}`);
    spans.forEach((sp, i) => {
      const range = sp.range ? ` ${sp.range}` : '';
      const after = sp.end > until ? ' (after the answer)' : '';
      console.log(`  w${depth[i]} ${(sp.start - t0).toFixed(0).padStart(5)}–${(sp.end - t0).toFixed(0).padStart(5)} ms ${sp.status ?? ''} ${sp.path.replace(/^\/repo\//, '')}${range}${after}`);
    });
    await s.stop();
  }
} finally {
  await stopAll();
  await origin.close();
}
