package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// valueCase is one array and the expected encoding of each of its elements.
type valueCase struct {
	name string
	arr  func(mem memory.Allocator) arrow.Array
	want []string
}

func build[B array.Builder](mem memory.Allocator, dt arrow.DataType, fill func(b B)) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	fill(b.(B))
	return b.NewArray()
}

// fromJSON builds an array of type dt from Arrow's own JSON reader.
func fromJSON(dt arrow.DataType, js string) func(memory.Allocator) arrow.Array {
	return func(mem memory.Allocator) arrow.Array {
		arr, _, err := array.FromJSON(mem, dt, strings.NewReader(js), array.WithUseNumber())
		if err != nil {
			panic(err)
		}
		return arr
	}
}

func tsCase(unit arrow.TimeUnit, tz string, vals []int64, want []string) valueCase {
	return valueCase{
		name: "timestamp_" + unit.String() + "_" + tz,
		arr: func(mem memory.Allocator) arrow.Array {
			return build(mem, &arrow.TimestampType{Unit: unit, TimeZone: tz}, func(b *array.TimestampBuilder) {
				for _, v := range vals {
					b.Append(arrow.Timestamp(v))
				}
				b.AppendNull()
			})
		},
		want: append(want, "null"),
	}
}

func valueCases() []valueCase {
	const day = int64(86400)
	return []valueCase{
		{"null", func(mem memory.Allocator) arrow.Array { return array.NewNull(2) }, []string{"null", "null"}},
		{"bool", fromJSON(arrow.FixedWidthTypes.Boolean, `[true,false,null]`), []string{"true", "false", "null"}},
		{"int8", fromJSON(arrow.PrimitiveTypes.Int8, `[0,-128,127,null]`), []string{"0", "-128", "127", "null"}},
		{"int16", fromJSON(arrow.PrimitiveTypes.Int16, `[-32768,32767,null]`), []string{"-32768", "32767", "null"}},
		{"int32", fromJSON(arrow.PrimitiveTypes.Int32, `[-2147483648,2147483647,null]`), []string{"-2147483648", "2147483647", "null"}},
		{"int64", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.PrimitiveTypes.Int64, func(b *array.Int64Builder) {
				b.AppendValues([]int64{math.MinInt64, math.MaxInt64, 0, -1}, nil)
				b.AppendNull()
			})
		}, []string{"-9223372036854775808", "9223372036854775807", "0", "-1", "null"}},
		{"uint8", fromJSON(arrow.PrimitiveTypes.Uint8, `[0,255,null]`), []string{"0", "255", "null"}},
		{"uint16", fromJSON(arrow.PrimitiveTypes.Uint16, `[65535,null]`), []string{"65535", "null"}},
		{"uint32", fromJSON(arrow.PrimitiveTypes.Uint32, `[4294967295,null]`), []string{"4294967295", "null"}},
		{"uint64", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.PrimitiveTypes.Uint64, func(b *array.Uint64Builder) {
				b.AppendValues([]uint64{math.MaxUint64, 1 << 63, 0}, nil)
				b.AppendNull()
			})
		}, []string{"18446744073709551615", "9223372036854775808", "0", "null"}},
		{"float64", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.PrimitiveTypes.Float64, func(b *array.Float64Builder) {
				b.AppendValues([]float64{
					0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e21, 1e20, 123456789012345680000, 1e-7, 0.000001,
					1.5e-7, 5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308,
					math.NaN(), math.Inf(1), math.Inf(-1), 9007199254740993, 1.7976931348623157e308 / 3,
					-123.456, 100, 1e6, 3.14159,
				}, nil)
				b.AppendNull()
			})
		}, []string{
			"0", "-0", "1", "-1.5", "0.1", "1e+21", "100000000000000000000", "123456789012345680000", "1e-7", "0.000001",
			"1.5e-7", "5e-324", "1.7976931348623157e+308", "5e-324", "2.2250738585072014e-308",
			`"NaN"`, `"Infinity"`, `"-Infinity"`, "9007199254740992", "5.992310449541053e+307",
			"-123.456", "100", "1000000", "3.14159", "null",
		}},
		{"float32", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.PrimitiveTypes.Float32, func(b *array.Float32Builder) {
				b.AppendValues([]float32{
					0.1, float32(math.Copysign(0, -1)), 1.0 / 3, math.MaxFloat32, math.SmallestNonzeroFloat32,
					16777217, 1e-7, 3.4e38, float32(math.NaN()), float32(math.Inf(-1)), 2.5,
				}, nil)
				b.AppendNull()
			})
		}, []string{
			"0.1", "-0", "0.33333334", "3.4028235e+38", "1e-45",
			"16777216", "1e-7", "3.4e+38", `"NaN"`, `"-Infinity"`, "2.5", "null",
		}},
		{"utf8", fromJSON(arrow.BinaryTypes.String, `["", "a\"b\\c", "<>&", "\n\r\t\b\f\u0001\u001f\u007f", "héllo 世界 🎉", "\u2028\u2029", null]`),
			[]string{`""`, `"a\"b\\c"`, `"<>&"`, `"\n\r\t\b\f\u0001\u001f` + "\x7f" + `"`, `"héllo 世界 🎉"`, `"\u2028\u2029"`, "null"}},
		{"large_utf8", fromJSON(arrow.BinaryTypes.LargeString, `["x", null, "y"]`), []string{`"x"`, "null", `"y"`}},
		{"utf8_invalid", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.BinaryTypes.String, func(b *array.StringBuilder) {
				b.Append("a\xffb\xc3")
			})
		}, []string{`"a\ufffdb\ufffd"`}},
		{"binary", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.BinaryTypes.Binary, func(b *array.BinaryBuilder) {
				b.Append([]byte{})
				b.Append([]byte{0})
				b.Append([]byte{0xff, 0xfe})
				b.Append([]byte("abc"))
				b.AppendNull()
			})
		}, []string{`""`, `"AA=="`, `"//4="`, `"YWJj"`, "null"}},
		{"large_binary", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.BinaryTypes.LargeBinary, func(b *array.BinaryBuilder) {
				b.Append([]byte("hello"))
				b.AppendNull()
			})
		}, []string{`"aGVsbG8="`, "null"}},
		tsCase(arrow.Second, "", []int64{0, -1, 1700000000, -62135596800, 253402300799},
			[]string{`"1970-01-01T00:00:00Z"`, `"1969-12-31T23:59:59Z"`, `"2023-11-14T22:13:20Z"`, `"0001-01-01T00:00:00Z"`, `"9999-12-31T23:59:59Z"`}),
		tsCase(arrow.Second, "UTC", []int64{253402300800, -62167219201, math.MaxInt64, math.MinInt64},
			[]string{`"+010000-01-01T00:00:00Z"`, `"-000001-12-31T23:59:59Z"`, `"+292277026596-12-04T15:30:07Z"`, `"-292277022657-01-27T08:29:52Z"`}),
		tsCase(arrow.Millisecond, "America/New_York", []int64{-1, 1, -86400001, 951782400000},
			[]string{`"1969-12-31T23:59:59.999Z"`, `"1970-01-01T00:00:00.001Z"`, `"1969-12-30T23:59:59.999Z"`, `"2000-02-29T00:00:00.000Z"`}),
		tsCase(arrow.Microsecond, "", []int64{-1, 1234567, -1234567},
			[]string{`"1969-12-31T23:59:59.999999Z"`, `"1970-01-01T00:00:01.234567Z"`, `"1969-12-31T23:59:58.765433Z"`}),
		tsCase(arrow.Nanosecond, "+05:30", []int64{-1, math.MaxInt64, math.MinInt64, 0},
			[]string{`"1969-12-31T23:59:59.999999999Z"`, `"2262-04-11T23:47:16.854775807Z"`, `"1677-09-21T00:12:43.145224192Z"`, `"1970-01-01T00:00:00.000000000Z"`}),
		{"date32", func(mem memory.Allocator) arrow.Array {
			return build(mem, arrow.FixedWidthTypes.Date32, func(b *array.Date32Builder) {
				for _, d := range []int64{0, -1, 11016, -719162, 2932896, -719528, math.MaxInt32, math.MinInt32} {
					b.Append(arrow.Date32(d))
				}
				b.AppendNull()
			})
		}, []string{`"1970-01-01"`, `"1969-12-31"`, `"2000-02-29"`, `"0001-01-01"`, `"9999-12-31"`, `"0000-01-01"`, `"+5881580-07-11"`, `"-5877641-06-23"`, "null"}},
		{"list_int32", fromJSON(arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1,2,3],[],null,[null,4,null]]`),
			[]string{"[1,2,3]", "[]", "null", "[null,4,null]"}},
		{"large_list_utf8", fromJSON(arrow.LargeListOf(arrow.BinaryTypes.String), `[["a",null],[],null]`),
			[]string{`["a",null]`, "[]", "null"}},
		{"list_of_list", fromJSON(arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int8)), `[[[1],[],null],[]]`),
			[]string{"[[1],[],null]", "[]"}},
		{"decimal128", fromJSON(&arrow.Decimal128Type{Precision: 10, Scale: 2}, `["1.25","-0.05",null,"-12345678.90","0"]`),
			[]string{`"1.25"`, `"-0.05"`, "null", `"-12345678.90"`, `"0.00"`}},
		{"decimal256", fromJSON(&arrow.Decimal256Type{Precision: 50, Scale: 3}, `["123456789012345678901234567890.123","-1"]`),
			[]string{`"123456789012345678901234567890.123"`, `"-1.000"`}},
		{"fixed_size_binary", fromJSON(&arrow.FixedSizeBinaryType{ByteWidth: 3}, `["AAEC",null,"////"]`),
			[]string{`"AAEC"`, "null", `"////"`}},
		{"map_utf8_int32", fromJSON(arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32),
			`[[{"key":"a","value":1},{"key":"b","value":null}],[],null]`),
			[]string{`[{"key":"a","value":1},{"key":"b","value":null}]`, "[]", "null"}},
		{"fixed_size_list_float32", fromJSON(arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), `[[0.1,0.2,0.3],null,[1,null,-2.5]]`),
			[]string{"[0.1,0.2,0.3]", "null", "[1,null,-2.5]"}},
		{"struct", fromJSON(arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "b\"q", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
			arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}), Nullable: true},
		), `[{"a":1,"b\"q":"x","l":[1.5,null],"s":{"x":true}},null,{"a":null,"b\"q":null,"l":null,"s":null},{"a":2,"b\"q":"","l":[],"s":{"x":null}}]`),
			[]string{
				`{"a":1,"b\"q":"x","l":[1.5,null],"s":{"x":true}}`, "null",
				`{"a":null,"b\"q":null,"l":null,"s":null}`, `{"a":2,"b\"q":"","l":[],"s":{"x":null}}`,
			}},
		{"dictionary", func(mem memory.Allocator) arrow.Array {
			dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
			b := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
			defer b.Release()
			_ = b.AppendString("red")
			_ = b.AppendString("blue")
			b.AppendNull()
			_ = b.AppendString("red")
			return b.NewArray()
		}, []string{`"red"`, `"blue"`, "null", `"red"`}},
	}
}

func TestAppendValue(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for _, tc := range valueCases() {
		t.Run(tc.name, func(t *testing.T) {
			arr := tc.arr(mem)
			defer arr.Release()
			if arr.Len() != len(tc.want) {
				t.Fatalf("array has %d values, want list has %d", arr.Len(), len(tc.want))
			}
			for i, want := range tc.want {
				got, err := AppendValue([]byte("prefix:"), arr, i)
				if err != nil {
					t.Fatalf("value %d: %v", i, err)
				}
				if string(got) != "prefix:"+want {
					t.Errorf("value %d: got %s, want %s", i, got[len("prefix:"):], want)
				}
				if !json.Valid(got[len("prefix:"):]) {
					t.Errorf("value %d: %s is not valid JSON", i, got)
				}
			}
			// A slice of the array must encode the same values.
			if arr.Len() > 1 {
				sl := array.NewSlice(arr, 1, int64(arr.Len()))
				defer sl.Release()
				for i, want := range tc.want[1:] {
					got, err := AppendValue(nil, sl, i)
					if err != nil {
						t.Fatal(err)
					}
					if string(got) != want {
						t.Errorf("slice value %d: got %s, want %s", i, got, want)
					}
				}
			}
		})
	}
}

func TestAppendValueErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	arr := fromJSON(arrow.PrimitiveTypes.Int32, `[1]`)(mem)
	defer arr.Release()
	if _, err := AppendValue(nil, arr, 1); err == nil {
		t.Error("index 1 of a 1-element array: no error")
	}
	if _, err := AppendValue(nil, arr, -1); err == nil {
		t.Error("index -1: no error")
	}
	dur := fromJSON(arrow.FixedWidthTypes.Duration_s, `[1]`)(mem)
	defer dur.Release()
	_, err := AppendValue(nil, dur, 0)
	var ute *UnsupportedTypeError
	if !errors.As(err, &ute) {
		t.Fatalf("duration: got %v, want *UnsupportedTypeError", err)
	}
}

func TestAppendFloatMatchesRules(t *testing.T) {
	// Cross-check the layout against strconv: whatever we write must parse
	// back to the same value at its width, and must use plain notation exactly
	// when ECMAScript does (decimal exponent n in (-6, 21]).
	vals := []float64{1, 10, 1e15, 1e16, 1e17, 1.234e20, 9.99e20, 1e21, 1.5e21, 1e-6, 1.1e-6, 9.9e-7, 1e-7, 123.456e-10, math.Pi, math.E * 1e10, 4.35, 0.3, 1.0 / 3}
	for _, v := range vals {
		for _, sign := range []float64{1, -1} {
			x := v * sign
			got := string(AppendFloat(nil, x, 64))
			back, err := strconv.ParseFloat(got, 64)
			if err != nil || back != x {
				t.Errorf("%v: %s does not round-trip (%v, %v)", x, got, back, err)
			}
			abs := math.Abs(x)
			plain := abs >= 1e-6 && abs < 1e21
			if plain == strings.Contains(got, "e") {
				t.Errorf("%v: %s: plain notation expected %v", x, got, plain)
			}
			f := float32(x)
			got32 := string(AppendFloat(nil, float64(f), 32))
			back32, err := strconv.ParseFloat(got32, 32)
			if err != nil || float32(back32) != f {
				t.Errorf("float32 %v: %s does not round-trip", f, got32)
			}
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	// For valid UTF-8 our escaping equals encoding/json with HTML escaping off.
	strs := []string{"", "plain", "quote\"back\\slash", "<script>&amp;</script>", "ctl\x00\x01\x07\x08\x0b\x0c\x1b\x1f\x7f",
		"tab\tnl\ncr\r", "ünïcödé", "\u2028\u2029", "emoji 🎉", "\U0010ffff", strings.Repeat("x", 1000)}
	for _, s := range strs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := string(appendString(nil, s)); got != want {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

func TestTimestampsAgainstTime(t *testing.T) {
	// Walk a range of instants on both sides of 1970 and compare with the
	// time package in every unit.
	for s := int64(-5e9); s <= 5e9; s += 86400*37 + 3601 {
		for _, ns := range []int64{0, 1, 999_999_999, 123_456_789} {
			for _, u := range []struct {
				unit arrow.TimeUnit
				div  int64
				lay  string
			}{
				{arrow.Second, 1e9, "2006-01-02T15:04:05Z"},
				{arrow.Millisecond, 1e6, "2006-01-02T15:04:05.000Z"},
				{arrow.Microsecond, 1e3, "2006-01-02T15:04:05.000000Z"},
				{arrow.Nanosecond, 1, "2006-01-02T15:04:05.000000000Z"},
			} {
				// |s| ≤ 5e9 keeps every unit, nanoseconds included, in int64.
				v := s*(1e9/u.div) + ns/u.div
				exp := time.Unix(s, ns/u.div*u.div).UTC().Format(u.lay)
				got := string(appendTimestamp(nil, v, u.unit))
				if got != `"`+exp+`"` {
					t.Fatalf("%d %s: got %s, want %q", v, u.unit, got, exp)
				}
			}
		}
	}
}

func TestWriter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Uint64Builder).AppendValues([]uint64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
	vb := b.Field(2).(*array.FixedSizeListBuilder)
	fb := vb.ValueBuilder().(*array.Float32Builder)
	vb.Append(true)
	fb.AppendValues([]float32{0.5, 1}, nil)
	vb.AppendNull() // appends placeholder items itself
	vb.Append(true)
	fb.AppendValues([]float32{-1, 2.25}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	var out bytes.Buffer
	w := NewWriter(&out)
	for range 2 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	sl := rec.NewSlice(1, 3)
	defer sl.Release()
	if err := w.Write(sl); err != nil {
		t.Fatal(err)
	}
	lines := `{"id":1,"name":"a","v":[0.5,1]}
{"id":2,"name":null,"v":null}
{"id":3,"name":"c","v":[-1,2.25]}
`
	want := lines + lines + strings.SplitN(lines, "\n", 2)[1]
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestWriterUnsupportedColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ok", Type: arrow.PrimitiveTypes.Int32},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Duration_s})},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).Append(1)
	sb := b.Field(1).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.DurationBuilder).Append(5)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var out bytes.Buffer
	err := NewWriter(&out).Write(rec)
	var ute *UnsupportedTypeError
	if !errors.As(err, &ute) || ute.Column != "s.d" {
		t.Fatalf("got %v, want UnsupportedTypeError for column s.d", err)
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q before failing", out.String())
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterPropagatesWriteErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	arr := fromJSON(arrow.PrimitiveTypes.Int32, `[1,2]`)(mem)
	defer arr.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil), []arrow.Array{arr}, 2)
	defer rec.Release()
	if err := NewWriter(errWriter{}).Write(rec); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("got %v, want the writer's error", err)
	}
}

func BenchmarkWriter(b *testing.B) {
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	const n = 8192
	for i := range n {
		rb.Field(0).(*array.Uint64Builder).Append(uint64(i % 100))
		rb.Field(1).(*array.Int64Builder).Append(int64(i))
		rb.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000000 + int64(i)*1000))
		rb.Field(3).(*array.Float64Builder).Append(float64(i) * 0.37)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var out bytes.Buffer
	w := NewWriter(&out)
	for b.Loop() {
		out.Reset()
		if err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
