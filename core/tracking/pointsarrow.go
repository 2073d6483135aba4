package tracking

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// pointsRecord returns the buffered points as a metrics batch (the stats
// column null) whose value columns are the buffer's own slices, not
// copies: it must not be used once the buffer is reused, that is after the
// commit that writes it returns. Nil when there are no points.
func pointsRecord(p *points) arrow.RecordBatch {
	n := p.len()
	if n == 0 {
		return nil
	}
	field := func(i int) arrow.DataType { return MetricsSchema.Field(i).Type }
	epochValid := make([]byte, bitutil.BytesForBits(int64(n)))
	epochNulls := 0
	for i, has := range p.hasEpoch {
		if has {
			bitutil.SetBit(epochValid, i)
		} else {
			epochNulls++
		}
	}
	// An all-null binary column: zero offsets and an empty validity bitmap.
	noStats := array.NewData(field(5), n, []*memory.Buffer{
		memory.NewBufferBytes(make([]byte, bitutil.BytesForBits(int64(n)))),
		memory.NewBufferBytes(make([]byte, 4*(n+1))),
		memory.NewBufferBytes(nil),
	}, nil, n, 0)
	defer noStats.Release()
	cols := []arrow.Array{
		fixedWidth(field(0), n, bytesOf(p.sid), nil, 0),
		fixedWidth(field(1), n, bytesOf(p.step), nil, 0),
		fixedWidth(field(2), n, bytesOf(p.epoch), epochValid, epochNulls),
		fixedWidth(field(3), n, bytesOf(p.ts), nil, 0),
		fixedWidth(field(4), n, bytesOf(p.val), nil, 0),
		array.MakeFromData(noStats),
	}
	rec := array.NewRecordBatch(MetricsSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// fixedWidth wraps values (and a validity bitmap when nulls > 0) as an
// array of typ without copying.
func fixedWidth(typ arrow.DataType, n int, values, valid []byte, nulls int) arrow.Array {
	var vb *memory.Buffer
	if nulls > 0 {
		vb = memory.NewBufferBytes(valid)
	}
	d := array.NewData(typ, n, []*memory.Buffer{vb, memory.NewBufferBytes(values)}, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// bytesOf views a slice of 8-byte numbers as its bytes (Arrow buffers are
// in the machine's byte order too).
func bytesOf[T uint64 | int64 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*8)
}
