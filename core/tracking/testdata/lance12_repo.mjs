// lance 12's side of core/tracking's TestLance12Repo: lancedb 0.39
// (lance 12) opens a tracking repository kv0 wrote, reads its tables,
// appends points to its metrics table and compacts every table.
//
//   node lance12_repo.mjs LANCEDB_DIR REPO SERIES_ID FROM N
//
// It checks that countRows agrees with a scan in runs, params, series and
// metrics, appends N points of series SERIES_ID at steps FROM.. (value
// step/2, timestamp 2025-01-01 plus the step in ms, no epoch, no stats),
// then runs optimize on every table (compaction; metrics must lose
// fragments). It prints each table's scanned row count.
import path from "node:path";
import { createRequire } from "node:module";

const [lancedbDir, repo, sidArg, fromArg, nArg] = process.argv.slice(2);
const require = createRequire(path.join(lancedbDir, "package.json"));
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");

const db = await lancedb.connect(repo);
const counts = {};
for (const name of ["runs", "params", "series", "metrics"]) {
  const t = await db.openTable(name);
  const table = await t.query().toArrow();
  const count = await t.countRows();
  if (count !== table.numRows) throw new Error(`${name}: countRows ${count}, scan ${table.numRows}`);
  counts[name] = table.numRows;
}
const metrics = await db.openTable("metrics");
const sid = BigInt(sidArg), from = Number(fromArg), n = Number(nArg);
const ids = new BigUint64Array(n).fill(sid);
const steps = new BigInt64Array(n), ts = new BigInt64Array(n), vals = new Float64Array(n);
const t0 = BigInt(Date.UTC(2025, 0, 1)) * 1000n;
for (let i = 0; i < n; i++) {
  steps[i] = BigInt(from + i);
  ts[i] = t0 + BigInt(from + i) * 1000n;
  vals[i] = (from + i) / 2;
}
const nulls = (type) => {
  const b = arrow.makeBuilder({ type, nullValues: [null] });
  for (let i = 0; i < n; i++) b.append(null);
  return b.finish().toVector();
};
const schema = (await metrics.schema());
const cols = {
  series_id: arrow.makeVector(ids),
  step: arrow.makeVector(steps),
  epoch: nulls(new arrow.Int64()),
  timestamp: arrow.makeVector({ type: schema.fields.find((f) => f.name === "timestamp").type, data: ts }),
  value: arrow.makeVector(vals),
  stats: nulls(new arrow.Binary()),
};
await metrics.add(new arrow.Table(cols));
for (const name of ["runs", "params", "series", "metrics"]) {
  const t = await db.openTable(name);
  const stats = await t.optimize();
  if (name === "metrics" && (!stats.compaction || stats.compaction.fragmentsRemoved === 0)) {
    throw new Error(`optimize of metrics compacted nothing: ${JSON.stringify(stats)}`);
  }
}
console.log(JSON.stringify(counts));
