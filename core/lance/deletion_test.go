package lance

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bitmapBytes serializes values as a portable roaring bitmap.
func bitmapBytes(t testing.TB, vals []uint32, runs bool) []byte {
	bm := roaring.BitmapOf(vals...)
	if runs {
		bm.RunOptimize()
	}
	var buf bytes.Buffer
	if _, err := bm.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// arrowBytes writes values as an Arrow IPC file with arrow-go's writer.
func arrowBytes(t testing.TB, vals []uint32, opts ...ipc.Option) []byte {
	schema := arrow.NewSchema([]arrow.Field{{Name: "row_id", Type: arrow.PrimitiveTypes.Uint32}}, nil)
	b := array.NewUint32Builder(memory.DefaultAllocator)
	b.AppendValues(vals, nil)
	col := b.NewArray()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(vals)))
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, append(opts, ipc.WithSchema(schema))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func setOf(bm *roaring.Bitmap) []uint32 { return bm.ToArray() }

func TestArrowDeletions(t *testing.T) {
	vals := []uint32{9, 3, 7, 3, 0, 99}
	want := []uint32{0, 3, 7, 9, 99}
	for name, data := range map[string][]byte{
		"plain": arrowBytes(t, vals),
		"zstd":  arrowBytes(t, vals, ipc.WithZstd()),
		"empty": arrowBytes(t, nil),
	} {
		t.Run(name, func(t *testing.T) {
			bm, err := parseArrowDeletions(data, 100)
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if name == "empty" {
				w = nil
			}
			if got := setOf(bm); !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
				t.Fatalf("got %v want %v", got, w)
			}
			if _, err := parseArrowDeletions(data, 99); name != "empty" && err == nil {
				t.Fatal("offset 99 accepted in a 99-row fragment")
			}
			for cut := 0; cut < len(data); cut += 7 {
				parseArrowDeletions(data[:cut], 100) // must not panic
			}
		})
	}
	// Wrong column type.
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1}, nil)
	var buf bytes.Buffer
	w, _ := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	w.Write(array.NewRecordBatch(schema, []arrow.Array{b.NewArray()}, 1))
	w.Close()
	if _, err := parseArrowDeletions(buf.Bytes(), 0); err == nil {
		t.Fatal("Int64 column accepted")
	}
}

func TestBitmapDeletions(t *testing.T) {
	var many []uint32
	for i := uint32(0); i < 200000; i += 2 {
		many = append(many, i)
	}
	for _, tc := range []struct {
		name string
		vals []uint32
		runs bool
	}{
		{"empty", nil, false},
		{"array", []uint32{1, 5, 70000}, false},
		{"bitmap", many, false},
		{"runs", []uint32{1, 2, 3, 4, 5, 6, 100, 101, 102}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bitmapBytes(t, tc.vals, tc.runs)
			bm, err := parseBitmapDeletions(data, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if got := setOf(bm); !slices.Equal(got, tc.vals) && len(got)+len(tc.vals) > 0 {
				t.Fatalf("got %d values", len(got))
			}
			for cut := 0; cut < len(data); cut += 1 + len(data)/50 {
				if _, err := parseBitmapDeletions(data[:cut], 1<<20); err == nil && cut < len(data) && len(tc.vals) > 0 {
					t.Fatalf("truncated to %d of %d bytes: accepted", cut, len(data))
				}
			}
			if len(tc.vals) > 0 {
				if _, err := parseBitmapDeletions(data, uint64(slices.Max(tc.vals))); err == nil {
					t.Fatal("offset past the fragment accepted")
				}
			}
		})
	}
}

func TestDeletionFixtures(t *testing.T) {
	for _, tc := range []struct {
		glob  string
		count int
	}{
		{"bigdel/t.lance/_deletions/*.bin", 10000},
		{"bigdel/t2.lance/_deletions/*.arrow", 10},
		{"default/kv.lance/_deletions/0-*.arrow", 10},
		{"default/kv.lance/_deletions/1-*.arrow", 1},
	} {
		paths, _ := filepath.Glob(filepath.Join(fixtureDir, tc.glob))
		if len(paths) != 1 {
			t.Skipf("fixture %s not available", tc.glob)
		}
		data, err := os.ReadFile(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		parse := parseArrowDeletions
		if filepath.Ext(paths[0]) == ".bin" {
			parse = parseBitmapDeletions
		}
		bm, err := parse(data, 20000)
		if err != nil {
			t.Fatalf("%s: %v", tc.glob, err)
		}
		if int(bm.GetCardinality()) != tc.count {
			t.Fatalf("%s: %d deletions, want %d", tc.glob, bm.GetCardinality(), tc.count)
		}
	}
}

func TestLiveRuns(t *testing.T) {
	s := &deletionSet{roaring.BitmapOf(0, 1, 5, 6, 9)}
	for _, tc := range []struct {
		pos  uint64
		n    int
		want [][2]int
	}{
		{0, 10, [][2]int{{2, 5}, {7, 9}}},
		{2, 3, nil},
		{5, 2, [][2]int{}},
		{4, 6, [][2]int{{0, 1}, {3, 5}}},
		{10, 5, nil},
	} {
		if got := s.liveRuns(tc.pos, tc.n); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("liveRuns(%d, %d) = %v, want %v", tc.pos, tc.n, got, tc.want)
		}
	}
	if n := s.deletedRun(0, 100); n != 2 {
		t.Errorf("deletedRun(0) = %d", n)
	}
	if n := s.deletedRun(5, 6); n != 1 {
		t.Errorf("deletedRun(5, end 6) = %d", n)
	}
	var none *deletionSet
	if none.liveRuns(0, 10) != nil || none.deletedRun(0, 10) != 0 || none.contains(1) || none.count() != 0 {
		t.Error("nil set is not empty")
	}
}
