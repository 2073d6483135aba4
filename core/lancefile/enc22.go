package lancefile

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/kv0/kv0/core/encoding/bitpack"
	"github.com/kv0/kv0/core/encoding/compress"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// Encodings the writer uses only in format 2.2 files (spec 2.2, §3):
//
//   - constant pages: every valid value of the page is the same, stored once
//     (inline in the layout up to 32 bytes, else in a value buffer) with the
//     page's levels as raw u16s;
//   - all-null pages of nested fields with RLE-compressed levels;
//   - RLE-compressed repetition and definition levels in mini-block chunks;
//   - run-length encoded values (two buffers per chunk: run values, u8 run
//     lengths);
//   - dictionaries of 64-bit values, whose u32 indices are bit-packed or
//     run-length encoded.
//
// Lance 12 writes all of these in 2.2 files. Its 2.1 grammar refuses some
// of them (a constant page's scalar or compressed levels), and its 2.1
// writer uses none, so 2.1 files keep the 2.1 writer's choices.

// rleMaxRun is the longest run one u8 run length holds.
const rleMaxRun = 255

// rleChunkValues is the number of values a run-length encoded chunk takes
// (fewer when they do not fit in chunkMaxBytes): the most the u32 chunk
// grammar counts (2^15), since a chunk's header and padding cost as much
// as a few runs.
const rleChunkValues = 1 << 15

// rleRuns16 counts the runs of l as RLE stores them (runs longer than 255
// are split).
func rleRuns16(l []uint16) int {
	if len(l) == 0 {
		return 0
	}
	runs, k, prev := 1, 1, l[0]
	for _, v := range l[1:] {
		if v == prev && k < rleMaxRun {
			k++
			continue
		}
		runs++
		k, prev = 1, v
	}
	return runs
}

// rleBlock16Size is the size of the block form of RLE for levels l.
func rleBlock16Size(l []uint16) int { return 8 + 3*rleRuns16(l) }

// appendRleBlock16 appends levels l in the block form of RLE: a u64 byte
// count of the run values, the u16 run values, a u8 length per run.
func appendRleBlock16(dst []byte, l []uint16) []byte {
	runs := rleRuns16(l)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(2*runs))
	start := len(dst)
	dst = growLen(dst, start+3*runs)
	vals, lens := dst[start:start+2*runs], dst[start+2*runs:]
	r := 0
	for i := 0; i < len(l); {
		j := i + 1
		for j < len(l) && l[j] == l[i] && j-i < rleMaxRun {
			j++
		}
		binary.LittleEndian.PutUint16(vals[2*r:], l[i])
		lens[r] = byte(j - i)
		r++
		i = j
	}
	return dst
}

// rleLevels returns the block-compressed form of levels l when RLE makes
// them smaller than raw u16s, and nil otherwise.
func rleLevels(l []uint16) []byte {
	if len(l) == 0 || rleBlock16Size(l) >= 2*len(l) {
		return nil
	}
	return appendRleBlock16(make([]byte, 0, rleBlock16Size(l)), l)
}

// rleLevelsEncoding describes RLE-compressed u16 levels.
func rleLevelsEncoding() *enc21pb.CompressiveEncoding { return rleEncoding(16) }

// rleEncoding describes run-length encoded values of the given width.
func rleEncoding(bitsPerValue uint64) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Rle{Rle: &enc21pb.Rle{
		Values: flat(bitsPerValue), RunLengths: flat(8)}}}
}

// fixedRuns counts the runs of the n values of w bytes in vals as
// mini-block RLE stores them: split at 255 and at every multiple of
// rleChunkValues (chunk boundaries when the page has no levels). When the
// first 1024 values hardly repeat it does not count and returns n: RLE
// would not pay for them, and counting costs a pass over the page.
func fixedRuns(vals []byte, w, n int) int {
	if n == 0 {
		return 0
	}
	if k := min(n, bitpack.BlockLen); rangeRuns(vals, w, 0, k) > k/2 {
		return n
	}
	runs := 0
	for lo := 0; lo < n; lo += rleChunkValues {
		runs += rangeRuns(vals, w, lo, min(lo+rleChunkValues, n))
	}
	return runs
}

// rangeRuns counts the runs of values [lo, hi) (split at 255).
func rangeRuns(vals []byte, w, lo, hi int) int {
	runs := 0
	for i := lo; i < hi; runs++ {
		i = runEnd(vals, w, i, hi)
	}
	return runs
}

// runEnd returns the end of the run (at most 255 long) that starts at
// value i, before hi.
func runEnd(vals []byte, w, i, hi int) int {
	end := min(hi, i+rleMaxRun)
	j := i + 1
	switch w {
	case 8:
		v := binary.LittleEndian.Uint64(vals[8*i:])
		for j < end && binary.LittleEndian.Uint64(vals[8*j:]) == v {
			j++
		}
	case 4:
		v := binary.LittleEndian.Uint32(vals[4*i:])
		for j < end && binary.LittleEndian.Uint32(vals[4*j:]) == v {
			j++
		}
	case 2:
		v := binary.LittleEndian.Uint16(vals[2*i:])
		for j < end && binary.LittleEndian.Uint16(vals[2*j:]) == v {
			j++
		}
	default:
		v := vals[i]
		for j < end && vals[j] == v {
			j++
		}
	}
	return j
}

// blockWidths returns the bit width of each 1024-value block of the n
// values of w bytes in vals, and the bytes InlineBitpacking takes for them
// (a w-byte width word and the packed block each).
func blockWidths(vals []byte, w, n int, widths []uint8) ([]uint8, int) {
	nb := (n + bitpack.BlockLen - 1) / bitpack.BlockLen
	widths = growLen(widths[:0], nb)
	size := 0
	for b := 0; b < nb; b++ {
		lo, hi := b*bitpack.BlockLen, min((b+1)*bitpack.BlockLen, n)
		bw := bits.Len64(orBits(vals[lo*w:hi*w], w))
		widths[b] = uint8(bw)
		size += w + bitpack.PackedBytes(bw)
	}
	return widths, size
}

// orBits returns the bitwise or of the little-endian values of w bytes in
// src.
func orBits(src []byte, w int) uint64 {
	var or uint64
	switch w {
	case 8:
		var o1, o2, o3 uint64
		for len(src) >= 32 {
			or |= binary.LittleEndian.Uint64(src)
			o1 |= binary.LittleEndian.Uint64(src[8:])
			o2 |= binary.LittleEndian.Uint64(src[16:])
			o3 |= binary.LittleEndian.Uint64(src[24:])
			src = src[32:]
		}
		for len(src) >= 8 {
			or |= binary.LittleEndian.Uint64(src)
			src = src[8:]
		}
		or |= o1 | o2 | o3
	case 4:
		var o1 uint32
		var o uint32
		for len(src) >= 8 {
			o |= binary.LittleEndian.Uint32(src)
			o1 |= binary.LittleEndian.Uint32(src[4:])
			src = src[8:]
		}
		for len(src) >= 4 {
			o |= binary.LittleEndian.Uint32(src)
			src = src[4:]
		}
		or = uint64(o | o1)
	case 2:
		for i := 0; i+2 <= len(src); i += 2 {
			or |= uint64(binary.LittleEndian.Uint16(src[i:]))
		}
	default:
		for _, v := range src {
			or |= uint64(v)
		}
	}
	return or
}

// dict64 maps 64-bit values to dense indices in order of first appearance
// (an open-addressing hash table with linear probing).
type dict64 struct {
	keys   []uint64
	slots  []uint32 // index + 1; 0 is an empty slot
	shift  uint
	values []uint64
}

func (d *dict64) reset(capacity int) {
	size := 64
	for size < 2*capacity {
		size *= 2
	}
	if cap(d.keys) >= size {
		d.keys, d.slots = d.keys[:size], d.slots[:size]
		clear(d.slots)
	} else {
		d.keys, d.slots = make([]uint64, size), make([]uint32, size)
	}
	d.shift = uint(64 - bits.TrailingZeros(uint(size)))
	d.values = d.values[:0]
}

// index returns the index of v, adding it when new.
func (d *dict64) index(v uint64) uint32 {
	mask := uint64(len(d.slots) - 1)
	h := (v * 0x9E3779B97F4A7C15) >> d.shift
	for {
		s := d.slots[h]
		if s == 0 {
			if 2*(len(d.values)+1) > len(d.slots) {
				d.grow()
				return d.index(v)
			}
			d.values = append(d.values, v)
			d.keys[h], d.slots[h] = v, uint32(len(d.values))
			return uint32(len(d.values) - 1)
		}
		if d.keys[h] == v {
			return s - 1
		}
		h = (h + 1) & mask
	}
}

func (d *dict64) grow() {
	vals := d.values
	size := 2 * len(d.slots)
	d.keys, d.slots = make([]uint64, size), make([]uint32, size)
	d.shift--
	mask := uint64(size - 1)
	for i, v := range vals {
		h := (v * 0x9E3779B97F4A7C15) >> d.shift
		for d.slots[h] != 0 {
			h = (h + 1) & mask
		}
		d.keys[h], d.slots[h] = v, uint32(i+1)
	}
}

// Dictionary bounds: a page's dictionary holds at most dictMaxItems values,
// and at most one value in dictMinShare of the page's. Building one is
// tried when the page has few runs, or when fewer than 98% of its leading
// dictSample values are distinct.
const (
	dictMaxItems = 1 << 16
	dictMinShare = 4
	dictSample   = 1024
)

// dictPage is a page's dictionary: the u32 indices of its values and the
// encoded dictionary buffer.
type dictPage struct {
	idx   []byte // n little-endian u32 indices
	n     int    // dictionary entries
	buf   []byte // the dictionary buffer
	enc   *enc21pb.CompressiveEncoding
	bytes int // len(buf)
}

// buildDict64 builds the dictionary of the n 64-bit values of vals, or
// returns false when the page has too many distinct values. runs is the
// number of runs of equal values (fixedRuns): with few runs the dictionary
// is built from the runs alone.
func (c *leafCol) buildDict64(vals []byte, n, runs int) bool {
	limit := min(n/dictMinShare, dictMaxItems)
	if limit < 2 {
		return false
	}
	d := &c.dict
	// lo and span describe the values the sample saw: when they are close
	// together, a table indexed by value - lo finds most values without
	// hashing (a series id column: a few hundred consecutive ids).
	var lo, span uint64
	if runs > n/dictMinShare {
		// Many runs: a sample of the leading values must repeat some.
		k := min(n, dictSample)
		d.reset(k)
		for i := 0; i < k; i++ {
			d.index(binary.LittleEndian.Uint64(vals[8*i:]))
		}
		if 50*len(d.values) > 49*k {
			return false
		}
		hi := d.values[0]
		lo = hi
		for _, v := range d.values {
			lo, hi = min(lo, v), max(hi, v)
		}
		span = hi - lo + 1
	}
	d.reset(min(limit, 1024))
	c.idx = growLen(c.idx[:0], 4*n)
	idx := c.idx[:4*n]
	vals = vals[:8*n]
	if littleEndian && n > 0 && aligned(vals, 8) && aligned(idx, 4) {
		in := unsafe.Slice((*uint64)(unsafe.Pointer(&vals[0])), n)
		out := unsafe.Slice((*uint32)(unsafe.Pointer(&idx[0])), n)
		if span > 0 && span <= dictDirectMax && span <= uint64(16*limit) {
			c.direct = growLen(c.direct[:0], int(span))
			clear(c.direct)
			return d.indexAllDirect(in, out, limit, lo, c.direct)
		}
		return d.indexAll(in, out, limit)
	}
	for i := 0; i < n; {
		v := binary.LittleEndian.Uint64(vals[8*i:])
		x := d.index(v)
		if len(d.values) > limit {
			return false
		}
		binary.LittleEndian.PutUint32(idx[4*i:], x)
		i++
		for i < n && binary.LittleEndian.Uint64(vals[8*i:]) == v {
			binary.LittleEndian.PutUint32(idx[4*i:], x)
			i++
		}
	}
	return true
}

// dictDirectMax bounds the span of values indexAllDirect's table covers.
const dictDirectMax = 1 << 16

// indexAllDirect is indexAll with a table of the indexes (plus one) of the
// values lo to lo+len(direct)-1, in front of the hash table.
func (d *dict64) indexAllDirect(in []uint64, out []uint32, limit int, lo uint64, direct []uint32) bool {
	out = out[:len(in)]
	size := uint64(len(direct))
	for i, v := range in {
		var x uint32
		if off := v - lo; off < size {
			if s := direct[off]; s != 0 {
				out[i] = s - 1
				continue
			}
			x = d.index(v)
			direct[off] = x + 1
		} else {
			x = d.index(v)
		}
		if len(d.values) > limit {
			return false
		}
		out[i] = x
	}
	return true
}

// indexAll sets out[i] to the index of in[i], adding new values, and
// returns false as soon as the dictionary holds more than limit values.
// A value equal to the one before it, or found at its home slot, costs no
// call: that is nearly every value of a page worth a dictionary.
func (d *dict64) indexAll(in []uint64, out []uint32, limit int) bool {
	out = out[:len(in)]
	prev, px := in[0]+1, uint32(0)
	for i, v := range in {
		if v == prev {
			out[i] = px
			continue
		}
		h := (v * 0x9E3779B97F4A7C15) >> d.shift
		var x uint32
		if s := d.slots[h]; s != 0 && d.keys[h] == v {
			x = s - 1
		} else {
			x = d.index(v)
			if len(d.values) > limit {
				return false
			}
		}
		out[i] = x
		prev, px = v, x
	}
	return true
}

// dictBuffer encodes the dictionary values (c.dict.values) in the smallest
// of the block forms lance 12 reads: Flat 64-bit values; OutOfLineBitpacking
// (whole blocks of 1024 values, then the tail raw or as one more padded
// block); or either of them compressed (General) with LZ4 (a u32 length
// and one LZ4 block) or zstd (a u64 length and a frame). Compression
// shrinks a padded tail block to little more than its values and finds the
// regularities of sorted or clustered values; which input compresses best
// varies (a metrics table's step dictionary: sometimes the raw values,
// sometimes the packed ones), so both are tried. zstd costs tens of
// microseconds even on a few kilobytes, so a page whose dictionary is the
// previous page's reuses its encoding.
func (c *leafCol) dictBuffer() *dictPage {
	vals := c.dict.values
	if c.lastDict != nil && slices.Equal(vals, c.lastDictValues) {
		return c.lastDict
	}
	n := len(vals)
	raw := make([]byte, 8*n)
	var or uint64
	for i, v := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], v)
		or |= v
	}
	best := &dictPage{n: n, buf: raw, enc: flat(64), bytes: len(raw)}
	consider := func(buf []byte, enc *enc21pb.CompressiveEncoding) {
		if len(buf) < best.bytes {
			best = &dictPage{n: n, buf: buf, bytes: len(buf), enc: enc}
		}
	}
	general := func(scheme compress.Scheme, inner []byte, enc *enc21pb.CompressiveEncoding) {
		pb := enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_LZ4
		if scheme == compress.SchemeZstd {
			pb = enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_ZSTD
		}
		if b, err := compress.Compress(scheme, 0, nil, inner); err == nil {
			consider(b, &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
				Compression: &enc21pb.BufferCompression{Scheme: pb}, Values: enc}}})
		}
	}
	if n >= 8 {
		general(compress.SchemeLZ4, raw, flat(64))
		general(compress.SchemeZstd, raw, flat(64))
	}
	if bw := max(bits.Len64(or), 1); bw < 64 {
		whole, tail := n/bitpack.BlockLen, n%bitpack.BlockLen
		pb := bitpack.PackedBytes(bw)
		packed := make([]byte, whole*pb, (whole+1)*pb)
		for b := 0; b < whole; b++ {
			_ = bitpack.PackBlock(64, bw, packed[b*pb:(b+1)*pb], raw[8*b*bitpack.BlockLen:8*(b+1)*bitpack.BlockLen])
		}
		enc := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_OutOfLineBitpacking{
			OutOfLineBitpacking: &enc21pb.OutOfLineBitpacking{UncompressedBitsPerValue: 64, Values: flat(uint64(bw))}}}
		rest := raw[8*whole*bitpack.BlockLen:]
		switch {
		case tail == 0:
			consider(packed, enc)
			general(compress.SchemeLZ4, packed, enc)
			general(compress.SchemeZstd, packed, enc)
		default:
			// A reader tells the two tails apart by their length: a raw
			// tail is 8 bytes a value, a padded one a whole packed block.
			if 8*tail != pb {
				consider(append(packed[:whole*pb:whole*pb], rest...), enc)
			}
			block := make([]byte, 8*bitpack.BlockLen)
			copy(block, rest)
			padded := packed[:(whole+1)*pb]
			_ = bitpack.PackBlock(64, bw, padded[whole*pb:], block)
			if pb < 8*tail {
				consider(padded, enc)
			}
			if pb != 8*tail {
				general(compress.SchemeLZ4, padded, enc)
				general(compress.SchemeZstd, padded, enc)
			}
		}
	}
	c.lastDict, c.lastDictValues = best, append(c.lastDictValues[:0], vals...)
	return best
}

// constantSlot reports whether every valid value of the page equals the
// first valid one, and returns that value's slot. def holds the page's
// definition levels (nil: every slot is valid); levels above maxVisible
// have no slot.
func (c *leafCol) constantSlot(def []uint16, maxVisible uint16) (int, bool) {
	first := -1
	if def == nil {
		if c.items == 0 {
			return 0, false
		}
		first = 0
	} else {
		slot := 0
		for _, d := range def {
			if d > maxVisible {
				continue
			}
			if d == 0 {
				first = slot
				break
			}
			slot++
		}
		if first < 0 {
			return 0, false
		}
	}
	same := func(i int) bool { return c.sameValue(first, i) }
	if def == nil {
		// Fast paths for fixed-width values without levels.
		if c.vk == valFixed && c.width == 8 {
			v := binary.LittleEndian.Uint64(c.vals)
			for i := 8; i < 8*c.items; i += 8 {
				if binary.LittleEndian.Uint64(c.vals[i:]) != v {
					return 0, false
				}
			}
			return 0, true
		}
		for i := 1; i < c.items; i++ {
			if !same(i) {
				return 0, false
			}
		}
		return 0, true
	}
	slot := 0
	for _, d := range def {
		if d > maxVisible {
			continue
		}
		if d == 0 && slot != first && !same(slot) {
			return 0, false
		}
		slot++
	}
	return first, true
}

// sameValue reports whether the values in slots i and j are equal.
func (c *leafCol) sameValue(i, j int) bool {
	switch c.vk {
	case valFixed:
		w := c.width
		return bytes.Equal(c.vals[i*w:(i+1)*w], c.vals[j*w:(j+1)*w])
	case valBool:
		return (c.vals[i>>3]>>(i&7))&1 == (c.vals[j>>3]>>(j&7))&1
	}
	return bytes.Equal(c.vals[c.voff[i]:c.voff[i+1]], c.vals[c.voff[j]:c.voff[j+1]])
}

// encodeConstant writes the page as a 2.2 constant page holding the value
// of slot, with the levels as raw u16s.
func (c *leafCol) encodeConstant(p *layerPlan, rep, def []uint16, slot int) *pageOut {
	cl := &enc21pb.ConstantLayout{Layers: p.layers}
	var bufs [][]byte
	switch c.vk {
	case valFixed:
		cl.InlineValue = bytes.Clone(c.vals[slot*c.width : (slot+1)*c.width])
	case valBool:
		cl.InlineValue = []byte{(c.vals[slot>>3] >> (slot & 7)) & 1}
	default:
		// A one-value Arrow array's buffers: offsets [0, L], then the bytes.
		v := c.vals[c.voff[slot]:c.voff[slot+1]]
		ow := 4
		if c.large {
			ow = 8
		}
		b := make([]byte, 0, 12+2*ow+len(v))
		b = binary.LittleEndian.AppendUint32(b, 2)
		b = binary.LittleEndian.AppendUint32(b, uint32(2*ow))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		if ow == 4 {
			b = binary.LittleEndian.AppendUint32(b, 0)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		} else {
			b = binary.LittleEndian.AppendUint64(b, 0)
			b = binary.LittleEndian.AppendUint64(b, uint64(len(v)))
		}
		bufs = append(bufs, append(b, v...))
	}
	if rep != nil || def != nil {
		bufs = append(bufs, levelBytes(rep), levelBytes(def))
	}
	return &pageOut{bufs: bufs, layout: &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: cl}}}
}

// encodeAllNull22 writes a page of a nested field without a valid value:
// its levels, each RLE-compressed when that makes it smaller.
func encodeAllNull22(p *layerPlan, rep, def []uint16) *pageOut {
	cl := &enc21pb.ConstantLayout{Layers: p.layers}
	bufs := [][]byte{levelBytes(rep), levelBytes(def)}
	if b := rleLevels(rep); b != nil {
		bufs[0] = b
		cl.RepCompression, cl.NumRepValues = rleLevelsEncoding(), uint64(len(rep))
	}
	if b := rleLevels(def); b != nil {
		bufs[1] = b
		cl.DefCompression, cl.NumDefValues = rleLevelsEncoding(), uint64(len(def))
	}
	return &pageOut{bufs: bufs, layout: &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: cl}}}
}

// pageSize is the number of bytes of a page's buffers.
func (po *pageOut) size() int {
	n := 0
	for _, b := range po.bufs {
		n += len(b)
	}
	return n
}
