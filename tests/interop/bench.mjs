// lancedb side of kv0's benchmarks: writes the metrics-shaped table and
// measures lancedb's own scan rates on it. Prints one JSON object.
//
// usage: node bench.mjs DIR [ROWS]
//   DIR   connection root; the scan table is DIR/metrics.lance (reused when
//         present); every run also times writing the table (createTable with
//         the first batch, then add) into a fresh folder under DIR
//   ROWS  rows to write (default 10,000,000), in batches of 1,000,000
//   KV0_BENCH_WRITE_RUNS  write runs, the best is reported (default 1)
//   KV0_BENCH_RUNS        scan runs, the best is reported (default 3)
//   KV0_BENCH_SCAN=0      time the write only
//   KV0_BENCH_LANCEDB     a folder whose node_modules holds the lancedb to
//                         use (default: this one's, lancedb 0.31 = lance 8;
//                         a folder with lancedb 0.39 benchmarks lance 12),
//                         with its defaults (lance 8 writes data files of
//                         format 2.1, lance 12 of 2.2)
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// lancedb loads apache-arrow as CommonJS; load the same copy so its
// instanceof checks accept our tables.
const lancedbDir = process.env.KV0_BENCH_LANCEDB || path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(path.resolve(lancedbDir), "package.json"));
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");

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

async function timed(fn) {
  const t = process.hrtime.bigint();
  const r = await fn();
  return [r, Number(process.hrtime.bigint() - t) / 1e9];
}

const lancedbPkg = path.join(path.resolve(lancedbDir), "node_modules", "@lancedb", "lancedb", "package.json");
const out = { rows, lancedb: JSON.parse(fs.readFileSync(lancedbPkg, "utf8")).version };
const tablePath = path.join(dir, "metrics.lance");
{
  // The write measurement: every run, into a fresh folder (best of
  // KV0_BENCH_WRITE_RUNS). The first written table becomes the scan table
  // when there is none yet.
  const rnd = mulberry32(42);
  const batches = [];
  for (let start = 0; start < rows; start += BATCH) batches.push(makeBatch(start, Math.min(BATCH, rows - start), rnd));
  const inputBytes = batches.reduce((a, b) => a + b.numRows * 32, 0);
  const writeRuns = Number(process.env.KV0_BENCH_WRITE_RUNS || 1);
  let best = Infinity;
  for (let run = 0; run < writeRuns; run++) {
    const root = path.join(dir, `write-${process.pid}-${run}`);
    fs.rmSync(root, { recursive: true, force: true });
    const wdb = await lancedb.connect(root);
    const [, secs] = await timed(async () => {
      const t = await wdb.createTable("metrics", new arrow.Table(schema, batches[0]));
      for (const b of batches.slice(1)) await t.add(new arrow.Table(schema, b));
    });
    best = Math.min(best, secs);
    out.write_bytes_on_disk = duBytes(path.join(root, "metrics.lance"));
    if (!fs.existsSync(tablePath)) fs.renameSync(path.join(root, "metrics.lance"), tablePath);
    fs.rmSync(root, { recursive: true, force: true });
  }
  out.write_seconds = best;
  out.write_rows_per_s = rows / best;
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
let best = Infinity, got = 0;
for (let i = 0; i < runs; i++) {
  const [t, secs] = await timed(() => tbl.query().toArrow());
  got = t.numRows;
  best = Math.min(best, secs);
}
out.toarrow_rows = got;
out.toarrow_rows_per_s = got / best;
const noMatch = "value > 1e9 OR step < 0 OR series_id = 7 OR timestamp < TIMESTAMP '2000-01-01 00:00:00'";
best = Infinity;
for (let i = 0; i < runs; i++) {
  const [t, secs] = await timed(() => tbl.query().where(noMatch).toArrow());
  if (t.numRows !== 0) throw new Error(`no-match filter matched ${t.numRows} rows`);
  best = Math.min(best, secs);
}
out.native_rows_per_s = rows / best;
console.log(JSON.stringify(out));
