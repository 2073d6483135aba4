package lance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/native/fsstore"
)

// lance12Node returns node, tests/interop (for jsonl.mjs and its
// apache-arrow) and the folder whose node_modules holds lancedb 0.39
// (KV0_LANCEDB12, else tests/interop/lance12). It skips the test when one
// is missing, and fails it when CI=true and the lancedb 0.39 folder has its
// package.json but no install.
func lance12Node(t *testing.T) (node, interopDir, lancedbDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the lance 12 interop test")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found")
	}
	interopDir, _ = filepath.Abs(filepath.Join("..", "..", "tests", "interop"))
	if _, err := os.Stat(filepath.Join(interopDir, "node_modules", "apache-arrow")); err != nil {
		t.Skipf("no apache-arrow in %s (run npm ci there)", interopDir)
	}
	lancedbDir = os.Getenv("KV0_LANCEDB12")
	if lancedbDir == "" {
		lancedbDir = filepath.Join(interopDir, "lance12")
	}
	if _, err := os.Stat(filepath.Join(lancedbDir, "node_modules", "@lancedb", "lancedb")); err != nil {
		if _, perr := os.Stat(filepath.Join(lancedbDir, "package.json")); perr == nil && os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but lancedb 0.39 is not installed in %s (run npm ci there)", lancedbDir)
		}
		t.Skipf("no lancedb 0.39 in %s (set KV0_LANCEDB12 to a folder where npm i -E @lancedb/lancedb@0.39.0 apache-arrow@18.1.0 ran)", lancedbDir)
	}
	return node, interopDir, lancedbDir
}

// lance12Schema has the writer's types, columns of few distinct values, a
// constant one and an all-null one, so that the 2.2 files use every
// encoding the writer has.
var lance12Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "series", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "step", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "kind", Type: arrow.BinaryTypes.String},
	{Name: "none", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "pt", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "unit", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
}, nil)

func lance12Batch(from, to int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, lance12Schema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		if i%5 == 0 {
			b.Field(1).AppendNull()
			b.Field(4).AppendNull()
			b.Field(5).AppendNull()
			b.Field(8).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
			b.Field(4).(*array.Float64Builder).Append(float64(i%40) / 8)
			b.Field(5).(*array.BooleanBuilder).Append(i%2 == 0)
			b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + i*1000))
		}
		b.Field(2).(*array.Uint64Builder).Append(1_000_000 + uint64(i%50))
		b.Field(3).(*array.Int64Builder).Append(i / 50)
		b.Field(6).(*array.StringBuilder).Append("metric")
		b.Field(7).AppendNull()
		lb := b.Field(9).(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		switch {
		case i/700%3 == 0:
			lb.AppendNull()
		case i%4 == 1:
			lb.AppendEmptyValue()
		default:
			lb.Append(true)
			vb.Append("a")
			if i%3 == 0 {
				vb.AppendNull()
			}
		}
		sb := b.Field(10).(*array.StructBuilder)
		if i/1000%2 == 1 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i % 9))
			sb.FieldBuilder(1).(*array.StringBuilder).Append("cm")
		}
	}
	return b.NewRecordBatch()
}

// dumpKv0 returns the rows of the latest version of the dataset at dir in
// canonical JSON Lines.
func dumpKv0(t *testing.T, dir string) (*Dataset, []byte) {
	t.Helper()
	ctx := context.Background()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, st, "", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var buf bytes.Buffer
	jw := jsonl.NewWriter(&buf)
	for s.Next() {
		if err := jw.Write(s.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return d, buf.Bytes()
}

// TestLance12OnKv0Dataset: kv0 creates and appends to a dataset in format
// 2.2; lance 12 reads every row the same, then appends to it, deletes
// from it, updates it and compacts it; kv0 reads the result as lance 12
// does, appends again in 2.2, and lance 12 reads that too.
func TestLance12OnKv0Dataset(t *testing.T) {
	node, interopDir, lancedbDir := lance12Node(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "lance12_ops.mjs"))
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(node, append([]string{script, interopDir, lancedbDir}, args...)...)
		cmd.Env = append(os.Environ(), "RUST_LOG=error")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			msg := stderr.String()
			if len(msg) > 4000 {
				msg = msg[len(msg)-4000:]
			}
			t.Fatalf("node lance12_ops.mjs %v: %v\n%s", args, err, msg)
		}
	}
	root := t.TempDir()
	ds := filepath.Join(root, "t.lance")
	agree := func(step string) *Dataset {
		t.Helper()
		out := filepath.Join(t.TempDir(), "rows.jsonl")
		run(root, "dump", out)
		want, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		d, got := dumpKv0(t, ds)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: kv0 and lance 12 read different rows:\n%s", step, lineDiff(want, got))
		}
		checkFormat(t, d, DataFormat22)
		t.Logf("%s: version %d, %d rows, %d fragments agree", step, d.Version(), bytes.Count(got, []byte("\n")), len(d.Fragments()))
		return d
	}
	ctx := context.Background()
	st, err := fsstore.Open(ds)
	if err != nil {
		t.Fatal(err)
	}
	rec := lance12Batch(0, 9000)
	d, err := Create(ctx, st, "", lance12Schema, Batches(rec), WriteOptions{MaxRowsPerFile: 4000})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	rec = lance12Batch(9000, 9500)
	if _, err = d.Append(ctx, Batches(rec), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	agree("kv0 create and append")
	run(root, "mutate")
	d = agree("lance 12 append, delete, update, optimize")
	if len(d.Fragments()) != 1 {
		t.Fatalf("%d fragments after lance 12's compaction", len(d.Fragments()))
	}
	rec = lance12Batch(20000, 20300)
	if _, err = d.Append(ctx, Batches(rec), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	agree("kv0 append after lance 12")
}

// lineDiff shows the first line where two texts differ.
func lineDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d (of %d lance 12 / %d kv0):\nlance 12 %.500s\nkv0      %.500s", i+1, len(wl), len(gl), w, g)
		}
	}
	return "equal"
}
