// Writes the Lance datasets of testdata/v22 with lancedb 0.39 (lance 12), which
// writes data files of format 2.2 by default, and beside each dataset the rows
// lancedb reads back from it as <table>.expected.jsonl (one JSON object a row,
// values in the canonical form of canon() below, which v22_lance_test.go
// reproduces from kv0's Arrow arrays).
//
// usage (from a folder where npm i -E @lancedb/lancedb@0.39.0 apache-arrow@18.1.0 ran):
//   NODE_PATH=<that folder>/node_modules node core/lancefile/testdata/v22gen.cjs core/lancefile/testdata/v22
//   NODE_PATH=... node core/lancefile/testdata/v22gen.cjs --bench /tmp/v22bench [rows]
// The second form writes only the metrics-shaped table of BenchmarkV22Metrics,
// once as 2.1 and once as 2.2 (default 1,000,000 rows; not committed).
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const crypto = require("crypto");

const args = process.argv.slice(2);
const bench = args[0] === "--bench";
if (bench) args.shift();
const dir = args[0];
if (!dir) {
  console.error("usage: v22gen.cjs [--bench] DIR [rows]");
  process.exit(2);
}

// A deterministic PRNG (mulberry32), so every run writes the same values.
function mulberry32(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
let rnd = mulberry32(7);

const long = (b) => "sha256:" + crypto.createHash("sha256").update(b).digest("hex");
const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

// canon renders value i of an Arrow Data of type t exactly: integers as
// decimal strings, floats as "f32:"/"f64:" and their IEEE bits in hex (so NaN,
// -0 and infinities compare exactly), dates as days, timestamps as the stored
// integer, decimals as "dec:" and the unscaled integer, binary as "hex:...",
// lists as arrays, structs as objects, maps as arrays of {key, value}.
// Strings and binary values longer than 64 bytes become "sha256:" and the
// hash of their bytes, which keeps the expected rows small.
function canon(t, d, i) {
  if (!d.getValid(i)) return null;
  const v = () => arrow.makeVector(d).get(i);
  switch (t.typeId) {
    case arrow.Type.Int: {
      const x = v();
      return x.toString();
    }
    case arrow.Type.Float: {
      if (t.precision === arrow.Precision.SINGLE) return "f32:" + new Uint32Array(new Float32Array([v()]).buffer)[0].toString(16).padStart(8, "0");
      if (t.precision === arrow.Precision.DOUBLE) {
        const b = new DataView(new Float64Array([v()]).buffer);
        return "f64:" + b.getUint32(4, true).toString(16).padStart(8, "0") + b.getUint32(0, true).toString(16).padStart(8, "0");
      }
      return "f16:" + d.values[i].toString(16);
    }
    case arrow.Type.Bool:
      return v();
    case arrow.Type.Utf8:
    case arrow.Type.LargeUtf8: {
      const x = v();
      return Buffer.byteLength(x) > 64 ? long(Buffer.from(x)) : x;
    }
    case arrow.Type.Binary:
    case arrow.Type.LargeBinary:
    case arrow.Type.FixedSizeBinary: {
      const x = v();
      return x.length > 64 ? long(x) : "hex:" + hex(x);
    }
    case arrow.Type.Date:
      if (t.unit !== arrow.DateUnit.DAY) throw new Error("date64");
      return d.values[i].toString();
    case arrow.Type.Timestamp:
      return d.values[i].toString();
    case arrow.Type.Decimal: {
      const words = t.bitWidth / 32;
      let x = 0n;
      for (let k = words - 1; k >= 0; k--) x = (x << 32n) | BigInt(d.values[i * words + k] >>> 0);
      if (x >= 1n << BigInt(t.bitWidth - 1)) x -= 1n << BigInt(t.bitWidth);
      return "dec:" + x.toString();
    }
    case arrow.Type.List:
    case arrow.Type.LargeList: {
      const lo = Number(d.valueOffsets[i]), hi = Number(d.valueOffsets[i + 1]);
      const out = [];
      for (let j = lo; j < hi; j++) out.push(canon(t.children[0].type, d.children[0], j));
      return out;
    }
    case arrow.Type.Map: {
      const lo = Number(d.valueOffsets[i]), hi = Number(d.valueOffsets[i + 1]);
      const out = [];
      for (let j = lo; j < hi; j++) out.push(canon(t.children[0].type, d.children[0], j));
      return out;
    }
    case arrow.Type.FixedSizeList: {
      const n = t.listSize, out = [];
      for (let k = 0; k < n; k++) out.push(canon(t.children[0].type, d.children[0], i * n + k));
      return out;
    }
    case arrow.Type.Struct: {
      const o = {};
      t.children.forEach((c, k) => { o[c.name] = canon(c.type, d.children[k], i); });
      return o;
    }
  }
  throw new Error("canon: type " + t);
}

function rowsOf(table) {
  const out = [];
  for (const b of table.batches) {
    for (let i = 0; i < b.numRows; i++) {
      const row = {};
      b.schema.fields.forEach((f, k) => { row[f.name] = canon(f.type, b.data.children[k], i); });
      out.push(row);
    }
  }
  return out;
}

const F = (n, t, nullable = true, md) => new arrow.Field(n, t, nullable, md ? new Map(Object.entries(md)) : undefined);

// build makes an Arrow table of n rows from one generator function per field.
function build(schema, cols, n) {
  const children = schema.fields.map((f) => {
    const b = arrow.makeBuilder({ type: f.type, nullValues: [null, undefined] });
    for (let i = 0; i < n; i++) b.append(cols[f.name](i));
    const d = b.finish().toVector().data[0];
    if (f.type.typeId === arrow.Type.Bool) {
      // The builder trims trailing zero bytes of a boolean column's bitmaps
      // (all of them when every value is false or null), which lance
      // refuses; pad them to full length.
      const pad = (b) => { const o = new Uint8Array(Math.ceil(n / 8)); if (b) o.set(b.subarray(0, o.length)); return o; };
      return arrow.makeData({ type: f.type, length: n, nullCount: d.nullCount, nullBitmap: d.nullCount ? pad(d.nullBitmap) : undefined, data: pad(d.values) });
    }
    return d;
  });
  const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children }));
  return new arrow.Table(schema, batch);
}

const written = [];

// blobRows returns an expected-rows function for a table of an int32 "id"
// and a blob column: lancedb's queries return descriptors, so the bytes
// come from fetchBlobs.
const canonBin = (b) => (b.length > 64 ? long(b) : "hex:" + hex(b));
function blobRows(column, render) {
  return async (tbl) => {
    const res = await tbl.query().select(["id"]).withRowId().toArrow();
    const ids = [], rowIds = [];
    for (const b of res.batches) for (let i = 0; i < b.numRows; i++) { ids.push(b.getChild("id").get(i)); rowIds.push(b.getChild("_rowid").get(i)); }
    const bytes = await tbl.fetchBlobs(column, rowIds);
    return ids.map((id, k) => ({ id: String(id), [column]: render(bytes[k]) }));
  };
}

// make writes table name (format version fmt, default lance 12's) and its
// expected rows. post(tbl, rows) may replace the expected rows (blobs).
async function make(db, name, schema, cols, n, opts = {}) {
  let t = build(schema, cols, n);
  if (opts.batchRows) {
    const batches = [];
    for (let i = 0; i < n; i += opts.batchRows) batches.push(...t.slice(i, i + opts.batchRows).batches);
    t = new arrow.Table(schema, batches);
  }
  const co = { mode: "create" };
  if (opts.version) co.storageOptions = { new_table_data_storage_version: opts.version };
  const tbl = await db.createTable(name, t, co);
  let rows;
  if (opts.expected) {
    rows = await opts.expected(tbl);
  } else {
    rows = rowsOf(await tbl.query().toArrow());
  }
  const text = rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
  fs.writeFileSync(path.join(dir, `${name}.expected.jsonl.gz`), zlib.gzipSync(text, { level: 9 }));
  written.push(name);
  console.log(name, rows.length);
}

// Values with the edge cases of each type.
const f64Edge = [NaN, Infinity, -Infinity, -0, 0, 1.5, -2.25, 5e-324, 1.7976931348623157e308, -1e-300];
const f32Edge = [NaN, Infinity, -Infinity, -0, 0, 1.5, -2.25, 1.401298464324817e-45, 3.4028234663852886e38, 0.1];
const i64Edge = [0n, -1n, 1n, 9223372036854775807n, -9223372036854775808n];
const u64Edge = [0n, 1n, 18446744073709551615n, 9007199254740993n];
const pick = (a, i) => a[i % a.length];
const randInt = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const randBig = (bits, signed) => {
  let x = 0n;
  for (let k = 0; k < bits; k += 16) x = (x << 16n) | BigInt(Math.floor(rnd() * 65536));
  x &= (1n << BigInt(bits)) - 1n;
  if (signed && x >= 1n << BigInt(bits - 1)) x -= 1n << BigInt(bits);
  return x;
};
const randStr = (lo, hi) => {
  const n = randInt(lo, hi);
  let s = "";
  for (let k = 0; k < n; k++) s += "abcdefghijklmnopqrstuvwxyz0123456789 "[Math.floor(rnd() * 37)];
  return s;
};
const randBytes = (lo, hi) => { const b = Buffer.alloc(randInt(lo, hi)); for (let k = 0; k < b.length; k++) b[k] = Math.floor(rnd() * 256); return b; };
const nul = (p, f) => (i) => (rnd() < p ? null : f(i));
const dec = (unscaled, bits) => {
  // apache-arrow builds decimals from Uint32Array words, little-endian.
  const words = bits / 32, out = new Uint32Array(words);
  let x = BigInt(unscaled);
  if (x < 0n) x += 1n << BigInt(bits);
  for (let k = 0; k < words; k++) { out[k] = Number(x & 0xffffffffn); x >>= 32n; }
  return out;
};

const tsNY = new arrow.Timestamp(arrow.TimeUnit.SECOND, "America/New_York");
const tsMS = new arrow.Timestamp(arrow.TimeUnit.MILLISECOND, "UTC");
const tsUS = new arrow.Timestamp(arrow.TimeUnit.MICROSECOND);
const tsNS = new arrow.Timestamp(arrow.TimeUnit.NANOSECOND, "Asia/Kolkata");
const listOf = (t, nullable = true) => new arrow.List(F("item", t, nullable));

async function main() {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const db = await lancedb.connect(dir);
  if (bench) return metrics(db, Number(args[1] || 1_000_000));

  // types: every primitive kv0 reads, random values and edge cases, with nulls.
  rnd = mulberry32(1);
  await make(db, "types", new arrow.Schema([
    F("id", new arrow.Int32(), false),
    F("i8", new arrow.Int8()), F("i16", new arrow.Int16()), F("i32", new arrow.Int32()), F("i64", new arrow.Int64()),
    F("u8", new arrow.Uint8()), F("u16", new arrow.Uint16()), F("u32", new arrow.Uint32()), F("u64", new arrow.Uint64()),
    F("i64nn", new arrow.Int64(), false), F("u64nn", new arrow.Uint64(), false),
    F("f32", new arrow.Float32()), F("f64", new arrow.Float64()), F("f64nn", new arrow.Float64(), false),
    F("b", new arrow.Bool()), F("bnn", new arrow.Bool(), false),
    F("d32", new arrow.DateDay()), F("ts_s", tsNY), F("ts_ms", tsMS), F("ts_us", tsUS), F("ts_ns", tsNS),
    F("s", new arrow.Utf8()), F("ls", new arrow.LargeUtf8()), F("bin", new arrow.Binary()), F("lbin", new arrow.LargeBinary()),
    F("snn", new arrow.Utf8(), false),
  ]), {
    id: (i) => i,
    i8: nul(0.1, () => randInt(-128, 127)), i16: nul(0.1, () => randInt(-32768, 32767)),
    i32: nul(0.1, () => randInt(-2147483648, 2147483647)), i64: nul(0.1, (i) => (i % 50 === 0 ? pick(i64Edge, i / 50) : randBig(64, true))),
    u8: nul(0.1, () => randInt(0, 255)), u16: nul(0.1, () => randInt(0, 65535)), u32: nul(0.1, () => randInt(0, 4294967295)),
    u64: nul(0.1, (i) => (i % 50 === 0 ? pick(u64Edge, i / 50) : randBig(64, false))),
    i64nn: (i) => BigInt(i) * 1000003n - 5000000n, u64nn: (i) => randBig(40, false),
    f32: nul(0.1, (i) => (i % 10 === 0 ? pick(f32Edge, i / 10) : (rnd() - 0.5) * 1e6)),
    f64: nul(0.1, (i) => (i % 10 === 0 ? pick(f64Edge, i / 10) : (rnd() - 0.5) * 1e12)),
    f64nn: (i) => pick(f64Edge, i),
    b: nul(0.2, () => rnd() < 0.5), bnn: () => rnd() < 0.3,
    d32: nul(0.1, () => new Date(86400000 * randInt(-30000, 30000))),
    ts_s: nul(0.1, () => randInt(-2e9, 2e9) * 1000), ts_ms: nul(0.1, () => 1.7e12 + randInt(0, 1e9)),
    ts_us: nul(0.1, () => 1.7e12 + randInt(0, 1e9)), ts_ns: nul(0.1, () => 1.7e12 + randInt(0, 1e9)),
    s: nul(0.1, () => randStr(0, 10)), ls: nul(0.1, () => randStr(0, 6) + "é✓"), bin: nul(0.1, () => randBytes(0, 8)),
    lbin: nul(0.1, () => randBytes(0, 12)), snn: (i) => `row-${i}`,
  }, 400);

  // consts: pages lance 12 writes as ConstantLayout (the scalar inline or in a
  // value buffer, with and without levels), and all-null pages whose levels
  // it compresses.
  rnd = mulberry32(2);
  const stC = new arrow.Struct([F("a", new arrow.Int32()), F("c", new arrow.Utf8()), F("n", new arrow.Float64())]);
  const stN = new arrow.Struct([F("x", new arrow.Int32()), F("y", new arrow.Utf8())]);
  await make(db, "consts", new arrow.Schema([
    F("id", new arrow.Int32(), false),
    F("ci64", new arrow.Int64(), false), F("cf64", new arrow.Float64(), false), F("cbool", new arrow.Bool(), false),
    F("cfalse", new arrow.Bool()), F("cd32", new arrow.DateDay(), false), F("cts", tsMS, false), F("cu8", new arrow.Uint8()),
    F("ci16", new arrow.Int16(), false), F("cu64max", new arrow.Uint64(), false), F("cnan", new arrow.Float64(), false),
    F("cneg0", new arrow.Float32(), false), F("cinf", new arrow.Float32()),
    F("cstr", new arrow.Utf8(), false), F("clong", new arrow.Utf8(), false), F("clarge", new arrow.LargeUtf8(), false),
    F("cbin", new arrow.Binary(), false), F("clbin", new arrow.LargeBinary()), F("cempty", new arrow.Utf8(), false),
    F("ci32n", new arrow.Int32()), F("cstrn", new arrow.Utf8()), F("cboolN", new arrow.Bool()),
    F("lc", listOf(new arrow.Int32())), F("lcs", listOf(new arrow.Utf8())), F("llc", listOf(new arrow.Float64())),
    F("sc", stC), F("lsc", listOf(stC)),
    F("ni32", new arrow.Int32()), F("nstr", new arrow.Utf8()),
    F("nlist", listOf(new arrow.Int32())), F("nlist2", listOf(new arrow.Int32())), F("nstruct", stN),
    F("nls", listOf(stN)), F("lln", listOf(listOf(new arrow.Int64()))),
  ]), {
    id: (i) => i,
    ci64: () => 7n, cf64: () => 3.25, cbool: () => true, cfalse: () => false, cd32: () => new Date(86400000 * 19000),
    cts: () => 1700000000123, cu8: () => 200, ci16: () => -3, cu64max: () => 18446744073709551615n, cnan: () => NaN,
    cneg0: () => -0, cinf: (i) => (i % 3 === 0 ? null : -Infinity),
    cstr: () => "same", clong: () => "x".repeat(40), clarge: () => "large constant ✓", cbin: () => Buffer.from([0, 1, 2, 255]),
    clbin: (i) => (i % 4 === 1 ? null : Buffer.alloc(50, 0xab)), cempty: () => "",
    ci32n: nul(0.1, () => 5), cstrn: nul(0.1, () => "k"), cboolN: nul(0.3, () => true),
    lc: (i) => (i % 7 === 0 ? null : i % 7 === 1 ? [] : Array(i % 5 + 1).fill(7)),
    lcs: (i) => (i % 6 === 0 ? null : Array.from({ length: i % 4 }, (_, k) => ((i + k) % 5 === 0 ? null : "zz"))),
    llc: (i) => (i % 9 === 4 ? [] : [-1.5, -1.5]),
    sc: (i) => (i % 8 === 0 ? null : { a: 42, c: "same", n: i % 3 === 0 ? null : 2.5 }),
    lsc: (i) => (i % 5 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => ((i + k) % 4 === 0 ? null : { a: 1, c: "q", n: 0.5 }))),
    ni32: () => null, nstr: () => null,
    nlist: () => null, nlist2: (i) => (i % 3 === 0 ? [] : [null, null]),
    nstruct: () => null, nls: (i) => (i % 2 ? null : []),
    lln: (i) => (i % 4 === 0 ? null : i % 4 === 1 ? [] : [null, []]),
  }, 1200);

  // dict: low-cardinality values lance 12 dictionary-encodes (General(LZ4)
  // around the dictionary; 64-bit values are new in 2.2), with nulls and
  // inside lists and structs.
  rnd = mulberry32(3);
  const colours = ["red", "green", "blue", "cyan", "magenta"];
  await make(db, "dict", new arrow.Schema([
    F("cat", new arrow.Utf8(), false), F("catn", new arrow.Utf8()), F("lcat", new arrow.LargeUtf8()), F("bcat", new arrow.Binary()),
    F("i64d", new arrow.Int64(), false), F("i64dn", new arrow.Int64()), F("u64d", new arrow.Uint64()), F("f64d", new arrow.Float64(), false),
    F("tsd", tsUS), F("f64runs", new arrow.Float64(), false),
    F("ld", listOf(new arrow.Utf8())), F("sd", new arrow.Struct([F("k", new arrow.Utf8()), F("v", new arrow.Int64())])),
  ]), {
    cat: () => pick(colours, randInt(0, 4)), catn: nul(0.2, () => "c-" + randInt(0, 9)), lcat: nul(0.1, () => "large-" + randInt(0, 6)),
    bcat: nul(0.1, () => Buffer.from([randInt(0, 3), 9, 9])),
    i64d: () => pick([-9223372036854775808n, -1n, 0n, 1n, 1000000000000n, 9223372036854775807n, 42n], randInt(0, 6)),
    i64dn: nul(0.3, () => BigInt(randInt(0, 6)) * 1000000007n), u64d: nul(0.1, () => pick(u64Edge, randInt(0, 3))),
    f64d: () => pick(f64Edge, randInt(0, 9)), tsd: nul(0.1, () => 1.7e12 + 1000 * randInt(0, 5)),
    f64runs: (i) => Math.floor(i / 50) * 0.5,
    ld: (i) => (i % 10 === 0 ? null : Array.from({ length: i % 4 }, () => (rnd() < 0.1 ? null : pick(colours, randInt(0, 4))))),
    sd: (i) => (i % 9 === 0 ? null : { k: rnd() < 0.1 ? null : "key" + randInt(0, 3), v: BigInt(randInt(0, 3)) }),
  }, 3000);

  // nested: lists, structs and fixed-size lists in combination, with null and
  // empty lists, null structs and null items.
  rnd = mulberry32(4);
  const stAB = new arrow.Struct([F("a", new arrow.Int32()), F("b", new arrow.Utf8())]);
  await make(db, "nested", new arrow.Schema([
    F("id", new arrow.Int32(), false), F("li", listOf(new arrow.Int64())), F("lu", listOf(new arrow.Utf8())),
    F("lnn", listOf(new arrow.Int32(), false), false), F("ls", listOf(stAB)),
    F("sl", new arrow.Struct([F("a", new arrow.Int32()), F("l", listOf(new arrow.Int64()))])),
    F("ll", listOf(listOf(new arrow.Int64()))), F("lb", listOf(new arrow.Bool())), F("lf", listOf(new arrow.Float32())),
    F("fsl", new arrow.FixedSizeList(4, F("item", new arrow.Float32(), true))),
    F("fslnn", new arrow.FixedSizeList(3, F("item", new arrow.Float32(), false)), false),
    F("sfsl", new arrow.Struct([F("v", new arrow.FixedSizeList(2, F("item", new arrow.Float32(), true))), F("t", tsUS)])),
    F("lfsl", listOf(new arrow.FixedSizeList(2, F("item", new arrow.Float32(), true)))),
    F("ss", new arrow.Struct([F("in", stAB), F("z", new arrow.Uint16())])),
  ]), {
    id: (i) => i,
    li: (i) => (i % 6 === 0 ? null : i % 6 === 1 ? [] : Array.from({ length: i % 5 }, (_, k) => ((i + k) % 7 === 0 ? null : BigInt(i * 10 + k)))),
    lu: (i) => (i % 5 === 0 ? null : Array.from({ length: i % 4 }, (_, k) => ((i + k) % 6 === 0 ? null : randStr(0, 8)))),
    lnn: (i) => Array.from({ length: i % 3 }, (_, k) => i + k),
    ls: (i) => (i % 4 === 3 ? null : Array.from({ length: i % 4 }, (_, k) => ((i + k) % 7 === 0 ? null : { a: (i + k) % 3 === 0 ? null : i + k, b: randStr(1, 5) }))),
    sl: (i) => (i % 8 === 0 ? null : { a: i % 3 === 0 ? null : i, l: i % 5 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => BigInt(k - i)) }),
    ll: (i) => (i % 4 === 0 ? null : Array.from({ length: i % 4 }, (_, k) => (k === 1 ? null : k === 2 ? [] : [BigInt(i), null, BigInt(k)]))),
    lb: (i) => (i % 7 === 0 ? null : Array.from({ length: i % 5 }, (_, k) => ((i + k) % 4 === 0 ? null : (i * k) % 3 === 0))),
    lf: (i) => (i % 20 === 0 ? null : Array.from({ length: i % 4 }, (_, k) => (k === 2 ? NaN : (i % 100) * 0.5 + k))),
    fsl: (i) => (i % 9 === 0 ? null : [i, i % 4 === 0 ? null : i + 0.5, -i, 1]),
    fslnn: (i) => [i, -0, i / 3],
    sfsl: (i) => (i % 11 === 0 ? null : { v: i % 3 === 0 ? null : [i, i + 1], t: 1.7e12 + i }),
    lfsl: (i) => (i % 6 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => (k === 1 ? null : [k, i]))),
    ss: (i) => (i % 10 === 0 ? null : { in: i % 4 === 0 ? null : { a: i, b: i % 3 === 0 ? null : "b" + (i % 50) }, z: i % 65536 }),
  }, 1050);

  // levels: long runs in the repetition and definition levels, which lance
  // 12 compresses with RLE in block context.
  rnd = mulberry32(5);
  await make(db, "levels", new arrow.Schema([
    F("lst", listOf(new arrow.Float32())), F("runs", listOf(new arrow.Int32())),
    F("st", new arrow.Struct([F("a", new arrow.Int32()), F("b", new arrow.Utf8())])), F("n", new arrow.Int64()),
  ]), {
    lst: (i) => (rnd() < 0.05 ? null : Array.from({ length: randInt(0, 3) }, (_, k) => (i % 100) * 0.25 + k)),
    runs: (i) => (Math.floor(i / 700) % 3 === 0 ? null : Math.floor(i / 300) % 4 === 0 ? [] : [i % 10, (i + 1) % 10]),
    st: (i) => (Math.floor(i / 500) % 2 === 0 ? null : { a: Math.floor(i / 900) % 2 ? null : i % 100, b: "v" + (i % 7) }),
    n: (i) => (Math.floor(i / 250) % 3 === 1 ? null : BigInt(i % 1000)),
  }, 5000);

  // fullzip: values large enough for full-zip pages (FSST-compressed
  // strings, lists of long strings, wide fixed-size lists).
  rnd = mulberry32(6);
  const words = ["lance", "format", "page", "chunk", "value", "buffer", "column", "reader", "writer", "level"];
  const text = (lo, hi) => { let s = ""; const n = randInt(lo, hi); while (s.length < n) s += pick(words, randInt(0, 9)) + " "; return s.slice(0, n); };
  await make(db, "fullzip", new arrow.Schema([
    F("id", new arrow.Int32(), false), F("s", new arrow.Utf8()), F("big", new arrow.LargeUtf8()), F("lbig", listOf(new arrow.Utf8())),
    F("bin", new arrow.Binary()), F("vec", new arrow.FixedSizeList(128, F("item", new arrow.Float32(), true))),
  ]), {
    id: (i) => i, s: nul(0.1, () => text(300, 700)), big: (i) => (i % 9 === 4 ? null : text(1000, 3000)),
    lbig: (i) => (i % 7 === 0 ? null : i % 7 === 1 ? [] : Array.from({ length: i % 3 + 1 }, (_, k) => (k === 1 ? null : text(300, 600)))),
    bin: nul(0.1, () => Buffer.from(text(300, 500))),
    vec: (i) => (i % 5 === 0 ? null : Array.from({ length: 128 }, (_, k) => (k === 7 && i % 3 === 0 ? null : (i * 128 + k) * 0.125))),
  }, 50);

  // pages: 21,000 rows given in batches of 1,500, which lance 12 splits into
  // several pages per column, at different rows in different columns.
  rnd = mulberry32(7);
  const X = "x".repeat(1000), Y = "y".repeat(700);
  await make(db, "pages", new arrow.Schema([
    F("id", new arrow.Int64(), false), F("s", new arrow.Utf8()), F("m", new arrow.Utf8()), F("v", new arrow.Int32()),
    F("l", listOf(new arrow.Int32())), F("d", new arrow.Utf8()),
  ]), {
    id: (i) => BigInt(i), s: (i) => (i % 7 === 0 ? null : X), m: (i) => (i < 10000 ? X : i < 20000 ? null : Y),
    v: (i) => (i % 5 === 0 ? null : (i * 7) % 101), l: (i) => (i % 13 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => (i % 7) + k)),
    d: (i) => (i % 11 === 0 ? null : pick(colours, i % 5)),
  }, 21000, { batchRows: 1500 });

  // packed: structs marked lance-encoding:packed, fixed-width only
  // (PackedStruct) and with a variable-width child (VariablePackedStruct).
  // lance 12 refuses to pack a struct that has nulls, or children with nulls.
  rnd = mulberry32(8);
  const packed = { "lance-encoding:packed": "true" };
  await make(db, "packed", new arrow.Schema([
    F("id", new arrow.Int32(), false),
    F("pf", new arrow.Struct([F("a", new arrow.Int32()), F("b", new arrow.Float64())]), true, packed),
    F("pv", new arrow.Struct([F("a", new arrow.Int32(), false), F("s", new arrow.Utf8(), false), F("u", new arrow.Uint8(), false)]), false, packed),
    F("pvn", new arrow.Struct([F("x", new arrow.Int64(), false), F("t", new arrow.Binary(), false)]), false, packed),
  ]), {
    id: (i) => i,
    pf: (i) => ({ a: i - 500, b: i * 0.5 }),
    pv: (i) => ({ a: i, s: i % 5 === 0 ? "" : randStr(1, 12), u: i % 256 }),
    pvn: (i) => ({ x: BigInt(i) * -3n, t: randBytes(0, 6) }),
  }, 600);

  // map: map<utf8, int32> with null and empty maps and null values.
  rnd = mulberry32(9);
  await make(db, "map", new arrow.Schema([
    F("id", new arrow.Int32(), false),
    F("m", new arrow.Map_(F("entries", new arrow.Struct([F("key", new arrow.Utf8(), false), F("value", new arrow.Int32())]), false))),
  ]), {
    id: (i) => i,
    m: (i) => (i % 6 === 0 ? null : new Map(Array.from({ length: i % 4 }, (_, k) => ["k" + k, (i + k) % 5 === 0 ? null : i * k]))),
  }, 1000);

  // blob: a Blob v2 column (lancedb's blob()), with thresholds that put
  // small payloads inline in the data file, middling ones in a shared
  // sidecar .blob file and large ones in a .blob file each. lancedb's query
  // returns descriptors; the expected rows hold the bytes fetchBlobs gives.
  rnd = mulberry32(10);
  const sizes = [10, 0, null, 100, 2000, 300, 9000, 64, 5000, 1];
  await make(db, "blob", new arrow.Schema([
    F("id", new arrow.Int32(), false),
    lancedb.blob("payload", { inlineSizeThreshold: 64, dedicatedSizeThreshold: 4096 }),
  ]), {
    id: (i) => i,
    payload: (i) => { const n = sizes[i % sizes.length]; return n === null ? null : { data: Buffer.from(randBytes(n, n)), uri: null }; },
  }, 20, { expected: blobRows("payload", (b) => (b === null ? null : { data: canonBin(b), uri: null })) });

  // decimals: decimal128/256 and fixed-size binary, random, constant (inline
  // up to 32 bytes, else in a value buffer), low-cardinality, nested.
  rnd = mulberry32(12);
  const d128 = new arrow.Decimal(2, 10, 128), d256 = new arrow.Decimal(3, 40, 256);
  const fsb16 = new arrow.FixedSizeBinary(16);
  await make(db, "decimals", new arrow.Schema([
    F("id", new arrow.Int32(), false), F("dec", d128), F("dec38", new arrow.Decimal(0, 38, 128)), F("dec256", d256),
    F("cdec", d128), F("cdec256", d256, false), F("ddec", d128, false), F("fsb", fsb16), F("cfsb", fsb16, false),
    F("cfsb40", new arrow.FixedSizeBinary(40)), F("lcdec", listOf(d128)),
    F("sfsb", new arrow.Struct([F("f", new arrow.FixedSizeBinary(4)), F("d", d128)])),
  ]), {
    id: (i) => i,
    dec: nul(0.1, () => dec(randBig(40, true), 128)),
    dec38: (i) => dec(i % 7 === 0 ? 99999999999999999999999999999999999999n : randBig(120, true), 128),
    dec256: nul(0.1, () => dec(randBig(130, true), 256)),
    cdec: (i) => (i % 9 === 0 ? null : dec(1234n, 128)), cdec256: () => dec(-123456789012345678901234567890n, 256),
    ddec: (i) => dec(BigInt((i * 7) % 5) * 100n - 250n, 128),
    fsb: nul(0.1, () => randBytes(16, 16)), cfsb: () => Buffer.alloc(16, 0x5a),
    cfsb40: (i) => (i % 4 === 0 ? null : Buffer.from("forty bytes of one constant fixed value!")),
    lcdec: (i) => (i % 6 === 0 ? null : Array.from({ length: i % 3 }, () => dec(-5n, 128))),
    sfsb: (i) => (i % 10 === 0 ? null : { f: Buffer.from([i & 255, 1, 2, 3]), d: i % 3 === 0 ? null : dec(BigInt(i), 128) }),
  }, 300);

  // 2.1 tables with layouts kv0 did not read before: a packed struct
  // (PackedStruct mini-block) and a legacy blob column (lance-encoding:blob
  // on large_binary, BlobLayout pages; the bytes are in the data file).
  rnd = mulberry32(11);
  await make(db, "packed21", new arrow.Schema([
    F("id", new arrow.Int32(), false),
    F("st_packed", new arrow.Struct([F("a", new arrow.Int32()), F("b", new arrow.Float64()), F("c", new arrow.Uint16())]), true, packed),
  ]), { id: (i) => i, st_packed: (i) => ({ a: i * 3, b: -i / 4, c: i % 65536 }) }, 1500, { version: "2.1" });
  // lancedb reads a legacy blob column as descriptors and its blob APIs
  // refuse it, so the expected rows are the rows written, checked against
  // the descriptors' sizes.
  const blobs21 = Array.from({ length: 40 }, (_, i) => (i % 5 === 2 ? null : i % 5 === 3 ? Buffer.alloc(0) : randBytes(1, 3000)));
  await make(db, "blob21", new arrow.Schema([
    F("id", new arrow.Int32(), false),
    F("b", new arrow.LargeBinary(), true, { "lance-encoding:blob": "true" }),
  ]), { id: (i) => i, b: (i) => blobs21[i] }, 40, {
    version: "2.1",
    expected: async (tbl) => {
      const got = rowsOf(await tbl.query().toArrow());
      return got.map((r, i) => {
        const want = blobs21[Number(r.id)];
        const size = r.b === null ? null : Number(r.b.size);
        if ((want === null) !== (size === null) || (want !== null && want.length !== size)) throw new Error(`blob21 row ${i}: descriptor ${JSON.stringify(r.b)}`);
        return { id: r.id, b: want === null ? null : canonBin(want) };
      });
    },
  });

  console.log("done:", written.join(" "));
}

// The metrics-shaped table of tests/interop/bench.mjs, as 2.1 and 2.2.
async function metrics(db, rows) {
  const SERIES = 100;
  const schema = new arrow.Schema([
    F("series_id", new arrow.Uint64(), false), F("step", new arrow.Int64(), false),
    F("timestamp", new arrow.TimestampMicrosecond("UTC"), false), F("value", new arrow.Float64(), false),
  ]);
  for (const version of ["2.1", "2.2"]) {
    const r = mulberry32(42);
    const sid = new BigUint64Array(rows), step = new BigInt64Array(rows), ts = new BigInt64Array(rows), val = new Float64Array(rows);
    for (let i = 0; i < rows; i++) {
      const s = i % SERIES, st = Math.floor(i / SERIES);
      sid[i] = 1_000_000n + BigInt(s);
      step[i] = BigInt(st);
      ts[i] = 1_700_000_000_000_000n + BigInt(st) * 1000n + BigInt(s);
      val[i] = Math.exp(-st / 20000) * (1 + s / 100) + (r() - 0.5) * 0.01;
    }
    const data = arrow.makeData({
      type: new arrow.Struct(schema.fields), length: rows, nullCount: 0,
      children: [
        arrow.makeData({ type: new arrow.Uint64(), data: sid }), arrow.makeData({ type: new arrow.Int64(), data: step }),
        arrow.makeData({ type: new arrow.TimestampMicrosecond("UTC"), data: ts }), arrow.makeData({ type: new arrow.Float64(), data: val }),
      ],
    });
    const name = "metrics" + version.replace(".", "");
    await db.createTable(name, new arrow.Table(schema, new arrow.RecordBatch(schema, data)), {
      mode: "create", storageOptions: { new_table_data_storage_version: version },
    });
    console.log(name, rows);
  }
}

main().catch((e) => { console.error("ERROR", e); process.exit(1); });
