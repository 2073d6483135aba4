package s3

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
)

var idSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// idBatch holds the ids [from, to) with names "n<id>".
func idBatch(from, to int64) arrow.RecordBatch {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, idSchema)
	defer rb.Release()
	for i := from; i < to; i++ {
		rb.Field(0).(*array.Int64Builder).Append(i)
		rb.Field(1).(*array.StringBuilder).Append("n" + itoa(i))
	}
	return rb.NewRecordBatch()
}

func itoa(i int64) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		b = append(b, byte('0'+i%10))
		i /= 10
	}
	if neg {
		b = append(b, '-')
	}
	slices.Reverse(b)
	return string(b)
}

// ids scans a dataset and returns its ids in scan order, checking each
// row's name against its id.
func ids(t *testing.T, d *lance.Dataset) []int64 {
	t.Helper()
	sc, err := d.Scan(context.Background(), lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var out []int64
	for sc.Next() {
		rec := sc.Record()
		id := rec.Column(0).(*array.Int64)
		name := rec.Column(1).(*array.String)
		for i := 0; i < id.Len(); i++ {
			if name.Value(i) != "n"+itoa(id.Value(i)) {
				t.Fatalf("row %d: name %q for id %d", len(out), name.Value(i), id.Value(i))
			}
			out = append(out, id.Value(i))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestLanceWritePathOnS3 (and OnGCS, OnAzure) runs the Lance write path against the S3 server:
// create, a conflicting create, appends, delete, compaction, tags, time
// travel, restore and cleanup, checking the rows after every step through a
// fresh handle.
func TestLanceWritePathOnS3(t *testing.T)    { lanceWritePathSuite(t, s3Backend()) }
func TestLanceWritePathOnGCS(t *testing.T)   { lanceWritePathSuite(t, gcsBackend()) }
func TestLanceWritePathOnAzure(t *testing.T) { lanceWritePathSuite(t, azureBackend()) }

func lanceWritePathSuite(t *testing.T, b backend) {
	b.need(t)
	ctx := context.Background()
	st := b.open(t, b.newURI(t.Name()))
	const root = "t.lance"
	reopen := func() *lance.Dataset {
		t.Helper()
		d, err := lance.Open(ctx, st, root, lance.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := func(d *lance.Dataset, version uint64, rows []int64) {
		t.Helper()
		if d.Version() != version {
			t.Fatalf("version %d, want %d", d.Version(), version)
		}
		if got := ids(t, d); !slices.Equal(got, rows) {
			t.Fatalf("v%d: %d rows %v..., want %d rows", version, len(got), got[:min(len(got), 5)], len(rows))
		}
		if n, err := d.CountRows(ctx); err != nil || n != uint64(len(rows)) {
			t.Fatalf("CountRows = %d, %v; want %d", n, err, len(rows))
		}
	}

	d, err := lance.Create(ctx, st, root, idSchema, lance.Batches(idBatch(0, 100)), lance.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want(reopen(), 1, seq(0, 100))
	if _, err := lance.Create(ctx, st, root, idSchema, lance.Batches(idBatch(0, 1)), lance.WriteOptions{}); !errors.Is(err, lance.ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}

	old := reopen()
	// Appends: v2..v5, one fragment each.
	for v := int64(1); v <= 4; v++ {
		if d, err = d.Append(ctx, lance.Batches(idBatch(v*100, v*100+100)), lance.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want(reopen(), 5, seq(0, 500))
	if n := len(reopen().Fragments()); n != 5 {
		t.Fatalf("%d fragments, want 5", n)
	}

	// A handle opened at v1 appends after v2..v5: it rebases, nothing is
	// lost.
	if _, err := old.Append(ctx, lance.Batches(idBatch(500, 510)), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	want(reopen(), 6, seq(0, 510))

	// Delete 125 rows of two fragments.
	d, stats, err := reopen().Delete(ctx, "id < 50 OR (id >= 300 AND id < 375)")
	if err != nil {
		t.Fatal(err)
	}
	if stats.RowsDeleted != 125 {
		t.Fatalf("deleted %d rows, want 125", stats.RowsDeleted)
	}
	var afterDelete []int64
	for _, i := range seq(0, 510) {
		if !(i < 50 || i >= 300 && i < 375) {
			afterDelete = append(afterDelete, i)
		}
	}
	want(reopen(), 7, afterDelete)
	if err := d.CreateTag(ctx, "after-delete", 7); err != nil {
		t.Fatal(err)
	}

	// Compact everything into one fragment without the deleted rows.
	d, cs, err := d.Compact(ctx, lance.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs.FragmentsAdded != 1 || cs.FragmentsRemoved != 6 {
		t.Fatalf("compaction stats %+v, want 6 fragments into 1", cs)
	}
	latest := reopen()
	if n := len(latest.Fragments()); n != 1 {
		t.Fatalf("%d fragments after compaction, want 1", n)
	}
	want(latest, d.Version(), afterDelete)

	// Tags and time travel.
	tags, err := lance.ListTags(ctx, st, root)
	if err != nil || len(tags) != 1 || tags[0].Name != "after-delete" || tags[0].Version != 7 {
		t.Fatalf("tags %+v, %v", tags, err)
	}
	v2, err := lance.Open(ctx, st, root, lance.OpenOptions{Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	want(v2, 2, seq(0, 200))

	// Restore version 4, then append on top of it.
	if d, err = latest.Restore(ctx, 4); err != nil {
		t.Fatal(err)
	}
	restored := d.Version()
	want(reopen(), restored, seq(0, 400))
	if d, err = d.Append(ctx, lance.Batches(idBatch(1000, 1010)), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	afterRestore := append(seq(0, 400), seq(1000, 1010)...)
	want(reopen(), restored+1, afterRestore)

	// Cleanup keeps the latest and the tagged version, and every file they
	// need; the others go.
	cst, err := lance.CleanupOldVersions(ctx, st, root, 0, lance.CleanupOptions{DeleteUnverified: true})
	if err != nil {
		t.Fatal(err)
	}
	if cst.VersionsRemoved == 0 || cst.DataFilesRemoved == 0 {
		t.Fatalf("cleanup removed nothing: %+v", cst)
	}
	vs, err := lance.ListVersions(ctx, st, root)
	if err != nil {
		t.Fatal(err)
	}
	var kept []uint64
	for _, v := range vs {
		kept = append(kept, v.Version)
	}
	if !slices.Equal(kept, []uint64{7, restored + 1}) {
		t.Fatalf("versions after cleanup %v, want [7 %d]", kept, restored+1)
	}
	want(reopen(), restored+1, afterRestore)
	tagged, err := lance.Open(ctx, st, root, lance.OpenOptions{Version: 7})
	if err != nil {
		t.Fatal(err)
	}
	want(tagged, 7, afterDelete)
	if _, err := lance.Open(ctx, st, root, lance.OpenOptions{Version: 2}); err == nil {
		t.Fatal("version 2 still opens after cleanup")
	}
}
