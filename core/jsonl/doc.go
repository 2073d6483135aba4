// Package jsonl writes Arrow record batches as JSON Lines in kv0's canonical
// encoding: one JSON object per row, keys in schema order, no spaces.
//
// The encoding is exact, because tests compare it byte for byte with the text
// that the interop suite derives from lancedb's own reads
// (tests/interop/jsonl.mjs implements the same rules in JavaScript):
//
//	null                       null
//	bool                       true | false
//	int8 … int64, uint8 … uint64
//	                           every decimal digit, no exponent, no quotes
//	float32, float64           shortest decimal that round-trips at the
//	                           column's width (float32 uses 32-bit rounding),
//	                           laid out like ECMAScript Number::toString
//	                           (JSON.stringify): plain notation when the
//	                           decimal exponent n (value = 0.d1d2… × 10^n)
//	                           satisfies -6 < n ≤ 21, otherwise d[.ddd]e±x;
//	                           so 1e21 → 1e+21, 1e20 → 100000000000000000000,
//	                           1e-7 → 1e-7, 0.000001 → 0.000001,
//	                           5e-324 → 5e-324, float32 0.1 → 0.1.
//	                           Negative zero is written -0 (JavaScript would
//	                           write 0; we keep the sign so the value round-trips).
//	                           NaN, +Inf, -Inf → "NaN", "Infinity", "-Infinity".
//	utf8, large_utf8, string_view
//	                           JSON string: " and \ escaped, \b \f \n \r \t as
//	                           short escapes, other bytes below 0x20 as \u00xx
//	                           (lowercase hex), U+2028 and U+2029 as \u2028 and
//	                           \u2029, invalid UTF-8 bytes as \ufffd; < > & are
//	                           not escaped. Everything else is copied verbatim.
//	binary, large_binary, binary_view, fixed_size_binary
//	                           standard padded base64 string
//	decimal128, decimal256     JSON string of the exact decimal: its digits
//	                           with the type's scale after the point ("-1.25",
//	                           "0.05"; a negative scale appends zeros)
//	timestamp (any unit, any zone)
//	                           RFC 3339 in UTC ending in Z, with exactly 0, 3, 6
//	                           or 9 fractional digits for s, ms, us, ns;
//	                           "1969-12-31T23:59:59.999Z" for -1 ms. Years
//	                           outside 0000…9999 are written as a sign and at
//	                           least six digits ("+010000", "-000001"), like
//	                           JavaScript's Date.prototype.toISOString.
//	date32                     "YYYY-MM-DD" (same rule for the year)
//	list, large_list, fixed_size_list
//	                           JSON array
//	map                        JSON array of its entries, each an object
//	                           {"key": …, "value": …}
//	struct                     JSON object, keys in field order
//	dictionary                 the value its index points at
//
// Any other type is refused with an *UnsupportedTypeError naming the column.
//
// The hot path appends into a reused []byte and uses neither reflection nor
// encoding/json: a Writer compiles each column into a small encoder closure
// once per batch and then runs the closures row by row.
package jsonl
