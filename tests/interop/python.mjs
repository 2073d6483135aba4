// python.mjs: lancedb writing to datasets the Python package made
// (tests/python/test_interop.py).
//
//   node python.mjs append DIR TABLE ROW_JSON
//
// Appends one row to DIR/TABLE.lance with lancedb, typed by the table's
// own schema: integers of 64 bits are given as decimal strings, or "next"
// for one more than the column's largest value; binary columns as hex
// strings; null as null. Prints the new version.
import { createRequire } from "node:module";
import * as lancedb from "@lancedb/lancedb";

const require = createRequire(import.meta.url);
const arrow = require("apache-arrow"); // the CommonJS build lancedb uses

const [cmd, dir, name, rowJSON] = process.argv.slice(2);
if (cmd !== "append") throw new Error(`unknown command ${cmd}`);
const db = await lancedb.connect(dir);
const t = await db.openTable(name);
const schema = await t.schema();
const row = JSON.parse(rowJSON);
const all = await t.query().toArrow();
const cols = {};
for (const f of schema.fields) {
  let v = row[f.name] ?? null;
  const id = f.type.typeId;
  if (v !== null && (id === arrow.Type.Int || id === arrow.Type.Uint64 || id === arrow.Type.Int64) && f.type.bitWidth === 64) {
    if (v === "next") {
      let max = 0n;
      const c = all.getChild(f.name);
      for (let i = 0; i < all.numRows; i++) if (c.get(i) !== null && c.get(i) > max) max = c.get(i);
      v = max + 1n;
    } else v = BigInt(v);
  } else if (v !== null && id === arrow.Type.Binary) {
    v = Buffer.from(v, "hex");
  }
  // A builder pads its buffers, so a null of any type has a bitmap and a
  // value buffer, as the IPC reader wants.
  const b = arrow.makeBuilder({ type: f.type, nullValues: [null] });
  b.append(v);
  cols[f.name] = b.finish().toVector();
}
const data = arrow.makeData({
  type: new arrow.Struct(schema.fields),
  length: 1,
  nullCount: 0,
  children: schema.fields.map((f) => cols[f.name].data[0]),
});
await t.add(new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]));
process.stdout.write(`${await t.version()}\n`);
