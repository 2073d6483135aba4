package lancefile

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestConcat checks Concat against arrow-go's Concatenate on slices (with
// offsets, nulls and empty pieces) of arrays of every type a Lance schema
// resolves to, and that other types are refused.
func TestConcat(t *testing.T) {
	mem := memory.DefaultAllocator
	item := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	cases := []struct {
		dt   arrow.DataType
		json string
	}{
		{arrow.Null, `[null, null, null, null, null, null, null]`},
		{arrow.FixedWidthTypes.Boolean, `[true, false, null, true, true, false, null, true, false, true]`},
		{arrow.PrimitiveTypes.Int8, `[1, -2, null, 4, 5, 6, -7, 8, null, 10]`},
		{arrow.PrimitiveTypes.Uint16, `[1, 2, null, 4, 5, 6, 7, 8, null, 10]`},
		{arrow.PrimitiveTypes.Int32, `[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]`},
		{arrow.PrimitiveTypes.Uint64, `[1, 2, null, 4, 5, 6, 7, 8, null, 10]`},
		{arrow.PrimitiveTypes.Float32, `[1.5, 2, null, 4, 5, 6, 7, 8, null, 10]`},
		{arrow.PrimitiveTypes.Float64, `[1.5, 2, null, 4, 5, 6, 7, 8, null, 10]`},
		{arrow.FixedWidthTypes.Date32, `[1, 2, null, 4, 5, 6, 7, 8, null, 10]`},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, `[1, 2, null, 4, 5, 6, 7, 8, null, 10]`},
		{arrow.BinaryTypes.String, `["a", "bc", null, "", "def", "g", null, "hij", "k", "lmnop"]`},
		{arrow.BinaryTypes.LargeString, `["a", "bc", null, "", "def", "g", null, "hij", "k", "lmnop"]`},
		{arrow.BinaryTypes.Binary, `["YQ==", "YmM=", null, "", "ZGVm", "Zw==", null, "aGlq", "aw==", "bG1ub3A="]`},
		{arrow.ListOf(arrow.PrimitiveTypes.Int64), `[[1, 2], null, [], [3], [4, null, 5], [6], null, [7, 8, 9], [10], []]`},
		{arrow.LargeListOf(arrow.BinaryTypes.String), `[["a"], null, [], ["b", null], ["cd"], ["e"], null, ["f", "g"], ["h"], []]`},
		{arrow.ListOf(item), `[[{"a": 1, "s": "x"}], null, [], [{"a": null, "s": "y"}, null], [{"a": 3, "s": null}], [], null, [{"a": 4, "s": "z"}], [], []]`},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), `[[1, 2], null, [3, null], [4, 5], [6, 7], [8, 9], null, [10, 11], [12, 13], [14, 15]]`},
		{&arrow.Decimal128Type{Precision: 20, Scale: 2}, `["1.5", "2", null, "4", "5", "6", "7", "8", null, "10"]`},
		{&arrow.FixedSizeBinaryType{ByteWidth: 2}, `["YWE=", "YmI=", null, "Y2M=", "ZGQ=", "ZWU=", "ZmY=", "Z2c=", null, "aGg="]`},
		{arrow.FixedWidthTypes.Duration_ms, `[1, 2, null, 4, 5, 6, 7, 8, null, 10]`},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), `[[{"key": "a", "value": 1}], null, [], [{"key": "b", "value": null}, {"key": "c", "value": 3}], [], [{"key": "d", "value": 4}], null, [], [{"key": "e", "value": 5}], []]`},
		{item, `[{"a": 1, "s": "x"}, null, {"a": null, "s": "y"}, {"a": 3, "s": null}, {"a": 4, "s": "z"}, {"a": 5, "s": "w"}, null, {"a": 6, "s": "v"}, {"a": 7, "s": "u"}, {"a": 8, "s": "t"}]`},
	}
	for _, c := range cases {
		whole, _, err := array.FromJSON(mem, c.dt, strings.NewReader(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.dt, err)
		}
		for _, cuts := range [][][2]int64{{{0, 7}}, {{2, 5}}, {{0, 3}, {3, 7}}, {{1, 4}, {4, 4}, {5, 7}, {0, 2}}, {{3, 3}}, {{6, 7}, {1, 6}, {0, 7}}} {
			parts := make([]arrow.Array, len(cuts))
			for i, cut := range cuts {
				parts[i] = array.NewSlice(whole, cut[0], cut[1])
			}
			got, err := Concat(parts)
			if err != nil {
				t.Fatalf("%s %v: %v", c.dt, cuts, err)
			}
			want, err := array.Concatenate(parts, mem)
			if err != nil {
				t.Fatal(err)
			}
			if got.Data().Offset() != 0 || got.NullN() != want.NullN() || !array.Equal(got, want) {
				t.Errorf("%s %v: got %v (%d nulls, offset %d), want %v (%d nulls)", c.dt, cuts, got, got.NullN(), got.Data().Offset(), want, want.NullN())
			}
			got.Release()
			want.Release()
			releaseAll(parts)
		}
		whole.Release()
	}
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	d, _, err := array.FromJSON(mem, dict, strings.NewReader(`["a", "b", "a"]`))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if _, err := Concat([]arrow.Array{d, d}); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), "dictionary") {
		t.Errorf("dictionary: err = %v, want ErrUnsupportedType naming the type", err)
	}
	i32, _, _ := array.FromJSON(mem, arrow.PrimitiveTypes.Int32, strings.NewReader(`[1]`))
	i64, _, _ := array.FromJSON(mem, arrow.PrimitiveTypes.Int64, strings.NewReader(`[1]`))
	defer i32.Release()
	defer i64.Release()
	if _, err := Concat([]arrow.Array{i32, i64}); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("int32 and int64: err = %v, want ErrUnsupportedType", err)
	}
	if _, err := Concat(nil); err == nil {
		t.Error("no parts: no error")
	}
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// BenchmarkConcat compares Concat with arrow-go's Concatenate on eight
// sliced parts of 65 k values (int64 with nulls, strings).
func BenchmarkConcat(b *testing.B) {
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String} {
		var parts []arrow.Array
		for p := 0; p < 8; p++ {
			var a arrow.Array
			if dt.ID() == arrow.INT64 {
				bl := array.NewInt64Builder(memory.DefaultAllocator)
				for i := 0; i < 65536; i++ {
					if i%17 == 0 {
						bl.AppendNull()
					} else {
						bl.Append(int64(i))
					}
				}
				a = bl.NewArray()
			} else {
				bl := array.NewStringBuilder(memory.DefaultAllocator)
				for i := 0; i < 65536; i++ {
					bl.Append(strconv.Itoa(i))
				}
				a = bl.NewArray()
			}
			parts = append(parts, array.NewSlice(a, 3, 65000))
			a.Release()
		}
		b.Run("kv0/"+dt.String(), func(b *testing.B) {
			for b.Loop() {
				a, err := Concat(parts)
				if err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
		})
		b.Run("arrow/"+dt.String(), func(b *testing.B) {
			for b.Loop() {
				a, err := array.Concatenate(parts, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
		})
		releaseAll(parts)
	}
}

// TestConcatReleases checks that Concat keeps no reference to its parts:
// once the parts and the result are released, every byte of the parts'
// allocator is back (lists and fixed-size lists slice their children).
func TestConcatReleases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, dt := range []arrow.DataType{arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true})} {
		var parts []arrow.Array
		for p := 0; p < 3; p++ {
			b := array.NewBuilder(mem, dt)
			for i := 0; i < 4; i++ {
				switch lb := b.(type) {
				case *array.ListBuilder:
					lb.Append(true)
					lb.ValueBuilder().(*array.Int64Builder).Append(int64(p*10 + i))
				case *array.FixedSizeListBuilder:
					lb.Append(true)
					lb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, 2}, nil)
				case *array.StructBuilder:
					lb.Append(true)
					l := lb.FieldBuilder(0).(*array.ListBuilder)
					l.Append(true)
					l.ValueBuilder().(*array.StringBuilder).Append("x")
				}
			}
			parts = append(parts, b.NewArray())
			b.Release()
		}
		out, err := Concat(parts)
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if out.Len() != 12 {
			t.Errorf("%s: %d rows, want 12", dt, out.Len())
		}
		out.Release()
		for _, p := range parts {
			p.Release()
		}
	}
}
