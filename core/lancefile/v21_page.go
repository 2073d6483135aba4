package lancefile

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// leafPage is one decoded page of a leaf column: canonical levels, the
// page's value slots, and a cursor.
type leafPage struct {
	li   *leafInfo
	rows int
	nlev int      // level entries
	rep  []uint16 // nil: every entry starts a row
	def  []uint16 // nil: every entry has level constDef
	// constDef is the level of every entry when def is nil.
	constDef uint16
	vals     vals
	// copied is set when nothing of the page refers to the buffers it was
	// decoded from, which may then be recycled.
	copied bool

	row, lev, val int // cursor: rows, entries and values consumed
}

// decodePage decodes a whole page of li's column, from a file of format
// version v (2.1 or 2.2).
func decodePage(li *leafInfo, enc []byte, bufs [][]byte, rows uint64, v Version) (*leafPage, error) {
	pl, err := pageLayout(enc, v)
	if err != nil {
		return nil, err
	}
	var pg *leafPage
	switch l := pl.GetLayout().(type) {
	case *enc21pb.PageLayout_MiniBlockLayout:
		pg, err = decodeMiniBlockPage(li, l.MiniBlockLayout, bufs, rows)
		if err == nil {
			pg.copied = true // levels, values and dictionary are all copied out
		}
	case *enc21pb.PageLayout_FullZipLayout:
		pg, err = decodeFullZipPage(li, l.FullZipLayout, bufs, rows)
	case *enc21pb.PageLayout_ConstantLayout:
		if v == V2_1 {
			pg, err = decodeAllNullPage(li, l.ConstantLayout, bufs, rows)
		} else {
			pg, err = decodeConstantPage(li, l.ConstantLayout, bufs, rows)
		}
	case *enc21pb.PageLayout_BlobLayout:
		pg, err = decodeBlobPage(li, l.BlobLayout, bufs, rows)
	case nil:
		return nil, corruptf("page layout without a layout")
	default:
		return nil, unsupportedf("page layout %T", pl.GetLayout())
	}
	if err != nil {
		return nil, err
	}
	if err := pg.check(); err != nil {
		return nil, err
	}
	return pg, nil
}

// check verifies that levels, rows and values agree, so that the cursor
// arithmetic of take and skip stays in bounds.
func (pg *leafPage) check() error {
	li := pg.li
	if pg.rep != nil && len(pg.rep) != pg.nlev || pg.def != nil && len(pg.def) != pg.nlev {
		return corruptf("%d repetition and %d definition levels for %d entries", len(pg.rep), len(pg.def), pg.nlev)
	}
	if pg.def != nil {
		for _, d := range pg.def {
			if d > li.maxDef {
				return corruptf("definition level %d above %d", d, li.maxDef)
			}
		}
	} else if pg.constDef > li.maxDef {
		return corruptf("definition level %d above %d", pg.constDef, li.maxDef)
	}
	rows := pg.nlev
	if pg.rep != nil {
		rows = 0
		top := uint16(li.maxRep)
		for i, r := range pg.rep {
			if r > top {
				return corruptf("repetition level %d above %d", r, top)
			}
			if r == top {
				rows++
			} else if i == 0 {
				return corruptf("page starts in the middle of a row")
			}
		}
	}
	if rows != pg.rows {
		return corruptf("levels hold %d rows, the page claims %d", rows, pg.rows)
	}
	if n := pg.visible(0, pg.nlev); n != pg.vals.n {
		return corruptf("levels give %d value slots, the page has %d values", n, pg.vals.n)
	}
	return nil
}

// visible counts the entries in [i, j) that occupy a value slot.
func (pg *leafPage) visible(i, j int) int {
	li := pg.li
	if li.maxRep == 0 {
		return j - i
	}
	if pg.def == nil {
		if pg.constDef <= li.maxVis {
			return j - i
		}
		return 0
	}
	n := 0
	for _, d := range pg.def[i:j] {
		if d <= li.maxVis {
			n++
		}
	}
	return n
}

func (pg *leafPage) rowsLeft() int { return pg.rows - pg.row }

// advance returns the entry index just past the next k rows.
func (pg *leafPage) advance(k int) int {
	if pg.rep == nil {
		return pg.lev + k
	}
	if pg.row+k == pg.rows {
		return pg.nlev
	}
	top := uint16(pg.li.maxRep)
	seen := 0
	for i := pg.lev + 1; i < pg.nlev; i++ {
		if pg.rep[i] == top {
			seen++
			if seen == k {
				return i
			}
		}
	}
	return pg.nlev
}

// take returns the next k rows (k ≤ rowsLeft) without copying.
func (pg *leafPage) take(k int) leafBatch {
	end := pg.advance(k)
	nv := pg.visible(pg.lev, end)
	b := leafBatch{rows: k, nlev: end - pg.lev, constDef: pg.constDef, vals: pg.vals.slice(pg.val, pg.val+nv)}
	if pg.rep != nil {
		b.rep = pg.rep[pg.lev:end:end]
	}
	if pg.def != nil {
		b.def = pg.def[pg.lev:end:end]
	}
	pg.row += k
	pg.lev = end
	pg.val += nv
	return b
}

// skip moves past the next k rows.
func (pg *leafPage) skip(k int) {
	end := pg.advance(k)
	pg.val += pg.visible(pg.lev, end)
	pg.row += k
	pg.lev = end
}

// leafBatch holds some whole rows of one leaf.
type leafBatch struct {
	rows     int
	nlev     int
	rep      []uint16 // nil: every entry starts a row
	def      []uint16 // nil: every entry has level constDef
	constDef uint16
	vals     vals
}

// concatBatches joins batches of consecutive rows of one leaf, copying.
func concatBatches(li *leafInfo, parts []leafBatch) (leafBatch, error) {
	if len(parts) == 1 {
		return parts[0], nil
	}
	out := leafBatch{}
	needRep, needDef := false, false
	nv := 0
	for i := range parts {
		p := &parts[i]
		out.rows += p.rows
		out.nlev += p.nlev
		nv += p.vals.n
		needRep = needRep || p.rep != nil
		needDef = needDef || p.def != nil || p.constDef != 0
	}
	if needRep {
		out.rep = make([]uint16, 0, out.nlev)
	}
	if needDef {
		out.def = make([]uint16, 0, out.nlev)
	}
	vb := newValBuilder(li.kind, li.width, nv)
	vb.dim = li.dim
	for i := range parts {
		out.vals.blob = max(out.vals.blob, parts[i].vals.blob)
		p := &parts[i]
		if needRep {
			if p.rep != nil {
				out.rep = append(out.rep, p.rep...)
			} else {
				for range p.nlev {
					out.rep = append(out.rep, uint16(li.maxRep))
				}
			}
		}
		if needDef {
			if p.def != nil {
				out.def = append(out.def, p.def...)
			} else {
				for range p.nlev {
					out.def = append(out.def, p.constDef)
				}
			}
		}
		if err := vb.appendVals(&p.vals); err != nil {
			return leafBatch{}, err
		}
	}
	blob := out.vals.blob
	out.vals = vb.finish()
	out.vals.blob = blob
	return out, nil
}

// applyDefMap rewrites page definition levels to canonical ones.
func applyDefMap(def []uint16, m []uint16) error {
	if m == nil {
		return nil
	}
	for i, d := range def {
		if int(d) >= len(m) {
			return corruptf("definition level %d above the page's %d", d, len(m)-1)
		}
		def[i] = m[d]
	}
	return nil
}

// checkValueLayout rejects values that do not fit the leaf's type.
func checkValueLayout(li *leafInfo, kind valKind, width int) error {
	if kind != li.kind || (kind == kindFixed && width != li.width) {
		return corruptf("%s values of width %d for field %q of type %v", kind, width, li.field.Name, li.field.Type)
	}
	return nil
}

// pad8 rounds n up to a multiple of 8.
func rpad8(n int) int { return (n + 7) &^ 7 }

// decodeMiniBlockPage decodes a mini-block page: chunk metadata words in
// buffer 0, chunks in buffer 1, the dictionary (if any) in buffer 2.
//
// Each chunk:
//
//	u16 num_levels | u16 rep_size (if rep) | u16 def_size (if def) |
//	buffer_size[num_buffers] | pad to 8 | rep | pad 8 | def | pad 8 |
//	buffer 0 | pad 8 | ... | buffer k-1 | pad 8
//
// and its metadata word is ((bytes/8 - 1) << 4) | log2(items), the last
// chunk taking whatever items remain. Metadata words and buffer sizes are
// u16 in 2.1 and u32 with has_large_chunk (the grammar of 2.2).
func decodeMiniBlockPage(li *leafInfo, mb *enc21pb.MiniBlockLayout, bufs [][]byte, rows uint64) (*leafPage, error) {
	dm, err := li.defMap(mb.GetLayers())
	if err != nil {
		return nil, err
	}
	if len(bufs) < 2 {
		return nil, corruptf("mini-block page with %d buffers", len(bufs))
	}
	var repC, defC *codec
	if mb.GetRepCompression() != nil {
		if li.maxRep == 0 {
			return nil, corruptf("repetition levels for a field without lists")
		}
		if repC, err = compileCodec(mb.GetRepCompression(), roleBlock); err != nil {
			return nil, err
		}
	}
	if mb.GetDefCompression() != nil {
		if defC, err = compileCodec(mb.GetDefCompression(), roleBlock); err != nil {
			return nil, err
		}
	}
	valC, err := compileCodec(mb.GetValueCompression(), roleMiniBlock)
	if err != nil {
		return nil, err
	}
	if li.packed != nil || valC.packedWidths != nil {
		if err := checkPackedStruct(li, valC); err != nil {
			return nil, err
		}
	}
	var dict *vals
	if mb.GetDictionary() != nil {
		if len(bufs) < 3 {
			return nil, corruptf("dictionary page without a dictionary buffer")
		}
		dc, err := compileCodec(mb.GetDictionary(), roleBlock)
		if err != nil {
			return nil, err
		}
		nd := mb.GetNumDictionaryItems()
		if nd > uint64(len(bufs[2]))*8+1 {
			return nil, corruptf("%d dictionary items in %d bytes", nd, len(bufs[2]))
		}
		d, err := dc.decodeBlock(bufs[2], int(nd))
		if err != nil {
			return nil, err
		}
		if err := checkValueLayout(li, d.kind, d.width); err != nil {
			return nil, err
		}
		dict = &d
		if valC.out != kindFixed || (valC.width != 1 && valC.width != 2 && valC.width != 4 && valC.width != 8) {
			return nil, unsupportedf("dictionary indices encoded as %s", encName(mb.GetValueCompression()))
		}
	} else if err := checkValueLayout(li, valC.out, valC.width); err != nil {
		return nil, err
	}
	meta, data := bufs[0], bufs[1]
	ww := 2 // bytes of a metadata word and of a buffer size
	if mb.GetHasLargeChunk() {
		ww = 4
	}
	if len(meta)%ww != 0 {
		return nil, corruptf("chunk metadata of %d bytes is not a whole number of %d-byte words", len(meta), ww)
	}
	nChunks := len(meta) / ww
	numItems := mb.GetNumItems()
	if numItems > uint64(nChunks)*maxChunkItems {
		return nil, corruptf("%d items in %d chunks", numItems, nChunks)
	}
	if li.maxRep == 0 && numItems != rows {
		return nil, corruptf("%d items in a page of %d rows", numItems, rows)
	}
	nb := mb.GetNumBuffers()
	if nb > 16 {
		return nil, unsupportedf("%d buffers per chunk", nb)
	}
	pg := &leafPage{li: li, rows: int(rows)}
	// A dictionary of 32- or 64-bit values with u32 indices (lance 12's
	// dictionaries of low-cardinality numbers) is gathered chunk by chunk
	// into the page's values: the indices never fill a page-sized buffer.
	var vb, ib *valBuilder
	fused := dict != nil && gathersFused(dict, valC)
	if fused {
		vb = newValBuilder(kindFixed, dict.width, int(numItems))
		ib = getIndexScratch()
		defer putIndexScratch(ib)
	} else {
		vb = newValBuilder(valC.out, valC.width, int(numItems))
		if dict == nil {
			vb.dim = li.dim
		}
	}
	var rep, def []uint16
	if repC != nil {
		rep = make([]uint16, 0, numItems)
	}
	if defC != nil {
		def = make([]uint16, 0, numItems)
	}
	chunkBufs := make([][]byte, nb)
	sizes := make([]int, nb)
	off := 0
	items := uint64(0)
	for c := 0; c < nChunks; c++ {
		w := readUint(meta[ww*c:], ww)
		size := (int(w>>4) + 1) * 8
		var k uint64
		if c < nChunks-1 {
			k = 1 << (w & 15)
		} else {
			if items > numItems {
				return nil, corruptf("chunks hold more than the page's %d items", numItems)
			}
			k = numItems - items
		}
		if k > maxChunkItems {
			return nil, corruptf("chunk of %d items", k)
		}
		items += k
		if size > len(data)-off {
			return nil, corruptf("chunk %d of %d bytes at %d overruns the %d-byte data buffer", c, size, off, len(data))
		}
		chunk := data[off : off+size]
		off += size
		// Header.
		hdr := 2
		if repC != nil {
			hdr += 2
		}
		if defC != nil {
			hdr += 2
		}
		hdr += ww * int(nb)
		if hdr > len(chunk) {
			return nil, corruptf("chunk %d header overruns the chunk", c)
		}
		numLevels := int(binary.LittleEndian.Uint16(chunk))
		h := 2
		repSize, defSize := 0, 0
		if repC != nil {
			repSize = int(binary.LittleEndian.Uint16(chunk[h:]))
			h += 2
		}
		if defC != nil {
			defSize = int(binary.LittleEndian.Uint16(chunk[h:]))
			h += 2
		}
		for i := range sizes {
			sizes[i] = int(readUint(chunk[h:], ww))
			h += ww
		}
		p := rpad8(h)
		take := func(n int) ([]byte, error) {
			if n > len(chunk)-p || p > len(chunk) {
				return nil, corruptf("chunk %d: section of %d bytes at %d overruns its %d bytes", c, n, p, len(chunk))
			}
			b := chunk[p : p+n]
			p = rpad8(p + n)
			return b, nil
		}
		var repB, defB []byte
		if repC != nil {
			if repB, err = take(repSize); err != nil {
				return nil, err
			}
		}
		if defC != nil {
			if defB, err = take(defSize); err != nil {
				return nil, err
			}
		}
		for i := range chunkBufs {
			if chunkBufs[i], err = take(sizes[i]); err != nil {
				return nil, err
			}
		}
		if ww == 4 && (repC != nil || defC != nil) {
			// The u16 level count wraps in chunks of more than 65,535
			// levels; RLE-compressed levels tell the real count.
			if numLevels, err = wrappedLevels(numLevels, repC, repB, defC, defB); err != nil {
				return nil, err
			}
		}
		if repC == nil && defC == nil {
			numLevels = int(k)
		} else if repC == nil && uint64(numLevels) != k {
			return nil, corruptf("chunk %d has %d definition levels for %d items", c, numLevels, k)
		} else if uint64(numLevels) < k {
			return nil, corruptf("chunk %d has %d levels for %d items", c, numLevels, k)
		}
		if repC != nil {
			if rep, err = repC.decodeLevels(repB, numLevels, rep); err != nil {
				return nil, err
			}
		}
		if defC != nil {
			if def, err = defC.decodeLevels(defB, numLevels, def); err != nil {
				return nil, err
			}
		}
		pg.nlev += numLevels
		if fused {
			if err := gatherDictChunk(valC, chunkBufs, int(k), ib, dict, vb); err != nil {
				return nil, err
			}
		} else if err := valC.decodeMiniBlock(chunkBufs, int(k), vb); err != nil {
			return nil, err
		}
	}
	if items != numItems || vb.n != int(numItems) {
		return nil, corruptf("chunks hold %d items, the page %d", vb.n, numItems)
	}
	if err := applyDefMap(def, dm); err != nil {
		return nil, err
	}
	pg.rep, pg.def = rep, def
	pg.vals = vb.finish()
	if dict != nil && !fused {
		pg.vals = gatherDict(dict, &pg.vals)
	}
	return pg, nil
}

// gathersFused reports whether a dictionary page's values can be gathered
// a chunk at a time: u32 indices into a dictionary of 4- or 8-byte values.
func gathersFused(dict *vals, idx *codec) bool {
	return dict.kind == kindFixed && !dict.constant && !dict.zero && (dict.width == 4 || dict.width == 8) &&
		len(dict.data) >= dict.n*dict.width && idx.out == kindFixed && idx.width == 4
}

// indexScratch holds the u32 dictionary indices of one mini-block chunk
// while they are gathered, reused across chunks and pages.
var indexScratch = sync.Pool{New: func() any { return newValBuilder(kindFixed, 4, 4096) }}

func getIndexScratch() *valBuilder { return indexScratch.Get().(*valBuilder) }

func putIndexScratch(b *valBuilder) {
	if cap(b.data) <= 4*maxChunkItems {
		indexScratch.Put(b)
	}
}

// gatherDictChunk decodes the n u32 indices of one mini-block chunk and
// appends the dictionary values they name to out. Run-length encoded
// indices are looked up once a run; others are decoded into ib first.
func gatherDictChunk(c *codec, bufs [][]byte, n int, ib *valBuilder, dict *vals, out *valBuilder) error {
	d := dict.data[:dict.n*dict.width]
	if c.kind == cRle {
		if len(bufs) < 2 {
			return corruptf("%d buffers in an RLE chunk, want 2", len(bufs))
		}
		return gatherRle(bufs[0], bufs[1], n, d, dict.width, out)
	}
	ib.n, ib.data = 0, ib.data[:0]
	if err := c.decodeMiniBlock(bufs, n, ib); err != nil {
		return err
	}
	if ib.n != n {
		return corruptf("chunk of %d dictionary indices holds %d", n, ib.n)
	}
	gatherFixed32(out.grow(n), ib.data[:4*n], d, dict.width)
	return nil
}

// gatherRle expands u32 run values, each a dictionary index, and u8 run
// lengths into n values of the dictionary d (of w-byte values, 4 or 8);
// an index out of range gives zero, as in gatherFixed32.
func gatherRle(values, lengths []byte, n int, d []byte, w int, b *valBuilder) error {
	runs := len(values) / 4
	if len(values)%4 != 0 || runs != len(lengths) {
		return corruptf("RLE chunk with %d value bytes and %d run lengths", len(values), len(lengths))
	}
	nd := uint32(len(d) / w)
	dst := b.grow(n)
	pos := 0
	for r := 0; r < runs && pos < n; r++ {
		k := min(int(lengths[r]), n-pos)
		j := binary.LittleEndian.Uint32(values[4*r:])
		if w == 8 {
			var x uint64
			if j < nd {
				x = binary.LittleEndian.Uint64(d[8*int(j):])
			}
			fill64(dst[8*pos:8*(pos+k)], x)
		} else {
			var x uint32
			if j < nd {
				x = binary.LittleEndian.Uint32(d[4*int(j):])
			}
			fill32(dst[4*pos:4*(pos+k)], x)
		}
		pos += k
	}
	if pos != n {
		return corruptf("RLE runs cover %d values, want %d", pos, n)
	}
	return nil
}

// fill64 sets every 8-byte little-endian word of dst to x.
func fill64(dst []byte, x uint64) {
	if littleEndian && aligned(dst, 8) {
		ws := unsafe.Slice((*uint64)(unsafe.Pointer(&dst[0])), len(dst)/8)
		for i := range ws {
			ws[i] = x
		}
		return
	}
	for i := 0; i+8 <= len(dst); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], x)
	}
}

// fill32 sets every 4-byte little-endian word of dst to x.
func fill32(dst []byte, x uint32) {
	if littleEndian && aligned(dst, 4) {
		ws := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), len(dst)/4)
		for i := range ws {
			ws[i] = x
		}
		return
	}
	for i := 0; i+4 <= len(dst); i += 4 {
		binary.LittleEndian.PutUint32(dst[i:], x)
	}
}

// gatherDict replaces dictionary indices by the items they name. Indices out
// of range (null slots carry arbitrary ones) give zero or empty values.
func gatherDict(dict *vals, idx *vals) vals {
	n := idx.n
	iw := idx.width
	at := func(i int) uint64 { return readUint(idx.data[i*iw:], iw) }
	nd := uint64(dict.n)
	switch dict.kind {
	case kindVar:
		b := newValBuilder(kindVar, 0, n)
		for i := 0; i < n; i++ {
			j := at(i)
			if j < nd {
				b.appendVar(dict.data[dict.offs[j]:dict.offs[j+1]])
			} else {
				b.appendVar(nil)
			}
		}
		return b.finish()
	case kindBool:
		b := newValBuilder(kindBool, 0, n)
		one := []byte{1}
		zero := []byte{0}
		for i := 0; i < n; i++ {
			j := at(i)
			if j < nd && dict.data[(dict.boff+int(j))/8]&(1<<((dict.boff+int(j))%8)) != 0 {
				b.appendBits(one, 0, 1)
			} else {
				b.appendBits(zero, 0, 1)
			}
		}
		return b.finish()
	default:
		w := dict.width
		b := newValBuilder(kindFixed, w, n)
		dst := b.grow(n)
		if iw == 4 && (w == 4 || w == 8) {
			// Lance's indices are u32; 32- and 64-bit values are the
			// common dictionaries (lance 12 dictionary-encodes 64-bit
			// columns of few distinct values).
			gatherFixed32(dst, idx.data[:4*n], dict.data[:w*dict.n], w)
			return b.finish()
		}
		for i := 0; i < n; i++ {
			j := at(i)
			if j < nd {
				copy(dst[i*w:(i+1)*w], dict.data[int(j)*w:])
			}
		}
		return b.finish()
	}
}

// aligned reports whether b starts at a multiple of a bytes.
func aligned(b []byte, a int) bool {
	return len(b) > 0 && uintptr(unsafe.Pointer(&b[0]))%uintptr(a) == 0
}

// gatherFixed32 writes to dst the values of width w (4 or 8 bytes) of dict
// that the u32 indices idx name; an index out of range (null slots carry
// arbitrary ones) gives zero.
func gatherFixed32(dst, idx, dict []byte, w int) {
	nd := uint32(len(dict) / w)
	n := len(idx) / 4
	if littleEndian && n > 0 && nd > 0 && aligned(dst, w) && aligned(idx, 4) && aligned(dict, w) {
		ix := unsafe.Slice((*uint32)(unsafe.Pointer(&idx[0])), n)
		if w == 8 {
			d := unsafe.Slice((*uint64)(unsafe.Pointer(&dict[0])), nd)
			out := unsafe.Slice((*uint64)(unsafe.Pointer(&dst[0])), n)
			for i, j := range ix {
				if j < nd {
					out[i] = d[j]
				} else {
					out[i] = 0
				}
			}
			return
		}
		d := unsafe.Slice((*uint32)(unsafe.Pointer(&dict[0])), nd)
		out := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), n)
		for i, j := range ix {
			if j < nd {
				out[i] = d[j]
			} else {
				out[i] = 0
			}
		}
		return
	}
	if w == 8 {
		for i := 0; i+4 <= len(idx); i += 4 {
			j := binary.LittleEndian.Uint32(idx[i:])
			var v uint64
			if j < nd {
				v = binary.LittleEndian.Uint64(dict[8*int(j):])
			}
			binary.LittleEndian.PutUint64(dst[2*i:], v)
		}
		return
	}
	for i := 0; i+4 <= len(idx); i += 4 {
		j := binary.LittleEndian.Uint32(idx[i:])
		var v uint32
		if j < nd {
			v = binary.LittleEndian.Uint32(dict[4*int(j):])
		}
		binary.LittleEndian.PutUint32(dst[i:], v)
	}
}

// decodeFullZipPage decodes a full-zip page: buffer 0 holds, per level
// entry, a control word (rep << bits_def | def, in 1, 2 or 4 bytes, absent
// when both widths are 0) followed, for fixed-width values, by the value of
// every entry with a value slot, or, for variable-width values, by a u32 or
// u64 length and the bytes of every valid item. Buffer 1, the repetition
// index, only serves random access and is ignored.
func decodeFullZipPage(li *leafInfo, fz *enc21pb.FullZipLayout, bufs [][]byte, rows uint64) (*leafPage, error) {
	dm, err := li.defMap(fz.GetLayers())
	if err != nil {
		return nil, err
	}
	if len(bufs) < 1 {
		return nil, corruptf("full-zip page without buffers")
	}
	buf := bufs[0]
	bitsRep, bitsDef := fz.GetBitsRep(), fz.GetBitsDef()
	if bitsRep > 16 || bitsDef > 16 {
		return nil, corruptf("control words of %d+%d bits", bitsRep, bitsDef)
	}
	if bitsRep > 0 && li.maxRep == 0 {
		return nil, corruptf("repetition levels for a field without lists")
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
	defMask := uint32(1)<<bitsDef - 1
	var fixedW, lenW, itemBytes int
	var vc *codec
	switch d := fz.GetDetails().(type) {
	case *enc21pb.FullZipLayout_BitsPerValue:
		if d.BitsPerValue == 0 || d.BitsPerValue%8 != 0 || d.BitsPerValue > 1<<23 {
			return nil, unsupportedf("full-zip values of %d bits", d.BitsPerValue)
		}
		fixedW = int(d.BitsPerValue / 8)
		if vc, err = compileCodec(fz.GetValueCompression(), rolePerValue); err != nil {
			return nil, err
		}
		if vc.fslValid {
			itemBytes = (vc.fslDim + 7) / 8
		}
		if vc.kind != cFlat || vc.comp != 0 || vc.width+itemBytes != fixedW || vc.fslDim != li.dim && vc.fslValid {
			return nil, unsupportedf("full-zip fixed-width values encoded as %s", encName(fz.GetValueCompression()))
		}
		if li.packed != nil || vc.packedWidths != nil {
			if err := checkPackedStruct(li, vc); err != nil {
				return nil, err
			}
		}
		if err := checkValueLayout(li, kindFixed, vc.width); err != nil {
			return nil, err
		}
	case *enc21pb.FullZipLayout_BitsPerOffset:
		if d.BitsPerOffset != 32 && d.BitsPerOffset != 64 {
			return nil, unsupportedf("full-zip lengths of %d bits", d.BitsPerOffset)
		}
		lenW = int(d.BitsPerOffset / 8)
		if vc, err = compileCodec(fz.GetValueCompression(), rolePerValue); err != nil {
			return nil, err
		}
		if vc.out != kindVar {
			return nil, unsupportedf("full-zip variable-width values encoded as %s", encName(fz.GetValueCompression()))
		}
		if vc.kind == cVarPacked {
			if err := vc.vp.check(li.packed, li.field.Name); err != nil {
				return nil, err
			}
		} else if li.packed != nil {
			return nil, corruptf("packed struct %q stored as %s", li.field.Name, encName(fz.GetValueCompression()))
		}
		if err := checkValueLayout(li, kindVar, 0); err != nil {
			return nil, err
		}
	default:
		return nil, corruptf("full-zip layout without value width")
	}
	hasRep, hasDef := bitsRep > 0, bitsDef > 0
	if !hasRep && rows > uint64(len(buf))+1 && (cw > 0 || fixedW > 0 || lenW > 0) {
		return nil, corruptf("%d rows in a %d-byte full-zip buffer", rows, len(buf))
	}
	// Entries: all of the buffer with repetition, one per row without.
	capEntries := int(min(rows, uint64(len(buf))+1))
	var rep, def []uint16
	if hasRep {
		rep = make([]uint16, 0, capEntries)
	}
	if hasDef {
		def = make([]uint16, 0, capEntries)
	}
	pg := &leafPage{li: li, rows: int(rows)}
	var vb *valBuilder
	if fixedW > 0 {
		vb = newValBuilder(kindFixed, fixedW-itemBytes, capEntries)
		vb.dim = li.dim
	} else {
		vb = newValBuilder(kindVar, 0, capEntries)
	}
	// raw collects the still-compressed bytes of each value when the values
	// need a second pass (FSST, General).
	raw := vb
	if vc.kind == cFsst || vc.kind == cGeneral || vc.kind == cVarPacked {
		raw = newValBuilder(kindVar, 0, capEntries)
	}
	maxVis := li.maxVis
	pos := 0
	for n := 0; ; n++ {
		if hasRep {
			if pos >= len(buf) {
				break
			}
		} else if n == int(rows) {
			break
		}
		var r, d uint16
		if cw > 0 {
			if cw > len(buf)-pos {
				return nil, corruptf("control word at %d overruns the %d-byte buffer", pos, len(buf))
			}
			word := uint32(readUint(buf[pos:], cw))
			pos += cw
			r, d = uint16(word>>bitsDef), uint16(word&defMask)
			if hasRep {
				rep = append(rep, r)
			}
			if hasDef {
				def = append(def, d)
			}
		}
		cd := d
		if dm != nil {
			if int(d) >= len(dm) {
				return nil, corruptf("definition level %d above the page's %d", d, len(dm)-1)
			}
			cd = dm[d]
		}
		if cd > maxVis {
			continue
		}
		if fixedW > 0 {
			if fixedW > len(buf)-pos {
				return nil, corruptf("value at %d overruns the %d-byte buffer", pos, len(buf))
			}
			if itemBytes > 0 {
				vb.appendItems(buf[pos:], 0, 1)
			} else if vb.dim > 0 {
				vb.appendItems(nil, 0, 1)
			}
			copy(vb.grow(1), buf[pos+itemBytes:pos+fixedW])
			pos += fixedW
			continue
		}
		if d != 0 {
			raw.appendVar(nil)
			continue
		}
		if lenW > len(buf)-pos {
			return nil, corruptf("value length at %d overruns the %d-byte buffer", pos, len(buf))
		}
		l := readUint(buf[pos:], lenW)
		pos += lenW
		if l > uint64(len(buf)-pos) {
			return nil, corruptf("value of %d bytes at %d overruns the %d-byte buffer", l, pos, len(buf))
		}
		raw.appendVar(buf[pos : pos+int(l)])
		pos += int(l)
	}
	switch vc.kind {
	case cVarPacked:
		if err := vc.vp.transcode(raw, vb); err != nil {
			return nil, err
		}
	case cFsst:
		if err := fsstDecodeInto(vc.fsst, raw.data, raw.offs, vb); err != nil {
			return nil, err
		}
	case cGeneral:
		for i := 0; i < raw.n; i++ {
			v := raw.data[raw.offs[i]:raw.offs[i+1]]
			if len(v) == 0 {
				vb.appendVar(nil)
				continue
			}
			out, err := decompressBuffer(vc.comp, v, 1<<31-1)
			if err != nil {
				return nil, err
			}
			vb.appendVar(out)
		}
	}
	if err := applyDefMap(def, dm); err != nil {
		return nil, err
	}
	if hasRep {
		pg.nlev = len(rep)
	} else {
		pg.nlev = int(rows)
	}
	pg.rep, pg.def = rep, def
	pg.vals = vb.finish()
	return pg, nil
}

// decodeAllNullPage decodes an all-null page. The simple form (a single
// nullable item layer) has no buffers; the complex form stores u16 rep and
// def levels in buffers 0 and 1 (either may be empty).
func decodeAllNullPage(li *leafInfo, an *enc21pb.ConstantLayout, bufs [][]byte, rows uint64) (*leafPage, error) {
	layers := an.GetLayers()
	dm, err := li.defMap(layers)
	if err != nil {
		return nil, err
	}
	pg := &leafPage{li: li, rows: int(rows), constDef: li.base[len(li.path)-1]}
	simple := len(layers) == 1 && layers[0] == enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM
	var repB, defB []byte
	if !simple {
		if len(bufs) > 0 {
			repB = bufs[0]
		}
		if len(bufs) > 1 {
			defB = bufs[1]
		}
	}
	if len(repB)%2 != 0 || len(defB)%2 != 0 {
		return nil, corruptf("all-null levels of odd length")
	}
	if len(repB) > 0 {
		if li.maxRep == 0 {
			return nil, corruptf("repetition levels for a field without lists")
		}
		pg.rep = append([]uint16(nil), u16s(repB)...)
	}
	if len(defB) > 0 {
		pg.def = append([]uint16(nil), u16s(defB)...)
		if err := applyDefMap(pg.def, dm); err != nil {
			return nil, err
		}
	}
	if pg.rep != nil && pg.def != nil && len(pg.rep) != len(pg.def) {
		return nil, corruptf("%d repetition and %d definition levels", len(pg.rep), len(pg.def))
	}
	switch {
	case pg.rep != nil:
		pg.nlev = len(pg.rep)
	case pg.def != nil:
		pg.nlev = len(pg.def)
	default:
		pg.nlev = int(rows)
	}
	if pg.rep == nil && pg.def != nil && len(pg.def) != int(rows) && li.maxRep == 0 {
		return nil, corruptf("%d definition levels for %d rows", len(pg.def), rows)
	}
	pg.vals = vals{kind: li.kind, width: li.width, zero: true}
	pg.vals.n = pg.visible(0, pg.nlev)
	return pg, nil
}
