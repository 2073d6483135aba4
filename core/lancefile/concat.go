package lancefile

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Concat joins arrays of one type into a new array at offset 0 (one part is
// copied too, which compacts a slice), for the types NullArray covers; any
// other type, or parts of different types, is an ErrUnsupportedType error.
// The result's buffers are the Go heap's. With no parts it is an error.
//
// It stands for arrow-go's array.Concatenate, whose switch over every Arrow
// type (dictionaries and their unification, unions, run-end encoding, views)
// and the code it reaches cost the wasm module about 0.1 MB brotli
// (docs/benchmarks.md, "The wasm module: size").
func Concat(parts []arrow.Array) (arrow.Array, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: nothing to concatenate", ErrUnsupportedType)
	}
	dt := parts[0].DataType()
	ds := make([]arrow.ArrayData, len(parts))
	for i, p := range parts {
		if !arrow.TypeEqual(p.DataType(), dt) {
			return nil, fmt.Errorf("%w: cannot concatenate %s and %s", ErrUnsupportedType, dt, p.DataType())
		}
		ds[i] = p.Data()
	}
	d, err := concatData(dt, ds)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	return array.MakeFromData(d), nil
}

// concatData is Concat over array data (each with its own offset).
func concatData(dt arrow.DataType, ds []arrow.ArrayData) (arrow.ArrayData, error) {
	n, nulls := 0, 0
	counts := make([]int, len(ds))
	for i, d := range ds {
		counts[i] = nullCount(d)
		n += d.Len()
		nulls += counts[i]
	}
	if dt.ID() == arrow.NULL {
		return array.NewData(dt, n, []*memory.Buffer{nil}, nil, n, 0), nil
	}
	var validity *memory.Buffer
	if nulls > 0 {
		bits := make([]byte, bitutil.BytesForBits(int64(n)))
		at := 0
		for i, d := range ds {
			if b := d.Buffers()[0]; b != nil && counts[i] > 0 {
				bitutil.CopyBitmap(b.Bytes(), d.Offset(), d.Len(), bits, at)
			} else {
				bitutil.SetBitsTo(bits, int64(at), int64(d.Len()), true)
			}
			at += d.Len()
		}
		validity = memory.NewBufferBytes(bits)
	}
	switch dt.ID() {
	case arrow.BOOL:
		bits := make([]byte, bitutil.BytesForBits(int64(n)))
		at := 0
		for _, d := range ds {
			if b := d.Buffers()[1]; b != nil {
				bitutil.CopyBitmap(b.Bytes(), d.Offset(), d.Len(), bits, at)
			}
			at += d.Len()
		}
		return array.NewData(dt, n, []*memory.Buffer{validity, memory.NewBufferBytes(bits)}, nil, nulls, 0), nil
	case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32, arrow.INT64, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32,
		arrow.TIME64, arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256, arrow.FIXED_SIZE_BINARY:
		w := dt.(arrow.FixedWidthDataType).Bytes()
		vals := make([]byte, 0, n*w)
		for _, d := range ds {
			if b := d.Buffers()[1]; b != nil {
				vals = append(vals, b.Bytes()[d.Offset()*w:(d.Offset()+d.Len())*w]...)
			} else {
				vals = append(vals, make([]byte, d.Len()*w)...)
			}
		}
		return array.NewData(dt, n, []*memory.Buffer{validity, memory.NewBufferBytes(vals)}, nil, nulls, 0), nil
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		w := 4
		if id := dt.ID(); id == arrow.LARGE_STRING || id == arrow.LARGE_BINARY {
			w = 8
		}
		offs := make([]byte, (n+1)*w)
		size := int64(0)
		for _, d := range ds {
			lo, hi := valueRange(d, w)
			size += hi - lo
		}
		vals := make([]byte, 0, size)
		at := 0
		for _, d := range ds {
			lo, hi := rebase(offs, w, at, d, int64(len(vals)))
			if hi > lo {
				vals = append(vals, d.Buffers()[2].Bytes()[lo:hi]...)
			}
			at += d.Len()
		}
		return array.NewData(dt, n, []*memory.Buffer{validity, memory.NewBufferBytes(offs), memory.NewBufferBytes(vals)}, nil, nulls, 0), nil
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		w := 4
		if dt.ID() == arrow.LARGE_LIST {
			w = 8
		}
		offs := make([]byte, (n+1)*w)
		kids := make([]arrow.ArrayData, 0, len(ds))
		defer func() { releaseData(kids) }() // the slices appended below
		var items int64
		at := 0
		for _, d := range ds {
			lo, hi := rebase(offs, w, at, d, items)
			kids = append(kids, array.NewSliceData(d.Children()[0], lo, hi))
			items += hi - lo
			at += d.Len()
		}
		child, err := concatData(dt.(arrow.ListLikeType).Elem(), kids)
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(dt, n, []*memory.Buffer{validity, memory.NewBufferBytes(offs)}, []arrow.ArrayData{child}, nulls, 0), nil
	case arrow.FIXED_SIZE_LIST:
		t := dt.(*arrow.FixedSizeListType)
		size := int64(t.Len())
		kids := make([]arrow.ArrayData, 0, len(ds))
		defer func() { releaseData(kids) }() // the slices appended below
		for _, d := range ds {
			kids = append(kids, array.NewSliceData(d.Children()[0], int64(d.Offset())*size, int64(d.Offset()+d.Len())*size))
		}
		child, err := concatData(t.Elem(), kids)
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(dt, n, []*memory.Buffer{validity}, []arrow.ArrayData{child}, nulls, 0), nil
	case arrow.STRUCT:
		t := dt.(*arrow.StructType)
		fields := make([]arrow.ArrayData, t.NumFields())
		defer releaseData(fields)
		for f := range fields {
			kids := make([]arrow.ArrayData, 0, len(ds))
			for _, d := range ds {
				kids = append(kids, array.NewSliceData(d.Children()[f], int64(d.Offset()), int64(d.Offset()+d.Len())))
			}
			c, err := concatData(t.Field(f).Type, kids)
			releaseData(kids)
			if err != nil {
				return nil, err
			}
			fields[f] = c
		}
		return array.NewData(dt, n, []*memory.Buffer{validity}, fields, nulls, 0), nil
	}
	return nil, fmt.Errorf("%w: cannot concatenate arrays of type %s", ErrUnsupportedType, dt)
}

// valueRange returns d's first and end offsets, w bytes wide.
func valueRange(d arrow.ArrayData, w int) (lo, hi int64) {
	b := d.Buffers()[1]
	if b == nil || d.Len() == 0 {
		return 0, 0
	}
	off, n := d.Offset(), d.Len()
	if w == 4 {
		src := arrow.Int32Traits.CastFromBytes(b.Bytes())
		return int64(src[off]), int64(src[off+n])
	}
	src := arrow.Int64Traits.CastFromBytes(b.Bytes())
	return src[off], src[off+n]
}

// rebase writes the end offsets of d's slots, w bytes wide, into offs at
// slots at+1 to at+d.Len(), moved so that d's first offset becomes base, and
// returns d's first and end offsets (the range of its values).
func rebase(offs []byte, w, at int, d arrow.ArrayData, base int64) (lo, hi int64) {
	b := d.Buffers()[1]
	if b == nil || d.Len() == 0 {
		return 0, 0
	}
	off, n := d.Offset(), d.Len()
	if w == 4 {
		src := arrow.Int32Traits.CastFromBytes(b.Bytes())[off : off+n+1]
		dst := arrow.Int32Traits.CastFromBytes(offs)[at : at+n+1]
		delta := int32(base) - src[0]
		for i := 1; i < len(src); i++ {
			dst[i] = src[i] + delta
		}
		return int64(src[0]), int64(src[n])
	}
	src := arrow.Int64Traits.CastFromBytes(b.Bytes())[off : off+n+1]
	dst := arrow.Int64Traits.CastFromBytes(offs)[at : at+n+1]
	delta := base - src[0]
	for i := 1; i < len(src); i++ {
		dst[i] = src[i] + delta
	}
	return src[0], src[n]
}

// nullCount is d's count of nulls, counted from its validity bitmap when
// unknown (a slice's).
func nullCount(d arrow.ArrayData) int {
	if n := d.NullN(); n != array.UnknownNullCount {
		return n
	}
	if d.DataType().ID() == arrow.NULL {
		return d.Len()
	}
	b := d.Buffers()[0]
	if b == nil {
		return 0
	}
	return d.Len() - bitutil.CountSetBits(b.Bytes(), d.Offset(), d.Len())
}

func releaseData(ds []arrow.ArrayData) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}
