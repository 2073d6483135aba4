package lance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// wSchema is the schema of the writer tests: an id and a nullable label.
var wSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// idBatch returns rows ids [from, to) of wSchema; label is null for ids
// divisible by 7.
func idBatch(from, to int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, wSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		if i%7 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
		}
	}
	return b.NewRecordBatch()
}

// ids scans the id column of d.
func ids(t testing.TB, d *Dataset) []int64 {
	t.Helper()
	s, err := d.Scan(context.Background(), ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []int64
	for s.Next() {
		out = append(out, s.Record().Column(0).(*array.Int64).Int64Values()...)
	}
	if err := s.Err(); err != nil {
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

func mustCreate(t testing.TB, st store.Store, root string, from, to int64, opts WriteOptions) *Dataset {
	t.Helper()
	rec := idBatch(from, to)
	defer rec.Release()
	d, err := Create(context.Background(), st, root, wSchema, Batches(rec), opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustAppend(t testing.TB, d *Dataset, from, to int64) *Dataset {
	t.Helper()
	rec := idBatch(from, to)
	defer rec.Release()
	nd, err := d.Append(context.Background(), Batches(rec), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return nd
}

func txnOf(t testing.TB, d *Dataset) *tablepb.Transaction {
	t.Helper()
	txn, err := readTransaction(context.Background(), d.st, d.k, d.mf)
	if err != nil || txn == nil {
		t.Fatalf("transaction of version %d: %v", d.Version(), err)
	}
	return txn
}

func TestCreateAppendManifest(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t.lance", 0, 100, WriteOptions{MaxRowsPerFile: 40})
	if d.Version() != 1 || len(d.Fragments()) != 3 {
		t.Fatalf("version %d, %d fragments", d.Version(), len(d.Fragments()))
	}
	m := d.mf.m
	if m.GetMaxFragmentId() != 2 || m.GetWriterVersion().GetLibrary() != writerLibrary ||
		m.GetDataFormat().GetVersion() != DefaultDataFormat || m.ReaderFeatureFlags != 0 || m.WriterFeatureFlags != 0 ||
		m.TransactionSection == nil || m.GetTransactionFile() == "" || m.GetTimestamp() == nil {
		t.Fatalf("manifest: %v", m)
	}
	for i, f := range d.Fragments() {
		if f.ID != uint64(i) || f.Files[0].Size == 0 || !strings.HasSuffix(f.Files[0].Path, ".lance") || len(f.Files[0].Path) != len("data/")+56 {
			t.Fatalf("fragment %d: %+v", i, f)
		}
	}
	if f := d.Fragments(); f[0].PhysicalRows != 40 || f[2].PhysicalRows != 20 {
		t.Fatalf("rows per fragment: %+v", f)
	}
	txn := txnOf(t, d)
	if operationName(txn) != "Create" {
		t.Fatalf("operation %s", operationName(txn))
	}
	if _, err := st.Stat(ctx, "t.lance/_transactions/"+m.GetTransactionFile()); err != nil {
		t.Fatal(err)
	}
	hint, _ := store.ReadAll(ctx, st, "t.lance/_versions/latest_version_hint.json")
	if string(hint) != `{"version":1}` {
		t.Fatalf("hint %q", hint)
	}
	if _, err := Create(ctx, st, "t.lance", wSchema, Batches(), WriteOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}

	d2 := mustAppend(t, d, 100, 150)
	if d2.Version() != 2 || d2.mf.m.GetMaxFragmentId() != 3 || d2.Fragments()[3].ID != 3 || operationName(txnOf(t, d2)) != "Append" {
		t.Fatalf("append: version %d, %v", d2.Version(), d2.mf.m)
	}
	if got := ids(t, d2); !slices.Equal(got, seq(0, 150)) {
		t.Fatalf("ids %v", got)
	}
	re, err := Open(ctx, st, "t.lance", OpenOptions{})
	if err != nil || re.Version() != 2 {
		t.Fatalf("reopen: %v", err)
	}
	// A stale handle appends on top of the latest version.
	d3 := mustAppend(t, d, 150, 160)
	if d3.Version() != 3 || d3.Fragments()[4].ID != 4 {
		t.Fatalf("stale append: version %d", d3.Version())
	}
	if got := ids(t, d3); !slices.Equal(got, seq(0, 160)) {
		t.Fatalf("ids %v", got)
	}
	n, _ := d3.CountRows(ctx)
	if n != 160 {
		t.Fatalf("count %d", n)
	}
}

func TestAppendSchemaChecks(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t", 0, 10, WriteOptions{})
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "label", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, other)
	b.Field(0).(*array.Int32Builder).Append(1)
	b.Field(1).AppendNull()
	rec := b.NewRecordBatch()
	if _, err := d.Append(ctx, Batches(rec), WriteOptions{}); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("type mismatch: %v", err)
	}
	// Columns in another order are matched by name.
	swapped := arrow.NewSchema([]arrow.Field{wSchema.Field(1), wSchema.Field(0)}, nil)
	src := idBatch(10, 12)
	rec2 := array.NewRecordBatch(swapped, []arrow.Array{src.Column(1), src.Column(0)}, 2)
	d2, err := d.Append(ctx, Batches(rec2), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, d2); !slices.Equal(got, seq(0, 12)) {
		t.Fatalf("ids %v", got)
	}
	// A 2.0 dataset refuses appends.
	d2.mf.m.DataFormat.Version = "2.0"
	if _, err := d2.Append(ctx, Batches(idBatch(0, 1)), WriteOptions{}); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("append to 2.0: %v", err)
	}
}
