package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
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
func lancedbAgrees(t *testing.T, node, root, step string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dump")
	runNode(t, node, "dump", root, out)
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
	t.Logf("%s: lancedb agrees on %d versions and %d tags", step, len(versions), len(tags))
}

func runNode(t *testing.T, node string, args ...string) {
	t.Helper()
	cmd := exec.Command(node, append([]string{"check.mjs"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node check.mjs %v: %v\n%s", args, err, tail(stderr.String(), 4000))
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

func nodeOrSkip(t *testing.T) string {
	t.Helper()
	requireSuite(t)
	node, err := exec.LookPath("node")
	if err != nil {
		if inCI() {
			t.Fatal("CI=true but node is missing")
		}
		t.Skip("node not found")
	}
	return node
}

// TestGoToLance: Go creates, appends, deletes (small and large), compacts,
// tags and cleans up; lancedb checks every version after each step; then
// lancedb appends, deletes and optimizes, and kv0 reads every version the
// same.
func TestGoToLance(t *testing.T) {
	node := nodeOrSkip(t)
	ctx := context.Background()
	root := t.TempDir()
	ds := filepath.Join(root, "t.lance")
	st := mustStore(t, ds)
	rec := writeBatch(0, 12000)
	// lancedb 0.31 (lance 8) reads data files of format 2.1 only.
	d, err := lance.Create(ctx, st, "", writeSchema, lance.Batches(rec), lance.WriteOptions{MaxRowsPerFile: 5000, DataFormat: lance.DataFormat21})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, node, root, "create")
	rec = writeBatch(12000, 12100)
	if d, err = d.Append(ctx, lance.Batches(rec), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	lancedbAgrees(t, node, root, "append")
	if d, _, err = d.Delete(ctx, "id < 20 OR label = 'row-6001-é'"); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, node, root, "small delete")
	if d, _, err = d.Delete(ctx, "id >= 5000 AND id < 9000 AND u8 > 3"); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, node, root, "large delete")
	if err := d.CreateTag(ctx, "before-compact", 0); err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Compact(ctx, lance.CompactOptions{TargetRowsPerFragment: 6000}); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, node, root, "compact")
	if _, err := lance.CleanupOldVersions(ctx, st, "", 0, lance.CleanupOptions{Now: func() time.Time { return time.Now().Add(time.Hour) }}); err != nil {
		t.Fatal(err)
	}
	lancedbAgrees(t, node, root, "cleanup")
	runNode(t, node, "mutate", root)
	lancedbAgrees(t, node, root, "lancedb append, delete, optimize")
	// kv0 continues after lancedb.
	if d, err = d.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	rec = writeBatch(20000, 20010)
	if _, err = d.Append(ctx, lance.Batches(rec), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	lancedbAgrees(t, node, root, "kv0 append after lancedb")
}

// TestGoOnLanceV1: kv0 writes onto a table lancedb created with V1
// manifest names and keeps that scheme.
func TestGoOnLanceV1(t *testing.T) {
	node := nodeOrSkip(t)
	ctx := context.Background()
	root := t.TempDir()
	runNode(t, node, "createv1", root)
	st := mustStore(t, filepath.Join(root, "t.lance"))
	d, err := lance.Open(ctx, st, "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Naming() != lance.NamingV1 {
		t.Fatalf("lancedb wrote %v names", d.Naming())
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
	lancedbAgrees(t, node, root, "V1 names")
	runNode(t, node, "mutate", root)
	lancedbAgrees(t, node, root, "V1 names, lancedb after kv0")
	_ = json.Valid
}
