package lancefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
)

// Page decoding for Lance 2.0 files.
//
// A 2.0 page is described by a tree of ArrayEncoding messages whose leaves
// point at buffers (of the page, of the column or of the file). Each page is
// decoded whole into an Arrow array of the page's rows; field decoders then
// slice and concatenate those arrays.
//
// The encodings, as lance writes them:
//
//	Nullable  no_nulls{values} | some_nulls{validity, values} | all_nulls{}
//	          validity: Flat{1 bit}, LSB first, 1 = valid
//	Flat      bits_per_value ∈ {1, 8, 16, 32, 64}, little-endian values packed
//	          back to back in one buffer, optionally compressed as a whole
//	Binary    indices: n u64 END offsets (no leading 0); a null row stores
//	          end + null_adjustment (null_adjustment = total bytes + 1)
//	          bytes:   Flat{8}, the concatenated values
//	Dictionary indices: u8, 0 = null, i → items[i-1]; items: a Binary of
//	          num_dictionary_items values
//	FixedSizeList dimension, items: the n×dimension child values
//	List      (list columns only, see v20.go) offsets like Binary's indices,
//	          with null_offset_adjustment and num_items
//
// Every length and offset read from a page is checked against the buffers
// that back it before anything is allocated, so a hostile page costs at most
// a small multiple of its own size. Rows that no buffer backs (all-null and
// constant pages) are materialized at most maxUnbacked20 at a time.

const (
	// maxUnbacked20 bounds how many values one call materializes when no
	// buffer backs them (all-null or constant20 pages).
	maxUnbacked20 = 1 << 24
	// maxExpand20 bounds the bytes a dictionary or FSST page expands to.
	maxExpand20 = 1 << 31
)

// bufResolver20 returns the bytes a Buffer message points at.
type bufResolver20 interface {
	buffer(b *enc20pb.Buffer) ([]byte, error)
}

// pageBufs20 resolves page buffers only; column and file buffers are refused.
type pageBufs20 [][]byte

func (p pageBufs20) buffer(b *enc20pb.Buffer) ([]byte, error) {
	if b == nil {
		return nil, errors.New("encoding without a buffer reference")
	}
	if b.GetBufferType() != enc20pb.Buffer_page {
		return nil, fmt.Errorf("%w: %v buffer reference", ErrUnsupportedEncoding, b.GetBufferType())
	}
	i := int(b.GetBufferIndex())
	if i >= len(p) {
		return nil, fmt.Errorf("page buffer %d of %d", i, len(p))
	}
	return p[i], nil
}

// decoder20 decodes one page's encoding tree.
type decoder20 struct {
	res bufResolver20
}

var alloc20 = memory.DefaultAllocator

// decode returns the n values that enc describes as an array of type dt
// (offset 0).
func (d *decoder20) decode(enc *enc20pb.ArrayEncoding, n int, dt arrow.DataType) (arrow.Array, error) {
	if n < 0 {
		return nil, fmt.Errorf("negative row count %d", n)
	}
	switch e := enc.GetArrayEncoding().(type) {
	case *enc20pb.ArrayEncoding_Nullable:
		switch nn := e.Nullable.GetNullability().(type) {
		case *enc20pb.Nullable_NoNulls:
			return d.decode(nn.NoNulls.GetValues(), n, dt)
		case *enc20pb.Nullable_SomeNulls:
			valid, err := d.bitmap(nn.SomeNulls.GetValidity(), n)
			if err != nil {
				return nil, fmt.Errorf("validity: %w", err)
			}
			vals, err := d.decode(nn.SomeNulls.GetValues(), n, dt)
			if err != nil {
				return nil, err
			}
			return withValidity20(vals, valid)
		case *enc20pb.Nullable_AllNulls:
			return makeNulls20(dt, n, true)
		default:
			return nil, errors.New("nullable encoding without a nullability")
		}
	case *enc20pb.ArrayEncoding_Flat:
		return d.flat(e.Flat, n, dt)
	case *enc20pb.ArrayEncoding_Bitpacked:
		return d.bitpacked(e.Bitpacked, n, dt)
	case *enc20pb.ArrayEncoding_BitpackedForNonNeg:
		return d.bitpackedNonNeg(e.BitpackedForNonNeg, n, dt)
	case *enc20pb.ArrayEncoding_Constant:
		return constant20(e.Constant.GetValue(), n, dt)
	case *enc20pb.ArrayEncoding_FixedSizeList:
		return d.fixedSizeList(e.FixedSizeList, n, dt)
	case *enc20pb.ArrayEncoding_Binary:
		return d.binary(e.Binary, n, dt)
	case *enc20pb.ArrayEncoding_Dictionary:
		return d.dictionary(e.Dictionary, n, dt)
	case *enc20pb.ArrayEncoding_Fsst:
		return d.fsst(e.Fsst, n, dt)
	case nil:
		return nil, errors.New("empty array encoding")
	default:
		return nil, fmt.Errorf("%w: 2.0 array encoding %T for %v", ErrUnsupportedEncoding, e, dt)
	}
}

// fixedBits20 returns the bit width of a fixed-width type (1 for bool), or 0.
func fixedBits20(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.BOOL, arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32,
		arrow.INT64, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.TIMESTAMP:
		return dt.(arrow.FixedWidthDataType).BitWidth()
	}
	return 0
}

// fixedArray20 wraps n values of dt held in vals (a bitmap for bool).
func fixedArray20(dt arrow.DataType, n int, vals []byte) arrow.Array {
	data := array.NewData(dt, n, []*memory.Buffer{nil, memory.NewBufferBytes(vals)}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

func (d *decoder20) flatBytes(f *enc20pb.Flat, need int) ([]byte, error) {
	buf, err := d.res.buffer(f.GetBuffer())
	if err != nil {
		return nil, err
	}
	if c := f.GetCompression(); c != nil && c.GetScheme() != "" && c.GetScheme() != "none" {
		if buf, err = decompress20(c.GetScheme(), buf, need); err != nil {
			return nil, err
		}
	}
	if len(buf) < need {
		return nil, fmt.Errorf("flat buffer of %d bytes, need %d", len(buf), need)
	}
	return buf[:need:need], nil
}

func (d *decoder20) flat(f *enc20pb.Flat, n int, dt arrow.DataType) (arrow.Array, error) {
	bits := fixedBits20(dt)
	if bits == 0 {
		return nil, fmt.Errorf("%w: flat encoding for %v", ErrUnsupportedEncoding, dt)
	}
	if f.GetBitsPerValue() != uint64(bits) {
		return nil, fmt.Errorf("flat encoding of %d bits for %v", f.GetBitsPerValue(), dt)
	}
	vals, err := d.flatBytes(f, (n*bits+7)/8)
	if err != nil {
		return nil, err
	}
	return fixedArray20(dt, n, vals), nil
}

// bitmap decodes a validity encoding into a bitmap of n bits at offset 0.
// Null entries of the validity array itself count as invalid.
func (d *decoder20) bitmap(enc *enc20pb.ArrayEncoding, n int) ([]byte, error) {
	arr, err := d.decode(enc, n, arrow.FixedWidthTypes.Boolean)
	if err != nil {
		return nil, err
	}
	data := arr.Data()
	if data.Len() != n {
		return nil, fmt.Errorf("validity decoded %d rows, want %d", data.Len(), n)
	}
	vals := data.Buffers()[1].Bytes()
	out := make([]byte, (n+7)/8)
	bitutil.CopyBitmap(vals, data.Offset(), n, out, 0)
	if arr.NullN() > 0 {
		nulls := data.Buffers()[0].Bytes()
		bitutil.BitmapAnd(out, nulls, 0, int64(data.Offset()), out, 0, int64(n))
	}
	return out, nil
}

// withValidity20 returns arr (offset 0) with its nulls ANDed with valid.
func withValidity20(arr arrow.Array, valid []byte) (arrow.Array, error) {
	data := arr.Data()
	n := data.Len()
	if data.Offset() != 0 {
		return nil, errors.New("internal: validity on a sliced array")
	}
	if arr.NullN() > 0 {
		old := data.Buffers()[0].Bytes()
		merged := make([]byte, len(valid))
		bitutil.BitmapAnd(valid, old, 0, 0, merged, 0, int64(n))
		valid = merged
	}
	nulls := n - bitutil.CountSetBits(valid, 0, n)
	bufs := append([]*memory.Buffer{memory.NewBufferBytes(valid)}, data.Buffers()[1:]...)
	nd := array.NewData(data.DataType(), n, bufs, data.Children(), nulls, 0)
	defer nd.Release()
	return array.MakeFromData(nd), nil
}

// makeNulls20 returns n nulls of type dt, refusing more than maxUnbacked20
// when capped (the count comes from the file, not from the caller).
func makeNulls20(dt arrow.DataType, n int, capped bool) (arrow.Array, error) {
	if capped && n > maxUnbacked20 {
		return nil, fmt.Errorf("%d null values in one batch (limit %d)", n, maxUnbacked20)
	}
	return NullArray(dt, n)
}

func constant20(v []byte, n int, dt arrow.DataType) (arrow.Array, error) {
	bits := fixedBits20(dt)
	if bits < 8 || len(v)*8 != bits {
		return nil, fmt.Errorf("%w: constant20 of %d bytes for %v", ErrUnsupportedEncoding, len(v), dt)
	}
	if n > maxUnbacked20 {
		return nil, fmt.Errorf("%d constant values in one batch (limit %d)", n, maxUnbacked20)
	}
	out := make([]byte, n*len(v))
	for i := 0; i < len(out); i += len(v) {
		copy(out[i:], v)
	}
	return fixedArray20(dt, n, out), nil
}

// bitpacked decodes the legacy bit packing: value i occupies bits
// [i*w, (i+1)*w) of a little-endian bit stream, sign-extended when signed.
func (d *decoder20) bitpacked(b *enc20pb.Bitpacked, n int, dt arrow.DataType) (arrow.Array, error) {
	bits := fixedBits20(dt)
	w := int(min(b.GetCompressedBitsPerValue(), 65))
	if bits < 8 || b.GetUncompressedBitsPerValue() != uint64(bits) || w < 1 || w > bits {
		return nil, fmt.Errorf("%w: bitpacked %d→%d bits for %v", ErrUnsupportedEncoding,
			b.GetCompressedBitsPerValue(), b.GetUncompressedBitsPerValue(), dt)
	}
	src, err := d.res.buffer(b.GetBuffer())
	if err != nil {
		return nil, err
	}
	if need := (n*w + 7) / 8; len(src) < need {
		return nil, fmt.Errorf("bitpacked buffer of %d bytes, need %d", len(src), need)
	}
	size := bits / 8
	out := make([]byte, n*size)
	var tmp [8]byte
	for i := range n {
		v := readBits20(src, i*w, w)
		if b.GetSigned() && w < 64 && v&(1<<(w-1)) != 0 {
			v |= ^uint64(0) << w
		}
		binary.LittleEndian.PutUint64(tmp[:], v)
		copy(out[i*size:], tmp[:size])
	}
	return fixedArray20(dt, n, out), nil
}

// readBits20 reads w ≤ 64 bits at bit position pos of an LSB-first stream.
// The caller has checked that the bits are inside src.
func readBits20(src []byte, pos, w int) uint64 {
	var v uint64
	got := 0
	for got < w {
		byteIdx, shift := (pos+got)/8, (pos+got)%8
		take := min(8-shift, w-got)
		v |= uint64(src[byteIdx]>>shift&(1<<take-1)) << got
		got += take
	}
	return v
}

func (d *decoder20) fixedSizeList(f *enc20pb.FixedSizeList, n int, dt arrow.DataType) (arrow.Array, error) {
	ft, ok := dt.(*arrow.FixedSizeListType)
	if !ok {
		return nil, fmt.Errorf("%w: fixed_size_list encoding for %v", ErrUnsupportedEncoding, dt)
	}
	if f.GetDimension() != uint32(ft.Len()) {
		return nil, fmt.Errorf("fixed_size_list of dimension %d for %v", f.GetDimension(), dt)
	}
	dim := int(ft.Len())
	if dim > 0 && n > math.MaxInt32/dim {
		return nil, fmt.Errorf("fixed_size_list of %d×%d values", n, dim)
	}
	child, err := d.decode(f.GetItems(), n*dim, ft.Elem())
	if err != nil {
		return nil, fmt.Errorf("fixed_size_list items: %w", err)
	}
	defer child.Release()
	data := array.NewData(dt, n, []*memory.Buffer{nil}, []arrow.ArrayData{child.Data()}, 0, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// uintsBits20 returns the bit width an integer encoding produces, or 0.
func uintsBits20(enc *enc20pb.ArrayEncoding) uint64 {
	switch e := enc.GetArrayEncoding().(type) {
	case *enc20pb.ArrayEncoding_Nullable:
		if nn, ok := e.Nullable.GetNullability().(*enc20pb.Nullable_NoNulls); ok {
			return uintsBits20(nn.NoNulls.GetValues())
		}
		if sn, ok := e.Nullable.GetNullability().(*enc20pb.Nullable_SomeNulls); ok {
			return uintsBits20(sn.SomeNulls.GetValues())
		}
	case *enc20pb.ArrayEncoding_Flat:
		return e.Flat.GetBitsPerValue()
	case *enc20pb.ArrayEncoding_Bitpacked:
		return e.Bitpacked.GetUncompressedBitsPerValue()
	case *enc20pb.ArrayEncoding_BitpackedForNonNeg:
		return e.BitpackedForNonNeg.GetUncompressedBitsPerValue()
	case *enc20pb.ArrayEncoding_Constant:
		return uint64(len(e.Constant.GetValue())) * 8
	}
	return 0
}

// uints decodes n unsigned integers (offsets, indices) of any width.
func (d *decoder20) uints(enc *enc20pb.ArrayEncoding, n int) ([]uint64, error) {
	var dt arrow.DataType
	switch uintsBits20(enc) {
	case 8:
		dt = arrow.PrimitiveTypes.Uint8
	case 16:
		dt = arrow.PrimitiveTypes.Uint16
	case 32:
		dt = arrow.PrimitiveTypes.Uint32
	case 64:
		dt = arrow.PrimitiveTypes.Uint64
	default:
		return nil, fmt.Errorf("%w: integer encoding %v", ErrUnsupportedEncoding, enc)
	}
	arr, err := d.decode(enc, n, dt)
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	if arr.NullN() > 0 {
		return nil, errors.New("offsets or indices with nulls")
	}
	out := make([]uint64, n)
	switch a := arr.(type) {
	case *array.Uint8:
		for i, v := range a.Uint8Values() {
			out[i] = uint64(v)
		}
	case *array.Uint16:
		for i, v := range a.Uint16Values() {
			out[i] = uint64(v)
		}
	case *array.Uint32:
		for i, v := range a.Uint32Values() {
			out[i] = uint64(v)
		}
	case *array.Uint64:
		copy(out, a.Uint64Values())
	}
	return out, nil
}

// endOffsets20 turns n stored END offsets with a null adjustment into n+1
// offsets starting at 0 and a validity bitmap (nil when nothing is null).
// limit is the largest offset allowed.
func endOffsets20(ends []uint64, adj, limit uint64) ([]uint64, []byte, error) {
	n := len(ends)
	offs := make([]uint64, n+1)
	var valid []byte
	if n > 0 && adj == 0 {
		return nil, nil, errors.New("null adjustment 0")
	}
	for i, v := range ends {
		if v >= adj {
			if valid == nil {
				valid = make([]byte, (n+7)/8)
				bitutil.SetBitsTo(valid, 0, int64(n), true)
			}
			bitutil.ClearBit(valid, i)
			v -= adj
		}
		if v < offs[i] {
			return nil, nil, fmt.Errorf("offset %d at row %d goes below %d", v, i, offs[i])
		}
		if v > limit {
			return nil, nil, fmt.Errorf("offset %d at row %d past the end (%d)", v, i, limit)
		}
		offs[i+1] = v
	}
	return offs, valid, nil
}

// bytesOf decodes the bytes of a Binary encoding: need bytes.
func (d *decoder20) bytesOf(enc *enc20pb.ArrayEncoding, need int) ([]byte, error) {
	if f, ok := enc.GetArrayEncoding().(*enc20pb.ArrayEncoding_Flat); ok {
		if f.Flat.GetBitsPerValue() != 8 {
			return nil, fmt.Errorf("binary bytes of %d bits", f.Flat.GetBitsPerValue())
		}
		return d.flatBytes(f.Flat, need)
	}
	arr, err := d.decode(enc, need, arrow.PrimitiveTypes.Uint8)
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	if arr.NullN() > 0 {
		return nil, errors.New("binary bytes with nulls")
	}
	return arr.(*array.Uint8).Uint8Values(), nil
}

func isBinaryLike20(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return true
	}
	return false
}

func isLarge20(dt arrow.DataType) bool {
	return dt.ID() == arrow.LARGE_STRING || dt.ID() == arrow.LARGE_BINARY
}

// varArray20 builds a string/binary array of type dt from n+1 offsets
// starting at 0, the bytes they index and an optional validity bitmap.
func varArray20(dt arrow.DataType, offs []uint64, data []byte, valid []byte) (arrow.Array, error) {
	n := len(offs) - 1
	if isUTF8Type(dt) {
		if err := checkUTF8(offs, 0, data[:offs[n]]); err != nil {
			return nil, err
		}
	}
	var ob []byte
	if isLarge20(dt) {
		o := make([]int64, n+1)
		for i, v := range offs {
			o[i] = int64(v)
		}
		ob = arrow.Int64Traits.CastToBytes(o)
	} else {
		if offs[n] > math.MaxInt32 {
			return nil, fmt.Errorf("%d bytes of values do not fit %v (use the large type)", offs[n], dt)
		}
		o := make([]int32, n+1)
		for i, v := range offs {
			o[i] = int32(v)
		}
		ob = arrow.Int32Traits.CastToBytes(o)
	}
	nulls := 0
	var vb *memory.Buffer
	if valid != nil {
		nulls = n - bitutil.CountSetBits(valid, 0, n)
		vb = memory.NewBufferBytes(valid)
	}
	d := array.NewData(dt, n, []*memory.Buffer{vb, memory.NewBufferBytes(ob), memory.NewBufferBytes(data[:offs[n]])}, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

func (d *decoder20) binary(b *enc20pb.Binary, n int, dt arrow.DataType) (arrow.Array, error) {
	if !isBinaryLike20(dt) {
		return nil, fmt.Errorf("%w: binary encoding for %v", ErrUnsupportedEncoding, dt)
	}
	ends, err := d.uints(b.GetIndices(), n)
	if err != nil {
		return nil, fmt.Errorf("binary indices: %w", err)
	}
	offs, valid, err := endOffsets20(ends, b.GetNullAdjustment(), maxExpand20)
	if err != nil {
		return nil, fmt.Errorf("binary indices: %w", err)
	}
	data, err := d.bytesOf(b.GetBytes(), int(offs[n]))
	if err != nil {
		return nil, fmt.Errorf("binary bytes: %w", err)
	}
	return varArray20(dt, offs, data, valid)
}

// varValues20 gives access to the values of a string or binary array.
func varValues20(arr arrow.Array) (value func(i int) []byte, ok bool) {
	switch a := arr.(type) {
	case *array.String:
		offs, data := a.ValueOffsets(), a.ValueBytes()
		return func(i int) []byte { return data[offs[i]-offs[0] : offs[i+1]-offs[0]] }, true
	case *array.LargeString:
		offs, data := a.ValueOffsets(), a.ValueBytes()
		return func(i int) []byte { return data[offs[i]-offs[0] : offs[i+1]-offs[0]] }, true
	case *array.Binary:
		return a.Value, true
	case *array.LargeBinary:
		return a.Value, true
	}
	return nil, false
}

func (d *decoder20) dictionary(e *enc20pb.Dictionary, n int, dt arrow.DataType) (arrow.Array, error) {
	dc, err := d.dictionaryPage(e, n, dt)
	if err != nil {
		return nil, err
	}
	return dc.slice(0, n)
}

// dictChunk20 is a dictionary page: its indices and decoded items. It
// expands only the rows that are read, so a page of small indices into long
// items costs memory in proportion to what the caller asks for.
type dictChunk20 struct {
	dt    arrow.DataType
	idx   []uint64 // 0 = null, i → items[i-1]; checked against the items
	items arrow.Array
	value func(i int) []byte
}

func (d *decoder20) dictionaryPage(e *enc20pb.Dictionary, n int, dt arrow.DataType) (*dictChunk20, error) {
	if !isBinaryLike20(dt) {
		return nil, fmt.Errorf("%w: dictionary encoding for %v", ErrUnsupportedEncoding, dt)
	}
	idx, err := d.uints(e.GetIndices(), n)
	if err != nil {
		return nil, fmt.Errorf("dictionary indices: %w", err)
	}
	items, err := d.decode(e.GetItems(), int(e.GetNumDictionaryItems()), dt)
	if err != nil {
		return nil, fmt.Errorf("dictionary items: %w", err)
	}
	value, ok := varValues20(items)
	if !ok {
		return nil, fmt.Errorf("dictionary items decoded as %v", items.DataType())
	}
	for _, k := range idx {
		if k > uint64(items.Len()) {
			return nil, fmt.Errorf("dictionary index %d of %d items", k, items.Len())
		}
	}
	return &dictChunk20{dt: dt, idx: idx, items: items, value: value}, nil
}

func (c *dictChunk20) len() int { return len(c.idx) }

// slice expands rows [i, j).
func (c *dictChunk20) slice(i, j int) (arrow.Array, error) {
	idx := c.idx[i:j]
	n := len(idx)
	offs := make([]uint64, n+1)
	var valid []byte
	var total uint64
	for r, k := range idx {
		if k == 0 || c.items.IsNull(int(k-1)) {
			if valid == nil {
				valid = make([]byte, (n+7)/8)
				bitutil.SetBitsTo(valid, 0, int64(n), true)
			}
			bitutil.ClearBit(valid, r)
		} else {
			total += uint64(len(c.value(int(k - 1))))
			if total > maxExpand20 {
				return nil, fmt.Errorf("dictionary expands past %d bytes", maxExpand20)
			}
		}
		offs[r+1] = total
	}
	data := make([]byte, 0, total)
	for r, k := range idx {
		if valid == nil || bitutil.BitIsSet(valid, r) {
			data = append(data, c.value(int(k-1))...)
		}
	}
	return varArray20(c.dt, offs, data, valid)
}

func (d *decoder20) fsst(e *enc20pb.Fsst, n int, dt arrow.DataType) (arrow.Array, error) {
	if !isBinaryLike20(dt) {
		return nil, fmt.Errorf("%w: fsst encoding for %v", ErrUnsupportedEncoding, dt)
	}
	// The compressed values use the same offsets as the output type would;
	// decode them as large binary so no width limit applies.
	comp, err := d.decode(e.GetBinary(), n, arrow.BinaryTypes.LargeBinary)
	if err != nil {
		return nil, fmt.Errorf("fsst values: %w", err)
	}
	defer comp.Release()
	dec, err := newFSST20(e.GetSymbolTable())
	if err != nil {
		return nil, err
	}
	cb := comp.(*array.LargeBinary)
	offs := make([]uint64, n+1)
	var data []byte
	for i := range n {
		if !cb.IsNull(i) {
			if data, err = dec(data, cb.Value(i)); err != nil {
				return nil, fmt.Errorf("fsst value %d: %w", i, err)
			}
			if len(data) > maxExpand20 {
				return nil, fmt.Errorf("fsst values expand past %d bytes", maxExpand20)
			}
		}
		offs[i+1] = uint64(len(data))
	}
	var valid []byte
	if cb.NullN() > 0 {
		valid = make([]byte, (n+7)/8)
		bitutil.CopyBitmap(cb.NullBitmapBytes(), cb.Data().Offset(), n, valid, 0)
	}
	return varArray20(dt, offs, data, valid)
}
