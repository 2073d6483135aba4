package lancefile

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// NullArray returns an array of n nulls of type dt (n = 0: an empty array).
// It covers the types a Lance schema resolves to (bool, the integers, float32
// and float64, date32, timestamps, string, binary and their large forms,
// lists, large lists, fixed-size lists and structs) and the other types
// core/arrowstream writes: the null type, the other fixed-width types (float16,
// date64, times, durations, intervals, decimals, fixed-size binary) and maps.
// Any other type (dictionaries, unions, run-end encoded arrays, views,
// extensions) is an ErrUnsupportedType error naming it.
//
// It stands for arrow-go's array.MakeArrayOfNull and for an empty array made
// by array.NewBuilder: both reach the builder of every Arrow type through one
// type switch, so calling either keeps all of them in the wasm module (about
// 0.15 MB brotli; docs/benchmarks.md, "The wasm module: size"). The arrays are
// built from zeroed buffers, whose memory is the Go heap's, not an allocator's.
func NullArray(dt arrow.DataType, n int) (arrow.Array, error) {
	d, err := nullData(dt, n)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	return array.MakeFromData(d), nil
}

// nullData is NullArray's array data.
func nullData(dt arrow.DataType, n int) (arrow.ArrayData, error) {
	zeros := func(size int) *memory.Buffer { return memory.NewBufferBytes(make([]byte, size)) }
	bits := func(n int) *memory.Buffer { return zeros(int(bitutil.BytesForBits(int64(n)))) }
	switch dt.ID() {
	case arrow.NULL:
		return array.NewData(dt, n, []*memory.Buffer{nil}, nil, n, 0), nil
	case arrow.BOOL:
		return array.NewData(dt, n, []*memory.Buffer{bits(n), bits(n)}, nil, n, 0), nil
	case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32, arrow.INT64, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32,
		arrow.TIME64, arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256, arrow.FIXED_SIZE_BINARY:
		width := dt.(arrow.FixedWidthDataType).Bytes()
		return array.NewData(dt, n, []*memory.Buffer{bits(n), zeros(n * width)}, nil, n, 0), nil
	case arrow.STRING, arrow.BINARY:
		return array.NewData(dt, n, []*memory.Buffer{bits(n), zeros(4 * (n + 1)), zeros(0)}, nil, n, 0), nil
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return array.NewData(dt, n, []*memory.Buffer{bits(n), zeros(8 * (n + 1)), zeros(0)}, nil, n, 0), nil
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		width := 4
		if dt.ID() == arrow.LARGE_LIST {
			width = 8
		}
		child, err := nullData(dt.(arrow.ListLikeType).Elem(), 0)
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(dt, n, []*memory.Buffer{bits(n), zeros(width * (n + 1))}, []arrow.ArrayData{child}, n, 0), nil
	case arrow.FIXED_SIZE_LIST:
		t := dt.(*arrow.FixedSizeListType)
		child, err := nullData(t.Elem(), n*int(t.Len()))
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(dt, n, []*memory.Buffer{bits(n)}, []arrow.ArrayData{child}, n, 0), nil
	case arrow.STRUCT:
		t := dt.(*arrow.StructType)
		kids := make([]arrow.ArrayData, t.NumFields())
		defer func() {
			for _, k := range kids {
				if k != nil {
					k.Release()
				}
			}
		}()
		for i, f := range t.Fields() {
			k, err := nullData(f.Type, n)
			if err != nil {
				return nil, err
			}
			kids[i] = k
		}
		return array.NewData(dt, n, []*memory.Buffer{bits(n)}, kids, n, 0), nil
	}
	return nil, fmt.Errorf("%w: no null array of type %s", ErrUnsupportedType, dt)
}
