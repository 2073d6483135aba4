package lance

import (
	"context"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// FuzzRoundTripDataset writes rows derived from the input (values, nulls,
// file splits) with Create and checks that a scan returns them unchanged.
func FuzzRoundTripDataset(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 4, 5, 6}, uint8(2))
	f.Add([]byte{}, uint8(0))
	f.Add([]byte("hello, lance writer"), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Uint8), Nullable: true},
		}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		validUTF8 := true
		for i, c := range data {
			if c%5 == 0 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(int64(c) << (i % 56))
			}
			if c%3 == 0 {
				b.Field(1).AppendNull()
			} else {
				v := string(data[i:min(len(data), i+int(c%9))])
				validUTF8 = validUTF8 && utf8.ValidString(v)
				b.Field(1).(*array.StringBuilder).Append(v)
			}
			lb := b.Field(2).(*array.ListBuilder)
			switch c % 4 {
			case 0:
				lb.AppendNull()
			default:
				lb.Append(true)
				for _, x := range data[i:min(len(data), i+int(c%4)-1)] {
					lb.ValueBuilder().(*array.Uint8Builder).Append(x)
				}
			}
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		ctx := context.Background()
		d, err := Create(ctx, store.NewMemory(), "t", schema, Batches(rec), WriteOptions{MaxRowsPerFile: int(split%16) + 1})
		if !validUTF8 {
			// A string column must hold UTF-8: the write is refused.
			if !errors.Is(err, lancefile.ErrInvalidUTF8) {
				t.Fatalf("writing invalid UTF-8 to a string column: %v, want ErrInvalidUTF8", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.Scan(ctx, ScanOptions{BatchRows: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var got []arrow.RecordBatch
		for s.Next() {
			r := s.Record()
			r.Retain()
			got = append(got, r)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		tbl := array.NewTableFromRecords(schema, got)
		defer tbl.Release()
		want := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
		defer want.Release()
		if tbl.NumRows() != want.NumRows() {
			t.Fatalf("%d rows, want %d", tbl.NumRows(), want.NumRows())
		}
		for c := 0; c < int(want.NumCols()); c++ {
			if !array.ChunkedEqual(tbl.Column(c).Data(), want.Column(c).Data()) {
				t.Fatalf("column %s differs", schema.Field(c).Name)
			}
		}
	})
}
