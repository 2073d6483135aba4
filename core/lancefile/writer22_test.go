package lancefile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/store"
)

// Tests of the format 2.2 writer: which encodings it picks, and that every
// file it writes reads back (the lance 12 interop test checks that lance
// reads them too).

// fileLayouts returns the page layouts of each column of file.
func fileLayouts(t testing.TB, file []byte) (Version, [][]*enc21pb.PageLayout) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	if err := st.Put(ctx, "f.lance", file); err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, st, "f.lance", int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]*enc21pb.PageLayout, len(f.columns))
	for i, c := range f.columns {
		for j, p := range c.pages {
			pl, err := pageLayout(p.enc, f.Version())
			if err != nil {
				t.Fatalf("column %d page %d: %v", i, j, err)
			}
			out[i] = append(out[i], pl)
		}
	}
	return f.Version(), out
}

// layoutName summarises a page layout: "constant(inline)",
// "miniblock(dict:General,InlineBitpacking,def:Rle)", ...
func layoutName(pl *enc21pb.PageLayout) string {
	switch l := pl.GetLayout().(type) {
	case *enc21pb.PageLayout_ConstantLayout:
		c := l.ConstantLayout
		var parts []string
		if c.InlineValue != nil {
			parts = append(parts, "inline")
		}
		if c.RepCompression != nil {
			parts = append(parts, "rep:"+encName(c.RepCompression))
		}
		if c.DefCompression != nil {
			parts = append(parts, "def:"+encName(c.DefCompression))
		}
		return "constant(" + strings.Join(parts, ",") + ")"
	case *enc21pb.PageLayout_MiniBlockLayout:
		m := l.MiniBlockLayout
		var parts []string
		if m.Dictionary != nil {
			d := "dict:" + encName(m.Dictionary)
			if g := m.Dictionary.GetGeneral(); g != nil {
				d += "(" + encName(g.GetValues()) + ")"
			}
			parts = append(parts, d)
		}
		parts = append(parts, encName(m.ValueCompression))
		if m.RepCompression != nil {
			parts = append(parts, "rep:"+encName(m.RepCompression))
		}
		if m.DefCompression != nil {
			parts = append(parts, "def:"+encName(m.DefCompression))
		}
		return "miniblock(" + strings.Join(parts, ",") + ")"
	case *enc21pb.PageLayout_FullZipLayout:
		return "fullzip"
	}
	return fmt.Sprintf("%T", pl.GetLayout())
}

func TestWriter22Encodings(t *testing.T) {
	mem := memory.DefaultAllocator
	const n = 20000
	type col struct {
		f    arrow.Field
		add  func(b array.Builder, i int)
		want string // layout of the first page in a 2.2 file
	}
	rng := rand.New(rand.NewPCG(5, 5))
	pool := make([]int64, 1500)
	for i := range pool {
		pool[i] = int64(rng.Uint64())
	}
	i64 := func(fn func(i int) int64) func(array.Builder, int) {
		return func(b array.Builder, i int) { b.(*array.Int64Builder).Append(fn(i)) }
	}
	cols := []col{
		{arrow.Field{Name: "const", Type: arrow.PrimitiveTypes.Int64}, i64(func(int) int64 { return 42 }), "constant(inline)"},
		{arrow.Field{Name: "conststr", Type: arrow.BinaryTypes.String}, func(b array.Builder, i int) { b.(*array.StringBuilder).Append("same") }, "constant()"},
		{arrow.Field{Name: "constbool", Type: arrow.FixedWidthTypes.Boolean}, func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(true) }, "constant(inline)"},
		{arrow.Field{Name: "series", Type: arrow.PrimitiveTypes.Uint64}, func(b array.Builder, i int) { b.(*array.Uint64Builder).Append(1_000_000 + uint64(i%100)) }, "miniblock(dict:General(Flat(64)),InlineBitpacking)"},
		{arrow.Field{Name: "step", Type: arrow.PrimitiveTypes.Int64}, i64(func(i int) int64 { return int64(i / 100) }), "miniblock(dict:General(OutOfLineBitpacking),Rle)"},
		{arrow.Field{Name: "step8", Type: arrow.PrimitiveTypes.Int64}, i64(func(i int) int64 { return int64(i / 8) }), "miniblock(dict:General(OutOfLineBitpacking),Rle)"},
		{arrow.Field{Name: "pool40", Type: arrow.PrimitiveTypes.Int64}, i64(func(i int) int64 { return int64(uint64(pool[rng.IntN(len(pool))]) >> 24) }), "miniblock(dict:General(OutOfLineBitpacking),InlineBitpacking)"},
		{arrow.Field{Name: "pool40k", Type: arrow.PrimitiveTypes.Int64}, i64(func(i int) int64 { return int64(uint64(pool[rng.IntN(1024)]) >> 24) }), "miniblock(dict:OutOfLineBitpacking,InlineBitpacking)"},
		{arrow.Field{Name: "pool40t", Type: arrow.PrimitiveTypes.Int64}, i64(func(i int) int64 { return int64(uint64(pool[rng.IntN(1030)]) >> 24) }), "miniblock(dict:OutOfLineBitpacking,InlineBitpacking)"},
		{arrow.Field{Name: "pool64", Type: arrow.PrimitiveTypes.Int64}, i64(func(i int) int64 { return pool[rng.IntN(len(pool))] }), "miniblock(dict:Flat(64),InlineBitpacking)"},
		{arrow.Field{Name: "runs32", Type: arrow.PrimitiveTypes.Int32}, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i / 1000)) }, "miniblock(Rle)"},
		{arrow.Field{Name: "ids", Type: arrow.PrimitiveTypes.Int64}, i64(func(i int) int64 { return int64(i) }), "miniblock(InlineBitpacking)"},
		{arrow.Field{Name: "nulllist", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}, func(b array.Builder, i int) { b.AppendNull() }, "constant(rep:Rle,def:Rle)"},
		{arrow.Field{Name: "blocks", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}, func(b array.Builder, i int) {
			lb := b.(*array.ListBuilder)
			if i/1000%2 == 1 {
				lb.AppendNull()
				return
			}
			lb.Append(true)
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(i * 7919))
		}, "miniblock(InlineBitpacking,rep:Rle,def:Rle)"},
	}
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		fields[i] = c.f
		b := array.NewBuilder(mem, c.f.Type)
		for r := range n {
			c.add(b, r)
		}
		arrs[i] = b.NewArray()
	}
	as := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(as, arrs, n)
	s := mustSchema(t, as)
	for _, v := range []Version{V2_1, V2_2} {
		file := roundTrip(t, s, WriterOptions{Version: v}, rec)
		got, layouts := fileLayouts(t, file)
		if got != v {
			t.Fatalf("wrote version %s, want %s", got, v)
		}
		for i, c := range cols {
			name := layoutName(layouts[i][0])
			if v == V2_2 && name != c.want {
				t.Errorf("2.2 column %q: %s, want %s", c.f.Name, name, c.want)
			}
			if v == V2_1 && (strings.Contains(name, "Rle") || strings.Contains(name, "dict") || strings.Contains(name, "inline")) {
				t.Errorf("2.1 column %q uses a 2.2 writer's encoding: %s", c.f.Name, name)
			}
		}
	}
}

// TestWriter22SmallerOnMetrics checks that 2.2 files of the metrics shape
// are smaller than 2.1 files (dictionary of the series ids, runs of the
// steps) and that every mini-block page of the 2.2 file uses the u32 chunk
// grammar while the 2.1 file's use the u16 one.
func TestWriter22SmallerOnMetrics(t *testing.T) {
	rec := metricsBatch(0, 300000)
	s := mustSchema(t, rec.Schema())
	f21 := roundTrip(t, s, WriterOptions{Version: V2_1}, rec)
	f22 := roundTrip(t, s, WriterOptions{Version: V2_2}, rec)
	if float64(len(f22)) > 0.85*float64(len(f21)) {
		t.Fatalf("2.2 file of %d bytes, 2.1 file of %d: expected at least 15%% less", len(f22), len(f21))
	}
	for _, f := range [][]byte{f21, f22} {
		v, layouts := fileLayouts(t, f)
		for i, pages := range layouts {
			for j, pl := range pages {
				if mb := pl.GetMiniBlockLayout(); mb != nil && mb.GetHasLargeChunk() != (v == V2_2) {
					t.Fatalf("%s file column %d page %d: has_large_chunk %v", v, i, j, mb.GetHasLargeChunk())
				}
			}
		}
	}
}

func TestWriterVersionOption(t *testing.T) {
	as := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	s := mustSchema(t, as)
	for _, tc := range []struct {
		opt  Version
		want Version
	}{{Version{}, V2_2}, {V2_1, V2_1}, {V2_2, V2_2}} {
		w, err := NewWriter(s, WriterOptions{Version: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		if w.Version() != tc.want {
			t.Fatalf("option %v: writer version %s, want %s", tc.opt, w.Version(), tc.want)
		}
		file, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := fileLayouts(t, file); v != tc.want {
			t.Fatalf("option %v: file version %s", tc.opt, v)
		}
	}
	for _, bad := range []Version{V2_0, {2, 3}, {0, 1}} {
		if _, err := NewWriter(s, WriterOptions{Version: bad}); err == nil || !strings.Contains(err.Error(), bad.String()) {
			t.Fatalf("version %s: %v", bad, err)
		} else if !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("version %s: %v does not match ErrUnsupportedVersion", bad, err)
		}
	}
}

// shapedArray returns n values of type dt made of few distinct values: all
// one value, values drawn from a small pool, or runs of values, so that
// the 2.2 writer's constant pages, dictionaries and run-length encodings
// come into play (with nulls and nested types as randomArray makes them).
func shapedArray(rng *rand.Rand, dt arrow.DataType, n int, nullP, longP float64) arrow.Array {
	mem := memory.DefaultAllocator
	k := []int{1, 2, 3, 7, 50}[rng.IntN(5)]
	src := randomArray(rng, dt, k, nullP, longP)
	defer src.Release()
	var parts []arrow.Array
	switch rng.IntN(2) {
	case 0: // runs
		for i := 0; i < n; {
			l := min(n-i, 1+rng.IntN(600))
			j := rng.IntN(k)
			for range l {
				parts = append(parts, array.NewSlice(src, int64(j), int64(j+1)))
			}
			i += l
		}
	default: // a pool
		for range n {
			j := rng.IntN(k)
			parts = append(parts, array.NewSlice(src, int64(j), int64(j+1)))
		}
	}
	if len(parts) == 0 {
		return array.MakeArrayOfNull(mem, dt, 0)
	}
	out, err := array.Concatenate(parts, mem)
	if err != nil {
		panic(err)
	}
	for _, p := range parts {
		p.Release()
	}
	return out
}

// TestWriterRoundTripShaped writes random schemas whose columns have few
// distinct values, in both versions, and reads every value back.
func TestWriterRoundTripShaped(t *testing.T) {
	seed := *writerSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -writer.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 22))
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
		opts := WriterOptions{MaxPageRows: []int{0, 100, 1000, 7}[rng.IntN(4)], MaxPageBytes: []int{0, 4096, 100000}[rng.IntN(3)],
			Version: []Version{V2_1, V2_2}[rng.IntN(2)]}
		var recs []arrow.RecordBatch
		for range 1 + rng.IntN(3) {
			n := rng.IntN(6000)
			cols := make([]arrow.Array, ncol)
			for i, f := range fields {
				np := nullP
				if !f.Nullable {
					np = 0
				}
				if rng.IntN(4) == 0 {
					cols[i] = randomArray(rng, f.Type, n, np, longP)
				} else {
					cols[i] = shapedArray(rng, f.Type, n, np, longP)
				}
			}
			recs = append(recs, array.NewRecordBatch(as, cols, int64(n)))
		}
		t.Run(fmt.Sprintf("%d", it), func(t *testing.T) {
			t.Logf("schema %s nullP %v longP %v opts %+v", as, nullP, longP, opts)
			roundTrip(t, mustSchema(t, as), opts, recs...)
		})
	}
}
