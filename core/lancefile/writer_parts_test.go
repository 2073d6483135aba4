package lancefile

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestFinishParts checks that the parts FinishParts returns join to the
// file Finish returns for the same input, and that the file reads back.
func TestFinishParts(t *testing.T) {
	as := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	}, nil)
	s := mustSchema(t, as)
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []arrow.RecordBatch
	for _, n := range []int{10_000, 3, 70_000} {
		cols := make([]arrow.Array, len(as.Fields()))
		for i, f := range as.Fields() {
			cols[i] = randomArray(rng, f.Type, n, 0.1, 0.05)
			if !f.Nullable {
				cols[i].Release()
				cols[i] = randomArray(rng, f.Type, n, 0, 0.05)
			}
		}
		recs = append(recs, array.NewRecordBatch(as, cols, int64(n)))
	}
	whole := writeFile(t, s, WriterOptions{}, recs...)
	w, err := NewWriter(s, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	parts, size, err := w.FinishParts()
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	joined := bytes.Join(parts, nil)
	if int64(len(joined)) != size || !bytes.Equal(joined, whole) {
		t.Fatalf("parts join to %d bytes (size %d), Finish gave %d; equal %v", len(joined), size, len(whole), bytes.Equal(joined, whole))
	}
	if _, _, err := w.FinishParts(); err == nil {
		t.Fatal("FinishParts twice did not fail")
	}
	if _, err := readBack(t, s, joined, len(as.Fields())); err != nil {
		t.Fatal(err)
	}
}
