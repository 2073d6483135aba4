// Writes the 2.1 datasets TestV21LanceTables reads, with the rows lancedb reads
// back from each as <table>.expected.jsonl.
// usage: NODE_PATH=tests/interop/node_modules node core/lancefile/testdata/v21gen.cjs /tmp/v21data
// Generates 2.1 datasets covering many encodings, and dumps expected rows as JSON.
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");
const fs = require("fs");

const dir = process.argv[2] || "/tmp/v21data";
fs.rmSync(dir, { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });
(async () => {
const db = await lancedb.connect(dir);

let seed = 12345;
function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; }

function canon(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return Number.isInteger(v) ? v.toString() : v.toString();
  if (typeof v === "boolean") return v;
  if (typeof v === "string") return v;
  if (v instanceof Uint8Array) return "hex:" + Buffer.from(v).toString("hex");
  if (v instanceof Date) return "date:" + v.getTime();
  if (v.toArray && v.length !== undefined && v.type) { const out = []; for (let i = 0; i < v.length; i++) out.push(canon(v.get(i))); return out; }
  if (typeof v.toJSON === "function" && !(Array.isArray(v))) { const o = v.toJSON(); const r = {}; for (const k of Object.keys(o)) r[k] = canon(o[k]); return r; }
  if (Array.isArray(v)) return v.map(canon);
  if (typeof v === "object") { const r = {}; for (const k of Object.keys(v)) r[k] = canon(v[k]); return r; }
  return String(v);
}

async function make(name, schema, cols, n) {
  const vecs = {};
  for (const f of schema.fields) {
    const b = arrow.makeBuilder({ type: f.type, nullValues: [null, undefined] });
    for (let i = 0; i < n; i++) b.append(cols[f.name](i));
    vecs[f.name] = b.finish().toVector();
  }
  const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children: schema.fields.map((f) => vecs[f.name].data[0]) }));
  const t = new arrow.Table(schema, batch);
  const tbl = await db.createTable(name, t, { mode: "create" });
  // expected: read back through lancedb
  const res = await tbl.query().toArrow();
  const lines = [];
  for (let i = 0; i < res.numRows; i++) {
    const row = {};
    for (const f of res.schema.fields) row[f.name] = canon(res.getChild(f.name).get(i));
    lines.push(JSON.stringify(row));
  }
  fs.writeFileSync(`${dir}/${name}.expected.jsonl`, lines.join("\n") + "\n");
  console.log(name, res.numRows);
}

const F = (n, t, nullable = true) => new arrow.Field(n, t, nullable);
const N = 100000;

await make("prim", new arrow.Schema([
  F("u64", new arrow.Uint64(), false), F("i64", new arrow.Int64(), false), F("ts", new arrow.TimestampMicrosecond(), false),
  F("f64", new arrow.Float64(), false), F("u8", new arrow.Uint8(), false), F("b", new arrow.Bool(), false),
  F("i32n", new arrow.Int32(), true), F("d32", new arrow.DateDay(), false), F("f32", new arrow.Float32(), false),
  F("i16", new arrow.Int16(), false), F("u32", new arrow.Uint32(), false), F("i8n", new arrow.Int8(), true),
  F("tsz", new arrow.TimestampMillisecond("UTC"), true),
]), {
  u64: (i) => BigInt(i), i64: (i) => BigInt(Math.floor((rnd() - 0.5) * 1e15)), ts: (i) => 1700000000000 + i,
  f64: (i) => i * 0.25, u8: (i) => i % 251, b: (i) => i % 3 === 0, i32n: (i) => (i % 7 === 0 ? null : i - 50000),
  d32: (i) => new Date(86400000 * (19000 + (i % 1000))), f32: (i) => (i % 1000) * 0.5, i16: (i) => (i % 30000) - 15000,
  u32: (i) => Math.floor(rnd() * 4e9), i8n: (i) => (i % 5 === 0 ? null : (i % 200) - 100),
  tsz: (i) => (i % 11 === 0 ? null : 1700000000000 + i),
}, N);

await make("str", new arrow.Schema([
  F("low", new arrow.Utf8(), false), F("high", new arrow.Utf8(), false), F("nul", new arrow.Utf8(), true),
  F("lar", new arrow.LargeUtf8(), true), F("bin", new arrow.Binary(), true),
]), {
  low: (i) => ["alpha", "beta", "gamma", "delta"][i % 4], high: (i) => `value-${i}-${Math.floor(rnd() * 1e9)}`,
  nul: (i) => (i % 10 === 3 ? null : `n${i % 1000}x${i}`), lar: (i) => (i % 9 === 1 ? null : "L" + i.toString(36)),
  bin: (i) => (i % 13 === 0 ? null : Buffer.from([i & 255, (i >> 8) & 255, 7])),
}, N);

await make("big", new arrow.Schema([F("s", new arrow.Utf8(), true), F("id", new arrow.Int32(), false)]), {
  s: (i) => (i % 17 === 5 ? null : `big-${i}-` + "abcdefghij".repeat(30 + (i % 5))), id: (i) => i,
}, 5000);

await make("huge", new arrow.Schema([F("s", new arrow.Utf8(), true), F("b", new arrow.Binary(), true)]), {
  s: (i) => (i % 7 === 3 ? null : `huge-${i}-` + "0123456789".repeat(4000) + i), b: (i) => (i % 5 === 0 ? null : Buffer.alloc(40000, i & 255)),
}, 60);

await make("rle", new arrow.Schema([F("c", new arrow.Int64(), false), F("r", new arrow.Int32(), true)]), {
  c: (i) => 42n, r: (i) => (i % 1000 === 999 ? null : Math.floor(i / 3000)),
}, N);

const listUtf8 = new arrow.List(F("item", new arrow.Utf8(), true));
const listI64 = new arrow.List(F("item", new arrow.Int64(), true));
const st = new arrow.Struct([F("a", new arrow.Int32(), true), F("b", new arrow.Utf8(), true)]);
const listSt = new arrow.List(F("item", st, true));
await make("nested", new arrow.Schema([
  F("id", new arrow.Int32(), false), F("lu", listUtf8, true), F("li", listI64, true), F("ls", listSt, true), F("s", st, true),
  F("fsl", new arrow.FixedSizeList(4, F("item", new arrow.Float32(), true)), true),
  F("ll", new arrow.List(F("item", listI64, true)), true),
]), {
  id: (i) => i,
  lu: (i) => { const m = i % 6; if (m === 0) return null; if (m === 1) return []; const a = []; for (let k = 0; k < m; k++) a.push((i + k) % 5 === 0 ? null : `s${i}_${k}`); return a; },
  li: (i) => { const m = i % 5; if (m === 4) return null; const a = []; for (let k = 0; k < m; k++) a.push(BigInt(i * 10 + k)); return a; },
  ls: (i) => { const m = i % 4; if (m === 3) return null; const a = []; for (let k = 0; k < m; k++) a.push((i + k) % 7 === 0 ? null : { a: (i + k) % 3 === 0 ? null : i + k, b: `b${k}` }); return a; },
  s: (i) => (i % 8 === 0 ? null : { a: i % 3 === 0 ? null : i, b: i % 5 === 0 ? null : `x${i}` }),
  fsl: (i) => (i % 9 === 0 ? null : [i, i + 0.5, -i, 1]),
  ll: (i) => { const m = i % 4; if (m === 0) return null; const a = []; for (let k = 0; k < m; k++) a.push(k === 1 ? null : k === 2 ? [] : [BigInt(i), BigInt(k)]); return a; },
}, 20000);

await make("allnull", new arrow.Schema([F("id", new arrow.Int32(), false), F("s", new arrow.Utf8(), true), F("n", new arrow.Int64(), true), F("l", listI64, true)]), {
  id: (i) => i, s: (i) => null, n: (i) => null, l: (i) => (i % 2 ? null : []),
}, 3000);

await make("small", new arrow.Schema([F("u64", new arrow.Uint64(), false), F("s", new arrow.Utf8(), true), F("b", new arrow.Bool(), true), F("f", new arrow.Float64(), true), F("lu", listUtf8, true)]), {
  u64: (i) => BigInt(i * 3), s: (i) => (i % 4 === 0 ? null : `s${i}`), b: (i) => (i % 5 === 0 ? null : i % 2 === 0), f: (i) => (i % 6 === 0 ? null : i / 4),
  lu: (i) => { const m = i % 5; if (m === 0) return null; if (m === 1) return []; const a = []; for (let k = 0; k < m; k++) a.push(k === 1 ? null : `v${i}${k}`); return a; },
}, 100);

await make("mostlynull", new arrow.Schema([F("b", new arrow.Binary(), true)]), {
  b: (i) => (i % 1000 === 7 ? Buffer.alloc(2000, i % 3) : null),
}, 20000);
console.log("done");

})().catch((e) => { console.error("ERROR", e); process.exit(1); });
