// Package apitest checks the HTTP read API's Arrow answers with npm
// apache-arrow: every format=arrow stream, decoded in Node, encodes to
// exactly the format=jsonl answer of the same request.
package apitest

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/native/fsstore"
)

// node returns the node binary with apache-arrow installed beside the
// interop suite (npm ci there when it is missing). Without node the test
// skips, and fails when CI=true.
func node(t *testing.T) string {
	t.Helper()
	n, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but node is missing: %v", err)
		}
		t.Skip("node not found (CI=true makes this a failure)")
	}
	interop := filepath.Join("..", "interop")
	if _, err := os.Stat(filepath.Join(interop, "node_modules", "apache-arrow", "package.json")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("node_modules of tests/interop are missing and npm is not found: %v", err)
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = interop
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in tests/interop: %v\n%s", err, out)
		}
	}
	return n
}

// writeTyped writes a dataset with a column of every type the canonical
// encodings share, nulls, non-finite floats and several fragments, in data
// format format ("" for kv0's default).
func writeTyped(ctx context.Context, st *fsstore.Store, key, format string) error {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "tsn", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64}, arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true})},
	}, nil)
	mk := func(from, n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i := from; i < from+n; i++ {
			b.Field(0).(*array.Int8Builder).Append(int8(i))
			b.Field(1).(*array.Uint16Builder).Append(uint16(i * 7))
			if i%4 == 0 {
				b.Field(2).AppendNull()
			} else {
				b.Field(2).(*array.Int32Builder).Append(int32(-i * 1000))
			}
			b.Field(3).(*array.Uint64Builder).Append(math.MaxUint64 - uint64(i))
			b.Field(4).(*array.Int64Builder).Append(int64(i) * 1e15)
			b.Field(5).(*array.Float32Builder).Append(float32(i) / 3)
			switch i % 9 {
			case 0:
				b.Field(6).AppendNull()
			case 1:
				b.Field(6).(*array.Float64Builder).Append(math.NaN())
			case 2:
				b.Field(6).(*array.Float64Builder).Append(math.Inf(-1))
			case 3:
				b.Field(6).(*array.Float64Builder).Append(math.Copysign(0, -1))
			default:
				b.Field(6).(*array.Float64Builder).Append(float64(i) * 1e-9)
			}
			b.Field(7).(*array.BooleanBuilder).Append(i%3 == 0)
			if i%5 == 0 {
				b.Field(8).AppendNull()
			} else {
				b.Field(8).(*array.StringBuilder).Append(fmt.Sprintf("<%d> \"é\" \u2028 \t", i))
			}
			b.Field(9).(*array.BinaryBuilder).Append([]byte{byte(i), 0, 0xff})
			b.Field(10).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000000 + int64(i)*1234567))
			b.Field(11).(*array.TimestampBuilder).Append(arrow.Timestamp(-int64(i) * 999))
			b.Field(12).(*array.Date32Builder).Append(arrow.Date32(19000 + i))
			lb := b.Field(13).(*array.ListBuilder)
			if i%6 == 0 {
				lb.AppendNull()
			} else {
				lb.Append(true)
				for k := 0; k < i%4; k++ {
					lb.ValueBuilder().(*array.Int64Builder).Append(int64(k * i))
				}
			}
			sb := b.Field(14).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Float64Builder).Append(float64(i) + 0.5)
			if i%2 == 0 {
				sb.FieldBuilder(1).AppendNull()
			} else {
				sb.FieldBuilder(1).(*array.StringBuilder).Append("y")
			}
		}
		return b.NewRecordBatch()
	}
	_, err := lance.Create(ctx, st, key, schema, lance.Batches(mk(0, 700), mk(700, 900)), lance.WriteOptions{MaxRowsPerFile: 500, DataFormat: format})
	return err
}

func TestArrowMatchesJSONLinesInNode(t *testing.T) {
	nodeBin := node(t)
	ctx := context.Background()
	dir := t.TempDir()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// In format 2.2 (kv0's default) and 2.1.
	if err := writeTyped(ctx, st, "typed.lance", ""); err != nil {
		t.Fatal(err)
	}
	if err := writeTyped(ctx, st, "typed21.lance", lance.DataFormat21); err != nil {
		t.Fatal(err)
	}
	// A tracking repository (format 2.2): its tables are datasets too.
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	run, err := r.StartRun(ctx, tracking.RunSpec{Name: "r", Tags: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = run.SetParams(map[string]any{"lr": 0.1, "name": "x"})
	for s := 0; s < 2000; s++ {
		step := int64(s)
		if err := run.Track(math.Sin(float64(s)), "loss", tracking.TrackOptions{Step: &step, Time: time.Unix(1700000000, int64(s)*1000)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Finish(ctx, tracking.StatusFinished); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	paths := []string{"typed.lance", "typed21.lance", "runs.lance", "params.lance", "series.lance", "metrics.lance"}
	for p, want := range map[string]string{"typed.lance": lance.DataFormat22, "typed21.lance": lance.DataFormat21, "metrics.lance": lance.DataFormat22} {
		d, err := lance.Open(ctx, st, p, lance.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.DataFormat(); got != want {
			t.Fatalf("%s is in format %s, not %s", p, got, want)
		}
	}
	// The lance-written sample datasets of the repository.
	if err := os.CopyFS(filepath.Join(dir, "fixtures"), os.DirFS(filepath.Join("..", "testdata", "lance-samples"))); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, "fixtures/default/kv.lance", "fixtures/v2_0/kv.lance", "fixtures/bigdel/t.lance")
	// lance 12's tables (format 2.2, two in 2.1): every type it writes.
	v22 := filepath.Join("..", "..", "core", "lancefile", "testdata", "v22")
	tables, err := filepath.Glob(filepath.Join(v22, "*.lance"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("lance 12's tables in %s: %v", v22, err)
	}
	for _, tb := range tables {
		name := "v22/" + filepath.Base(tb)
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(tb)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, name)
	}
	srv := httptest.NewServer(api.New(st, "", api.Options{}))
	defer srv.Close()
	for _, query := range []string{"", "limit=333", "where=i8%20%3C%2010", "columns=st,s,ts&limit=5"} {
		ps := paths
		if strings.Contains(query, "i8") || strings.Contains(query, "st,") {
			ps = paths[:2]
		}
		cmd := exec.Command(nodeBin, "arrow_check.mjs", srv.URL, query)
		cmd.Args = append(cmd.Args, ps...)
		out, err := cmd.CombinedOutput()
		t.Logf("query %q:\n%s", query, out)
		if err != nil {
			t.Errorf("query %q: node: %v", query, err)
		}
		if got := strings.Count(string(out), "\nok ") + strings.Count(string(out[:min(len(out), 3)]), "ok "); got != len(ps) {
			t.Errorf("query %q: %d datasets checked, want %d", query, got, len(ps))
		}
	}
}
