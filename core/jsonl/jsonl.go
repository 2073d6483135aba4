package jsonl

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// UnsupportedTypeError reports a column whose Arrow type has no canonical JSON
// encoding. Match it with errors.As.
type UnsupportedTypeError struct {
	// Column is the dotted path of the column ("s.items" for a struct field);
	// empty when AppendValue was called on a bare array.
	Column string
	// Type is the refused Arrow type.
	Type arrow.DataType
}

// Error implements error.
func (e *UnsupportedTypeError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("jsonl: unsupported type %s", e.Type)
	}
	return fmt.Sprintf("jsonl: column %q: unsupported type %s", e.Column, e.Type)
}

// flushSize is the buffered size after which Writer.Write hands its buffer to
// the underlying io.Writer.
const flushSize = 64 << 10

// Writer writes record batches as JSON Lines to an io.Writer. Each call to
// Write hands complete lines to the underlying writer in chunks of about
// 64 KiB and keeps nothing buffered between calls. A Writer is not safe for
// concurrent use.
type Writer struct {
	w   io.Writer
	buf []byte

	schema *arrow.Schema // schema the cached keys were built for
	keys   [][]byte      // `{"name":` for the first column, `,"name":` after
	encs   []encoder     // per-column encoders, rebuilt for every batch
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w}
}

// Write appends one line per row of rec. Columns whose type is not supported
// make it fail with an *UnsupportedTypeError before anything is written for
// the batch; errors of the underlying writer are returned as they are.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	schema := rec.Schema()
	if w.schema == nil || !w.schema.Equal(schema) {
		w.keys = w.keys[:0]
		for i, f := range schema.Fields() {
			var k []byte
			if i == 0 {
				k = append(k, '{')
			} else {
				k = append(k, ',')
			}
			k = appendString(k, f.Name)
			k = append(k, ':')
			w.keys = append(w.keys, k)
		}
		w.schema = schema
	}
	w.encs = w.encs[:0]
	for i := 0; i < int(rec.NumCols()); i++ {
		enc, err := newEncoder(rec.Column(i), schema.Field(i).Name)
		if err != nil {
			return err
		}
		w.encs = append(w.encs, enc)
	}
	rows := int(rec.NumRows())
	buf := w.buf[:0]
	for r := 0; r < rows; r++ {
		if len(w.encs) == 0 {
			buf = append(buf, '{')
		}
		for c, enc := range w.encs {
			buf = append(buf, w.keys[c]...)
			buf = enc(buf, r)
		}
		buf = append(buf, '}', '\n')
		if len(buf) >= flushSize {
			if _, err := w.w.Write(buf); err != nil {
				w.buf = buf[:0]
				return err
			}
			buf = buf[:0]
		}
	}
	w.buf = buf[:0]
	if len(buf) > 0 {
		if _, err := w.w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// AppendValue appends the canonical JSON encoding of arr[i] to dst. It
// compiles an encoder for arr on every call; to encode many values of one
// array, use a Writer. It returns an *UnsupportedTypeError for types without
// an encoding, and an error when i is out of range.
func AppendValue(dst []byte, arr arrow.Array, i int) ([]byte, error) {
	if i < 0 || i >= arr.Len() {
		return dst, fmt.Errorf("jsonl: index %d out of range [0, %d)", i, arr.Len())
	}
	enc, err := newEncoder(arr, "")
	if err != nil {
		return dst, err
	}
	return enc(dst, i), nil
}

// encoder appends the JSON encoding of element i of the array it was built
// for. i must be in range: the callers check it.
type encoder func(dst []byte, i int) []byte

// newEncoder compiles an encoder for arr. path names the column in errors.
func newEncoder(arr arrow.Array, path string) (encoder, error) {
	enc, err := newValueEncoder(arr, path)
	if err != nil {
		return nil, err
	}
	if arr.NullN() == 0 {
		return enc, nil
	}
	if arr.DataType().ID() == arrow.NULL {
		return enc, nil
	}
	return func(dst []byte, i int) []byte {
		if arr.IsNull(i) {
			return append(dst, "null"...)
		}
		return enc(dst, i)
	}, nil
}

// newValueEncoder compiles an encoder that assumes arr[i] is not null.
func newValueEncoder(arr arrow.Array, path string) (encoder, error) {
	switch a := arr.(type) {
	case *array.Null:
		return func(dst []byte, _ int) []byte { return append(dst, "null"...) }, nil
	case *array.Boolean:
		return func(dst []byte, i int) []byte {
			if a.Value(i) {
				return append(dst, "true"...)
			}
			return append(dst, "false"...)
		}, nil
	case *array.Int8:
		v := a.Int8Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(v[i]), 10) }, nil
	case *array.Int16:
		v := a.Int16Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(v[i]), 10) }, nil
	case *array.Int32:
		v := a.Int32Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(v[i]), 10) }, nil
	case *array.Int64:
		v := a.Int64Values()
		return func(dst []byte, i int) []byte { return strconv.AppendInt(dst, v[i], 10) }, nil
	case *array.Uint8:
		v := a.Uint8Values()
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(v[i]), 10) }, nil
	case *array.Uint16:
		v := a.Uint16Values()
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(v[i]), 10) }, nil
	case *array.Uint32:
		v := a.Uint32Values()
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(v[i]), 10) }, nil
	case *array.Uint64:
		v := a.Uint64Values()
		return func(dst []byte, i int) []byte { return strconv.AppendUint(dst, v[i], 10) }, nil
	case *array.Float32:
		v := a.Float32Values()
		return func(dst []byte, i int) []byte { return AppendFloat(dst, float64(v[i]), 32) }, nil
	case *array.Float64:
		v := a.Float64Values()
		return func(dst []byte, i int) []byte { return AppendFloat(dst, v[i], 64) }, nil
	case *array.String:
		return func(dst []byte, i int) []byte { return appendString(dst, a.Value(i)) }, nil
	case *array.LargeString:
		return func(dst []byte, i int) []byte { return appendString(dst, a.Value(i)) }, nil
	case *array.StringView:
		return func(dst []byte, i int) []byte { return appendString(dst, a.Value(i)) }, nil
	case *array.Binary:
		return func(dst []byte, i int) []byte { return appendBase64(dst, a.Value(i)) }, nil
	case *array.LargeBinary:
		return func(dst []byte, i int) []byte { return appendBase64(dst, a.Value(i)) }, nil
	case *array.BinaryView:
		return func(dst []byte, i int) []byte { return appendBase64(dst, a.Value(i)) }, nil
	case *array.FixedSizeBinary:
		return func(dst []byte, i int) []byte { return appendBase64(dst, a.Value(i)) }, nil
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return func(dst []byte, i int) []byte { return appendString(dst, a.Value(i).ToString(scale)) }, nil
	case *array.Decimal256:
		scale := a.DataType().(*arrow.Decimal256Type).Scale
		return func(dst []byte, i int) []byte { return appendString(dst, a.Value(i).ToString(scale)) }, nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		v := a.TimestampValues()
		return func(dst []byte, i int) []byte { return appendTimestamp(dst, int64(v[i]), unit) }, nil
	case *array.Date32:
		v := a.Date32Values()
		return func(dst []byte, i int) []byte {
			dst = append(dst, '"')
			dst = appendDate(dst, int64(v[i]))
			return append(dst, '"')
		}, nil
	case *array.Map:
		return newListEncoder(a, a.ListValues(), path)
	case *array.List:
		return newListEncoder(a, a.ListValues(), path)
	case *array.LargeList:
		return newListEncoder(a, a.ListValues(), path)
	case *array.FixedSizeList:
		return newListEncoder(a, a.ListValues(), path)
	case *array.Struct:
		return newStructEncoder(a, path)
	case *array.Dictionary:
		values, err := newEncoder(a.Dictionary(), path)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, i int) []byte { return values(dst, a.GetValueIndex(i)) }, nil
	}
	return nil, &UnsupportedTypeError{Column: path, Type: arr.DataType()}
}

// newListEncoder encodes list-like arrays as JSON arrays of their items.
func newListEncoder(a array.ListLike, items arrow.Array, path string) (encoder, error) {
	item, err := newEncoder(items, path+".item")
	if err != nil {
		return nil, err
	}
	return func(dst []byte, i int) []byte {
		start, end := a.ValueOffsets(i)
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = item(dst, int(j))
		}
		return append(dst, ']')
	}, nil
}

// newStructEncoder encodes struct arrays as JSON objects, keys in field order.
func newStructEncoder(a *array.Struct, path string) (encoder, error) {
	st := a.DataType().(*arrow.StructType)
	keys := make([][]byte, st.NumFields())
	encs := make([]encoder, st.NumFields())
	for f := range encs {
		name := st.Field(f).Name
		var k []byte
		if f == 0 {
			k = append(k, '{')
		} else {
			k = append(k, ',')
		}
		k = appendString(k, name)
		keys[f] = append(k, ':')
		child := path + "." + name
		if path == "" {
			child = name
		}
		enc, err := newEncoder(a.Field(f), child)
		if err != nil {
			return nil, err
		}
		encs[f] = enc
	}
	return func(dst []byte, i int) []byte {
		if len(encs) == 0 {
			return append(dst, '{', '}')
		}
		for f, enc := range encs {
			dst = append(dst, keys[f]...)
			dst = enc(dst, i)
		}
		return append(dst, '}')
	}, nil
}

// AppendFloat appends v in the canonical float encoding (see the package
// comment). bitSize is 32 for float32 values (widened to float64) and 64
// otherwise; it selects the precision of the shortest round-trip digits.
func AppendFloat(dst []byte, v float64, bitSize int) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(dst, `"-Infinity"`...)
	case v == 0:
		if math.Signbit(v) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	// Shortest digits in scientific form: [-]d[.ddd]e±xx.
	var scratch [32]byte
	sci := strconv.AppendFloat(scratch[:0], v, 'e', -1, bitSize)
	if sci[0] == '-' {
		dst = append(dst, '-')
		sci = sci[1:]
	}
	var digits [24]byte
	k := 0
	p := 0
	for ; p < len(sci) && sci[p] != 'e'; p++ {
		if sci[p] != '.' {
			digits[k] = sci[p]
			k++
		}
	}
	// sci[p] == 'e'; parse the signed exponent of d.ddd × 10^exp.
	exp := 0
	neg := sci[p+1] == '-'
	for _, c := range sci[p+2:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	n := exp + 1 // value = 0.d1d2…dk × 10^n
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := 0; j < -n; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string (see the package comment).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendBase64 appends b as a standard padded base64 JSON string.
func appendBase64(dst []byte, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// floorDivMod returns the floor quotient and the non-negative remainder.
func floorDivMod(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// appendTimestamp appends a quoted RFC 3339 UTC timestamp.
func appendTimestamp(dst []byte, v int64, unit arrow.TimeUnit) []byte {
	var perSec int64
	var fracDigits int
	switch unit {
	case arrow.Second:
		perSec, fracDigits = 1, 0
	case arrow.Millisecond:
		perSec, fracDigits = 1e3, 3
	case arrow.Microsecond:
		perSec, fracDigits = 1e6, 6
	default:
		perSec, fracDigits = 1e9, 9
	}
	sec, frac := floorDivMod(v, perSec)
	days, sod := floorDivMod(sec, 86400)
	dst = append(dst, '"')
	dst = appendDate(dst, days)
	dst = append(dst, 'T')
	dst = append2(dst, sod/3600)
	dst = append(dst, ':')
	dst = append2(dst, sod/60%60)
	dst = append(dst, ':')
	dst = append2(dst, sod%60)
	if fracDigits > 0 {
		dst = append(dst, '.')
		var tmp [9]byte
		for j := fracDigits - 1; j >= 0; j-- {
			tmp[j] = byte('0' + frac%10)
			frac /= 10
		}
		dst = append(dst, tmp[:fracDigits]...)
	}
	return append(dst, 'Z', '"')
}

// append2 appends a two-digit number 0…99.
func append2(dst []byte, v int64) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendDate appends the proleptic Gregorian date of a day count since
// 1970-01-01 as YYYY-MM-DD (years outside 0…9999 as ±YYYYYY).
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	if y >= 0 && y <= 9999 {
		dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	} else {
		if y < 0 {
			dst = append(dst, '-')
			y = -y
		} else {
			dst = append(dst, '+')
		}
		var tmp [24]byte
		s := strconv.AppendInt(tmp[:0], y, 10)
		for j := len(s); j < 6; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, s...)
	}
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d)
}

// civilFromDays converts days since 1970-01-01 into a proleptic Gregorian
// year, month and day (H. Hinnant's days-to-civil algorithm). It is exact for
// every day count a timestamp in seconds can produce.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era, doe := floorDivMod(z, 146097)
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
