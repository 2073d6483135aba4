// Writes Lance 2.0 datasets with lancedb 0.31 (lance 8) for the 2.0 reader tests.
// usage: NODE_PATH=tests/interop/node_modules node core/lancefile/testdata/v20gen.cjs OUTDIR [rows]
// Each table's data file(s) land under OUTDIR/<name>.lance/data/; the tests copy
// the small ones to testdata/v20_<name>.lance and describe the values with the
// same formulas as below (see v20_test.go).
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");

const out = process.argv[2];
const bigRows = Number(process.argv[3] || 200000);

const F = (name, type, nullable = true) => new arrow.Field(name, type, nullable);

// Value formulas; v20_test.go mirrors them. Timestamps are given in ms
// (apache-arrow JS scales them to the column unit).
const isNull = (i, k) => i % k === k - 1;
function typesTable(n) {
  const cols = {
    i8: [new arrow.Int8(), (i) => (isNull(i, 7) ? null : ((i * 37) % 256) - 128)],
    i16: [new arrow.Int16(), (i) => (isNull(i, 5) ? null : i * 101 - 20000)],
    i32: [new arrow.Int32(), (i) => (isNull(i, 4) ? null : i * 1000003 - 150000000)],
    i64: [new arrow.Int64(), (i) => (isNull(i, 6) ? null : BigInt(i) * 1000000000007n - 99n)],
    u8: [new arrow.Uint8(), (i) => (i * 7) % 256],
    u16: [new arrow.Uint16(), (i) => (isNull(i, 3) ? null : (i * 331) % 65536)],
    u32: [new arrow.Uint32(), (i) => (isNull(i, 9) ? null : (i * 2654435761) % 4294967296)],
    u64: [new arrow.Uint64(), (i) => BigInt(i) * 18446744073709551n],
    f32: [new arrow.Float32(), (i) => (isNull(i, 8) ? null : i * 0.5 - 3)],
    f64: [new arrow.Float64(), (i) => (isNull(i, 10) ? null : i * 1.25 + 0.125)],
    b: [new arrow.Bool(), (i) => (isNull(i, 3) ? null : i % 2 === 0)],
    allnull: [new arrow.Int32(), (i) => null],
    s: [new arrow.Utf8(), (i) => (isNull(i, 6) ? null : i % 11 === 0 ? "" : "str-" + i)],
    lowcard: [new arrow.Utf8(), (i) => (isNull(i, 13) ? null : ["red", "green", "blue", ""][i % 4])],
    ls: [new arrow.LargeUtf8(), (i) => (isNull(i, 4) ? null : "large-" + i * 3)],
    bin: [new arrow.Binary(), (i) => (isNull(i, 5) ? null : Uint8Array.from({ length: i % 9 }, (_, j) => (i + j) % 256))],
    lbin: [new arrow.LargeBinary(), (i) => Uint8Array.from({ length: i % 4 }, (_, j) => (i * j) % 256)],
    ts: [new arrow.TimestampMicrosecond("UTC"), (i) => (isNull(i, 7) ? null : 1700000000000 + i * 1001)],
    tsns: [new arrow.TimestampNanosecond(), (i) => i * 1007],
    d32: [new arrow.DateDay(), (i) => (isNull(i, 9) ? null : new Date((19000 + i) * 86400000))],
    li: [new arrow.List(F("item", new arrow.Int32())), (i) =>
      isNull(i, 5) ? null : i % 5 === 1 ? [] : Array.from({ length: i % 4 + 1 }, (_, j) => (j === 1 && i % 3 === 0 ? null : i * 10 + j))],
    lstr: [new arrow.List(F("item", new arrow.Utf8())), (i) =>
      isNull(i, 6) ? null : i % 6 === 2 ? [] : Array.from({ length: i % 3 + 1 }, (_, j) => (j === 2 ? null : `x${i}-${j}`))],
    st: [new arrow.Struct([F("x", new arrow.Float64()), F("y", new arrow.Utf8())]), (i) =>
      ({ x: isNull(i, 4) ? null : i / 4, y: isNull(i, 3) ? null : "y" + i })],
    lst: [new arrow.List(F("item", new arrow.Struct([F("a", new arrow.Int32()), F("b", new arrow.Utf8())]))), (i) =>
      isNull(i, 7) ? null : Array.from({ length: i % 3 }, (_, j) => ({ a: i + j, b: j === 1 ? null : `b${i}.${j}` }))],
    fsl: [new arrow.FixedSizeList(3, F("item", new arrow.Float32())), (i) => [i, i + 0.5, -i]],
    lli: [new arrow.List(F("item", new arrow.List(F("item", new arrow.Int16())))), (i) =>
      isNull(i, 9) ? null : Array.from({ length: i % 3 }, (_, j) => (j === 1 && i % 2 ? null : Array.from({ length: j + 1 }, (_, k) => i + j + k)))],
  };
  const fields = [];
  const data = {};
  for (const [name, [type, fn]] of Object.entries(cols)) {
    fields.push(F(name, type, name !== "u8" && name !== "u64" && name !== "fsl" && name !== "lbin" && name !== "tsns"));
    const vals = Array.from({ length: n }, (_, i) => fn(i));
    data[name] = arrow.vectorFromArray(vals, type);
  }
  const schema = new arrow.Schema(fields);
  return new arrow.Table(schema, new arrow.RecordBatch(schema, arrow.makeData({
    type: new arrow.Struct(fields), length: n, nullCount: 0,
    children: fields.map((f) => data[f.name].data[0]),
  })));
}

// bigTable is large enough (200k rows, ~33 MB) that lance splits several
// columns into pages, and the list's item column pages independently of the
// list column. It is not committed; TestV20BigFile reads it when
// KV0_V20_BIG names its data file.
function bigTable(n) {
  const fields = [F("seq", new arrow.Uint64(), false), F("name", new arrow.Utf8()),
    F("words", new arrow.List(F("item", new arrow.Utf8()))), F("v", new arrow.Float64())];
  const seq = new BigUint64Array(n);
  const names = [], words = [], v = [];
  for (let i = 0; i < n; i++) {
    seq[i] = BigInt(i);
    names.push(i % 17 === 0 ? null : `name-${i}-` + "z".repeat(i % 150));
    words.push(i % 10 === 3 ? null : Array.from({ length: i % 5 }, (_, j) => (j === 2 ? null : `w${i}.${j}-` + "q".repeat((i + j) % 40))));
    v.push(i % 11 === 0 ? null : i / 3);
  }
  const cols = [arrow.makeVector(seq), arrow.vectorFromArray(names, fields[1].type), arrow.vectorFromArray(words, fields[2].type), arrow.vectorFromArray(v, fields[3].type)];
  const schema = new arrow.Schema(fields);
  return new arrow.Table(schema, new arrow.RecordBatch(schema, arrow.makeData({
    type: new arrow.Struct(fields), length: n, nullCount: 0, children: cols.map((c) => c.data[0]),
  })));
}

// codecsTable asks lance for general compression and FSST through field
// metadata; 2.0 applies them to the bytes of binary columns.
function codecsTable(n) {
  const md = (v) => new Map([["lance-encoding:compression", v]]);
  const fields = [
    new arrow.Field("zstd", new arrow.Utf8(), true, md("zstd")),
    new arrow.Field("lz4", new arrow.Binary(), true, md("lz4")),
    new arrow.Field("fsst", new arrow.Utf8(), true, md("fsst")),
  ];
  const text = (i) => `row ${i}: the quick brown fox ${i % 7} jumps over the lazy dog ${i % 13}`;
  const cols = [
    arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (i % 9 === 4 ? null : text(i))), fields[0].type),
    arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (i % 5 === 1 ? null : Buffer.from(text(i * 3)))), fields[1].type),
    arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (i % 6 === 5 ? null : i % 4 === 0 ? "" : text(i * 7))), fields[2].type),
  ];
  const schema = new arrow.Schema(fields);
  return new arrow.Table(schema, new arrow.RecordBatch(schema, arrow.makeData({
    type: new arrow.Struct(fields), length: n, nullCount: 0, children: cols.map((c) => c.data[0]),
  })));
}

(async () => {
  const db = await lancedb.connect(out);
  const opts = { mode: "overwrite", storageOptions: { newTableDataStorageVersion: "2.0" } };
  await db.createTable("types", typesTable(300), opts);
  await db.createTable("codecs", codecsTable(500), opts);
  await db.createTable("big", bigTable(bigRows), opts);
})().catch((e) => { console.error(e); process.exit(1); });
