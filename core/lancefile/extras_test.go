package lancefile

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/store"
)

// int64File writes n rows of two int64 columns (a = i, b = -i) in pages of
// pageRows rows, with the given extra global buffers.
func int64File(t *testing.T, n, pageRows int, extra ...[]byte) (*Schema, []byte) {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	s := mustSchema(t, as)
	ab := array.NewInt64Builder(memory.DefaultAllocator)
	bb := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range n {
		ab.Append(int64(i))
		bb.Append(-int64(i))
	}
	a, b := ab.NewArray(), bb.NewArray()
	rec := array.NewRecordBatch(as, []arrow.Array{a, b}, int64(n))
	defer rec.Release()
	a.Release()
	b.Release()
	w, err := NewWriter(s, WriterOptions{MaxPageRows: pageRows})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	for i, e := range extra {
		if got := w.AddGlobalBuffer(e); got != i+1 {
			t.Fatalf("AddGlobalBuffer returned %d, want %d", got, i+1)
		}
	}
	file, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return s, file
}

func openBytes(t *testing.T, file []byte) (*store.Memory, *File) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	if err := st.Put(ctx, "f.lance", file); err != nil {
		t.Fatal(err)
	}
	st.ResetCounters()
	f, err := Open(ctx, st, "f.lance", int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	return st, f
}

func TestGlobalBuffers(t *testing.T) {
	ctx := context.Background()
	small := []byte("kv0 extra buffer")
	big := bytes.Repeat([]byte{7, 1, 9}, 50_000) // 150 KB: past the tail read
	for _, tc := range []struct {
		name  string
		extra [][]byte
		reads int64 // requests GlobalBuffer may make in all
	}{
		{"none", nil, 0},
		{"small", [][]byte{small}, 0},
		{"two", [][]byte{small, {}}, 0},
		{"big", [][]byte{big, small}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, file := int64File(t, 200_000, 50_000, tc.extra...)
			st, f := openBytes(t, file)
			if got, want := f.NumGlobalBuffers(), 1+len(tc.extra); got != want {
				t.Fatalf("NumGlobalBuffers = %d, want %d", got, want)
			}
			before := st.Counters()
			for i, want := range tc.extra {
				got, err := f.GlobalBuffer(ctx, i+1)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("global buffer %d: %d bytes differ from the %d written", i+1, len(got), len(want))
				}
			}
			if d := st.Counters().Sub(before).Reads; d != tc.reads {
				t.Fatalf("GlobalBuffer made %d reads, want %d", d, tc.reads)
			}
			if _, err := f.GlobalBuffer(ctx, f.NumGlobalBuffers()); err == nil {
				t.Fatal("GlobalBuffer past the last buffer succeeded")
			}
			// The file still reads back whole, and its schema buffer is intact.
			if f.Schema() == nil || f.NumRows() != 200_000 {
				t.Fatalf("schema %v, rows %d", f.Schema(), f.NumRows())
			}
			arrs, err := readBack(t, s, file, 65_536)
			if err != nil {
				t.Fatal(err)
			}
			a := arrs[0].(*array.Int64)
			for i := 0; i < a.Len(); i += 997 {
				if a.Value(i) != int64(i) {
					t.Fatalf("row %d = %d", i, a.Value(i))
				}
			}
		})
	}
}

// A far global buffer sits after the pages: however large, it leaves the
// near buffers in the tail read, and its parts are fetched on demand,
// neighbours together.
func TestFarGlobalBuffer(t *testing.T) {
	ctx := context.Background()
	far := make([]byte, 300_000)
	for i := range far {
		far[i] = byte(i * 7)
	}
	near := []byte("near index")
	as := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	w, err := NewWriter(mustSchema(t, as), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ab := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 100_000 {
		ab.Append(int64(i))
	}
	a := ab.NewArray()
	rec := array.NewRecordBatch(as, []arrow.Array{a}, int64(a.Len()))
	a.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if i := w.AddGlobalBuffer([]byte("sidx")); i != 1 {
		t.Fatalf("AddGlobalBuffer = %d", i)
	}
	if i := w.AddFarGlobalBuffer(far); i != 2 {
		t.Fatalf("AddFarGlobalBuffer = %d", i)
	}
	w.AddGlobalBuffer(near)
	w.AddFarGlobalBuffer(nil)
	file, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	st, f := openBytes(t, file)
	if f.NumGlobalBuffers() != 5 {
		t.Fatalf("%d global buffers", f.NumGlobalBuffers())
	}
	before := st.Counters()
	for i, want := range map[int][]byte{1: []byte("sidx"), 3: near, 4: {}} {
		got, err := f.GlobalBuffer(ctx, i)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("buffer %d: %q, %v", i, got, err)
		}
	}
	if n := st.Counters().Sub(before).Reads; n != 0 {
		t.Fatalf("the near buffers cost %d reads, want 0 (inside the tail read)", n)
	}
	parts := []Part{{Off: 200_000, Len: 1000}, {Off: 10, Len: 5}, {Off: 30, Len: 100}, {Off: 299_000, Len: 1000}}
	before = st.Counters()
	got, err := f.GlobalBufferParts(ctx, 2, parts)
	if err != nil {
		t.Fatal(err)
	}
	for k, p := range parts {
		if !bytes.Equal(got[k], far[p.Off:p.Off+p.Len]) {
			t.Fatalf("part %d differs", k)
		}
	}
	if n := st.Counters().Sub(before).Reads; n != 3 { // 10 and 30 together
		t.Fatalf("%d reads for 4 parts, want 3", n)
	}
	if _, err := f.GlobalBufferParts(ctx, 2, []Part{{Off: 299_999, Len: 2}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a part past the buffer: %v, want ErrCorrupt", err)
	}
	if _, err := f.GlobalBufferParts(ctx, 5, nil); err == nil {
		t.Fatal("parts of a buffer past the last succeeded")
	}
	// The pages read back unharmed.
	arrs, err := readBack(t, mustSchema(t, as), file, 65_536)
	if err != nil {
		t.Fatal(err)
	}
	if v := arrs[0].(*array.Int64); v.Len() != 100_000 || v.Value(99_999) != 99_999 {
		t.Fatalf("column a: %d rows", v.Len())
	}
}

// A file smaller than the tail read is read by Open in full: its pages cost
// no further request.
func TestSmallFileServedFromTail(t *testing.T) {
	ctx := context.Background()
	s, file := int64File(t, 1000, 300)
	if len(file) >= tailRead {
		t.Fatalf("file of %d bytes is not small", len(file))
	}
	st, f := openBytes(t, file)
	if st.Counters().Reads != 1 {
		t.Fatalf("Open made %d reads", st.Counters().Reads)
	}
	r, err := f.NewReader(s.Fields, map[int32]int{s.Fields[0].ID: 0, s.Fields[1].ID: 1}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arrs, err := r.Next(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counters().Reads != 1 {
		t.Fatalf("reading the pages made %d more reads", st.Counters().Reads-1)
	}
	b := arrs[1].(*array.Int64)
	for i := range 1000 {
		if b.Value(i) != -int64(i) {
			t.Fatalf("row %d = %d", i, b.Value(i))
		}
	}
}

// With Ranges, a reader reads only the pages its ranges touch, in one wave
// per Next, and returns the right rows.
func TestReaderRangesReadOnlyTheirPages(t *testing.T) {
	ctx := context.Background()
	const n, pageRows = 400_000, 10_000
	s, file := int64File(t, n, pageRows)
	for _, rs := range [][]RowRange{
		{{Start: 123_456, End: 150_001}},
		{{Start: 0, End: 5}, {Start: 395_000, End: 400_000}},
		{{Start: 10_000, End: 20_000}, {Start: 20_000, End: 20_001}, {Start: 250_000, End: 260_500}},
	} {
		st, f := openBytes(t, file)
		r, err := f.NewReader(s.Fields, map[int32]int{s.Fields[0].ID: 0, s.Fields[1].ID: 1}, ReadOptions{Ranges: rs})
		if err != nil {
			t.Fatal(err)
		}
		pos := uint64(0)
		wantPages := map[uint64]bool{}
		for _, rg := range rs {
			if err := r.Skip(ctx, int(rg.Start-pos)); err != nil {
				t.Fatal(err)
			}
			arrs, err := r.Next(ctx, int(rg.End-rg.Start))
			if err != nil {
				t.Fatal(err)
			}
			a, b := arrs[0].(*array.Int64), arrs[1].(*array.Int64)
			for i := 0; i < a.Len(); i++ {
				row := int64(rg.Start) + int64(i)
				if a.Value(i) != row || b.Value(i) != -row {
					t.Fatalf("range %v row %d: a=%d b=%d", rg, row, a.Value(i), b.Value(i))
				}
			}
			pos = rg.End
			for p := rg.Start / pageRows; p <= (rg.End-1)/pageRows; p++ {
				wantPages[p] = true
			}
		}
		// Each column reads exactly the pages overlapping the ranges (Open's
		// tail read aside).
		if got, want := st.Counters().Reads-1, int64(2*len(wantPages)); got > want {
			t.Fatalf("ranges %v: %d page reads, want at most %d", rs, got, want)
		}
	}
}

// What TakePlaced hands out along the way, followed by FinishParts, is the
// file Finish builds in one piece; Placed counts what was not taken yet.
func TestTakePlaced(t *testing.T) {
	as := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	s := mustSchema(t, as)
	batch := func(from int) arrow.RecordBatch {
		ab := array.NewInt64Builder(memory.DefaultAllocator)
		sb := array.NewStringBuilder(memory.DefaultAllocator)
		for i := from; i < from+3000; i++ {
			ab.Append(int64(i))
			if i%5 == 0 {
				sb.AppendNull()
			} else {
				sb.Append(string(bytes.Repeat([]byte{'a' + byte(i%26)}, i%40)))
			}
		}
		a, b := ab.NewArray(), sb.NewArray()
		defer a.Release()
		defer b.Release()
		return array.NewRecordBatch(as, []arrow.Array{a, b}, 3000)
	}
	whole, err := NewWriter(s, WriterOptions{MaxPageRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	streamed, _ := NewWriter(s, WriterOptions{MaxPageRows: 1000})
	var out []byte
	for k := range 4 {
		rec := batch(3000 * k)
		if err := whole.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := streamed.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		placed := streamed.Placed()
		if placed == 0 {
			t.Fatalf("batch %d placed no pages", k)
		}
		n := len(out)
		for _, p := range streamed.TakePlaced() {
			out = append(out, p...)
		}
		if len(out)-n != placed || streamed.Placed() != 0 {
			t.Fatalf("batch %d: took %d bytes, Placed said %d, then %d", k, len(out)-n, placed, streamed.Placed())
		}
	}
	want, err := whole.Finish()
	if err != nil {
		t.Fatal(err)
	}
	rest, size, err := streamed.FinishParts()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rest {
		out = append(out, p...)
	}
	if int64(len(out)) != size || !bytes.Equal(out, want) {
		t.Fatalf("streamed file of %d bytes (size %d) differs from the whole one of %d", len(out), size, len(want))
	}
}
