package lancefile

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/store"
)

// openTestFile20 loads a data file from testdata into a memory store.
func openTestFile20(t testing.TB, name string) *File {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return openBytes20(t, data)
}

func openBytes20(t testing.TB, data []byte) *File {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	if err := st.Put(ctx, "f.lance", data); err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, st, "f.lance", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// preorderColumns maps every field of a 2.0 file's own schema to its column:
// 2.0 files give each field a column, in pre-order.
func preorderColumns(s *Schema) map[int32]int {
	m := map[int32]int{}
	s.Walk(func(f *Field) { m[f.ID] = len(m) })
	return m
}

// cell turns row i of arr into plain Go values for comparison: nil, int64,
// uint64, float64, bool, string, []any (lists), map[string]any (structs).
// Binary values become strings.
func cell(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return string(a.Value(i))
	case *array.LargeBinary:
		return string(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Date32:
		return int64(a.Value(i))
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, cell(a.ListValues(), int(j)))
		}
		return out
	case *array.Struct:
		out := map[string]any{}
		st := a.DataType().(*arrow.StructType)
		for k := range a.NumField() {
			out[st.Field(k).Name] = cell(a.Field(k), i)
		}
		return out
	}
	panic(fmt.Sprintf("cell: unhandled %T", arr))
}

// typesExpected mirrors the value formulas of testdata/v20gen.cjs.
func typesExpected(name string, i int) any {
	isNull := func(k int) bool { return i%k == k-1 }
	bytesOf := func(n int, f func(j int) int) string {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(f(j) % 256)
		}
		return string(b)
	}
	switch name {
	case "i8":
		if isNull(7) {
			return nil
		}
		return int64((i*37)%256 - 128)
	case "i16":
		if isNull(5) {
			return nil
		}
		return int64(i*101 - 20000)
	case "i32":
		if isNull(4) {
			return nil
		}
		return int64(i*1000003 - 150000000)
	case "i64":
		if isNull(6) {
			return nil
		}
		return int64(i)*1000000000007 - 99
	case "u8":
		return uint64((i * 7) % 256)
	case "u16":
		if isNull(3) {
			return nil
		}
		return uint64((i * 331) % 65536)
	case "u32":
		if isNull(9) {
			return nil
		}
		return uint64(i) * 2654435761 % 4294967296
	case "u64":
		return new(big.Int).Mul(big.NewInt(int64(i)), big.NewInt(18446744073709551)).Uint64()
	case "f32":
		if isNull(8) {
			return nil
		}
		return float64(i)*0.5 - 3
	case "f64":
		if isNull(10) {
			return nil
		}
		return float64(i)*1.25 + 0.125
	case "b":
		if isNull(3) {
			return nil
		}
		return i%2 == 0
	case "allnull":
		return nil
	case "s":
		if isNull(6) {
			return nil
		}
		if i%11 == 0 {
			return ""
		}
		return fmt.Sprintf("str-%d", i)
	case "lowcard":
		if isNull(13) {
			return nil
		}
		return []string{"red", "green", "blue", ""}[i%4]
	case "ls":
		if isNull(4) {
			return nil
		}
		return fmt.Sprintf("large-%d", i*3)
	case "bin":
		if isNull(5) {
			return nil
		}
		return bytesOf(i%9, func(j int) int { return i + j })
	case "lbin":
		return bytesOf(i%4, func(j int) int { return i * j })
	case "ts":
		if isNull(7) {
			return nil
		}
		return (1700000000000 + int64(i)*1001) * 1000
	case "tsns":
		return int64(i) * 1007 * 1000000
	case "d32":
		if isNull(9) {
			return nil
		}
		return int64(19000 + i)
	case "li":
		if isNull(5) {
			return nil
		}
		out := []any{}
		if i%5 == 1 {
			return out
		}
		for j := range i%4 + 1 {
			if j == 1 && i%3 == 0 {
				out = append(out, nil)
			} else {
				out = append(out, int64(i*10+j))
			}
		}
		return out
	case "lstr":
		if isNull(6) {
			return nil
		}
		out := []any{}
		if i%6 == 2 {
			return out
		}
		for j := range i%3 + 1 {
			if j == 2 {
				out = append(out, nil)
			} else {
				out = append(out, fmt.Sprintf("x%d-%d", i, j))
			}
		}
		return out
	case "st":
		m := map[string]any{"x": nil, "y": nil}
		if !isNull(4) {
			m["x"] = float64(i) / 4
		}
		if !isNull(3) {
			m["y"] = fmt.Sprintf("y%d", i)
		}
		return m
	case "lst":
		if isNull(7) {
			return nil
		}
		out := []any{}
		for j := range i % 3 {
			m := map[string]any{"a": int64(i + j), "b": nil}
			if j != 1 {
				m["b"] = fmt.Sprintf("b%d.%d", i, j)
			}
			out = append(out, m)
		}
		return out
	case "fsl":
		return []any{float64(i), float64(i) + 0.5, -float64(i)}
	case "lli":
		if isNull(9) {
			return nil
		}
		out := []any{}
		for j := range i % 3 {
			if j == 1 && i%2 == 1 {
				out = append(out, nil)
				continue
			}
			inner := []any{}
			for k := range j + 1 {
				inner = append(inner, int64(i+j+k))
			}
			out = append(out, inner)
		}
		return out
	}
	panic("typesExpected: unknown column " + name)
}

// readAll20 reads every row of fields in batches of the given sizes
// (cycling), skipping where a size is negative, and returns the rows read
// per field as cells, with the row numbers they came from.
func readAll20(t *testing.T, f *File, fields []*Field, columnOf map[int32]int, sizes []int) (rows []int, cells [][]any) {
	t.Helper()
	ctx := context.Background()
	r, err := f.NewReader(fields, columnOf, ReadOptions{Readahead: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	cells = make([][]any, len(fields))
	row := 0
	for k := 0; r.Rows() > 0; k++ {
		n := sizes[k%len(sizes)]
		if n < 0 {
			left := int(r.Rows())
			if err := r.Skip(ctx, -n); err != nil {
				t.Fatalf("skip %d at row %d: %v", -n, row, err)
			}
			row += left - int(r.Rows())
			continue
		}
		arrs, err := r.Next(ctx, n)
		if err != nil {
			t.Fatalf("next %d at row %d: %v", n, row, err)
		}
		got := arrs[0].Len()
		for fi, a := range arrs {
			for i := range a.Len() {
				cells[fi] = append(cells[fi], cell(a, i))
			}
			if fi == 0 {
				for i := range a.Len() {
					rows = append(rows, row+i)
				}
			}
			a.Release()
		}
		row += got
	}
	return rows, cells
}

func TestV20TypesFile(t *testing.T) {
	f := openTestFile20(t, "v20_types.lance")
	if f.Version() != V2_0 {
		t.Fatalf("version %v", f.Version())
	}
	s := f.Schema()
	columnOf := preorderColumns(s)
	for _, sizes := range [][]int{{300}, {1}, {7, 64, 3}, {5, -11, 40, -1, 2}, {-299, 1}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			rows, cells := readAll20(t, f, s.Fields, columnOf, sizes)
			for fi, fld := range s.Fields {
				if len(cells[fi]) != len(rows) {
					t.Fatalf("%s: %d cells for %d rows", fld.Name, len(cells[fi]), len(rows))
				}
				for k, i := range rows {
					want := typesExpected(fld.Name, i)
					if got := cells[fi][k]; !reflect.DeepEqual(got, want) {
						t.Fatalf("%s row %d: got %#v, want %#v", fld.Name, i, got, want)
					}
				}
			}
		})
	}
}

func TestV20TypesArrowTypes(t *testing.T) {
	f := openTestFile20(t, "v20_types.lance")
	s := f.Schema()
	r, err := f.NewReader(s.Fields, preorderColumns(s), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arrs, err := r.Next(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range arrs {
		if !arrow.TypeEqual(a.DataType(), s.Fields[i].Type) {
			t.Errorf("%s: array type %v, field type %v", s.Fields[i].Name, a.DataType(), s.Fields[i].Type)
		}
		if v, ok := a.(interface{ ValidateFull() error }); ok {
			if err := v.ValidateFull(); err != nil {
				t.Errorf("%s: %v", s.Fields[i].Name, err)
			}
		}
	}
}

// TestV20KV reads the compacted 2.0 file of the shared kv fixture (lance 8,
// 189 live rows of seq 0..199 without 10..19 and 150).
func TestV20KV(t *testing.T) {
	f := openTestFile20(t, "v20_kv.lance")
	s := f.Schema()
	rows, cells := readAll20(t, f, s.Fields, preorderColumns(s), []int{50})
	if len(rows) != 189 {
		t.Fatalf("%d rows", len(rows))
	}
	k := 0
	for seq := range 200 {
		if seq >= 10 && seq < 20 || seq == 150 {
			continue
		}
		op := uint64(1)
		var value any = fmt.Sprintf("value-%d", seq)
		if seq%100%3 == 2 { // probe.js counts per batch of 100
			op, value = 2, nil
		}
		want := []any{uint64(seq), op, fmt.Sprintf("key-%06d", seq), value}
		for fi := range want {
			if got := cells[fi][k]; !reflect.DeepEqual(got, want[fi]) {
				t.Fatalf("row %d (seq %d) %s: got %#v, want %#v", k, seq, s.Fields[fi].Name, got, want[fi])
			}
		}
		k++
	}
}

// TestV20MissingField reads fields that the file does not store as nulls.
func TestV20MissingField(t *testing.T) {
	f := openTestFile20(t, "v20_types.lance")
	s := f.Schema()
	columnOf := preorderColumns(s)
	delete(columnOf, s.Field("li").ID)
	delete(columnOf, s.Field("i32").ID)
	delete(columnOf, s.Field("st").Children[1].ID)
	lst := s.Field("lst")
	lst.Walk(func(f *Field) {
		if f != lst {
			delete(columnOf, f.ID)
		}
	})
	fields := []*Field{s.Field("li"), s.Field("i32"), s.Field("st"), s.Field("s"), lst}
	rows, cells := readAll20(t, f, fields, columnOf, []int{100})
	for k, i := range rows {
		// A list of a struct the file does not store: the lists are
		// there, their items are null structs.
		if w := typesExpected("lst", i); w == nil {
			if cells[4][k] != nil {
				t.Fatalf("row %d lst: got %v", i, cells[4][k])
			}
		} else if got := cells[4][k].([]any); len(got) != len(w.([]any)) || (len(got) > 0 && got[0] != nil) {
			t.Fatalf("row %d lst: got %v", i, cells[4][k])
		}
		if cells[0][k] != nil || cells[1][k] != nil {
			t.Fatalf("row %d: missing fields not null", i)
		}
		want := typesExpected("st", i).(map[string]any)
		want["y"] = nil
		if !reflect.DeepEqual(cells[2][k], want) {
			t.Fatalf("row %d st: got %v want %v", i, cells[2][k], want)
		}
		if !reflect.DeepEqual(cells[3][k], typesExpected("s", i)) {
			t.Fatalf("row %d s: got %v", i, cells[3][k])
		}
	}
}

func TestV20ErrorsNamePage(t *testing.T) {
	data, err := os.ReadFile("testdata/v20_kv.lance")
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt the first binary index of the key column (column 2, page
	// buffer 0 at offset 1728): an END offset far past the bytes.
	for i := range 8 {
		data[1728+i] = 0x7f
	}
	f := openBytes20(t, data)
	s := f.Schema()
	r, err := f.NewReader(s.Fields[2:3], preorderColumns(s), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next(context.Background(), 10)
	var fe *FormatError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) || fe.Column != 2 || fe.Page != 0 {
		t.Fatalf("got %v", err)
	}
}

// bigExpected mirrors bigTable in testdata/v20gen.cjs.
func bigExpected(name string, i int) any {
	switch name {
	case "seq":
		return uint64(i)
	case "name":
		if i%17 == 0 {
			return nil
		}
		return fmt.Sprintf("name-%d-%s", i, strings.Repeat("z", i%150))
	case "words":
		if i%10 == 3 {
			return nil
		}
		out := []any{}
		for j := range i % 5 {
			if j == 2 {
				out = append(out, nil)
			} else {
				out = append(out, fmt.Sprintf("w%d.%d-%s", i, j, strings.Repeat("q", (i+j)%40)))
			}
		}
		return out
	case "v":
		if i%11 == 0 {
			return nil
		}
		return float64(i) / 3
	}
	panic("bigExpected: unknown column " + name)
}

// TestV20BigFile reads the multi-page table of testdata/v20gen.cjs (not
// committed: 33 MB). Generate it and point KV0_V20_BIG at its data file:
//
//	NODE_PATH=tests/interop/node_modules node core/lancefile/testdata/v20gen.cjs /tmp/v20gen
//	KV0_V20_BIG=$(ls /tmp/v20gen/big.lance/data/*.lance) go test ./core/lancefile -run V20BigFile
func TestV20BigFile(t *testing.T) {
	path := os.Getenv("KV0_V20_BIG")
	if path == "" {
		t.Skip("KV0_V20_BIG not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := openBytes20(t, data)
	s := f.Schema()
	multi := 0
	for _, c := range f.columns {
		if len(c.pages) > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Fatal("no column has several pages; the test would prove little")
	}
	for _, sizes := range [][]int{{10007}, {65536, -70001, 3, -1, 999}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			rows, cells := readAll20(t, f, s.Fields, preorderColumns(s), sizes)
			for fi, fld := range s.Fields {
				for k, i := range rows {
					if want := bigExpected(fld.Name, i); !reflect.DeepEqual(cells[fi][k], want) {
						t.Fatalf("%s row %d: got %#v, want %#v", fld.Name, i, cells[fi][k], want)
					}
				}
			}
			t.Logf("checked %d rows", len(rows))
		})
	}
}

// TestV20CodecsFile reads columns lance compressed because their field
// metadata asked for it: zstd and lz4 on the bytes of binary pages, and FSST.
func TestV20CodecsFile(t *testing.T) {
	f := openTestFile20(t, "v20_codecs.lance")
	s := f.Schema()
	text := func(i int) string {
		return fmt.Sprintf("row %d: the quick brown fox %d jumps over the lazy dog %d", i, i%7, i%13)
	}
	want := func(name string, i int) any {
		switch name {
		case "zstd":
			if i%9 == 4 {
				return nil
			}
			return text(i)
		case "lz4":
			if i%5 == 1 {
				return nil
			}
			return text(i * 3)
		case "fsst":
			if i%6 == 5 {
				return nil
			}
			if i%4 == 0 {
				return ""
			}
			return text(i * 7)
		}
		panic(name)
	}
	for _, sizes := range [][]int{{500}, {3, -100, 77}} {
		rows, cells := readAll20(t, f, s.Fields, preorderColumns(s), sizes)
		for fi, fld := range s.Fields {
			for k, i := range rows {
				if w := want(fld.Name, i); !reflect.DeepEqual(cells[fi][k], w) {
					t.Fatalf("%s row %d: got %#v, want %#v", fld.Name, i, cells[fi][k], w)
				}
			}
		}
	}
}

// BenchmarkV20Read scans every column of a 2.0 file in batches of 1024
// rows: the types fixture, or the big multi-page file when KV0_V20_BIG is set.
func BenchmarkV20Read(b *testing.B) {
	var data []byte
	var err error
	if path := os.Getenv("KV0_V20_BIG"); path != "" {
		data, err = os.ReadFile(path)
	} else {
		data, err = os.ReadFile("testdata/v20_types.lance")
	}
	if err != nil {
		b.Fatal(err)
	}
	f := openBytes20(b, data)
	s := f.Schema()
	columnOf := preorderColumns(s)
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := f.NewReader(s.Fields, columnOf, ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for r.Rows() > 0 {
			arrs, err := r.Next(ctx, 1024)
			if err != nil {
				b.Fatal(err)
			}
			for _, a := range arrs {
				a.Release()
			}
		}
	}
}
