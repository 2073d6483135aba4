// kv.mjs: lancedb's view of a kv0 key-value database (kv_test.go).
//
//   node kv.mjs ROOT   scans ROOT/kv.lance with lancedb, applies the
//                      operation-log rules (newest seq wins; at equal seq a
//                      tombstone beats a put; a range delete [key, value)
//                      removes older puts; WAL marks, op 3, carry no data)
//                      and prints the live rows as "hex(key)\thex(value)"
//                      lines in byte-wise key order, then "rows N" on stderr.
import { createRequire } from "node:module";
import * as lancedb from "@lancedb/lancedb";

const require = createRequire(import.meta.url);
const arrow = require("apache-arrow"); // CommonJS build, as lancedb loads it

const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

const root = process.argv[2];
const db = await lancedb.connect(root);
const t = await db.openTable("kv");
const table = await t.query().toArrow();
if (!(table instanceof arrow.Table)) throw new Error("lancedb did not return an apache-arrow Table");
const names = table.schema.fields.map((f) => `${f.name}:${f.type}`).join(",");
if (names !== "seq:Uint64,op:Uint8,key:Binary,value:Binary") throw new Error(`unexpected schema ${names}`);

const points = new Map(); // hex key -> {seq, put, value}
const ranges = []; // {start, end, seq} in hex
let rows = 0;
for (const batch of table.batches) {
  const seq = batch.getChild("seq"), op = batch.getChild("op"), key = batch.getChild("key"), value = batch.getChild("value");
  for (let i = 0; i < batch.numRows; i++) {
    rows++;
    const s = seq.get(i), o = op.get(i), k = hex(key.get(i));
    const v = value.get(i);
    if (o === 2) {
      ranges.push({ start: k, end: hex(v), seq: s });
      continue;
    }
    if (o !== 0 && o !== 1) continue; // WAL marks
    const cur = points.get(k);
    const put = o === 0;
    if (cur === undefined || s > cur.seq || (s === cur.seq && !put)) {
      points.set(k, { seq: s, put, value: put ? hex(v) : null });
    }
  }
}
const live = [];
for (const [k, p] of points) {
  if (!p.put) continue;
  // Lowercase hex of equal-width bytes sorts like the bytes themselves,
  // and a shorter prefix sorts first, as memcmp order wants.
  if (ranges.some((r) => r.start <= k && k < r.end && r.seq >= p.seq)) continue;
  live.push([k, p.value]);
}
live.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
process.stdout.write(live.map(([k, v]) => `${k}\t${v}\n`).join(""));
process.stderr.write(`rows ${rows}\n`);
