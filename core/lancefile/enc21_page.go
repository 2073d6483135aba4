package lancefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/encoding/bitpack"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// Page encoding for format 2.1 (spec 4.2). A flushed page becomes one of
//
//   - a mini-block page: chunks of ≤ 4096 values (a power of two, except the
//     last chunk) and ≤ 32 KiB, each carrying its slice of the levels;
//   - a full-zip page, for variable-width values of 256 bytes or more: one
//     control word per level, zipped with the value's length and bytes;
//   - an all-null page, when no level carries a valid value.
//
// A mini-block chunk, as written here (all integers little-endian):
//
//	u16 num_levels            0 when the page has neither rep nor def levels
//	u16 rep_bytes             only with repetition
//	u16 def_bytes             only with definition levels
//	u16 value_bytes           one value buffer
//	pad to 8 | rep levels (u16 each) | pad to 8 | def levels (u16 each) | pad to 8
//	value buffer | pad to 8
//
// and its metadata word is ((chunk_bytes/8 - 1) << 4) | log2(values), with
// log2 = 0 for the last chunk. Value buffers use Flat (bits_per_value 1, 8,
// 16, 32, 64), InlineBitpacking (one 1024-value FastLanes block per chunk,
// preceded by its bit width as one word of the value type) or Variable (u32
// or u64 offsets relative to the buffer start, then the bytes, padded to the
// offset width).

const (
	chunkMaxBytes    = 32 << 10 // a mini-block chunk, header included
	chunkMaxValues   = 4096
	chunkValueTarget = 8 << 10 // value bytes a fixed-width chunk aims for
	chunkVarTarget   = 4 << 10 // value bytes a variable-width chunk aims for
	fullZipMinLen    = 256     // values this long send a page to full-zip
	miniblockPad     = 0xFE    // padding inside mini-block pages (irrelevant)
)

// encodedPage is a page whose buffers were placed in the file.
type encodedPage struct {
	offs, sizes []uint64
	rows        uint64
	firstRow    uint64
	layout      []byte // serialized google.protobuf.Any(PageLayout)
}

// pageOut is a flushed page before its buffers are placed.
type pageOut struct {
	bufs   [][]byte
	layout *enc21pb.PageLayout
}

// layerPlan maps the raw definition codes of a page to definition levels.
type layerPlan struct {
	layers     []enc21pb.RepDefLayer // innermost first
	table      []uint16              // raw code -> definition level
	maxDef     uint16
	maxVisible uint16 // levels ≤ maxVisible have a value slot
	hasLists   bool
}

func (c *leafCol) plan() layerPlan {
	n := len(c.path)
	p := layerPlan{layers: make([]enc21pb.RepDefLayer, n), table: make([]uint16, 2*n+1)}
	nlev := make([]uint16, n)
	for j := 0; j < n; j++ {
		node := c.path[n-1-j]
		f := c.flags[j]
		if node.kind == nodeItem {
			if f&flagNull != 0 {
				p.layers[j], nlev[j] = enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM, 1
			} else {
				p.layers[j] = enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM
			}
			continue
		}
		p.hasLists = true
		switch f {
		case flagNull | flagEmpty:
			p.layers[j], nlev[j] = enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST, 2
		case flagNull:
			p.layers[j], nlev[j] = enc21pb.RepDefLayer_REPDEF_NULLABLE_LIST, 1
		case flagEmpty:
			p.layers[j], nlev[j] = enc21pb.RepDefLayer_REPDEF_EMPTYABLE_LIST, 1
		default:
			p.layers[j] = enc21pb.RepDefLayer_REPDEF_ALL_VALID_LIST
		}
	}
	var cur uint16
	for _, l := range nlev {
		cur += l
	}
	p.maxDef = cur
	// Outermost layer first: each takes the highest levels left.
	for j := n - 1; j >= 0; j-- {
		switch p.layers[j] {
		case enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM, enc21pb.RepDefLayer_REPDEF_NULLABLE_LIST:
			p.table[codeNull(j)] = cur
		case enc21pb.RepDefLayer_REPDEF_EMPTYABLE_LIST:
			p.table[codeEmpty(j)] = cur
		case enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST:
			p.table[codeNull(j)] = cur - 1
			p.table[codeEmpty(j)] = cur
		}
		cur -= nlev[j]
	}
	p.maxVisible = p.maxDef
	if p.hasLists {
		p.maxVisible = 0
		for j := 0; j < n; j++ {
			if c.path[n-1-j].kind != nodeItem {
				break
			}
			p.maxVisible += nlev[j]
		}
	}
	return p
}

// chunkCost is about what a mini-block chunk costs besides its values: its
// header, padding and metadata word (for the estimates of the page
// encoder).
const chunkCost = 16

// errChunkTooBig means a value and its levels do not fit in one mini-block
// chunk.
var errChunkTooBig = errors.New("levels of one value exceed a 32 KiB mini-block chunk")

// encodePage turns the accumulated page into buffers and a layout.
func (c *leafCol) encodePage() (*pageOut, error) {
	p := c.plan()
	var def []uint16
	if c.def != nil && p.maxDef > 0 {
		def = make([]uint16, c.levels)
		for i, v := range c.def[:c.levels] {
			def[i] = p.table[v]
		}
	}
	var rep []uint16
	if c.maxRep > 0 {
		rep = c.rep[:c.levels]
	}
	// All-null pages: no value slot holds a valid value.
	valid := c.items
	if def != nil {
		valid = 0
		for _, d := range def {
			if d == 0 {
				valid++
			}
		}
	}
	if valid == 0 {
		if rep == nil && len(c.path) == 1 {
			return &pageOut{layout: &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{
				ConstantLayout: &enc21pb.ConstantLayout{Layers: p.layers}}}}, nil
		}
		if c.v22 {
			return encodeAllNull22(&p, rep, def), nil
		}
		return &pageOut{
			bufs: [][]byte{levelBytes(rep), levelBytes(def)},
			layout: &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{
				ConstantLayout: &enc21pb.ConstantLayout{Layers: p.layers}}},
		}, nil
	}
	if c.v22 {
		// One value throughout: a constant page, unless its raw levels
		// make it larger than the page would be otherwise.
		if slot, ok := c.constantSlot(def, p.maxVisible); ok {
			cp := c.encodeConstant(&p, rep, def, slot)
			if rep == nil && def == nil {
				return cp, nil
			}
			alt, err := c.encodeValues(&p, rep, def)
			if err != nil || cp.size() <= alt.size() {
				return cp, nil
			}
			return alt, nil
		}
	}
	return c.encodeValues(&p, rep, def)
}

// encodeValues writes a page that has valid values as a full-zip or a
// mini-block page.
func (c *leafCol) encodeValues(p *layerPlan, rep, def []uint16) (*pageOut, error) {
	if c.vk == valVar && c.maxLen >= fullZipMinLen {
		return c.encodeFullZip(p, rep, def), nil
	}
	switch c.vk {
	case valBool:
		return c.encodeMiniBlock(p, rep, def, &miniEnc{kind: mBool}, nil)
	case valVar:
		return c.encodeMiniBlock(p, rep, def, &miniEnc{kind: mVar}, nil)
	}
	if c.v22 {
		return c.encodeFixed22(p, rep, def)
	}
	n, w := c.items, c.width
	widths, size := blockWidths(c.vals, w, n, c.widths)
	c.widths = widths
	if size < n*w {
		est := size + len(widths)*(chunkCost+8)
		out, err := c.encodeMiniBlock(p, rep, def, &miniEnc{kind: mPacked, width: w, vals: c.vals, widths: widths, est: est}, nil)
		if err == nil {
			return out, nil
		}
		if err != errChunkTooBig {
			return nil, err
		}
	}
	return c.encodeMiniBlock(p, rep, def, &miniEnc{kind: mFlat, width: w, vals: c.vals}, nil)
}

// encodeFixed22 writes fixed-width values in a 2.2 file in the smallest of
// the mini-block forms it estimates: Flat, InlineBitpacking, RLE, or (for
// 64-bit values) a dictionary whose indices are bit-packed or RLE.
func (c *leafCol) encodeFixed22(p *layerPlan, rep, def []uint16) (*pageOut, error) {
	n, w := c.items, c.width
	nBlocks := (n + bitpack.BlockLen - 1) / bitpack.BlockLen
	rleChunks := (n + rleChunkValues - 1) / rleChunkValues
	widths, packed := blockWidths(c.vals, w, n, c.widths)
	c.widths = widths
	runs := fixedRuns(c.vals, w, n)

	plain := &miniEnc{kind: mFlat, width: w, vals: c.vals}
	best := n*w + (n*w/chunkValueTarget+1)*chunkCost
	usePacked := false
	if cost := packed + nBlocks*chunkCost; cost < best {
		best, usePacked = cost, true
		plain = &miniEnc{kind: mPacked, width: w, vals: c.vals, widths: widths, est: cost}
	}
	if cost := runs*(w+1) + rleChunks*(chunkCost+8); cost < best {
		best, usePacked = cost, false
		plain = &miniEnc{kind: mRle, width: w, vals: c.vals, est: 2 * cost}
	}
	if w == 8 && c.buildDict64(c.vals, n, runs) {
		d := c.dictBuffer()
		ib := bits.Len(uint(d.n - 1))
		idxPacked := nBlocks * (4 + bitpack.PackedBytes(ib) + chunkCost)
		idxRle := runs*5 + rleChunks*(chunkCost+8)
		if cost := d.bytes + min(idxPacked, idxRle); cost < best {
			idx := c.idx[:4*n]
			var m *miniEnc
			if idxRle < idxPacked {
				m = &miniEnc{kind: mRle, width: 4, vals: idx, est: 2 * idxRle}
			} else {
				iw, isz := blockWidths(idx, 4, n, nil)
				m = &miniEnc{kind: mPacked, width: 4, vals: idx, widths: iw, est: isz + nBlocks*chunkCost}
			}
			out, err := c.encodeMiniBlock(p, rep, def, m, d)
			if err != errChunkTooBig {
				return out, err
			}
		}
	}
	out, err := c.encodeMiniBlock(p, rep, def, plain, nil)
	if err == errChunkTooBig && usePacked {
		return c.encodeMiniBlock(p, rep, def, &miniEnc{kind: mFlat, width: w, vals: c.vals}, nil)
	}
	return out, err
}

func levelBytes(l []uint16) []byte {
	if l == nil {
		return []byte{}
	}
	b := make([]byte, 2*len(l))
	for i, v := range l {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func flat(bits uint64) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Flat{Flat: &enc21pb.Flat{BitsPerValue: bits}}}
}

func variable(bits uint64) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{
		Variable: &enc21pb.Variable{Offsets: flat(bits)}}}
}

func pad8(n int) int { return (n + 7) &^ 7 }

// miniKind is how a mini-block page stores its values.
type miniKind uint8

const (
	mFlat   miniKind = iota // fixed-width values as they are
	mPacked                 // InlineBitpacking: one 1024-value block a chunk
	mBool                   // a bitmap
	mVar                    // Variable: offsets, then the bytes
	mRle                    // run values and u8 run lengths (2.2 only)
)

// miniEnc produces the value buffers of the chunks of a mini-block page.
type miniEnc struct {
	c       *leafCol
	kind    miniKind
	width   int     // bytes a value: mFlat, mPacked, mRle
	vals    []byte  // the values: mFlat, mPacked, mRle
	widths  []uint8 // mPacked: the bit width of each block
	est     int     // about the bytes of the page's chunks (0: unknown)
	sizes   [2]int  // the chunk's buffer sizes (measure)
	runs    []byte  // mRle: the run lengths of the chunk measured last
	scratch [bitpack.BlockLen * 8]byte
}

// numBuffers is the number of value buffers of a chunk.
func (m *miniEnc) numBuffers() int {
	if m.kind == mRle {
		return 2
	}
	return 1
}

// encoding describes the values.
func (m *miniEnc) encoding() *enc21pb.CompressiveEncoding {
	switch m.kind {
	case mPacked:
		return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_InlineBitpacking{
			InlineBitpacking: &enc21pb.InlineBitpacking{UncompressedBitsPerValue: uint64(8 * m.width)}}}
	case mBool:
		return flat(1)
	case mVar:
		if m.c.large {
			return variable(64)
		}
		return variable(32)
	case mRle:
		return rleEncoding(uint64(8 * m.width))
	}
	return flat(uint64(8 * m.width))
}

// target returns the preferred number of values for a chunk starting at
// value index at (a power of two ≤ 4096).
func (m *miniEnc) target(at int) int {
	c := m.c
	switch m.kind {
	case mPacked:
		return bitpack.BlockLen
	case mBool:
		return chunkMaxValues
	case mRle:
		return rleChunkValues
	case mFlat:
		n := chunkMaxValues
		for n > 1 && n*m.width > chunkValueTarget {
			n >>= 1
		}
		return n
	}
	// Variable width: double while the chunk stays under the target.
	w := 4
	if c.large {
		w = 8
	}
	n := 1
	for 2*n <= chunkMaxValues && at+2*n <= c.items {
		if c.voff[at+2*n]-c.voff[at]+(2*n+1)*w > chunkVarTarget {
			break
		}
		n *= 2
	}
	if at+2*n > c.items && n < c.items-at {
		// The rest might fit in one last chunk.
		if c.voff[c.items]-c.voff[at]+(c.items-at+1)*w <= chunkVarTarget {
			return chunkMaxValues * 2 // "everything left"
		}
	}
	return n
}

// measure sets m.sizes to the sizes of the value buffers of values
// [at, at+n) and returns the bytes they take in a chunk, padding included.
func (m *miniEnc) measure(at, n int) int {
	c := m.c
	m.sizes[1] = 0
	switch m.kind {
	case mPacked:
		b := at / bitpack.BlockLen
		m.sizes[0] = m.width + bitpack.PackedBytes(int(m.widths[b]))
	case mBool:
		m.sizes[0] = (n + 7) / 8
	case mFlat:
		m.sizes[0] = n * m.width
	case mRle:
		m.runs = m.runs[:0]
		for i := at; i < at+n; {
			j := runEnd(m.vals, m.width, i, at+n)
			m.runs = append(m.runs, byte(j-i))
			i = j
		}
		m.sizes[0], m.sizes[1] = len(m.runs)*m.width, len(m.runs)
		return pad8(m.sizes[0]) + pad8(m.sizes[1])
	default:
		w := 4
		if c.large {
			w = 8
		}
		sz := (n+1)*w + c.voff[at+n] - c.voff[at]
		m.sizes[0] = (sz + w - 1) / w * w
	}
	return pad8(m.sizes[0])
}

// appendBuffer appends value buffer i of values [at, at+n) to dst, the
// values measure saw last.
func (m *miniEnc) appendBuffer(dst []byte, i, at, n int) []byte {
	c := m.c
	switch m.kind {
	case mRle:
		if i == 1 {
			return append(dst, m.runs...)
		}
		w := m.width
		for _, l := range m.runs {
			dst = append(dst, m.vals[w*at:w*at+w]...)
			at += int(l)
		}
		return dst
	case mPacked:
		w := m.width
		bw := int(m.widths[at/bitpack.BlockLen])
		block := m.vals[at*w : (at+n)*w]
		if n < bitpack.BlockLen {
			block = m.scratch[:bitpack.BlockLen*w]
			copy(block, m.vals[at*w:(at+n)*w])
			clear(block[n*w:])
		}
		var hdr [8]byte
		binary.LittleEndian.PutUint64(hdr[:], uint64(bw))
		dst = append(dst, hdr[:w]...)
		start := len(dst)
		dst = growLen(dst, start+bitpack.PackedBytes(bw))
		if err := bitpack.PackBlock(8*w, bw, dst[start:], block); err != nil {
			panic(err) // sizes are computed above; cannot happen
		}
		return dst
	case mBool:
		if at%8 == 0 {
			return append(dst, c.vals[at/8:at/8+(n+7)/8]...)
		}
		start := len(dst)
		dst = growLen(dst, start+(n+7)/8)
		clear(dst[start:])
		for i := 0; i < n; i++ {
			k := at + i
			if c.vals[k>>3]&(1<<(k&7)) != 0 {
				dst[start+i>>3] |= 1 << (i & 7)
			}
		}
		return dst
	case mFlat:
		return append(dst, m.vals[at*m.width:(at+n)*m.width]...)
	}
	w := 4
	if c.large {
		w = 8
	}
	start := len(dst)
	base := c.voff[at]
	hdr := (n + 1) * w
	for i := 0; i <= n; i++ {
		o := uint64(c.voff[at+i] - base + hdr)
		if w == 4 {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(o))
		} else {
			dst = binary.LittleEndian.AppendUint64(dst, o)
		}
	}
	dst = append(dst, c.vals[base:c.voff[at+n]]...)
	for (len(dst)-start)%w != 0 {
		dst = append(dst, 0x48)
	}
	return dst
}

// levelSection is how a chunk stores one kind of levels: raw u16s, or in
// 2.2 RLE blocks when they make the page's levels smaller.
type levelSection struct {
	l   []uint16
	rle bool
}

func (s levelSection) size(lo, hi int) int {
	if s.rle {
		return 8 + 3*rleRuns16(s.l[lo:hi])
	}
	return 2 * (hi - lo)
}

func (s levelSection) appendTo(dst []byte, lo, hi int) []byte {
	if s.rle {
		return appendRleBlock16(dst, s.l[lo:hi])
	}
	for _, v := range s.l[lo:hi] {
		dst = binary.LittleEndian.AppendUint16(dst, v)
	}
	return dst
}

func (s levelSection) encoding() *enc21pb.CompressiveEncoding {
	if s.rle {
		return rleLevelsEncoding()
	}
	return flat(16)
}

// useRle decides whether RLE pays for the levels l of a page with about
// chunks chunks (each RLE block costs 8 bytes besides its runs).
func useRle(l []uint16, chunks int) bool {
	return l != nil && 3*rleRuns16(l)+8*chunks < 2*len(l)
}

// encodeMiniBlock writes the page as a mini-block page whose values m
// produces; with a dictionary, m produces its indices. It fails with
// errChunkTooBig, unwrapped, when m cannot make chunks small enough
// (InlineBitpacking has a fixed 1024 values a chunk).
func (c *leafCol) encodeMiniBlock(p *layerPlan, rep, def []uint16, m *miniEnc, dict *dictPage) (*pageOut, error) {
	m.c = c
	ww := 2 // bytes of a metadata word and of a value buffer size
	if c.v22 {
		ww = 4
	}
	nb := m.numBuffers()
	hasLevels := rep != nil || def != nil
	var repS, defS *levelSection
	chunks := max(1, c.items/bitpack.BlockLen)
	if rep != nil {
		repS = &levelSection{l: rep, rle: c.v22 && useRle(rep, chunks)}
	}
	if def != nil {
		defS = &levelSection{l: def, rle: c.v22 && useRle(def, chunks)}
	}
	hdr := 2 + ww*nb
	if rep != nil {
		hdr += 2
	}
	if def != nil {
		hdr += 2
	}
	hdr = pad8(hdr)

	est := len(m.vals) + 4*c.levels + 64
	switch {
	case m.est > 0:
		est = m.est + 4*c.levels + 64
	case m.kind == mBool || m.kind == mVar:
		est = len(c.vals) + 4*c.levels + 64 + 8*c.items
	}
	data := make([]byte, 0, est)
	meta := make([]byte, 0, ww*(c.items/256+2))
	var repIndex []uint64
	lv := 0 // next level
	for at := 0; at < c.items; {
		left := c.items - at
		n := m.target(at)
		last := false
		var lvEnd, repSize, defSize int
		for {
			if n >= left {
				n, last = left, true
			}
			// Levels: up to and including the level of the chunk's last
			// value; trailing invisible levels go to the next chunk.
			lvEnd = lv
			if hasLevels {
				if last {
					lvEnd = c.levels
				} else {
					lvEnd = levelsFor(lv, n, def, p.maxVisible)
				}
			}
			size := hdr + m.measure(at, n)
			fits := ww == 4 || (m.sizes[0] <= 0xFFFF && m.sizes[1] <= 0xFFFF)
			if hasLevels {
				nl := lvEnd - lv
				if repS != nil {
					repSize = repS.size(lv, lvEnd)
					size += pad8(repSize)
				}
				if defS != nil {
					defSize = defS.size(lv, lvEnd)
					size += pad8(defSize)
				}
				if nl > 0xFFFF || repSize > 0xFFFF || defSize > 0xFFFF {
					fits = false
				}
			}
			if fits && size <= chunkMaxBytes {
				break
			}
			if m.kind == mPacked {
				return nil, errChunkTooBig // fall back to Flat
			}
			if n == 1 || (last && left == 1) {
				return nil, fmt.Errorf("lancefile: column %q: %w", c.field.Name, errChunkTooBig)
			}
			last = false
			n = 1 << (bits.Len(uint(min(n, left)-1)) - 1) // largest power of two below
		}
		start := len(data)
		nl := lvEnd - lv
		if hasLevels {
			data = binary.LittleEndian.AppendUint16(data, uint16(nl))
		} else {
			data = binary.LittleEndian.AppendUint16(data, 0)
		}
		if rep != nil {
			data = binary.LittleEndian.AppendUint16(data, uint16(repSize))
		}
		if def != nil {
			data = binary.LittleEndian.AppendUint16(data, uint16(defSize))
		}
		for i := 0; i < nb; i++ {
			if ww == 4 {
				data = binary.LittleEndian.AppendUint32(data, uint32(m.sizes[i]))
			} else {
				data = binary.LittleEndian.AppendUint16(data, uint16(m.sizes[i]))
			}
		}
		data = padTo8(data, start)
		if rep != nil {
			data = repS.appendTo(data, lv, lvEnd)
			data = padTo8(data, start)
			repIndex = repIndexAdd(repIndex, rep[lv:lvEnd], c.maxRep, last)
		}
		if def != nil {
			data = defS.appendTo(data, lv, lvEnd)
			data = padTo8(data, start)
		}
		for i := 0; i < nb; i++ {
			data = m.appendBuffer(data, i, at, n)
			data = padTo8(data, start)
		}
		words := (len(data) - start) / 8
		logn := 0
		if !last {
			logn = bits.TrailingZeros(uint(n))
		}
		if ww == 4 {
			meta = binary.LittleEndian.AppendUint32(meta, uint32((words-1)<<4|logn))
		} else {
			meta = binary.LittleEndian.AppendUint16(meta, uint16((words-1)<<4|logn))
		}
		at += n
		lv = lvEnd
	}
	mb := &enc21pb.MiniBlockLayout{
		ValueCompression: m.encoding(),
		Layers:           p.layers,
		NumBuffers:       uint64(nb),
		NumItems:         uint64(c.items),
		HasLargeChunk:    c.v22,
	}
	if repS != nil {
		mb.RepCompression = repS.encoding()
	}
	if defS != nil {
		mb.DefCompression = defS.encoding()
	}
	out := &pageOut{bufs: [][]byte{meta, data}}
	if dict != nil {
		mb.Dictionary, mb.NumDictionaryItems = dict.enc, uint64(dict.n)
		out.bufs = append(out.bufs, dict.buf)
	}
	if rep != nil {
		mb.RepetitionIndexDepth = 1
		ri := make([]byte, 8*len(repIndex))
		for i, v := range repIndex {
			binary.LittleEndian.PutUint64(ri[8*i:], v)
		}
		out.bufs = append(out.bufs, ri)
	}
	out.layout = &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_MiniBlockLayout{MiniBlockLayout: mb}}
	return out, nil
}

// levelsFor returns the level index just past the n-th value slot counted
// from level lv.
func levelsFor(lv, n int, def []uint16, maxVisible uint16) int {
	if def == nil {
		return lv + n
	}
	for i := lv; ; i++ {
		if def[i] <= maxVisible {
			n--
			if n == 0 {
				return i + 1
			}
		}
	}
}

func padTo8(b []byte, start int) []byte {
	for (len(b)-start)%8 != 0 {
		b = append(b, miniblockPad)
	}
	return b
}

// repIndexAdd appends the repetition index entry of one chunk: the rows
// that finish in it and the levels left over after the last row start.
func repIndexAdd(ri []uint64, rep []uint16, maxRep uint16, last bool) []uint64 {
	var rows uint64
	for _, v := range rep[min(1, len(rep)):] {
		if v == maxRep {
			rows++
		}
	}
	var leftover uint64
	if !last {
		leftover = uint64(len(rep))
		for i := len(rep) - 1; i >= 0; i-- {
			if rep[i] == maxRep {
				leftover = uint64(len(rep) - i)
				break
			}
		}
	}
	if len(ri) > 0 && len(rep) > 0 && rep[0] == maxRep && ri[len(ri)-1] != 0 {
		ri[len(ri)-2]++
		ri[len(ri)-1] = 0
	}
	if last {
		rows++
	}
	return append(ri, rows, leftover)
}

// encodeFullZip writes a variable-width page as a full-zip page: per level a
// control word ((rep << bits_def) | def, 0, 1, 2 or 4 bytes), then for a
// valid value its length (u32, or u64 for large types) and bytes. Buffer 1
// is the repetition index: the byte offset of every row start, then the
// total length, as the narrowest of u8/u16/u32/u64 that holds them.
func (c *leafCol) encodeFullZip(p *layerPlan, rep, def []uint16) *pageOut {
	var maxR, maxD uint16
	for _, v := range rep {
		maxR = max(maxR, v)
	}
	for _, v := range def {
		maxD = max(maxD, v)
	}
	bitsRep, bitsDef := bits.Len16(maxR), bits.Len16(maxD)
	if rep == nil {
		bitsRep = 0
	}
	if def == nil {
		bitsDef = 0
	}
	cw := 0
	switch t := bitsRep + bitsDef; {
	case t == 0:
	case t <= 8:
		cw = 1
	case t <= 16:
		cw = 2
	default:
		cw = 4
	}
	lw := 4
	if c.large {
		lw = 8
	}
	buf := make([]byte, 0, len(c.vals)+c.levels*(cw+lw))
	starts := make([]uint64, 0, c.rows+1)
	item := 0
	for i := 0; i < c.levels; i++ {
		var r, d uint16
		if rep != nil {
			r = rep[i]
		}
		if def != nil {
			d = def[i]
		}
		if rep == nil || r == c.maxRep {
			starts = append(starts, uint64(len(buf)))
		}
		word := uint32(r)<<bitsDef | uint32(d)
		switch cw {
		case 1:
			buf = append(buf, byte(word))
		case 2:
			buf = binary.LittleEndian.AppendUint16(buf, uint16(word))
		case 4:
			buf = binary.LittleEndian.AppendUint32(buf, word)
		}
		if def != nil && d > p.maxVisible {
			continue // invisible: no value slot
		}
		if d == 0 {
			v := c.vals[c.voff[item]:c.voff[item+1]]
			if lw == 4 {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(len(v)))
			} else {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(len(v)))
			}
			buf = append(buf, v...)
		}
		item++
	}
	starts = append(starts, uint64(len(buf)))
	total := uint64(len(buf))
	iw := 8
	switch {
	case total <= 0xFF:
		iw = 1
	case total <= 0xFFFF:
		iw = 2
	case total <= 0xFFFFFFFF:
		iw = 4
	}
	ri := make([]byte, 0, iw*len(starts))
	for _, s := range starts {
		switch iw {
		case 1:
			ri = append(ri, byte(s))
		case 2:
			ri = binary.LittleEndian.AppendUint16(ri, uint16(s))
		case 4:
			ri = binary.LittleEndian.AppendUint32(ri, uint32(s))
		default:
			ri = binary.LittleEndian.AppendUint64(ri, s)
		}
	}
	numItems := c.items
	if rep != nil {
		numItems = c.levels
	}
	fz := &enc21pb.FullZipLayout{
		BitsRep:          uint32(bitsRep),
		BitsDef:          uint32(bitsDef),
		Details:          &enc21pb.FullZipLayout_BitsPerOffset{BitsPerOffset: uint32(8 * lw)},
		NumItems:         uint32(numItems),
		NumVisibleItems:  uint32(c.items),
		ValueCompression: variable(uint64(8 * lw)),
		Layers:           p.layers,
	}
	return &pageOut{
		bufs:   [][]byte{buf, ri},
		layout: &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_FullZipLayout{FullZipLayout: fz}},
	}
}

// marshalAny wraps a message in a google.protobuf.Any the way Lance names
// its types.
func marshalAny(typeURL string, m interface{ MarshalVT() ([]byte, error) }) ([]byte, error) {
	v, err := m.MarshalVT()
	if err != nil {
		return nil, err
	}
	return (&wktpb.Any{TypeUrl: typeURL, Value: v}).MarshalVT()
}
