package expr

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Evaluation works on 64-row words. Every node yields two masks: T (rows for
// which it is TRUE) and F (rows for which it is FALSE); rows in neither are
// UNKNOWN (SQL NULL). Then
//
//	AND: T = T1 & T2, F = F1 | F2
//	OR:  T = T1 | T2, F = F1 & F2
//	NOT: T, F = F, T
//
// and a comparison on a column with validity V and raw result C gives
// T = C & V, F = ^C & V. Kernels fill C a word at a time with branch-free
// loops specialised per type (generics, stenciled per width) and operator.

// Eval evaluates the expression over rec and returns one bool per row, true
// where the expression is TRUE (rows where it is FALSE or UNKNOWN are false).
func (b *Bound) Eval(rec arrow.RecordBatch) ([]bool, error) {
	return b.Filter(rec, nil)
}

// Filter is Eval writing into dst, which it grows as needed and returns
// resliced to rec.NumRows(). The batch must have the columns the expression
// was bound to, with the same types; they are found by name.
func (b *Bound) Filter(rec arrow.RecordBatch, dst []bool) ([]bool, error) {
	n := int(rec.NumRows())
	words := (n + 63) / 64
	need := words * 2 * b.slots
	p, _ := b.pool.Get().(*[]uint64)
	if p == nil || cap(*p) < need {
		s := make([]uint64, need)
		p = &s
	}
	arena := (*p)[:need]
	t, _, err := b.eval(b.root, rec, n, words, arena)
	if err == nil {
		if cap(dst) < n {
			dst = make([]bool, n)
		}
		dst = dst[:n]
		full := n / 8
		for k := 0; k < full; k++ {
			*(*[8]bool)(dst[k*8:]) = byteBools[byte(t[k/8]>>(8*(k%8)))]
		}
		for i := full * 8; i < n; i++ {
			dst[i] = t[i/64]>>(i%64)&1 != 0
		}
	}
	b.pool.Put(p)
	return dst, err
}

func (b *Bound) eval(bn *bnode, rec arrow.RecordBatch, n, words int, arena []uint64) (t, f []uint64, err error) {
	t = arena[(2*bn.slot)*words : (2*bn.slot+1)*words]
	f = arena[(2*bn.slot+1)*words : (2*bn.slot+2)*words]
	switch bn.kind {
	case kAnd, kOr:
		for i, k := range bn.kids {
			kt, kf, err := b.eval(k, rec, n, words, arena)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case i == 0:
				copy(t, kt)
				copy(f, kf)
			case bn.kind == kAnd:
				for w := range t {
					t[w] &= kt[w]
					f[w] |= kf[w]
				}
			default:
				for w := range t {
					t[w] |= kt[w]
					f[w] &= kf[w]
				}
			}
		}
		return t, f, nil
	case kNot:
		kt, kf, err := b.eval(bn.kids[0], rec, n, words, arena)
		return kf, kt, err
	case kConst:
		fill(t, bn.value == 1)
		fill(f, bn.value == 0)
		return t, f, nil
	}

	arr, err := column(rec, bn, t, f)
	if err != nil {
		return nil, nil, err
	}
	// f holds the validity of the rows now.
	switch bn.kind {
	case kIsNull:
		for w := range t {
			t[w] = ^f[w]
		}
		if bn.neg {
			t, f = f, t
		}
		return t, f, nil
	}
	switch bn.plan {
	case pUnknown:
		fill(t, false)
		fill(f, false)
		return t, f, nil
	case pAll:
		fill(t, true)
	case pNone:
		fill(t, false)
	default:
		bn.kern(arr, t)
	}
	for w := range t {
		c, v := t[w], f[w]
		t[w] = c & v
		f[w] = ^c & v
	}
	if bn.noF {
		fill(f, false)
	}
	if bn.neg {
		t, f = f, t
	}
	return t, f, nil
}

// byteBools[x] holds the 8 bits of x as bools, lowest first.
var byteBools = func() (t [256][8]bool) {
	for x := range t {
		for j := range 8 {
			t[x][j] = x>>j&1 != 0
		}
	}
	return t
}()

func pick(c bool, a, b uint64) uint64 {
	if c {
		return a
	}
	return b
}

func fill(m []uint64, on bool) {
	var x uint64
	if on {
		x = math.MaxUint64
	}
	for i := range m {
		m[i] = x
	}
}

// column finds the leaf's array in rec and writes its validity (including
// that of enclosing structs) to valid; tmp is scratch of the same size.
func column(rec arrow.RecordBatch, bn *bnode, tmp, valid []uint64) (arrow.Array, error) {
	schema := rec.Schema()
	i := bn.path[0]
	if i >= len(schema.Fields()) || schema.Field(i).Name != bn.topName() {
		idx := schema.FieldIndices(bn.topName())
		if len(idx) != 1 {
			return nil, fmt.Errorf("expr: batch has no column %q (or has several)", bn.topName())
		}
		i = idx[0]
	}
	arr := rec.Column(i)
	validity(arr, valid)
	for _, j := range bn.path[1:] {
		st, ok := arr.(*array.Struct)
		if !ok || j >= st.NumField() {
			return nil, fmt.Errorf("expr: column %q: batch type differs from the bound schema", bn.name)
		}
		arr = st.Field(j)
		if arr.NullN() > 0 {
			validity(arr, tmp)
			for w := range valid {
				valid[w] &= tmp[w]
			}
		}
	}
	if !arrow.TypeEqual(arr.DataType(), bn.dt) {
		return nil, fmt.Errorf("expr: column %q has type %s in the batch but %s in the bound schema", bn.name, arr.DataType(), bn.dt)
	}
	if arr.Len() != int(rec.NumRows()) {
		return nil, fmt.Errorf("expr: column %q has %d rows, batch has %d", bn.name, arr.Len(), rec.NumRows())
	}
	return arr, nil
}

// topName returns the schema name of the leaf's top-level column.
func (bn *bnode) topName() string { return bn.top }

// validity writes the validity bits of arr to out.
func validity(arr arrow.Array, out []uint64) {
	if arr.NullN() == 0 {
		fill(out, true)
		return
	}
	if arr.NullBitmapBytes() == nil { // the null type: no bitmap, every row null
		fill(out, false)
		return
	}
	bitsAt(arr.NullBitmapBytes(), arr.Data().Offset(), out)
}

// bitsAt copies len(out)*64 bits of buf starting at bit off into out. Bits
// past the end of buf read as zero.
func bitsAt(buf []byte, off int, out []uint64) {
	for w := range out {
		p := off + w*64
		i, s := p>>3, uint(p&7)
		x := load64(buf, i) >> s
		if s != 0 {
			x |= uint64(load8(buf, i+8)) << (64 - s)
		}
		out[w] = x
	}
}

func load64(b []byte, i int) uint64 {
	if i+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[i:])
	}
	var x uint64
	for k := 0; k < 8 && i+k < len(b); k++ {
		x |= uint64(b[i+k]) << (8 * k)
	}
	return x
}

func load8(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// b2u compiles to a flag-setting instruction, not a branch.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// f64key maps a float64 to an int64 whose order is IEEE 754 totalOrder, the
// order Arrow's (and so lance's) comparison kernels use: -NaN < -Inf < … <
// -0 < +0 < … < +Inf < NaN.
func f64key(f float64) int64 {
	k := int64(math.Float64bits(f))
	return k ^ int64(uint64(k>>63)>>1)
}

// f32key is f64key for float32.
func f32key(f float32) int32 {
	k := int32(math.Float32bits(f))
	return k ^ int32(uint32(k>>31)>>1)
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// cmpBlock compares up to 64 values with lit and returns the result bits.
func cmpBlock[T integer](blk []T, lit T, op cmpOp) uint64 {
	var m uint64
	switch op {
	case opEq:
		for j, x := range blk {
			m |= b2u(x == lit) << uint(j)
		}
	case opNe:
		for j, x := range blk {
			m |= b2u(x != lit) << uint(j)
		}
	case opLt:
		for j, x := range blk {
			m |= b2u(x < lit) << uint(j)
		}
	case opLe:
		for j, x := range blk {
			m |= b2u(x <= lit) << uint(j)
		}
	case opGt:
		for j, x := range blk {
			m |= b2u(x > lit) << uint(j)
		}
	case opGe:
		for j, x := range blk {
			m |= b2u(x >= lit) << uint(j)
		}
	}
	return m
}

// inBlock returns the bits of the values of blk that are in set (sorted).
func inBlock[T integer](blk []T, set []T) uint64 {
	var m uint64
	if len(set) <= 8 {
		for _, v := range set {
			m |= cmpBlock(blk, v, opEq)
		}
		return m
	}
	for j, x := range blk {
		lo, hi := 0, len(set)
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			if set[h] < x {
				lo = h + 1
			} else {
				hi = h
			}
		}
		m |= b2u(lo < len(set) && set[lo] == x) << uint(j)
	}
	return m
}

func cmpSlice[T integer](vs []T, lit T, op cmpOp, out []uint64) {
	for w := range out {
		out[w] = cmpBlock(vs[w*64:min(w*64+64, len(vs))], lit, op)
	}
}

func inSlice[T integer](vs []T, set []T, out []uint64) {
	for w := range out {
		out[w] = inBlock(vs[w*64:min(w*64+64, len(vs))], set)
	}
}

func cmpF64(vs []float64, lit int64, op cmpOp, set []int64, out []uint64) {
	var keys [64]int64
	for w := range out {
		blk := vs[w*64 : min(w*64+64, len(vs))]
		for j, x := range blk {
			keys[j] = f64key(x)
		}
		if set != nil {
			out[w] = inBlock(keys[:len(blk)], set)
		} else {
			out[w] = cmpBlock(keys[:len(blk)], lit, op)
		}
	}
}

func cmpF32(vs []float32, lit int32, op cmpOp, set []int32, out []uint64) {
	var keys [64]int32
	for w := range out {
		blk := vs[w*64 : min(w*64+64, len(vs))]
		for j, x := range blk {
			keys[j] = f32key(x)
		}
		if set != nil {
			out[w] = inBlock(keys[:len(blk)], set)
		} else {
			out[w] = cmpBlock(keys[:len(blk)], lit, op)
		}
	}
}

// orderedKernel returns the kernel of `column op lit` for an integer,
// float, timestamp or date32 column; i or u holds lit as ordered() made it.
func orderedKernel(dt arrow.DataType, op cmpOp, i int64, u uint64) func(arrow.Array, []uint64) {
	switch dt.ID() {
	case arrow.INT8:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Int8).Int8Values(), int8(i), op, out) }
	case arrow.INT16:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Int16).Int16Values(), int16(i), op, out) }
	case arrow.INT32:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Int32).Int32Values(), int32(i), op, out) }
	case arrow.INT64:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Int64).Int64Values(), i, op, out) }
	case arrow.UINT8:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Uint8).Uint8Values(), uint8(u), op, out) }
	case arrow.UINT16:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Uint16).Uint16Values(), uint16(u), op, out) }
	case arrow.UINT32:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Uint32).Uint32Values(), uint32(u), op, out) }
	case arrow.UINT64:
		return func(a arrow.Array, out []uint64) { cmpSlice(a.(*array.Uint64).Uint64Values(), u, op, out) }
	case arrow.FLOAT32:
		return func(a arrow.Array, out []uint64) { cmpF32(a.(*array.Float32).Float32Values(), int32(i), op, nil, out) }
	case arrow.FLOAT64:
		return func(a arrow.Array, out []uint64) { cmpF64(a.(*array.Float64).Float64Values(), i, op, nil, out) }
	case arrow.TIMESTAMP:
		return func(a arrow.Array, out []uint64) {
			cmpSlice(a.(*array.Timestamp).TimestampValues(), arrow.Timestamp(i), op, out)
		}
	case arrow.DATE32:
		return func(a arrow.Array, out []uint64) {
			cmpSlice(a.(*array.Date32).Date32Values(), arrow.Date32(i), op, out)
		}
	}
	panic("expr: no kernel for " + dt.String())
}

func sortedSet[T integer](xs []T) []T {
	out := append([]T(nil), xs...)
	for i := 1; i < len(out); i++ { // insertion sort: lists are short
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func convertSet[T integer, S integer](xs []S) []T {
	out := make([]T, len(xs))
	for k, x := range xs {
		out[k] = T(x)
	}
	return sortedSet(out)
}

// orderedInKernel returns the kernel of `column IN (set)`.
func orderedInKernel(dt arrow.DataType, is []int64, us []uint64) func(arrow.Array, []uint64) {
	switch dt.ID() {
	case arrow.INT8:
		s := convertSet[int8](is)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Int8).Int8Values(), s, out) }
	case arrow.INT16:
		s := convertSet[int16](is)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Int16).Int16Values(), s, out) }
	case arrow.INT32:
		s := convertSet[int32](is)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Int32).Int32Values(), s, out) }
	case arrow.INT64:
		s := convertSet[int64](is)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Int64).Int64Values(), s, out) }
	case arrow.UINT8:
		s := convertSet[uint8](us)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Uint8).Uint8Values(), s, out) }
	case arrow.UINT16:
		s := convertSet[uint16](us)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Uint16).Uint16Values(), s, out) }
	case arrow.UINT32:
		s := convertSet[uint32](us)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Uint32).Uint32Values(), s, out) }
	case arrow.UINT64:
		s := convertSet[uint64](us)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Uint64).Uint64Values(), s, out) }
	case arrow.FLOAT32:
		s := convertSet[int32](is)
		return func(a arrow.Array, out []uint64) { cmpF32(a.(*array.Float32).Float32Values(), 0, 0, s, out) }
	case arrow.FLOAT64:
		s := convertSet[int64](is)
		return func(a arrow.Array, out []uint64) { cmpF64(a.(*array.Float64).Float64Values(), 0, 0, s, out) }
	case arrow.TIMESTAMP:
		s := convertSet[arrow.Timestamp](is)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Timestamp).TimestampValues(), s, out) }
	case arrow.DATE32:
		s := convertSet[arrow.Date32](is)
		return func(a arrow.Array, out []uint64) { inSlice(a.(*array.Date32).Date32Values(), s, out) }
	}
	panic("expr: no kernel for " + dt.String())
}

// boolKernel returns the kernel of `column op lit` for a bool column.
func boolKernel(op cmpOp, lit bool) func(arrow.Array, []uint64) {
	return func(a arrow.Array, out []uint64) {
		d := a.Data()
		var buf []byte
		if bs := d.Buffers(); len(bs) > 1 && bs[1] != nil {
			buf = bs[1].Bytes()
		}
		bitsAt(buf, d.Offset(), out)
		for w, x := range out {
			var m uint64
			switch op {
			case opEq:
				m = pick(lit, x, ^x)
			case opNe:
				m = pick(lit, ^x, x)
			case opLt: // false < true
				m = pick(lit, ^x, 0)
			case opLe:
				m = pick(lit, math.MaxUint64, ^x)
			case opGt:
				m = pick(lit, 0, x)
			case opGe:
				m = pick(lit, x, math.MaxUint64)
			}
			out[w] = m
		}
	}
}

type offset interface{ ~int32 | ~int64 }

func cmpBytes[O offset](offs []O, data []byte, lit []byte, op cmpOp, out []uint64) {
	n := len(offs) - 1
	for w := range out {
		var m uint64
		end := min(w*64+64, n)
		switch op {
		case opEq, opNe:
			want := op == opEq
			for r := w * 64; r < end; r++ {
				v := data[offs[r]:offs[r+1]]
				m |= b2u((len(v) == len(lit) && string(v) == string(lit)) == want) << uint(r&63)
			}
		default:
			for r := w * 64; r < end; r++ {
				c := compareBytes(data[offs[r]:offs[r+1]], lit)
				var ok bool
				switch op {
				case opLt:
					ok = c < 0
				case opLe:
					ok = c <= 0
				case opGt:
					ok = c > 0
				default:
					ok = c >= 0
				}
				m |= b2u(ok) << uint(r&63)
			}
		}
		out[w] = m
	}
}

// compareBytes is bytes.Compare on the bytes as unsigned, which is also the
// order of UTF-8 strings by code point.
func compareBytes(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i+8 <= n; i += 8 {
		x, y := binary.BigEndian.Uint64(a[i:]), binary.BigEndian.Uint64(b[i:])
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	for i := n &^ 7; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

func inBytes[O offset](offs []O, data []byte, set []string, m map[string]struct{}, out []uint64) {
	n := len(offs) - 1
	for w := range out {
		var bits uint64
		end := min(w*64+64, n)
		for r := w * 64; r < end; r++ {
			v := data[offs[r]:offs[r+1]]
			hit := false
			if m != nil {
				_, hit = m[string(v)]
			} else {
				for _, s := range set {
					hit = hit || string(v) == s
				}
			}
			bits |= b2u(hit) << uint(r&63)
		}
		out[w] = bits
	}
}

func dataOf(a arrow.Array) []byte {
	if bs := a.Data().Buffers(); len(bs) > 2 && bs[2] != nil {
		return bs[2].Bytes()
	}
	return nil
}

// bytesKernel returns the kernel of `column op lit` for string and binary columns.
func bytesKernel(dt arrow.DataType, op cmpOp, lit string) func(arrow.Array, []uint64) {
	l := []byte(lit)
	switch dt.ID() {
	case arrow.STRING:
		return func(a arrow.Array, out []uint64) { cmpBytes(a.(*array.String).ValueOffsets(), dataOf(a), l, op, out) }
	case arrow.LARGE_STRING:
		return func(a arrow.Array, out []uint64) {
			cmpBytes(a.(*array.LargeString).ValueOffsets(), dataOf(a), l, op, out)
		}
	case arrow.BINARY:
		return func(a arrow.Array, out []uint64) { cmpBytes(a.(*array.Binary).ValueOffsets(), dataOf(a), l, op, out) }
	default:
		return func(a arrow.Array, out []uint64) {
			cmpBytes(a.(*array.LargeBinary).ValueOffsets(), dataOf(a), l, op, out)
		}
	}
}

// bytesInKernel returns the kernel of `column IN (set)` for string and binary columns.
func bytesInKernel(dt arrow.DataType, set []string) func(arrow.Array, []uint64) {
	var m map[string]struct{}
	if len(set) > 8 {
		m = make(map[string]struct{}, len(set))
		for _, s := range set {
			m[s] = struct{}{}
		}
	}
	switch dt.ID() {
	case arrow.STRING:
		return func(a arrow.Array, out []uint64) { inBytes(a.(*array.String).ValueOffsets(), dataOf(a), set, m, out) }
	case arrow.LARGE_STRING:
		return func(a arrow.Array, out []uint64) {
			inBytes(a.(*array.LargeString).ValueOffsets(), dataOf(a), set, m, out)
		}
	case arrow.BINARY:
		return func(a arrow.Array, out []uint64) { inBytes(a.(*array.Binary).ValueOffsets(), dataOf(a), set, m, out) }
	default:
		return func(a arrow.Array, out []uint64) {
			inBytes(a.(*array.LargeBinary).ValueOffsets(), dataOf(a), set, m, out)
		}
	}
}
