// Canonical JSON Lines encoding of Arrow data, the JavaScript twin of
// core/jsonl (see core/jsonl/doc.go for the rules). It reads the raw buffers of
// arrow-js Data objects instead of Vector.get, because get() loses precision
// (timestamps become milliseconds, dates become Date objects).
//
// It needs only the numbers of Arrow's enums (as Schema.fbs and apache-arrow
// number them), so it loads no apache-arrow of its own and encodes tables
// of any copy: lancedb's of either install, the wasm suites'.
const T = Object.freeze({
  Dictionary: -1, Null: 1, Int: 2, Float: 3, Binary: 4, Utf8: 5, Bool: 6, Decimal: 7, Date: 8, Timestamp: 10,
  List: 12, Struct: 13, FixedSizeBinary: 15, FixedSizeList: 16, Map: 17, LargeBinary: 19, LargeUtf8: 20,
});
const arrow = Object.freeze({
  TimeUnit: { SECOND: 0, MILLISECOND: 1, MICROSECOND: 2, NANOSECOND: 3 },
  Precision: { HALF: 0, SINGLE: 1, DOUBLE: 2 },
  DateUnit: { DAY: 0, MILLISECOND: 1 },
});

// encodeString writes s as a JSON string: JSON.stringify's escaping plus
// \u2028 and \u2029, which encoding/json (and core/jsonl) always escape.
export function encodeString(s) {
  return JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => "\\u" + c.charCodeAt(0).toString(16));
}

// encodeFloat64 writes a double as the shortest round-trip decimal in
// ECMAScript Number::toString layout, keeping the sign of -0.
export function encodeFloat64(v) {
  if (Number.isNaN(v)) return '"NaN"';
  if (v === Infinity) return '"Infinity"';
  if (v === -Infinity) return '"-Infinity"';
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  return String(v);
}

// encodeFloat32 writes a float32 value (given as the exactly widened double)
// as the shortest decimal that rounds back to the same float32; when two
// decimals of that length qualify, the one closer to the value wins, and an
// exact tie goes to the even last digit (as Go's strconv and ECMAScript's
// Number::toString do). The decimal has at most 9 significant digits, so
// String(Number(decimal)) prints exactly those digits in ECMAScript layout.
export function encodeFloat32(v) {
  if (Number.isNaN(v) || v === Infinity || v === -Infinity || v === 0) return encodeFloat64(v);
  const a = Math.abs(v);
  // Some p-digit decimal round-trips ⇒ some (p+1)-digit one does too, so
  // binary-search the shortest length; 9 digits always suffice.
  let lo = 1;
  let hi = 9;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (shortestAt(a, mid) !== null) hi = mid;
    else lo = mid + 1;
  }
  return (v < 0 ? "-" : "") + shortestAt(a, lo);
}

// shortestAt returns the text of the p-digit decimal that rounds to the
// float32 a > 0 (see encodeFloat32 for the choice between two), or null.
function shortestAt(a, p) {
  // near: the closest p-digit decimal (toPrecision rounds correctly, ties up).
  const [mant, exp] = a.toExponential(p - 1).split("e");
  const near = BigInt(mant.replace(".", ""));
  const scale = Number(exp) - (p - 1); // value = digits × 10^scale
  const nearV = Number(`${near}e${scale}`);
  const other = nearV > a ? near - 1n : near + 1n;
  const otherV = Number(`${other}e${scale}`);
  const okNear = Math.fround(nearV) === a;
  const okOther = Math.fround(otherV) === a;
  let pick = null;
  if (okNear && okOther) {
    // Only a near-equal pair of distances can be a tie; check those exactly.
    const dn = Math.abs(nearV - a);
    const dother = Math.abs(otherV - a);
    const close = Math.abs(dn - dother) <= 1e-9 * Math.max(dn, dother);
    pick = close && isTie(a, p) ? (near % 2n === 0n ? near : other) : near;
  } else if (okNear) pick = near;
  else if (okOther) pick = other;
  return pick === null ? null : String(Number(`${pick}e${scale}`));
}

// isTie reports whether the exact decimal expansion of a has exactly p+1
// significant digits ending in 5, i.e. a lies halfway between two p-digit
// decimals. toPrecision(100) is exact for every float32 whose expansion is
// that short.
function isTie(a, p) {
  const m = a.toPrecision(100).split("e")[0].replace(".", "").replace(/^0+/, "").replace(/0+$/, "");
  return m.length === p + 1 && m.endsWith("5");
}

// decimalString writes the unscaled value x of a decimal of scale scale
// exactly: its digits with scale of them after the point ("-1.25", "0.05",
// "0.00"); a negative scale appends zeros to a value other than 0.
function decimalString(x, scale) {
  const sign = x < 0n ? "-" : "";
  let digits = (x < 0n ? -x : x).toString();
  if (scale <= 0) return sign + (scale < 0 && x !== 0n ? digits + "0".repeat(-scale) : digits);
  if (digits.length <= scale) digits = "0".repeat(scale - digits.length + 1) + digits;
  return sign + digits.slice(0, digits.length - scale) + "." + digits.slice(digits.length - scale);
}

const B64 = (bytes) => '"' + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") + '"';
const decoder = new TextDecoder("utf-8");

function floorDiv(a, b) {
  const q = a / b;
  return a % b < 0n ? q - 1n : q;
}

function pad(n, w) {
  return String(n).padStart(w, "0");
}

// dateString renders days since 1970-01-01 (a Number) as YYYY-MM-DD, years
// outside 0..9999 as ±YYYYYY (like Date.prototype.toISOString).
export function dateString(days) {
  let z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  let y = yoe + era * 400;
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) y++;
  const ys = y >= 0 && y <= 9999 ? pad(y, 4) : (y < 0 ? "-" : "+") + pad(Math.abs(y), 6);
  return `${ys}-${pad(m, 2)}-${pad(d, 2)}`;
}

const UNIT = {
  [arrow.TimeUnit.SECOND]: [1n, 0],
  [arrow.TimeUnit.MILLISECOND]: [1000n, 3],
  [arrow.TimeUnit.MICROSECOND]: [1000000n, 6],
  [arrow.TimeUnit.NANOSECOND]: [1000000000n, 9],
};

// timestampString renders a BigInt count of units since the epoch.
export function timestampString(v, unit) {
  const [perSec, digits] = UNIT[unit];
  const sec = floorDiv(v, perSec);
  const frac = v - sec * perSec;
  const days = floorDiv(sec, 86400n);
  const sod = Number(sec - days * 86400n);
  let s = `${dateString(Number(days))}T${pad(Math.floor(sod / 3600), 2)}:${pad(Math.floor(sod / 60) % 60, 2)}:${pad(sod % 60, 2)}`;
  if (digits > 0) s += "." + pad(frac, digits);
  return s + "Z";
}

function isValidFn(data) {
  if (!data.nullCount || !data.nullBitmap || data.nullBitmap.length === 0) return () => true;
  const bm = data.nullBitmap;
  const off = data.offset;
  return (i) => ((bm[(off + i) >> 3] >> ((off + i) & 7)) & 1) === 1;
}

// encoderFor compiles a function i => JSON text for element i of data.
export function encoderFor(data, path = "") {
  if (data.offset !== 0 && data.typeId !== T.Bool) {
    // IPC-decoded data (what lancedb's toArrow gives) always starts at 0.
    throw new Error(`jsonl.mjs: ${path}: sliced data is not supported`);
  }
  const valid = isValidFn(data);
  const enc = valueEncoder(data, path);
  if (data.typeId === T.Null) return () => "null";
  return (i) => (valid(i) ? enc(i) : "null");
}

function valueEncoder(data, path) {
  const t = data.type;
  const vals = data.values;
  switch (t.typeId) {
    case T.Bool: {
      const off = data.offset;
      return (i) => (((vals[(off + i) >> 3] >> ((off + i) & 7)) & 1) === 1 ? "true" : "false");
    }
    case T.Int:
      return (i) => String(vals[i]);
    case T.Float:
      if (t.precision === arrow.Precision.SINGLE) return (i) => encodeFloat32(vals[i]);
      if (t.precision === arrow.Precision.DOUBLE) return (i) => encodeFloat64(vals[i]);
      break;
    case T.Utf8:
    case T.LargeUtf8: {
      const offs = data.valueOffsets;
      return (i) => encodeString(decoder.decode(vals.subarray(Number(offs[i]), Number(offs[i + 1]))));
    }
    case T.Binary:
    case T.LargeBinary: {
      const offs = data.valueOffsets;
      return (i) => B64(vals.subarray(Number(offs[i]), Number(offs[i + 1])));
    }
    case T.FixedSizeBinary: {
      const w = t.byteWidth;
      return (i) => B64(vals.subarray(i * w, (i + 1) * w));
    }
    case T.Decimal: {
      const words = t.bitWidth / 32; // little-endian 32-bit words, two's complement
      return (i) => {
        let x = 0n;
        for (let k = words - 1; k >= 0; k--) x = (x << 32n) | BigInt(vals[i * words + k]);
        return encodeString(decimalString(BigInt.asIntN(t.bitWidth, x), t.scale));
      };
    }
    case T.Timestamp:
      return (i) => '"' + timestampString(BigInt(vals[i]), t.unit) + '"';
    case T.Date:
      if (t.unit === arrow.DateUnit.DAY) return (i) => '"' + dateString(vals[i]) + '"';
      break;
    case T.Map: // a list of its entries, each a {"key", "value"} struct
    case T.List: {
      const offs = data.valueOffsets;
      const item = encoderFor(data.children[0], path + ".item");
      return (i) => {
        const parts = [];
        for (let j = Number(offs[i]); j < Number(offs[i + 1]); j++) parts.push(item(j));
        return "[" + parts.join(",") + "]";
      };
    }
    case T.FixedSizeList: {
      const n = t.listSize;
      const item = encoderFor(data.children[0], path + ".item");
      return (i) => {
        const parts = [];
        for (let j = i * n; j < (i + 1) * n; j++) parts.push(item(j));
        return "[" + parts.join(",") + "]";
      };
    }
    case T.Struct: {
      const encs = t.children.map((f, k) => [encodeString(f.name) + ":", encoderFor(data.children[k], path ? `${path}.${f.name}` : f.name)]);
      return (i) => "{" + encs.map(([key, e]) => key + e(i)).join(",") + "}";
    }
    case T.Dictionary: {
      const dict = data.dictionary;
      if (!dict || dict.data.length !== 1) throw new Error(`jsonl.mjs: ${path}: dictionary with ${dict?.data.length} chunks`);
      const denc = encoderFor(dict.data[0], path);
      return (i) => denc(Number(vals[i]));
    }
  }
  throw new Error(`jsonl.mjs: column ${path}: unsupported type ${t}`);
}

// encodeTable returns the JSON Lines text (each line ending in "\n") of an
// arrow-js Table, keys in schema order. names, when given, replaces the
// output key of each column (used to undo casts done for arrow-js' sake).
export function* encodeTableLines(table) {
  const keys = table.schema.fields.map((f, k) => (k === 0 ? "{" : ",") + encodeString(f.name) + ":");
  for (const batch of table.batches) {
    const encs = table.schema.fields.map((f, k) => encoderFor(batch.data.children[k], f.name));
    for (let r = 0; r < batch.numRows; r++) {
      let line = encs.length === 0 ? "{" : "";
      for (let k = 0; k < encs.length; k++) line += keys[k] + encs[k](r);
      yield line + "}\n";
    }
  }
}
