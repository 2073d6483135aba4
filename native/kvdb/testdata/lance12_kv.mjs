// lance 12's side of native/kvdb's TestLance12KeyValue: lancedb 0.39
// (lance 12) opens a key-value database kv0 wrote (its operation log,
// ROOT/kv.lance), reads it, appends puts to it and compacts it.
//
//   node lance12_kv.mjs LANCEDB_DIR ROOT N
//
// It checks that countRows agrees with a scan, appends N puts (op 0) of
// keys "lance12/<i>" with values "from lance 12 <i>" at sequence numbers
// above every row's, runs optimize (compaction, which must remove
// fragments), and prints the rows it scanned first as "rows R".
import path from "node:path";
import { createRequire } from "node:module";

const [lancedbDir, root, nArg] = process.argv.slice(2);
const require = createRequire(path.join(lancedbDir, "package.json"));
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");

const db = await lancedb.connect(root);
const t = await db.openTable("kv");
const table = await t.query().toArrow();
const count = await t.countRows();
if (count !== table.numRows) throw new Error(`countRows ${count}, scan ${table.numRows}`);
let max = 0n;
for (const batch of table.batches) {
  const seq = batch.getChild("seq");
  for (let i = 0; i < batch.numRows; i++) if (seq.get(i) > max) max = seq.get(i);
}
const n = Number(nArg);
const seq = new BigUint64Array(n), op = new Uint8Array(n);
const keys = [], values = [];
for (let i = 0; i < n; i++) {
  seq[i] = max + 1n + BigInt(i);
  keys.push(Buffer.from(`lance12/${i}`));
  values.push(Buffer.from(`from lance 12 ${i}`));
}
const binary = (bufs) => {
  const b = arrow.makeBuilder({ type: new arrow.Binary(), nullValues: [null] });
  for (const x of bufs) b.append(new Uint8Array(x));
  return b.finish().toVector();
};
const add = new arrow.Table({
  seq: arrow.makeVector(seq),
  op: arrow.makeVector(op),
  key: binary(keys),
  value: binary(values),
});
await t.add(add);
const stats = await t.optimize();
if (!stats.compaction || stats.compaction.fragmentsRemoved === 0) {
  throw new Error(`optimize compacted nothing: ${JSON.stringify(stats)}`);
}
console.log(`rows ${table.numRows}`);
