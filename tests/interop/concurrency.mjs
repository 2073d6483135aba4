// concurrency.mjs: lancedb's view of the dataset the concurrency test of
// core/lance leaves behind (concurrency_test.go in this folder), with the
// lancedb KV0_LANCEDB names (lancedb.mjs).
//
//   node concurrency.mjs ROOT    prints, as JSON, what lancedb reads at the
//                                latest version of ROOT/t.lance: rows
//                                (countRows), scanned ids (count, distinct,
//                                sum, min, max) and the versions it lists
import { lancedb, arrow } from "./lancedb.mjs";

const [root] = process.argv.slice(2);
if (!root) {
  console.error("usage: node concurrency.mjs ROOT");
  process.exit(2);
}
const db = await lancedb.connect(root);
const t = await db.openTable("t");
const rows = await t.countRows();
const table = await t.query().select(["id"]).toArrow();
if (!(table instanceof arrow.Table)) throw new Error("query().toArrow() did not return an Arrow table");
const seen = new Set();
let scanned = 0;
let sum = 0n;
let min = null;
let max = null;
for (const batch of table.batches) {
  const col = batch.getChild("id");
  for (let i = 0; i < batch.numRows; i++) {
    const v = BigInt(col.get(i));
    scanned++;
    seen.add(v);
    sum += v;
    if (min === null || v < min) min = v;
    if (max === null || v > max) max = v;
  }
}
const versions = (await t.listVersions()).map((v) => Number(v.version)).sort((a, b) => a - b);
console.log(JSON.stringify({
  rows,
  scanned,
  distinct: seen.size,
  sum: sum.toString(),
  min: min === null ? null : min.toString(),
  max: max === null ? null : max.toString(),
  versions: versions.length,
  first_version: versions[0] ?? null,
  latest_version: versions[versions.length - 1] ?? null,
}));
