package lancefile

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Tests against datasets written by lance 8 (lancedb 0.31). The datasets come
// from testdata/v21gen.cjs; set KV0_V21DATA to the directory it wrote
// (default /tmp/v21data). Each <table>.expected.jsonl holds the rows as
// lancedb read them back.

func v21DataDir(t testing.TB) string {
	dir := os.Getenv("KV0_V21DATA")
	if dir == "" {
		dir = "/tmp/v21data"
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no lance-written datasets in %s (run node testdata/v21gen.cjs %s)", dir, dir)
	}
	return dir
}

// leafColumns maps leaf field ids to column indices the way lance lays out a
// 2.1 file: one column per leaf, in schema pre-order.
func leafColumns(s *Schema) map[int32]int {
	m := map[int32]int{}
	s.Walk(func(f *Field) {
		if f.IsLeaf() {
			m[f.ID] = len(m)
		}
	})
	return m
}

func openTable(t testing.TB, dir, table string) *File {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, table+".lance", "data", "*.lance"))
	if len(files) != 1 {
		t.Fatalf("%s: %d data files, want 1", table, len(files))
	}
	return openOSFile(t, files[0])
}

func readExpected(t testing.TB, path string) []map[string]any {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, m)
	}
	return rows
}

// canonValue renders value i of a the way the generator's canon() does.
func canonValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'f', -1, 64)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'f', -1, 64)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return "hex:" + hex.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return "hex:" + hex.EncodeToString(a.Value(i))
	case *array.Date32:
		return strconv.FormatInt(int64(a.Value(i))*86400000, 10)
	case *array.Timestamp:
		v := int64(a.Value(i))
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			v *= 1000
		case arrow.Microsecond:
			v /= 1000
		case arrow.Nanosecond:
			v /= 1000000
		}
		return strconv.FormatInt(v, 10)
	case *array.List:
		lo, hi := a.ValueOffsets(i)
		return canonRange(a.ListValues(), int(lo), int(hi))
	case *array.LargeList:
		lo, hi := a.ValueOffsets(i)
		return canonRange(a.ListValues(), int(lo), int(hi))
	case *array.FixedSizeList:
		n := int(a.DataType().(*arrow.FixedSizeListType).Len())
		off := a.Offset()
		return canonRange(a.ListValues(), (off+i)*n, (off+i+1)*n)
	case *array.Struct:
		m := map[string]any{}
		st := a.DataType().(*arrow.StructType)
		for k := 0; k < a.NumField(); k++ {
			m[st.Field(k).Name] = canonValue(a.Field(k), i)
		}
		return m
	}
	panic(fmt.Sprintf("canonValue: %T", a))
}

func canonRange(a arrow.Array, lo, hi int) []any {
	out := make([]any, 0, hi-lo)
	for j := lo; j < hi; j++ {
		out = append(out, canonValue(a, j))
	}
	return out
}

// compareTable reads every field of a table in batches of the given sizes
// (cycled), optionally skipping rows, and compares against the expected rows.
func compareTable(t *testing.T, dir, table string, batches []int, skips []int) {
	f := openTable(t, dir, table)
	want := readExpected(t, filepath.Join(dir, table+".expected.jsonl"))
	s := f.Schema()
	if s == nil {
		t.Fatal("file has no schema")
	}
	if int(f.NumRows()) != len(want) {
		t.Fatalf("%d rows, want %d", f.NumRows(), len(want))
	}
	r, err := f.NewReader(s.Fields, leafColumns(s), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	row := 0
	for k := 0; ; k++ {
		if len(skips) > 0 {
			sk := skips[k%len(skips)]
			if err := r.Skip(ctx, sk); err != nil {
				t.Fatalf("skip %d at row %d: %v", sk, row, err)
			}
			row += min(sk, len(want)-row)
		}
		n := batches[k%len(batches)]
		cols, err := r.Next(ctx, n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("row %d: %v", row, err)
		}
		for j := 0; j < cols[0].Len(); j++ {
			got := map[string]any{}
			for c, fl := range s.Fields {
				got[fl.Name] = canonValue(cols[c], j)
			}
			g, _ := json.Marshal(got)
			var gm map[string]any
			_ = json.Unmarshal(g, &gm)
			if !reflect.DeepEqual(gm, want[row+j]) {
				w, _ := json.Marshal(want[row+j])
				t.Fatalf("row %d:\n got %.2000s\nwant %.2000s", row+j, g, w)
			}
		}
		row += cols[0].Len()
	}
	if row != len(want) {
		t.Fatalf("read %d rows, want %d", row, len(want))
	}
}

func TestV21LanceTables(t *testing.T) {
	dir := v21DataDir(t)
	for _, table := range []string{"small", "prim", "str", "big", "huge", "rle", "nested", "allnull", "mostlynull"} {
		t.Run(table, func(t *testing.T) {
			t.Run("whole", func(t *testing.T) { compareTable(t, dir, table, []int{1 << 20}, nil) })
			t.Run("batches", func(t *testing.T) { compareTable(t, dir, table, []int{1000, 777, 1, 4096, 3333}, nil) })
			t.Run("skips", func(t *testing.T) { compareTable(t, dir, table, []int{500, 7}, []int{0, 3000, 1, 20000}) })
		})
	}
}
