// kv.mjs: lancedb's view of a kv0 key-value database (kv_test.go), against
// the lancedb KV0_LANCEDB names (lancedb.mjs).
//
//   node kv.mjs scan ROOT     scans ROOT/kv.lance with lancedb, applies the
//                             operation-log rules (newest seq wins; at equal seq a
//                             tombstone beats a put; a range delete [key, value)
//                             removes older puts; WAL marks, op 3, carry no data)
//                             and prints the live rows as "hex(key)\thex(value)"
//                             lines in byte-wise key order, then "rows N" on stderr.
//   node kv.mjs mutate ROOT   lancedb writes to the log as kv0 would: a put of
//                             a new key and a tombstone of the first live key,
//                             with the next two seqs, then compacts the table;
//                             prints {"put": [hexkey, hexvalue], "deleted": hexkey}.
import { lancedb, arrow } from "./lancedb.mjs";

const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

// live returns the live rows of the log and its largest seq.
async function live(t) {
  const table = await t.query().toArrow();
  if (!(table instanceof arrow.Table)) throw new Error("lancedb did not return an apache-arrow Table");
  const names = table.schema.fields.map((f) => `${f.name}:${f.type}`).join(",");
  if (names !== "seq:Uint64,op:Uint8,key:Binary,value:Binary") throw new Error(`unexpected schema ${names}`);
  const points = new Map(); // hex key -> {seq, put, value}
  const ranges = []; // {start, end, seq} in hex
  let rows = 0;
  let maxSeq = 0n;
  for (const batch of table.batches) {
    const seq = batch.getChild("seq"), op = batch.getChild("op"), key = batch.getChild("key"), value = batch.getChild("value");
    for (let i = 0; i < batch.numRows; i++) {
      rows++;
      const s = seq.get(i), o = op.get(i), k = hex(key.get(i));
      if (s > maxSeq) maxSeq = s;
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
  const out = [];
  for (const [k, p] of points) {
    if (!p.put) continue;
    // Lowercase hex of equal-width bytes sorts like the bytes themselves,
    // and a shorter prefix sorts first, as memcmp order wants.
    if (ranges.some((r) => r.start <= k && k < r.end && r.seq >= p.seq)) continue;
    out.push([k, p.value]);
  }
  out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { rows, maxSeq, live: out };
}

const [cmd, root] = process.argv.slice(2);
const db = await lancedb.connect(root);
const t = await db.openTable("kv");
const state = await live(t);
if (cmd === "scan") {
  process.stdout.write(state.live.map(([k, v]) => `${k}\t${v}\n`).join(""));
  process.stderr.write(`rows ${state.rows}\n`);
} else if (cmd === "mutate") {
  if (state.live.length === 0) throw new Error("no live key to delete");
  const schema = await t.schema();
  const put = [Buffer.from("lancedb/put"), Buffer.from("written by lancedb")];
  const gone = Buffer.from(state.live[0][0], "hex");
  const col = (type, vals) => arrow.vectorFromArray(vals, type);
  const data = arrow.makeData({
    type: new arrow.Struct(schema.fields),
    length: 2,
    nullCount: 0,
    children: [
      col(new arrow.Uint64(), [state.maxSeq + 1n, state.maxSeq + 2n]).data[0],
      col(new arrow.Uint8(), [0, 1]).data[0],
      col(new arrow.Binary(), [put[0], gone]).data[0],
      col(new arrow.Binary(), [put[1], null]).data[0],
    ],
  });
  await t.add(new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]));
  await t.optimize();
  process.stdout.write(JSON.stringify({ put: put.map((b) => b.toString("hex")), deleted: state.live[0][0] }) + "\n");
} else {
  console.error(`unknown command ${cmd}`);
  process.exit(2);
}
