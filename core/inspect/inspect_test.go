package inspect_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// testDataset writes n rows (id int64, name utf8, score float64) in
// fragments of perFile rows, and deletes the rows with ids 100 to 528.
func testDataset(t *testing.T, n, perFile int) *lance.Dataset {
	t.Helper()
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", i%13))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i%17) / 4)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := store.NewMemory()
	d, err := lance.Create(ctx, st, "t.lance", schema, lance.Batches(rec), lance.WriteOptions{MaxRowsPerFile: perFile})
	if err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Delete(ctx, "id >= 100 AND id < 529"); err != nil {
		t.Fatal(err)
	}
	return d
}

func catAll(t *testing.T, d *lance.Dataset, o inspect.RowsOptions) string {
	t.Helper()
	rows, err := inspect.ScanRows(context.Background(), d, o)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	for rows.Next() {
		if !rows.Record().Schema().Equal(rows.Schema()) {
			t.Fatalf("batch schema %v, announced %v", rows.Record().Schema(), rows.Schema())
		}
		if err := w.Write(rows.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestScanRowsModel checks filtered, projected and limited scans against
// the same selection made line by line on the full output.
func TestScanRowsModel(t *testing.T) {
	d := testDataset(t, 3000, 700)
	full := strings.SplitAfter(catAll(t, d, inspect.RowsOptions{Limit: -1}), "\n")
	full = full[:len(full)-1]
	idCol := func(line string) int {
		var id int
		fmt.Sscanf(line[strings.Index(line, `"id":`)+5:], "%d", &id)
		return id
	}
	if len(full) != 3000-429 {
		t.Fatalf("%d live rows, want %d", len(full), 3000-429)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		lo := rng.IntN(3000)
		hi := lo + rng.IntN(1500)
		limit := int64(rng.IntN(600)) - 100
		if limit < 0 {
			limit = -1
		}
		o := inspect.RowsOptions{Limit: limit, Where: fmt.Sprintf("id >= %d AND id < %d", lo, hi)}
		var want strings.Builder
		var n int64
		for _, l := range full {
			if id := idCol(l); id >= lo && id < hi && (limit < 0 || n < limit) {
				want.WriteString(l)
				n++
			}
		}
		if got := catAll(t, d, o); got != want.String() {
			t.Fatalf("%+v: %d bytes, want %d", o, len(got), want.Len())
		}
		o.Where = ""
		want.Reset()
		for i, l := range full {
			if limit < 0 || int64(i) < limit {
				want.WriteString(l)
			}
		}
		if got := catAll(t, d, o); got != want.String() {
			t.Fatalf("%+v: %d bytes, want %d", o, len(got), want.Len())
		}
	}
	// A projection with a filter on a column it does not return.
	got := catAll(t, d, inspect.RowsOptions{Columns: []string{"score"}, Where: "id = 1", Limit: -1})
	if got != `{"score":0.25}`+"\n" {
		t.Fatalf("projection: %q", got)
	}
}

func TestScanRowsArgErrors(t *testing.T) {
	d := testDataset(t, 10, 10)
	for _, c := range []struct {
		o   inspect.RowsOptions
		arg string
	}{
		{inspect.RowsOptions{Columns: []string{"nope"}}, "columns"},
		{inspect.RowsOptions{Columns: []string{"id", "id"}}, "columns"},
		{inspect.RowsOptions{Where: "id ="}, "where"},
		{inspect.RowsOptions{Where: "nope = 1"}, "where"},
	} {
		_, err := inspect.ScanRows(context.Background(), d, c.o)
		var ae *inspect.ArgError
		if !errors.As(err, &ae) || ae.Arg != c.arg || !errors.Is(err, inspect.ErrInvalid) {
			t.Errorf("%+v: %v, want an ArgError for %s", c.o, err, c.arg)
		}
	}
}
