// lancedb side of kv0's benchmarks: writes the metrics-shaped table and
// measures lancedb's own scan rates on it. Prints one JSON object.
//
// usage: node bench.mjs DIR [ROWS]
//   DIR   connection root; the scan table is DIR/metrics.lance (reused when
//         present, written with lancedb's defaults otherwise); every run also
//         times writing the table (createTable with the first batch, then
//         add) into a fresh folder under DIR
//   ROWS  rows to write (default 10,000,000), in batches of 1,000,000
//   KV0_BENCH_LANCEDB     the lancedb install to use: a folder whose
//                         node_modules holds it (default: this one's,
//                         lancedb 0.31 = lance 8; tests/interop/lance12 holds
//                         lancedb 0.39 = lance 12), with its defaults (lance
//                         8 writes data files of format 2.1, lance 12 of 2.2);
//                         KV0_LANCEDB (lancedb.mjs) names one too
//   KV0_BENCH_WRITE_RUNS  write runs, the best is reported (default 1; 0 times
//                         no write and only writes the scan table if missing)
//   KV0_BENCH_RUNS        scan runs, the best is reported (default 3)
//   KV0_BENCH_SCAN=0      time the write only
// Write and scan rates are rows per second of wall time (best run) and
// rows per second of the process's CPU time, all of lance's threads (best
// run).
import fs from "node:fs";
import path from "node:path";

// lancedb hands tables to apache-arrow's CommonJS build; lancedb.mjs loads
// that same copy, so its instanceof checks accept our tables. It reads
// KV0_LANCEDB when it loads, hence the dynamic import.
if (process.env.KV0_BENCH_LANCEDB) process.env.KV0_LANCEDB = path.resolve(process.env.KV0_BENCH_LANCEDB);
const { lancedb, arrow, lancedbVersion, lanceMajor } = await import("./lancedb.mjs");

const dir = process.argv[2];
const rows = Number(process.argv[3] || 10_000_000);
const SERIES = 100;
const BATCH = 1_000_000;
// No series id is 7, so the "no match" filter below scans everything.
const seriesBase = 1_000_000n;

const schema = new arrow.Schema([
  new arrow.Field("series_id", new arrow.Uint64(), false),
  new arrow.Field("step", new arrow.Int64(), false),
  new arrow.Field("timestamp", new arrow.TimestampMicrosecond("UTC"), false),
  new arrow.Field("value", new arrow.Float64(), false),
]);

// A deterministic PRNG so every run writes the same table.
function mulberry32(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeBatch(start, n, rnd) {
  const sid = new BigUint64Array(n), step = new BigInt64Array(n), ts = new BigInt64Array(n);
  const val = new Float64Array(n);
  const t0 = 1_700_000_000_000_000n;
  for (let i = 0; i < n; i++) {
    const row = start + i, s = row % SERIES, st = Math.floor(row / SERIES);
    sid[i] = seriesBase + BigInt(s);
    step[i] = BigInt(st);
    ts[i] = t0 + BigInt(st) * 1000n + BigInt(s);
    val[i] = Math.exp(-st / 20000) * (1 + s / 100) + (rnd() - 0.5) * 0.01;
  }
  const data = arrow.makeData({
    type: new arrow.Struct(schema.fields), length: n, nullCount: 0,
    children: [
      arrow.makeData({ type: new arrow.Uint64(), data: sid }),
      arrow.makeData({ type: new arrow.Int64(), data: step }),
      arrow.makeData({ type: new arrow.TimestampMicrosecond("UTC"), data: ts }),
      arrow.makeData({ type: new arrow.Float64(), data: val }),
    ],
  });
  return new arrow.RecordBatch(schema, data);
}

function duBytes(p) {
  let total = 0;
  for (const e of fs.readdirSync(p, { withFileTypes: true })) {
    const q = path.join(p, e.name);
    total += e.isDirectory() ? duBytes(q) : fs.statSync(q).size;
  }
  return total;
}

// timed returns fn's result, its wall seconds and the CPU seconds the
// process spent meanwhile (user and system, every thread).
async function timed(fn) {
  const c = process.cpuUsage();
  const t = process.hrtime.bigint();
  const r = await fn();
  const secs = Number(process.hrtime.bigint() - t) / 1e9;
  const cu = process.cpuUsage(c);
  return [r, secs, (cu.user + cu.system) / 1e6];
}

async function writeTable(root, batches) {
  const wdb = await lancedb.connect(root);
  const t = await wdb.createTable("metrics", new arrow.Table(schema, batches[0]));
  for (const b of batches.slice(1)) await t.add(new arrow.Table(schema, b));
}

function makeBatches() {
  const rnd = mulberry32(42);
  const batches = [];
  for (let start = 0; start < rows; start += BATCH) batches.push(makeBatch(start, Math.min(BATCH, rows - start), rnd));
  return batches;
}

const out = { rows, lancedb: lancedbVersion, lance: lanceMajor };
const tablePath = path.join(dir, "metrics.lance");
const writeRuns = Number(process.env.KV0_BENCH_WRITE_RUNS ?? 1);
if (writeRuns === 0 && !fs.existsSync(tablePath)) {
  const root = path.join(dir, `write-${process.pid}`);
  fs.rmSync(root, { recursive: true, force: true });
  await writeTable(root, makeBatches());
  fs.renameSync(path.join(root, "metrics.lance"), tablePath);
  fs.rmSync(root, { recursive: true, force: true });
}
if (writeRuns > 0) {
  // The write measurement: every run, into a fresh folder (best of
  // KV0_BENCH_WRITE_RUNS). The first written table becomes the scan table
  // when there is none yet.
  const batches = makeBatches();
  const inputBytes = batches.reduce((a, b) => a + b.numRows * 32, 0);
  let best = Infinity, bestCPU = Infinity;
  for (let run = 0; run < writeRuns; run++) {
    const root = path.join(dir, `write-${process.pid}-${run}`);
    fs.rmSync(root, { recursive: true, force: true });
    const [, secs, cpu] = await timed(() => writeTable(root, batches));
    best = Math.min(best, secs);
    bestCPU = Math.min(bestCPU, cpu);
    out.write_bytes_on_disk = duBytes(path.join(root, "metrics.lance"));
    if (!fs.existsSync(tablePath)) fs.renameSync(path.join(root, "metrics.lance"), tablePath);
    fs.rmSync(root, { recursive: true, force: true });
  }
  out.write_seconds = best;
  out.write_rows_per_s = rows / best;
  out.write_rows_per_cpu_s = rows / bestCPU;
  out.write_mb_per_s = inputBytes / best / 1e6;
}
if (process.env.KV0_BENCH_SCAN === "0") {
  console.log(JSON.stringify(out));
  process.exit(0);
}
const db = await lancedb.connect(dir);
out.bytes_on_disk = duBytes(tablePath);
const tbl = await db.openTable("metrics");
const runs = Number(process.env.KV0_BENCH_RUNS || 3);
let best = Infinity, bestCPU = Infinity, got = 0;
for (let i = 0; i < runs; i++) {
  const [t, secs, cpu] = await timed(() => tbl.query().toArrow());
  got = t.numRows;
  best = Math.min(best, secs);
  bestCPU = Math.min(bestCPU, cpu);
}
out.toarrow_rows = got;
out.toarrow_rows_per_s = got / best;
out.toarrow_rows_per_cpu_s = got / bestCPU;
const noMatch = "value > 1e9 OR step < 0 OR series_id = 7 OR timestamp < TIMESTAMP '2000-01-01 00:00:00'";
best = Infinity;
bestCPU = Infinity;
for (let i = 0; i < runs; i++) {
  const [t, secs, cpu] = await timed(() => tbl.query().where(noMatch).toArrow());
  if (t.numRows !== 0) throw new Error(`no-match filter matched ${t.numRows} rows`);
  best = Math.min(best, secs);
  bestCPU = Math.min(bestCPU, cpu);
}
out.native_rows_per_s = rows / best;
out.native_rows_per_cpu_s = rows / bestCPU;
console.log(JSON.stringify(out));
