// Interop generator: lancedb writes datasets, reads back every version and
// records what it read in kv0's canonical JSON Lines.
//
//   node gen.mjs OUTDIR [CASE...]
//   KV0_LANCEDB=lance12 node gen.mjs OUTDIR [CASE...]
//
// KV0_LANCEDB chooses the lancedb install (lancedb.mjs): lancedb 0.31.0
// (lance 8) by default, lancedb 0.39.0 (lance 12) with "lance12". Each lance
// runs its own list of cases (RUNS below).
//
// For each case OUTDIR/<case>/ is a lancedb connection root holding one table
// t.lance, and OUTDIR/<case>/expected/ holds
//   v<N>.jsonl     every live row of version N in scan order (jsonl.mjs)
//   versions.json  [{"version": N, "rows": R}, ...]
//   tags.json      {"tag": N, ...} when the case has tags
// OUTDIR/done.json is written last, so a complete directory can be reused.
//
// All data comes from a seeded PRNG: reruns produce identical expectations.
//
// Type notes (lancedb 0.31.0 and 0.39.0 + apache-arrow 18.1.0, checked by hand):
// - lancedb's JS sanitizer refuses LargeUtf8 and LargeBinary ("Unrecognized type
//   id in schema"), although lance itself stores them. We therefore hand
//   Arrow IPC bytes straight to the native layer (Connection.inner.createTable,
//   Table.inner.add), which is what the JS wrappers do after sanitizing.
// - apache-arrow 18 has no LargeList type at all (neither to build nor to read
//   IPC). Large lists are made by lance itself with addColumns and
//   `arrow_cast(<list column>, 'LargeList(T)')`, and read back for the
//   expectations through a projection that casts them to List(T).
//   A large_list inside a struct cannot be made this way and is left out.
// - lance refuses timestamp zones written as offsets ("Unsupported timestamp
//   type: timestamp:ms:+05:30"); named zones and "UTC" work.
// - DateDay is date32; Timestamp{Second,Millisecond,Microsecond,Nanosecond}
//   map to timestamp[s|ms|us|ns] with the given zone; lance returns them
//   unchanged. Fields declared non-nullable stay non-nullable.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { encodeTableLines } from "./jsonl.mjs";
import { lancedb, arrow, lanceMajor, lancedbVersion } from "./lancedb.mjs";

// ---------------------------------------------------------------- PRNG

// Rng is a small deterministic generator (mulberry32).
class Rng {
  constructor(seed) {
    this.s = seed >>> 0;
  }
  u32() {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  float() {
    return this.u32() / 4294967296;
  }
  int(lo, hi) {
    // inclusive bounds, |hi-lo| < 2^32
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }
  chance(p) {
    return this.float() < p;
  }
  pick(xs) {
    return xs[Math.floor(this.float() * xs.length)];
  }
  u64() {
    return (BigInt(this.u32()) << 32n) | BigInt(this.u32());
  }
  i64() {
    return BigInt.asIntN(64, this.u64());
  }
  bytes(n) {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = this.u32() & 0xff;
    return b;
  }
}

// ---------------------------------------------------------------- Arrow building

const A = arrow;
const F = (name, type, nullable = true, metadata) => new A.Field(name, type, nullable, metadata ? new Map(Object.entries(metadata)) : undefined);
const enc = new TextEncoder();

function validity(vals) {
  const n = vals.length;
  let nulls = 0;
  const bm = new Uint8Array((n + 7) >> 3);
  for (let i = 0; i < n; i++) {
    if (vals[i] === null) nulls++;
    else bm[i >> 3] |= 1 << (i & 7);
  }
  return { nullCount: nulls, nullBitmap: nulls ? bm : undefined };
}

// makeColumn builds arrow Data of type t from JS values (null = null).
// Integers of 64 bits are BigInt, timestamps BigInt counts of the unit, dates
// day numbers, binary Uint8Array, lists JS arrays, structs plain objects.
function makeColumn(t, vals) {
  const n = vals.length;
  const { nullCount, nullBitmap } = validity(vals);
  const base = { type: t, length: n, nullCount, nullBitmap };
  switch (t.typeId) {
    case A.Type.Bool: {
      const bits = new Uint8Array((n + 7) >> 3);
      vals.forEach((v, i) => v && (bits[i >> 3] |= 1 << (i & 7)));
      return A.makeData({ ...base, data: bits });
    }
    case A.Type.Int:
    case A.Type.Float:
    case A.Type.Timestamp:
    case A.Type.Date: {
      const Arr = t.typeId === A.Type.Timestamp ? BigInt64Array : t.ArrayType;
      const zero = Arr === BigInt64Array || Arr === BigUint64Array ? 0n : 0;
      const data = new Arr(n);
      vals.forEach((v, i) => (data[i] = v === null ? zero : v));
      return A.makeData({ ...base, data });
    }
    case A.Type.Decimal: {
      // BigInt unscaled values, stored as two's complement little-endian
      // 32-bit words.
      const words = t.bitWidth / 32;
      const data = new Uint32Array(n * words);
      vals.forEach((v, i) => {
        let x = BigInt.asUintN(t.bitWidth, v ?? 0n);
        for (let w = 0; w < words; w++, x >>= 32n) data[i * words + w] = Number(x & 0xffffffffn);
      });
      return A.makeData({ ...base, data });
    }
    case A.Type.FixedSizeBinary: {
      const data = new Uint8Array(n * t.byteWidth);
      vals.forEach((v, i) => v && data.set(v, i * t.byteWidth));
      return A.makeData({ ...base, data });
    }
    case A.Type.Utf8:
    case A.Type.LargeUtf8:
    case A.Type.Binary:
    case A.Type.LargeBinary: {
      const large = t.typeId === A.Type.LargeUtf8 || t.typeId === A.Type.LargeBinary;
      const parts = vals.map((v) => (v === null ? new Uint8Array(0) : typeof v === "string" ? enc.encode(v) : v));
      const total = parts.reduce((s, p) => s + p.length, 0);
      const data = new Uint8Array(total);
      const offs = large ? new BigInt64Array(n + 1) : new Int32Array(n + 1);
      let o = 0;
      parts.forEach((p, i) => {
        data.set(p, o);
        o += p.length;
        offs[i + 1] = large ? BigInt(o) : o;
      });
      return A.makeData({ ...base, data, valueOffsets: offs });
    }
    case A.Type.Map: // a list of {key, value} entries, given as [key, value] pairs
    case A.Type.List: {
      const offs = new Int32Array(n + 1);
      const items = [];
      vals.forEach((v, i) => {
        if (v !== null) items.push(...v);
        offs[i + 1] = items.length;
      });
      const entries = t.typeId === A.Type.Map ? items.map(([key, value]) => ({ key, value })) : items;
      return A.makeData({ ...base, valueOffsets: offs, child: makeColumn(t.children[0].type, entries) });
    }
    case A.Type.FixedSizeList: {
      const items = [];
      for (const v of vals) items.push(...(v === null ? new Array(t.listSize).fill(0) : v));
      return A.makeData({ ...base, child: makeColumn(t.children[0].type, items) });
    }
    case A.Type.Struct: {
      const children = t.children.map((f) => makeColumn(f.type, vals.map((v) => (v === null ? placeholder(f) : v[f.name]))));
      return A.makeData({ ...base, children });
    }
  }
  throw new Error(`makeColumn: unsupported ${t}`);
}

// placeholder is the value stored under a null struct: null when the field
// allows it, otherwise a zero value of the type.
function placeholder(f) {
  if (f.nullable) return null;
  const t = f.type;
  switch (t.typeId) {
    case A.Type.Bool:
      return false;
    case A.Type.Int:
      return t.bitWidth === 64 ? 0n : 0;
    case A.Type.Timestamp:
      return 0n;
    case A.Type.Utf8:
    case A.Type.LargeUtf8:
      return "";
    case A.Type.Binary:
    case A.Type.LargeBinary:
      return new Uint8Array(0);
    case A.Type.List:
      return [];
    case A.Type.FixedSizeList:
      return new Array(t.listSize).fill(0);
    case A.Type.Struct:
      return Object.fromEntries(t.children.map((c) => [c.name, placeholder(c)]));
    default:
      return 0;
  }
}

// makeTable builds an arrow Table from column specs {field, gen(rng, row)}.
function makeTable(cols, rows, seed, start = 0) {
  const schema = new A.Schema(cols.map((c) => c.field));
  const children = cols.map((c, k) => {
    const rng = new Rng(seed * 1000003 + k * 7919 + start);
    const vals = [];
    for (let i = 0; i < rows; i++) vals.push(c.gen(rng, start + i));
    return makeColumn(c.field.type, vals);
  });
  const rb = new A.RecordBatch(schema, A.makeData({ type: new A.Struct(schema.fields), length: rows, nullCount: 0, children }));
  return new A.Table(schema, [rb]);
}

async function ipc(table) {
  return Buffer.from(await A.RecordBatchFileWriter.writeAll(table).toUint8Array());
}

// ---------------------------------------------------------------- value generators

const F64_EDGES = [0, -0, 1, -1, 0.1, 1e21, 1e20, 1e-7, 1e-6, 5e-324, 2.2250738585072014e-308, Number.MAX_VALUE, -Number.MAX_VALUE, NaN, Infinity, -Infinity, 9007199254740993, 123456.789, -2.5e-300];
const F32_EDGES = [0, -0, 1, 0.1, 1 / 3, 3.4028234663852886e38, 1.401298464324817e-45, 1.1754943508222875e-38, 16777217, 1e-7, NaN, Infinity, -Infinity, 65504.5, -0.3].map(Math.fround);

function f64(r) {
  if (r.chance(0.15)) return r.pick(F64_EDGES);
  const e = r.int(-30, 30);
  return (r.float() - 0.5) * 10 ** e;
}
function f32(r) {
  if (r.chance(0.15)) return r.pick(F32_EDGES);
  const e = r.int(-12, 12);
  return Math.fround((r.float() - 0.5) * 10 ** e);
}
const WORDS = ["alpha", "beta", "gamma", "δέλτα", "日本語", "emoji 🎉", "quote\"", "back\\slash", "tab\there", "nl\nx", "ctl\u0001\u001f\u007f", "<html>&amp;", "\u2028\u2029", "", " "];
function str(r, maxWords = 4) {
  const n = r.int(0, maxWords);
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(r.chance(0.5) ? r.pick(WORDS) : r.u32().toString(36));
  return parts.join(" ");
}
const LOREM = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua ".split(" ");
function prose(r, minBytes, maxBytes) {
  const target = r.int(minBytes, maxBytes);
  let s = "";
  while (s.length < target) s += r.pick(LOREM) + (r.chance(0.1) ? ". " + r.u32() + " " : " ");
  return s.slice(0, target);
}

const NS_RANGE = 4_000_000_000_000_000_000n; // ±~126 years around 1970 in ns
function ts(unit) {
  // Values in units of `unit`, both sides of 1970, with fractions.
  const div = [1_000_000_000n, 1_000_000n, 1000n, 1n][unit];
  return (r) => {
    if (r.chance(0.1)) return r.pick([0n, -1n, 1n, -86400n * (1_000_000_000n / div) - 1n]);
    return (r.i64() % NS_RANGE) / div;
  };
}
function date32(r) {
  if (r.chance(0.1)) return r.pick([0, -1, -719162, 2932896, 11016]);
  return r.int(-719162, 2932896);
}

// SCALARS: name → [type, generator]. Every scalar type of issue 2.
const SCALARS = {
  bool: [() => new A.Bool(), (r) => r.chance(0.5)],
  i8: [() => new A.Int8(), (r) => r.int(-128, 127)],
  i16: [() => new A.Int16(), (r) => r.int(-32768, 32767)],
  i32: [() => new A.Int32(), (r) => (r.chance(0.1) ? r.pick([-2147483648, 2147483647, 0]) : r.int(-2147483648, 2147483647))],
  i64: [() => new A.Int64(), (r) => (r.chance(0.1) ? r.pick([-(2n ** 63n), 2n ** 63n - 1n, 0n]) : r.i64())],
  u8: [() => new A.Uint8(), (r) => r.int(0, 255)],
  u16: [() => new A.Uint16(), (r) => r.int(0, 65535)],
  u32: [() => new A.Uint32(), (r) => r.u32()],
  u64: [() => new A.Uint64(), (r) => (r.chance(0.1) ? r.pick([2n ** 64n - 1n, 0n, 2n ** 63n]) : r.u64())],
  f32: [() => new A.Float32(), f32],
  f64: [() => new A.Float64(), f64],
  utf8: [() => new A.Utf8(), (r) => str(r)],
  large_utf8: [() => new A.LargeUtf8(), (r) => str(r)],
  binary: [() => new A.Binary(), (r) => r.bytes(r.int(0, 12))],
  large_binary: [() => new A.LargeBinary(), (r) => r.bytes(r.int(0, 12))],
  ts_s: [() => new A.TimestampSecond(), ts(0)],
  ts_ms: [() => new A.TimestampMillisecond(), ts(1)],
  ts_us: [() => new A.TimestampMicrosecond(), ts(2)],
  ts_ns: [() => new A.TimestampNanosecond(), ts(3)],
  ts_s_tz: [() => new A.TimestampSecond("UTC"), ts(0)],
  ts_ms_tz: [() => new A.TimestampMillisecond("Asia/Kolkata"), ts(1)],
  ts_us_tz: [() => new A.TimestampMicrosecond("America/New_York"), ts(2)],
  ts_ns_tz: [() => new A.TimestampNanosecond("UTC"), ts(3)],
  date32: [() => new A.DateDay(), date32],
};

const nullable = (p, g) => (r, i) => (r.chance(p) ? null : g(r, i));
function listOf(g, { pNull = 0.1, pEmpty = 0.1, pNullItem = 0.1, max = 4 } = {}) {
  return (r, i) => {
    if (pNull && r.chance(pNull)) return null;
    if (pEmpty && r.chance(pEmpty)) return [];
    const n = r.int(1, max);
    const out = [];
    for (let k = 0; k < n; k++) out.push(pNullItem && r.chance(pNullItem) ? null : g(r, i));
    return out;
  };
}
// lancedb refuses NaN inside vector (fixed_size_list<float>) columns
// ("Vector column contains NaN values"); vectors use finite values only.
const vec8 = (r) => Array.from({ length: 8 }, () => {
  const v = f32(r);
  return Number.isFinite(v) ? v : Math.fround(r.float());
});
const vecType = () => new A.FixedSizeList(8, F("item", new A.Float32(), true));

// typeColumns: every scalar type with and without nulls, lists of each (with
// null and empty lists and null items, and without any null), structs and
// vectors, plus all-null columns.
function typeColumns() {
  const cols = [{ field: F("id", new A.Int32(), false), gen: (r, i) => i }];
  for (const [name, [mk, g]] of Object.entries(SCALARS)) {
    cols.push({ field: F(name, mk(), true), gen: nullable(0.2, g) });
    cols.push({ field: F(name + "_nn", mk(), false), gen: g });
  }
  for (const [name, [mk, g]] of Object.entries(SCALARS)) {
    cols.push({ field: F("l_" + name, new A.List(F("item", mk(), true)), true), gen: listOf(g) });
    cols.push({ field: F("l_" + name + "_nn", new A.List(F("item", mk(), false)), false), gen: listOf(g, { pNull: 0, pEmpty: 0, pNullItem: 0 }) });
  }
  const inner = new A.Struct([F("a", new A.Int32(), true), F("s", new A.Utf8(), true)]);
  const stFields = Object.entries(SCALARS).map(([name, [mk]]) => F(name, mk(), true));
  stFields.push(F("l", new A.List(F("item", new A.Int32(), true)), true), F("inner", inner, true), F("vec", vecType(), true));
  const stGen = (r, i) => {
    const o = {};
    for (const [name, [, g]] of Object.entries(SCALARS)) o[name] = r.chance(0.2) ? null : g(r, i);
    o.l = listOf((r) => r.int(-1000, 1000))(r, i);
    o.inner = r.chance(0.2) ? null : { a: r.chance(0.2) ? null : r.int(-5, 5), s: r.chance(0.2) ? null : str(r, 2) };
    o.vec = r.chance(0.2) ? null : vec8(r);
    return o;
  };
  cols.push({ field: F("st", new A.Struct(stFields), true), gen: nullable(0.15, stGen) });
  const nnFields = [F("x", new A.Int64(), false), F("s", new A.Utf8(), false), F("ts", new A.TimestampMicrosecond("UTC"), false), F("l", new A.List(F("item", new A.Float64(), true)), false)];
  cols.push({
    field: F("st_nn", new A.Struct(nnFields), false),
    gen: (r) => ({ x: r.i64(), s: str(r, 2), ts: ts(2)(r), l: listOf(f64, { pNull: 0 })(r) }),
  });
  cols.push({ field: F("ll_nested", new A.List(F("item", new A.List(F("item", new A.Int16(), true)), true)), true), gen: listOf(listOf((r) => r.int(-300, 300))) });
  cols.push({ field: F("l_struct", new A.List(F("item", inner, true)), true), gen: listOf((r) => ({ a: r.int(0, 9), s: r.chance(0.3) ? null : str(r, 1) })) });
  cols.push({ field: F("vec", vecType(), true), gen: nullable(0.2, vec8) });
  cols.push({ field: F("vec_nn", new A.FixedSizeList(8, F("item", new A.Float32(), false)), false), gen: vec8 });
  cols.push({ field: F("null_i32", new A.Int32(), true), gen: () => null });
  cols.push({ field: F("null_utf8", new A.Utf8(), true), gen: () => null });
  cols.push({ field: F("null_list", new A.List(F("item", new A.Utf8(), true)), true), gen: () => null });
  return cols;
}

// stringColumns: long values (full-zip), huge values (> 32 KiB, zstd), low
// cardinality (dictionary), constants and runs (RLE), mostly-null binary.
function stringColumns() {
  const CATS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white", "ünïcode", "a much longer category name"];
  return [
    { field: F("id", new A.Uint32(), false), gen: (r, i) => i },
    { field: F("long", new A.Utf8(), true), gen: nullable(0.1, (r) => prose(r, 256, 700)) },
    { field: F("long_nn", new A.LargeUtf8(), false), gen: (r) => prose(r, 300, 500) },
    { field: F("long_bin", new A.Binary(), true), gen: nullable(0.1, (r) => r.bytes(r.int(256, 600))) },
    { field: F("huge", new A.Utf8(), true), gen: (r, i) => (i % 50 === 7 ? prose(r, 33 * 1024, 60 * 1024) : r.chance(0.3) ? null : prose(r, 300, 400)) },
    { field: F("huge_bin", new A.LargeBinary(), true), gen: (r, i) => (i % 97 === 3 ? enc.encode(prose(r, 40 * 1024, 50 * 1024)) : null) },
    { field: F("cat", new A.Utf8(), true), gen: nullable(0.1, (r) => r.pick(CATS)) },
    { field: F("cat_nn", new A.Utf8(), false), gen: (r) => r.pick(CATS) },
    { field: F("cat_bin", new A.Binary(), true), gen: nullable(0.1, (r) => enc.encode(r.pick(CATS))) },
    { field: F("const_i64", new A.Int64(), false), gen: () => 42n },
    { field: F("const_f64", new A.Float64(), true), gen: () => 2.5 },
    { field: F("const_s", new A.Utf8(), false), gen: () => "constant" },
    { field: F("runs_i32", new A.Int32(), true), gen: (r, i) => (Math.floor(i / 300) % 5 === 4 ? null : Math.floor(i / 300)) },
    { field: F("sparse_bin", new A.Binary(), true), gen: (r, i) => (i % 211 === 5 ? r.bytes(2000) : null) },
    { field: F("short", new A.Utf8(), false), gen: (r, i) => `user-${r.u32() % 100000}@example.com/${i}` },
    { field: F("uni", new A.Utf8(), true), gen: nullable(0.1, (r) => str(r, 8)) },
    { field: F("l_long", new A.List(F("item", new A.Utf8(), true)), true), gen: listOf((r) => prose(r, 256, 400), { max: 3 }) },
    { field: F("l_cat", new A.List(F("item", new A.Utf8(), true)), true), gen: listOf((r) => r.pick(CATS)) },
  ];
}

// bigColumns: ≥ 100k rows for bit-packing, FSST, dictionaries and many pages.
function bigColumns() {
  const HOSTS = ["api", "www", "cdn", "static", "auth"];
  return [
    { field: F("seq", new A.Uint64(), false), gen: (r, i) => BigInt(i) },
    { field: F("timestamp", new A.TimestampMicrosecond("UTC"), false), gen: (r, i) => 1_700_000_000_000_000n + BigInt(i) * 1_000_000n + BigInt(r.int(0, 999)) },
    { field: F("value", new A.Float64(), true), gen: nullable(0.01, (r, i) => Math.sin(i / 100) * 100 + r.float()) },
    { field: F("small", new A.Int32(), false), gen: (r) => r.int(0, 1000) },
    { field: F("opt", new A.Int16(), true), gen: nullable(0.3, (r) => r.int(-100, 100)) },
    { field: F("flag", new A.Bool(), true), gen: nullable(0.05, (r) => r.chance(0.3)) },
    { field: F("f32", new A.Float32(), false), gen: (r, i) => Math.fround(i / 7) },
    { field: F("cat", new A.Utf8(), false), gen: (r) => r.pick(["pending", "running", "done", "failed"]) },
    { field: F("url", new A.Utf8(), true), gen: nullable(0.02, (r) => `https://${r.pick(HOSTS)}.example.com/v1/items/${r.u32() % 50000}`) },
    { field: F("const_u8", new A.Uint8(), false), gen: () => 7 },
    { field: F("tags", new A.List(F("item", new A.Utf8(), true)), true), gen: listOf((r) => r.pick(["x", "y", "zz", "long-tag-name"]), { max: 3 }) },
  ];
}

// compressionColumns: field metadata asking lance for other encodings.
function compressionColumns() {
  const md = (m) => m;
  return [
    { field: F("id", new A.Int64(), false), gen: (r, i) => BigInt(i) },
    { field: F("zstd_i64", new A.Int64(), true, md({ "lance-encoding:compression": "zstd" })), gen: nullable(0.1, (r) => BigInt(r.int(0, 1 << 20))) },
    { field: F("lz4_i32", new A.Int32(), true, md({ "lance-encoding:compression": "lz4" })), gen: nullable(0.1, (r) => r.int(-1000, 1000)) },
    { field: F("zstd_s", new A.Utf8(), true, md({ "lance-encoding:compression": "zstd" })), gen: nullable(0.1, (r) => str(r, 6)) },
    { field: F("lz4_s", new A.Utf8(), true, md({ "lance-encoding:compression": "lz4" })), gen: nullable(0.1, (r) => prose(r, 5, 40)) },
    { field: F("none_s", new A.Utf8(), true, md({ "lance-encoding:compression": "none" })), gen: nullable(0.1, (r) => prose(r, 5, 60)) },
    { field: F("none_f64", new A.Float64(), false, md({ "lance-encoding:compression": "none" })), gen: f64 },
    { field: F("mini_long", new A.Utf8(), true, md({ "lance-encoding:structural-encoding": "miniblock" })), gen: nullable(0.1, (r) => prose(r, 256, 600)) },
    { field: F("zstd_long", new A.Binary(), true, md({ "lance-encoding:compression": "zstd" })), gen: nullable(0.1, (r) => enc.encode(prose(r, 300, 900))) },
    { field: F("zstd_list", new A.List(F("item", new A.Float32(), true)), true, md({ "lance-encoding:compression": "zstd" })), gen: listOf(f32) },
    { field: F("zstd_vec", vecType(), true, md({ "lance-encoding:compression": "zstd" })), gen: nullable(0.1, vec8) },
  ];
}

// constColumns: what format 2.2 writes as constant pages (ConstantLayout:
// the value inline when fixed-width and at most 32 bytes, else in a value
// buffer; raw u16 levels when nulls or lists are around it) and as all-null
// pages with compressed levels, and 64-bit values of low cardinality, which
// 2.2 dictionary-encodes (values LZ4-compressed). variant changes every
// constant, so each data file (fragment) has its own.
function constColumns(variant) {
  const seeded = (name) => new Rng([...name].reduce((h, ch) => Math.imul(h ^ ch.charCodeAt(0), 16777619), 2166136261 + variant));
  const cols = [{ field: F("id", new A.Int32(), false), gen: (r, i) => i }];
  for (const [name, [mk, g]] of Object.entries(SCALARS)) {
    const v = g(seeded(name));
    cols.push({ field: F("c_" + name, mk(), false), gen: () => v });
    cols.push({ field: F("cn_" + name, mk(), true), gen: nullable(0.25, () => v) });
  }
  const long = "x".repeat(40 + variant);
  const I64 = [-(2n ** 63n), -7n, 0n, 1n, 42n, 2n ** 40n, 2n ** 63n - 1n];
  const U64 = [0n, 1n, 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n];
  const F64 = Array.from({ length: 400 }, (_, k) => (k - 200) / 8 + variant);
  const TS = [0n, 1_700_000_000_000_000n, -86_400_000_000n, 253_402_300_799_000_000n, 1n, -1n];
  const inner = new A.Struct([F("c", new A.Utf8(), true), F("d", new A.Int32(), true)]);
  cols.push(
    { field: F("c_long", new A.Utf8(), false), gen: () => long },
    { field: F("c_bool_false", new A.Bool(), true), gen: nullable(0.1, () => false) },
    { field: F("c_list", new A.List(F("item", new A.Int32(), true)), true), gen: listOf(() => 7 + variant, { pNullItem: 0 }) },
    { field: F("c_member", inner, true), gen: nullable(0.2, (r) => ({ c: "same", d: r.int(-100, 100) })) },
    { field: F("null_i64", new A.Int64(), true), gen: () => null },
    { field: F("null_utf8", new A.Utf8(), true), gen: () => null },
    { field: F("null_list", new A.List(F("item", new A.Int32(), true)), true), gen: () => null },
    { field: F("null_st", new A.Struct([F("a", new A.Int32(), true)]), true), gen: () => null },
    { field: F("null_items", new A.List(F("item", new A.Int32(), true)), true), gen: (r) => (r.chance(0.5) ? [] : [null, null]) },
    { field: F("null_member", new A.Struct([F("a", new A.Int32(), true), F("b", new A.Utf8(), true)]), true), gen: nullable(0.1, (r) => ({ a: null, b: str(r, 1) })) },
    { field: F("lc_i64", new A.Int64(), false), gen: (r) => r.pick(I64) },
    { field: F("lc_i64_nulls", new A.Int64(), true), gen: nullable(0.2, (r) => r.pick(I64)) },
    { field: F("lc_u64", new A.Uint64(), false), gen: (r) => r.pick(U64) },
    { field: F("lc_f64_runs", new A.Float64(), false), gen: (r, i) => F64[Math.floor(i / 50) % F64.length] },
    { field: F("lc_ts", new A.TimestampMicrosecond("UTC"), true), gen: nullable(0.05, (r) => r.pick(TS)) },
    { field: F("lc_utf8", new A.Utf8(), false), gen: (r) => r.pick(["pending", "running", "done"]) },
  );
  // Types that SCALARS lacks, whose constants 2.2 also keeps inline
  // (decimal128, decimal256, 16-byte fixed-size binary: at most 32 bytes)
  // or in a value buffer (40-byte fixed-size binary), each also with
  // varying values.
  const dec = (digits) => (r) =>
    r.chance(0.15) ? r.pick([0n, 1n, -1n, 5n, -125n, 10n ** BigInt(digits) - 1n]) : (r.chance(0.5) ? -1n : 1n) * (r.u64() % 10n ** BigInt(digits));
  const fsb = (w) => (r) => r.bytes(w);
  for (const [name, mk, g] of [
    ["dec128", () => new A.Decimal(2, 20, 128), dec(18)],
    ["dec256", () => new A.Decimal(5, 60, 256), dec(19)],
    ["fsb16", () => new A.FixedSizeBinary(16), fsb(16)],
    ["fsb40", () => new A.FixedSizeBinary(40), fsb(40)],
  ]) {
    const v = g(seeded(name));
    cols.push(
      { field: F("c_" + name, mk(), false), gen: () => v },
      { field: F("cn_" + name, mk(), true), gen: nullable(0.25, () => v) },
      { field: F(name, mk(), true), gen: nullable(0.1, g) },
    );
  }
  return cols;
}

// packedColumns: structs marked lance-encoding:packed. A fixed-width one is
// one mini-block column (PackedStruct); one with a string or binary member
// is a full-zip column of whole rows (VariablePackedStruct, 2.2 only).
// lance 12 writes no packed struct with a null in it, nor a null member
// ("Per-value compression not yet supported for block type Nullable" in
// 2.2, "Variable packed struct encoding is not enabled" in 2.1).
function packedColumns() {
  const packed = { "lance-encoding:packed": "true" };
  return [
    { field: F("id", new A.Int32(), false), gen: (r, i) => i },
    { field: F("pf", new A.Struct([F("a", new A.Int32(), true), F("b", new A.Float64(), true), F("c", new A.Uint16(), true)]), true, packed),
      gen: (r) => ({ a: r.int(-1e6, 1e6), b: f64(r), c: r.int(0, 65535) }) },
    { field: F("pv", new A.Struct([F("a", new A.Int32(), false), F("s", new A.Utf8(), false), F("u", new A.Uint8(), false)]), false, packed),
      gen: (r, i) => ({ a: i * 3 - 1000, s: str(r, 3), u: r.int(0, 255) }) },
    { field: F("pvb", new A.Struct([F("x", new A.Int64(), false), F("t", new A.Binary(), false)]), false, packed),
      gen: (r) => ({ x: r.i64(), t: r.bytes(r.int(0, 40)) }) },
  ];
}

// mapColumns: maps (2.2 only), written as lists of key/value structs.
function mapColumns() {
  const entries = (k, v) => new A.Map_(F("entries", new A.Struct([F("key", k, false), F("value", v, true)]), false));
  const mapOf = (gk, gv) => (r) => {
    if (r.chance(0.1)) return null;
    const n = r.int(0, 4);
    return Array.from({ length: n }, () => [gk(r), r.chance(0.15) ? null : gv(r)]);
  };
  return [
    { field: F("id", new A.Int32(), false), gen: (r, i) => i },
    { field: F("m", entries(new A.Utf8(), new A.Int32()), true), gen: mapOf((r) => r.pick(["a", "b", "c", "d", "é"]), (r) => r.int(-9, 9)) },
    { field: F("m_i64", entries(new A.Int64(), new A.Utf8()), true), gen: mapOf((r) => r.i64(), (r) => str(r, 2)) },
    { field: F("m_list", entries(new A.Utf8(), new A.List(F("item", new A.Float64(), true))), true), gen: mapOf((r) => str(r, 1), listOf(f64)) },
  ];
}

// ---------------------------------------------------------------- table handle

class Case {
  constructor(root, storageOptions) {
    this.root = root;
    this.storageOptions = storageOptions || {};
    this.tags = {};
    this.castBack = {}; // column → SQL type to cast back to for arrow-js
    this.columns = []; // top-level column names of the latest version
    this.addedAt = {}; // column → version that added it (default: 1)
    this.blobs = []; // blob v2 columns, which queries return as descriptors
  }
  async create(table) {
    this.db = await lancedb.connect(this.root);
    const so = this.db.getStorageOptions({ storageOptions: { ...this.storageOptions } });
    // Native call: the JS createTable would refuse LargeUtf8/LargeBinary.
    await this.db.inner.createTable("t", await ipc(table), "create", [], so);
    this.columns = table.schema.fields.map((f) => f.name);
    this.t = await this.db.openTable("t");
  }
  async append(table) {
    await this.t.inner.add(await ipc(table), "append");
  }
  async del(pred) {
    await this.t.delete(pred);
  }
  // overwrite replaces the table's data and schema (one Overwrite commit).
  async overwrite(table) {
    const so = this.db.getStorageOptions({ storageOptions: { ...this.storageOptions } });
    await this.db.inner.createTable("t", await ipc(table), "overwrite", [], so);
    this.columns = table.schema.fields.map((f) => f.name);
    this.t = await this.db.openTable("t");
  }
  async tag(name, version) {
    await (await this.t.tags()).create(name, version);
    this.tags[name] = version;
  }
}

// ---------------------------------------------------------------- cases

const CASES = {
  // Schema evolution, which leaves the data files and the manifest out of
  // step in ways a reader must accept: a dropped column keeps its field id
  // in the data files (only the schema forgets it), a computed column gets
  // a new id above it and a new data file per fragment, a rename changes
  // the manifest alone (the files keep the old name).
  async evolve(c) {
    const cols = [
      { field: F("id", new A.Int64(), false), gen: (r, i) => BigInt(i) },
      { field: F("gone", new A.Utf8(), true), gen: nullable(0.2, (r) => str(r, 3)) },
      { field: F("x", new A.Float64(), true), gen: nullable(0.1, f64) },
    ];
    await c.create(makeTable(cols, 500, 21)); // v1
    await c.append(makeTable(cols, 200, 22, 500)); // v2
    await c.t.dropColumns(["gone"]); // v3
    await c.t.addColumns([{ name: "twice", valueSql: "id * 2" }]); // v4
    await c.t.alterColumns([{ path: "x", rename: "y" }]); // v5
    await c.del("id % 9 = 0"); // v6
  },
  // Every type, format 2.1 (lance 8's default), V2 manifest names.
  async types(c) {
    const cols = typeColumns();
    await c.create(makeTable(cols, 1000, 1));
    await c.append(makeTable(cols, 300, 2, 1000));
    await c.del("id % 7 = 3"); // ~190 rows: .arrow deletion files
    await c.tag("created", 1);
    await c.tag("after-delete", 3);
  },
  async strings(c) {
    const cols = stringColumns();
    await c.create(makeTable(cols, 1500, 3));
    await c.append(makeTable(cols, 500, 4, 1500));
    await c.del("id >= 100 AND id < 130");
  },
  async largelist(c) {
    await largeListCase(c);
  },
  // ≥ 100k rows: bit-packing, FSST, dictionary, RLE, several pages; large
  // deletes (.bin, then a small one merged into it); compaction.
  async big(c) {
    const cols = bigColumns();
    await c.create(makeTable(cols, 100_000, 5));
    await c.del("seq % 3 = 0"); // v2, 33k rows: .bin
    await c.del("seq >= 500 AND seq < 520"); // v3, grows the .bin
    await c.t.optimize(); // v4 ReserveFragments, v5 Rewrite
    await c.tag("compacted", 5);
  },
  async compression(c) {
    const cols = compressionColumns();
    await c.create(makeTable(cols, 2000, 6));
    await c.append(makeTable(cols, 100, 7, 2000));
  },
  // Deletes across several fragments: .bin (> 5000 rows of one fragment),
  // .arrow, a fragment deleted entirely, compaction afterwards.
  async deletes(c) {
    const cols = [
      { field: F("k", new A.Int64(), false), gen: (r, i) => BigInt(i) },
      { field: F("v", new A.Utf8(), true), gen: nullable(0.1, (r, i) => `v${i}-${r.u32() % 1000}`) },
      { field: F("x", new A.Float64(), true), gen: nullable(0.1, f64) },
    ];
    await c.create(makeTable(cols, 12000, 8)); // v1 fragment 0
    await c.append(makeTable(cols, 12000, 9, 12000)); // v2 fragment 1
    await c.append(makeTable(cols, 1000, 10, 24000)); // v3 fragment 2
    await c.del("k < 7000"); // v4: 7000 of fragment 0 → .bin
    await c.del("k >= 12000 AND k % 100 = 1"); // v5: 120 of fragment 1 → .arrow
    await c.del("k >= 24000"); // v6: fragment 2 removed
    await c.del("k >= 7000 AND k < 7010"); // v7: fragment 0 grows its .bin
    await c.t.optimize(); // v8, v9
    await c.append(makeTable(cols, 10, 11, 30000)); // v10
  },
  // Random bit patterns of float32 and float64 (subnormals, huge, tiny,
  // NaN payloads): pins the Go and JavaScript float formatting to each other.
  async floats(c) {
    const u32 = new Uint32Array(2);
    const f32v = new Float32Array(u32.buffer, 0, 1);
    const f64v = new Float64Array(u32.buffer);
    const cols = [
      { field: F("id", new A.Int32(), false), gen: (r, i) => i },
      { field: F("f32", new A.Float32(), false), gen: (r) => ((u32[0] = r.u32()), f32v[0]) },
      { field: F("f64", new A.Float64(), false), gen: (r) => ((u32[0] = r.u32()), (u32[1] = r.u32()), f64v[0]) },
      { field: F("f32_dec", new A.Float32(), false), gen: (r) => Math.fround(r.int(0, 99999999) / 10 ** r.int(0, 12)) },
      { field: F("f64_dec", new A.Float64(), false), gen: (r) => r.int(0, 2 ** 31) / 10 ** r.int(0, 20) },
    ];
    await c.create(makeTable(cols, 20000, 40));
  },
  // Many small pages per column: lance's LANCE_FILE_WRITER_MAX_PAGE_BYTES
  // (read when a file writer starts) is lowered to 32 KiB for this case. Run
  // as 2.0 only: 2.1 files ignore it for most columns (big already has
  // multi-page 2.1 columns), and 2.0's 100k-row big case fits in one page.
  async pages(c) {
    const cols = [
      { field: F("seq", new A.Int64(), false), gen: (r, i) => BigInt(i) },
      { field: F("x", new A.Float64(), true), gen: nullable(0.1, f64) },
      { field: F("n", new A.Int32(), true), gen: nullable(0.3, (r) => r.int(-50, 50)) },
      { field: F("s", new A.Utf8(), true), gen: nullable(0.1, (r, i) => `row ${i} ${str(r, 2)}`) },
      { field: F("cat", new A.Utf8(), false), gen: (r) => r.pick(["a", "b", "c"]) },
      { field: F("l", new A.List(F("item", new A.Int32(), true)), true), gen: listOf((r) => r.int(0, 1 << 20)) },
      { field: F("st", new A.Struct([F("a", new A.Int16(), true), F("b", new A.Utf8(), true)]), true), gen: nullable(0.1, (r) => ({ a: r.chance(0.1) ? null : r.int(-9, 9), b: str(r, 1) })) },
      { field: F("vec", vecType(), true), gen: nullable(0.1, (r) => vec8(r).map((x) => Math.fround(Math.round(x)))) },
    ];
    process.env.LANCE_FILE_WRITER_MAX_PAGE_BYTES = String(32 * 1024);
    try {
      await c.create(makeTable(cols, 15000, 50));
      await c.del("seq % 1000 = 999");
    } finally {
      delete process.env.LANCE_FILE_WRITER_MAX_PAGE_BYTES;
    }
  },
  // V1 manifest names (N.manifest), many versions, update, tags.
  async history(c) {
    const cols = [
      { field: F("id", new A.Int32(), false), gen: (r, i) => i },
      { field: F("name", new A.Utf8(), true), gen: nullable(0.1, (r, i) => `name-${i}`) },
      { field: F("score", new A.Float32(), true), gen: nullable(0.1, f32) },
    ];
    await c.create(makeTable(cols, 200, 12));
    for (let k = 0; k < 8; k++) await c.append(makeTable(cols, 25, 13 + k, 200 + 25 * k)); // v2..v9
    await c.del("id < 10"); // v10
    await c.t.update({ where: "id >= 300 AND id < 310", values: { name: "updated" } }); // v11
    await c.t.update({ where: "id = 205", valuesSql: { score: "score * 2" } }); // v12
    await c.t.optimize(); // v13, v14
    await c.append(makeTable(cols, 5, 30, 1000)); // v15
    await c.tag("first", 1);
    await c.tag("mid", 9);
    await c.tag("compacted", 14);
    await c.tag("latest", 15);
  },
  // Constant and all-null pages, low-cardinality 64-bit values: two data
  // files whose constants differ, a delete.
  async consts(c) {
    await c.create(makeTable(constColumns(0), 1500, 60)); // v1
    await c.append(makeTable(constColumns(1), 1000, 61, 1500)); // v2
    await c.del("id % 11 = 5"); // v3
  },
  async packed(c) {
    const cols = packedColumns();
    await c.create(makeTable(cols, 2000, 62)); // v1
    await c.append(makeTable(cols, 500, 63, 2000)); // v2
    await c.del("id % 9 = 2"); // v3
  },
  // Blob v2 (lancedb's blob()): bytes up to 64 inline in the data file,
  // up to 4 KiB packed into a shared sidecar .blob file, larger ones in a
  // .blob file each; null and empty blobs. Queries return descriptors, so
  // the expectations take the bytes from fetchBlobs.
  async blob(c) {
    const cols = [
      { field: F("id", new A.Int32(), false), gen: (r, i) => i },
      { field: lancedb.blob("b", { inlineSizeThreshold: 64, dedicatedSizeThreshold: 4096 }),
        gen: (r, i) => (i % 7 === 3 ? null : { data: i % 7 === 5 ? new Uint8Array(0) : r.bytes(r.pick([1, 60, 65, 900, 4096, 4097, 20000])), uri: null }) },
      { field: F("note", new A.Utf8(), true), gen: nullable(0.2, (r) => str(r, 2)) },
    ];
    c.blobs = ["b"];
    await c.create(makeTable(cols, 40, 64)); // v1
    await c.append(makeTable(cols, 25, 65, 40)); // v2
    await c.del("id % 10 = 1"); // v3
  },
  async map(c) {
    const cols = mapColumns();
    await c.create(makeTable(cols, 1500, 66)); // v1
    await c.append(makeTable(cols, 300, 67, 1500)); // v2
    await c.del("id % 8 = 6"); // v3
  },
  // Every kind of commit lance 12 makes on a table: appends, updates (rows
  // rewritten into a new fragment), deletes, a computed column, a rename, a
  // dropped column, a column cast to another type, compaction, tags, and
  // an overwrite with another schema, then more appends.
  async ops(c) {
    const cols = [
      { field: F("id", new A.Int64(), false), gen: (r, i) => BigInt(i) },
      { field: F("name", new A.Utf8(), true), gen: nullable(0.1, (r, i) => `name-${i}`) },
      { field: F("score", new A.Float64(), true), gen: nullable(0.1, f64) },
      { field: F("tags", new A.List(F("item", new A.Utf8(), true)), true), gen: listOf((r) => r.pick(["x", "y", "zz"])) },
    ];
    await c.create(makeTable(cols, 2000, 70)); // v1
    await c.append(makeTable(cols, 500, 71, 2000)); // v2
    await c.t.update({ where: "id < 100", values: { name: "updated" } }); // v3
    await c.t.update({ where: "id % 7 = 0", valuesSql: { score: "score * 2" } }); // v4
    await c.del("id % 13 = 0"); // v5
    await c.t.addColumns([{ name: "twice", valueSql: "id * 2" }]); // v6
    await c.t.alterColumns([{ path: "name", rename: "label" }]); // v7
    await c.t.dropColumns(["tags"]); // v8
    await c.t.alterColumns([{ path: "twice", dataType: new A.Int32() }]); // v9
    await c.t.optimize(); // v10 ReserveFragments, v11 Rewrite
    const compacted = Number(await c.t.version());
    await c.tag("created", 1);
    await c.tag("compacted", compacted);
    const after = [
      { field: F("key", new A.Int32(), false), gen: (r, i) => i },
      { field: F("note", new A.Utf8(), true), gen: nullable(0.3, (r) => str(r, 3)) },
    ];
    await c.overwrite(makeTable(after, 300, 72)); // v12
    await c.append(makeTable(after, 50, 73, 300)); // v13
    await c.tag("latest", Number(await c.t.version()));
  },
};

async function largeListCase(c) {
  const cols = [
    { field: F("id", new A.Int32(), false), gen: (r, i) => i },
    { field: F("l_i32", new A.List(F("item", new A.Int32(), true)), true), gen: listOf(SCALARS.i32[1]) },
    { field: F("l_i64", new A.List(F("item", new A.Int64(), true)), true), gen: listOf(SCALARS.i64[1]) },
    { field: F("l_f64", new A.List(F("item", new A.Float64(), true)), true), gen: listOf(f64) },
    { field: F("l_f32", new A.List(F("item", new A.Float32(), true)), true), gen: listOf(f32) },
    { field: F("l_bool", new A.List(F("item", new A.Bool(), true)), true), gen: listOf(SCALARS.bool[1]) },
    { field: F("l_utf8", new A.List(F("item", new A.Utf8(), true)), true), gen: listOf((r) => str(r)) },
    { field: F("l_bin", new A.List(F("item", new A.Binary(), true)), true), gen: listOf(SCALARS.binary[1]) },
    { field: F("l_ts", new A.List(F("item", new A.TimestampNanosecond("UTC"), true)), true), gen: listOf(ts(3)) },
    { field: F("l_date", new A.List(F("item", new A.DateDay(), true)), true), gen: listOf(date32) },
    { field: F("l_u8", new A.List(F("item", new A.Uint8(), true)), true), gen: listOf(SCALARS.u8[1]) },
    { field: F("l_u64", new A.List(F("item", new A.Uint64(), true)), true), gen: listOf(SCALARS.u64[1]) },
    { field: F("l_ts_ms", new A.List(F("item", new A.TimestampMillisecond(), true)), true), gen: listOf(ts(1)) },
    { field: F("l_nn", new A.List(F("item", new A.Int16(), false)), false), gen: listOf(SCALARS.i16[1], { pNull: 0, pEmpty: 0, pNullItem: 0 }) },
  ];
  await c.create(makeTable(cols, 3000, 20)); // v1
  const casts = {
    ll_i32: ["l_i32", "Int32"],
    ll_i64: ["l_i64", "Int64"],
    ll_f64: ["l_f64", "Float64"],
    ll_f32: ["l_f32", "Float32"],
    ll_bool: ["l_bool", "Boolean"],
    ll_utf8: ["l_utf8", "Utf8"],
    ll_lutf8: ["l_utf8", "LargeUtf8"],
    ll_bin: ["l_bin", "Binary"],
    ll_ts: ["l_ts", 'Timestamp(Nanosecond, Some("UTC"))'],
    ll_date: ["l_date", "Date32"],
    ll_u8: ["l_u8", "UInt8"],
    ll_u64: ["l_u64", "UInt64"],
    ll_lbin: ["l_bin", "LargeBinary"],
    ll_ts_ms: ["l_ts_ms", "Timestamp(Millisecond, None)"],
    ll_nn: ["l_nn", "Int16"],
  };
  // v2: lance computes the large lists (a new data file per fragment).
  await c.t.addColumns(Object.entries(casts).map(([name, [src, item]]) => ({ name, valueSql: `arrow_cast(${src}, 'LargeList(${item})')` })));
  for (const [name, [, item]] of Object.entries(casts)) {
    c.castBack[name] = `List(${item})`;
    c.columns.push(name);
    c.addedAt[name] = 2;
  }
  await c.del("id % 10 = 4"); // v3
}

// ---------------------------------------------------------------- expectations

// RUNS: per lance, the output directory, the case and the storage options.
// lance 8 runs every case with its defaults (2.1, V2 names), some also as
// 2.0 files or with V1 names. lance 12 runs what tests something new: its
// default format 2.2, the layouts only it writes, and some of its 2.1.
const V2_0 = { newTableDataStorageVersion: "2.0" };
const V2_1 = { newTableDataStorageVersion: "2.1" };
const V1_NAMES = { newTableEnableV2ManifestPaths: "false" };
const RUNS = {
  8: [
    ["types", "types", {}],
    ["strings", "strings", {}],
    ["largelist", "largelist", {}],
    ["big", "big", {}],
    ["compression", "compression", {}],
    ["floats", "floats", {}],
    ["deletes", "deletes", {}],
    ["evolve", "evolve", {}],
    ["evolve_v2_0", "evolve", V2_0],
    ["history_v1", "history", V1_NAMES],
    ["types_v2_0", "types", V2_0],
    ["strings_v2_0", "strings", V2_0],
    ["largelist_v2_0", "largelist", V2_0],
    ["big_v2_0", "big", V2_0],
    ["deletes_v2_0", "deletes", V2_0],
    ["pages_v2_0", "pages", V2_0],
  ],
  12: [
    // lance 12's default, data files 2.2: every type and layout lance 8
    // covers, and what only 2.2 has (constant pages, packed structs, blob
    // v2, maps), every kind of commit.
    ["types", "types", {}],
    ["strings", "strings", {}],
    ["largelist", "largelist", {}],
    ["big", "big", {}],
    ["compression", "compression", {}],
    ["deletes", "deletes", {}],
    ["evolve", "evolve", {}],
    ["history_v1", "history", V1_NAMES],
    ["consts", "consts", {}],
    ["packed", "packed", {}],
    ["blob", "blob", {}],
    ["map", "map", {}],
    ["ops", "ops", {}],
    // lance 12's 2.1 writer, where it differs from lance 8's (constants
    // become runs and one-entry dictionaries) or its commits are new.
    ["consts_v2_1", "consts", V2_1],
    ["ops_v2_1", "ops", V2_1],
  ],
}[lanceMajor];

// seen maps a content hash to the first expectation file with that content:
// identical expectations (versions that change no data, the same case in two
// formats) are hard-linked to keep the output small.
const seen = new Map();

// withBlobBytes replaces, in a query result with row ids, the descriptors
// of the blob columns by the blobs' bytes, as struct<data, uri> (the type
// the manifest gives a blob v2 column, and kv0 reads), and drops the row ids.
async function withBlobBytes(c, table) {
  const rowids = table.getChild("_rowid").toArray();
  const bytes = {};
  for (const name of c.blobs) bytes[name] = await c.t.fetchBlobs(name, [...rowids]);
  const blobType = new A.Struct([F("data", new A.LargeBinary(), true), F("uri", new A.Utf8(), true)]);
  const kept = table.schema.fields.map((f, k) => [f, k]).filter(([f]) => f.name !== "_rowid");
  const fields = kept.map(([f]) => (c.blobs.includes(f.name) ? F(f.name, blobType, f.nullable) : f));
  const schema = new A.Schema(fields);
  const batches = [];
  let at = 0;
  for (const b of table.batches) {
    const children = kept.map(([f, k], j) => {
      if (!c.blobs.includes(f.name)) return b.data.children[k];
      const vals = bytes[f.name].slice(at, at + b.numRows).map((x) => (x === null ? null : { data: new Uint8Array(x), uri: null }));
      return makeColumn(fields[j].type, vals);
    });
    batches.push(new A.RecordBatch(schema, A.makeData({ type: new A.Struct(fields), length: b.numRows, nullCount: 0, children })));
    at += b.numRows;
  }
  return new A.Table(schema, batches);
}

async function dumpVersions(c, outDir) {
  fs.mkdirSync(outDir, { recursive: true });
  const versions = (await c.t.listVersions()).map((v) => Number(v.version)).sort((a, b) => a - b);
  const list = [];
  for (const v of versions) {
    await c.t.checkout(v);
    let q = c.t.query();
    if (Object.keys(c.castBack).length) {
      // arrow-js cannot decode LargeList: cast those columns back to List.
      const names = c.columns.filter((n) => (c.addedAt[n] ?? 0) <= v);
      q = q.select(Object.fromEntries(names.map((n) => [n, c.castBack[n] ? `arrow_cast(${n}, '${c.castBack[n]}')` : n])));
    }
    if (c.blobs.length) q = q.withRowId();
    let table = await q.toArrow();
    if (c.blobs.length) table = await withBlobBytes(c, table);
    const chunks = [];
    let rows = 0;
    for (const line of encodeTableLines(table)) {
      chunks.push(line);
      rows++;
    }
    const text = chunks.join("");
    const expectRows = await c.t.countRows();
    if (rows !== expectRows) throw new Error(`version ${v}: toArrow gave ${rows} rows, countRows ${expectRows}`);
    const file = path.join(outDir, `v${v}.jsonl`);
    const h = crypto.createHash("sha256").update(text).digest("hex");
    if (seen.has(h)) fs.linkSync(seen.get(h), file);
    else {
      fs.writeFileSync(file, text);
      seen.set(h, file);
    }
    list.push({ version: v, rows });
  }
  await c.t.checkoutLatest();
  fs.writeFileSync(path.join(outDir, "versions.json"), JSON.stringify(list, null, 1) + "\n");
  if (Object.keys(c.tags).length) fs.writeFileSync(path.join(outDir, "tags.json"), JSON.stringify(c.tags, null, 1) + "\n");
}

async function main() {
  const out = process.argv[2];
  if (!out) {
    console.error("usage: node gen.mjs OUTDIR [CASE...]");
    process.exit(2);
  }
  const only = new Set(process.argv.slice(3));
  fs.mkdirSync(out, { recursive: true });
  fs.rmSync(path.join(out, "done.json"), { force: true });
  const t0 = Date.now();
  const done = [];
  for (const [name, fn, so] of RUNS) {
    if (only.size && !only.has(name)) continue;
    const t1 = Date.now();
    const root = path.join(out, name);
    fs.rmSync(root, { recursive: true, force: true });
    const c = new Case(root, so);
    await CASES[fn](c);
    await dumpVersions(c, path.join(root, "expected"));
    done.push(name);
    console.error(`gen: lance ${lanceMajor}: ${name} done in ${Date.now() - t1} ms`);
  }
  fs.writeFileSync(path.join(out, "done.json"), JSON.stringify({ lancedb: lancedbVersion, cases: done }) + "\n");
  console.error(`gen: all done in ${Date.now() - t0} ms`);
}

main().catch((e) => {
  console.error("gen: ERROR", e);
  process.exit(1);
});
