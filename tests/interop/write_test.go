package interop

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/native/fsstore"
)

// writeSchema covers the writer's types with every null pattern.
var writeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

func writeBatch(from, to int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, writeSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		null := i%5 == 0
		if null {
			for c := 1; c < 7; c++ {
				b.Field(c).AppendNull()
			}
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d-é", i))
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 3)
			b.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
			b.Field(4).(*array.Uint8Builder).Append(uint8(i))
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000000 + i*1000))
			b.Field(6).(*array.BinaryBuilder).Append([]byte{byte(i), 0, byte(i >> 8)})
		}
		lb := b.Field(7).(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		switch i % 4 {
		case 0:
			lb.AppendNull()
		case 1:
			lb.Append(true) // empty list
		case 2:
			lb.Append(true)
			vb.Append("a")
			vb.AppendNull()
		default:
			lb.Append(true)
			vb.Append(fmt.Sprint(i))
		}
	}
	return b.NewRecordBatch()
}

// lancedbAgrees runs check.mjs dump and compares every version lancedb
// sees with kv0's reader, byte for byte in canonical JSON Lines, and the
// tags with their versions.
func lancedbAgrees(t *testing.T, in *lanceInstall, root, step string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dump")
	runCheck(t, in, "dump", root, out)
	var versions []struct{ Version, Rows uint64 }
	readJSON(t, filepath.Join(out, "versions.json"), &versions)
	ds := filepath.Join(root, "t.lance")
	for _, v := range versions {
		want := filepath.Join(out, fmt.Sprintf("v%d.jsonl", v.Version))
		if !compareCat(t, want, "lance", "cat", ds, "--version", fmt.Sprint(v.Version)) {
			t.Fatalf("%s: version %d differs between lancedb and kv0", step, v.Version)
		}
	}
	var tags map[string]struct{ Version, Rows uint64 }
	readJSON(t, filepath.Join(out, "tags.json"), &tags)
	for name, tg := range tags {
		d, err := lance.Open(context.Background(), mustStore(t, ds), "", lance.OpenOptions{Tag: name})
		if err != nil || d.Version() != tg.Version {
			t.Fatalf("%s: tag %s: %v", step, name, err)
		}
		if n, _ := d.CountRows(context.Background()); n != tg.Rows {
			t.Fatalf("%s: tag %s: %d rows, lancedb %d", step, name, n, tg.Rows)
		}
	}
	t.Logf("%s: lancedb %s agrees on %d versions and %d tags", step, in.lancedb, len(versions), len(tags))
}

// runCheck runs check.mjs with args against the install's lancedb.
func runCheck(t *testing.T, in *lanceInstall, args ...string) {
	t.Helper()
	cmd := in.command("check.mjs", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node check.mjs %v (lancedb %s): %v\n%s", args, in.lancedb, err, tail(stderr.String(), 4000))
	}
}

func mustStore(t *testing.T, dir string) *fsstore.Store {
	t.Helper()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// requireFormat fails t unless the dataset at dir is of data file format
// format: the tests that have kv0 write check what it wrote.
func requireFormat(t *testing.T, dir, format string) {
	t.Helper()
	d, err := lance.Open(context.Background(), mustStore(t, dir), "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.DataFormat(); got != format {
		t.Fatalf("kv0 wrote %s as format %s, want %s", dir, got, format)
	}
}

// TestGoToLance: Go creates, appends, deletes (small and large), compacts,
// tags and cleans up; lancedb checks every version after each step; then
// lancedb appends, deletes, updates and optimizes, and kv0 reads every
// version the same; kv0 appends after it.
func TestGoToLance(t *testing.T) {
	forEachInstall(t, func(t *testing.T, in *lanceInstall) {
		forEachFormat(t, in, func(t *testing.T, format string) { testGoToLance(t, in, format) })
	})
}

func testGoToLance(t *testing.T, in *lanceInstall, format string) {
	ctx := context.Background()
	root := t.TempDir()
	ds := filepath.Join(root, "t.lance")
	st := mustStore(t, ds)
	rec := writeBatch(0, 12000)
	d, err := lance.Create(ctx, st, "", writeSchema, lance.Batches(rec), lance.WriteOptions{MaxRowsPerFile: 5000, DataFormat: format})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	requireFormat(t, ds, format)
	lancedbAgrees(t, in, root, "create")
	rec = writeBatch(12000, 12100)
	if d, err = d.Append(ctx, lance.Batches(rec), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	lancedbAgrees(t, in, root, "append")
	if d, _, err = d.Delete(ctx, "id < 20 OR label = 'row-6001-é'"); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, in, root, "small delete")
	if d, _, err = d.Delete(ctx, "id >= 5000 AND id < 9000 AND u8 > 3"); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, in, root, "large delete")
	if err := d.CreateTag(ctx, "before-compact", 0); err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Compact(ctx, lance.CompactOptions{TargetRowsPerFragment: 6000}); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, in, root, "compact")
	if _, err := lance.CleanupOldVersions(ctx, st, "", 0, lance.CleanupOptions{Now: func() time.Time { return time.Now().Add(time.Hour) }}); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, in, root, "cleanup")
	runCheck(t, in, "mutate", root)
	lancedbAgrees(t, in, root, "lancedb append, delete, update, optimize")
	requireFormat(t, ds, format) // lancedb keeps the dataset's format
	// kv0 continues after lancedb.
	if d, err = d.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	rec = writeBatch(20000, 20010)
	if _, err = d.Append(ctx, lance.Batches(rec), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	lancedbAgrees(t, in, root, "kv0 append after lancedb")
}

// TestGoOnLanceV1: kv0 writes onto a table lancedb created with V1
// manifest names (in a data file format kv0 writes) and keeps that scheme.
func TestGoOnLanceV1(t *testing.T) {
	forEachInstall(t, func(t *testing.T, in *lanceInstall) {
		forEachFormat(t, in, func(t *testing.T, format string) { testGoOnLanceV1(t, in, format) })
	})
}

func testGoOnLanceV1(t *testing.T, in *lanceInstall, format string) {
	ctx := context.Background()
	root := t.TempDir()
	runCheck(t, in, "createv1", root, format)
	st := mustStore(t, filepath.Join(root, "t.lance"))
	d, err := lance.Open(ctx, st, "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Naming() != lance.NamingV1 || d.DataFormat() != format {
		t.Fatalf("lancedb wrote %v names, format %s", d.Naming(), d.DataFormat())
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, d.ArrowSchema())
	for i := int64(50); i < 60; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("go")
	}
	rec := b.NewRecordBatch()
	if d, err = d.Append(ctx, lance.Batches(rec), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Naming() != lance.NamingV1 {
		t.Fatal("kv0 switched naming scheme")
	}
	if d, _, err = d.Delete(ctx, "id < 3"); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, in, root, "V1 names")
	runCheck(t, in, "mutate", root)
	lancedbAgrees(t, in, root, "V1 names, lancedb after kv0")
}
