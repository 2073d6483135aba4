package lancefile

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/store"
)

var writerSeed = flag.Uint64("writer.seed", 0, "seed for the randomized writer tests (0 = time-based)")

// writeFile writes recs with a new Writer and returns the file bytes.
func writeFile(t testing.TB, s *Schema, opts WriterOptions, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	w, err := NewWriter(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readBack opens file bytes and reads every row of every field into one
// array per top-level field, n rows at a time.
func readBack(t testing.TB, s *Schema, file []byte, n int) ([]arrow.Array, error) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	if err := st.Put(ctx, "f.lance", file); err != nil {
		return nil, err
	}
	f, err := Open(ctx, st, "f.lance", int64(len(file)))
	if err != nil {
		return nil, err
	}
	columnOf := map[int32]int{}
	col := 0
	s.Walk(func(fl *Field) {
		if fl.IsLeaf() {
			columnOf[fl.ID] = col
			col++
		}
	})
	r, err := f.NewReader(s.Fields, columnOf, ReadOptions{})
	if err != nil {
		return nil, err
	}
	parts := make([][]arrow.Array, len(s.Fields))
	for {
		arrs, err := r.Next(ctx, n)
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, err
		}
		for i, a := range arrs {
			parts[i] = append(parts[i], a)
		}
	}
	out := make([]arrow.Array, len(s.Fields))
	for i := range parts {
		if len(parts[i]) == 0 {
			out[i] = array.MakeArrayOfNull(memory.DefaultAllocator, s.Fields[i].Type, 0)
			continue
		}
		a, err := array.Concatenate(parts[i], memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

func concatRecords(t testing.TB, recs []arrow.RecordBatch, col int) arrow.Array {
	var parts []arrow.Array
	for _, r := range recs {
		parts = append(parts, r.Column(col))
	}
	a, err := array.Concatenate(parts, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// roundTrip writes recs, reads them back and compares every column.
func roundTrip(t testing.TB, s *Schema, opts WriterOptions, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	file := writeFile(t, s, opts, recs...)
	got, err := readBack(t, s, file, 1000)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	for i, f := range s.Fields {
		want := concatRecords(t, recs, i)
		if !array.Equal(want, got[i]) {
			t.Fatalf("column %q differs:\nwant %s\ngot  %s", f.Name, clip(want.String()), clip(got[i].String()))
		}
	}
	return file
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

func mustSchema(t testing.TB, as *arrow.Schema) *Schema {
	t.Helper()
	s, err := SchemaFromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func recordFromJSON(t testing.TB, as *arrow.Schema, js string) arrow.RecordBatch {
	t.Helper()
	r, _, err := array.RecordFromJSON(memory.DefaultAllocator, as, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWriterRoundTripSmall(t *testing.T) {
	cases := []struct {
		name string
		typ  arrow.DataType
		js   string // JSON rows of column "c"
	}{
		{"int64", arrow.PrimitiveTypes.Int64, `[{"c":1},{"c":-5},{"c":null},{"c":7}]`},
		{"uint8", arrow.PrimitiveTypes.Uint8, `[{"c":1},{"c":255},{"c":0}]`},
		{"bool", arrow.FixedWidthTypes.Boolean, `[{"c":true},{"c":false},{"c":null},{"c":true}]`},
		{"float32", arrow.PrimitiveTypes.Float32, `[{"c":1.5},{"c":null}]`},
		{"utf8", arrow.BinaryTypes.String, `[{"c":"a"},{"c":""},{"c":null},{"c":"hello"}]`},
		{"large_utf8", arrow.BinaryTypes.LargeString, `[{"c":"a"},{"c":null},{"c":"xyz"}]`},
		{"binary", arrow.BinaryTypes.Binary, `[{"c":"AAEC"},{"c":null}]`},
		{"all_null", arrow.PrimitiveTypes.Int32, `[{"c":null},{"c":null}]`},
		{"timestamp", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, `[{"c":"2024-01-01T00:00:00Z"},{"c":null}]`},
		{"date32", arrow.FixedWidthTypes.Date32, `[{"c":"2024-01-01"},{"c":null}]`},
		{"list_utf8", arrow.ListOf(arrow.BinaryTypes.String), `[{"c":["a",null,"b"]},{"c":[]},{"c":null},{"c":["c"]}]`},
		{"list_int_all_valid", arrow.ListOf(arrow.PrimitiveTypes.Int32), `[{"c":[1,2]},{"c":[3]}]`},
		{"list_only_empty", arrow.ListOf(arrow.PrimitiveTypes.Int32), `[{"c":[]},{"c":[]}]`},
		{"list_only_null", arrow.ListOf(arrow.PrimitiveTypes.Int32), `[{"c":null},{"c":null}]`},
		{"large_list", arrow.LargeListOf(arrow.PrimitiveTypes.Int64), `[{"c":[1,null]},{"c":null},{"c":[]}]`},
		{"list_list", arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int16)), `[{"c":[[1,2],[],null,[3]]},{"c":[]},{"c":null},{"c":[[null]]}]`},
		{"struct", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}),
			`[{"c":{"a":1,"b":"x"}},{"c":null},{"c":{"a":null,"b":"y"}}]`},
		{"list_struct", arrow.ListOf(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true})),
			`[{"c":[{"a":1},null,{"a":null}]},{"c":[]},{"c":null}]`},
		{"struct_list", arrow.StructOf(arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}),
			`[{"c":{"l":[1,2]}},{"c":null},{"c":{"l":null}},{"c":{"l":[]}}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := arrow.NewSchema([]arrow.Field{{Name: "c", Type: tc.typ, Nullable: true}}, nil)
			rec := recordFromJSON(t, as, tc.js)
			roundTrip(t, mustSchema(t, as), WriterOptions{}, rec)
		})
	}
}

// randomArray builds a random array of type dt with n values.
func randomArray(rng *rand.Rand, dt arrow.DataType, n int, nullP float64, longP float64) arrow.Array {
	mem := memory.DefaultAllocator
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	appendRandom(rng, b, n, nullP, longP)
	return b.NewArray()
}

func appendRandom(rng *rand.Rand, b array.Builder, n int, nullP, longP float64) {
	for range n {
		if nullP > 0 && rng.Float64() < nullP {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.BooleanBuilder:
			bb.Append(rng.IntN(2) == 1)
		case *array.Int8Builder:
			bb.Append(int8(rng.Uint32()))
		case *array.Int16Builder:
			bb.Append(int16(rng.Uint32()))
		case *array.Int32Builder:
			bb.Append(int32(rng.Uint32() >> rng.IntN(32)))
		case *array.Int64Builder:
			bb.Append(int64(rng.Uint64() >> rng.IntN(64)))
		case *array.Uint8Builder:
			bb.Append(uint8(rng.Uint32()))
		case *array.Uint16Builder:
			bb.Append(uint16(rng.Uint32()))
		case *array.Uint32Builder:
			bb.Append(rng.Uint32() >> rng.IntN(32))
		case *array.Uint64Builder:
			bb.Append(rng.Uint64() >> rng.IntN(64))
		case *array.Float32Builder:
			bb.Append(rng.Float32())
		case *array.Float64Builder:
			bb.Append(rng.NormFloat64())
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(1e12)))
		case *array.Date32Builder:
			bb.Append(arrow.Date32(rng.Int32N(30000)))
		case *array.StringBuilder:
			bb.Append(randomString(rng, longP))
		case *array.LargeStringBuilder:
			bb.Append(randomString(rng, longP))
		case *array.BinaryBuilder:
			bb.Append([]byte(randomString(rng, longP)))
		case *array.ListBuilder:
			k := rng.IntN(5)
			if k == 0 && rng.IntN(2) == 0 {
				bb.AppendEmptyValue()
				continue
			}
			bb.Append(true)
			appendRandom(rng, bb.ValueBuilder(), k, nullP, longP)
		case *array.LargeListBuilder:
			k := rng.IntN(5)
			bb.Append(true)
			appendRandom(rng, bb.ValueBuilder(), k, nullP, longP)
		case *array.StructBuilder:
			bb.Append(true)
			for i := 0; i < bb.NumField(); i++ {
				appendRandom(rng, bb.FieldBuilder(i), 1, nullP, longP)
			}
		default:
			panic(fmt.Sprintf("no random values for %T", b))
		}
	}
}

func randomString(rng *rand.Rand, longP float64) string {
	n := rng.IntN(20)
	if longP > 0 && rng.Float64() < longP {
		n = 256 + rng.IntN(3000)
		if rng.IntN(20) == 0 {
			n = 40000 + rng.IntN(40000) // larger than a mini-block chunk
		}
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

var randomTypes = []arrow.DataType{
	arrow.FixedWidthTypes.Boolean,
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, arrow.FixedWidthTypes.Date32,
	arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary,
}

// randomType returns a random supported type, nested up to depth levels.
func randomType(rng *rand.Rand, depth int) arrow.DataType {
	if depth > 0 {
		switch rng.IntN(6) {
		case 0:
			return arrow.ListOf(randomType(rng, depth-1))
		case 1:
			return arrow.LargeListOf(randomType(rng, depth-1))
		case 2:
			n := 1 + rng.IntN(3)
			fs := make([]arrow.Field, n)
			for i := range fs {
				fs[i] = arrow.Field{Name: fmt.Sprintf("m%d", i), Type: randomType(rng, depth-1), Nullable: true}
			}
			return arrow.StructOf(fs...)
		}
	}
	return randomTypes[rng.IntN(len(randomTypes))]
}

func TestWriterRoundTripRandom(t *testing.T) {
	seed := *writerSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -writer.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	iters := 40
	if testing.Short() {
		iters = 10
	}
	for it := range iters {
		ncol := 1 + rng.IntN(4)
		fields := make([]arrow.Field, ncol)
		for i := range fields {
			fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: randomType(rng, 2), Nullable: rng.IntN(3) > 0}
		}
		as := arrow.NewSchema(fields, nil)
		nullP := []float64{0, 0, 0.1, 0.5, 1}[rng.IntN(5)]
		longP := []float64{0, 0, 0.01, 0.3}[rng.IntN(4)]
		opts := WriterOptions{MaxPageRows: []int{0, 100, 1000, 7}[rng.IntN(4)], MaxPageBytes: []int{0, 4096, 100000}[rng.IntN(3)]}
		var recs []arrow.RecordBatch
		for range 1 + rng.IntN(3) {
			n := rng.IntN(5000)
			cols := make([]arrow.Array, ncol)
			for i, f := range fields {
				np := nullP
				if !f.Nullable {
					np = 0
				}
				cols[i] = randomArray(rng, f.Type, n, np, longP)
			}
			recs = append(recs, array.NewRecordBatch(as, cols, int64(n)))
		}
		t.Run(fmt.Sprintf("%d", it), func(t *testing.T) {
			t.Logf("schema %s nullP %v longP %v opts %+v", as, nullP, longP, opts)
			roundTrip(t, mustSchema(t, as), opts, recs...)
		})
	}
}

func TestWriterBitpackingSavesSpace(t *testing.T) {
	as := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	b := array.NewUint64Builder(memory.DefaultAllocator)
	for i := range 100000 {
		b.Append(uint64(i % 100))
	}
	rec := array.NewRecordBatch(as, []arrow.Array{b.NewArray()}, 100000)
	file := roundTrip(t, mustSchema(t, as), WriterOptions{}, rec)
	if len(file) > 100000 {
		t.Fatalf("file of %d bytes for 100k 7-bit values; bit packing not applied", len(file))
	}
}

var _ = math.Pi
