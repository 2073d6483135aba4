package lancefile

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The 2.1 reader.
//
// In a 2.1 file only leaves own columns; lists and structs exist as layers
// of their leaves' repetition and definition levels (v21_levels.go). A field
// decoder reads each leaf column page by page (v21_page.go decodes a page
// whole, into one buffer of values), takes the same number of top-level rows
// from every leaf, and assembles the field's array from them: struct
// validity and list offsets come from the first leaf below the struct or
// list that the file has.

// decoder21 decodes one top-level field of a 2.1 file.
type decoder21 struct {
	f      *File
	fld    *Field
	leaves []*leafReader          // pre-order
	under  map[*Field][]int       // leaf indices below (or at) each field
	leafOf map[*Field]*leafReader // leaf fields to their reader
}

var _ fieldDecoder = (*decoder21)(nil)

// newDecoder21 returns the decoder of one top-level field of a 2.1 file.
func newDecoder21(f *File, fld *Field, columnOf map[int32]int, opts ReadOptions) (fieldDecoder, error) {
	d := &decoder21{f: f, fld: fld, under: map[*Field][]int{}, leafOf: map[*Field]*leafReader{}}
	var walk func(fl *Field, path []*Field) error
	walk = func(fl *Field, path []*Field) error {
		path = append(path[:len(path):len(path)], fl)
		if fl.Type == nil {
			return unsupportedf("field %q has no type", fl.Name)
		}
		_, own := columnOf[fl.ID]
		if fl.IsLeaf() || isFSLLeaf(fl) || (own && isStructField(fl)) {
			// A struct with a column of its own is stored whole in it:
			// packed (lance-encoding:packed) or a blob v2 descriptor.
			col := -1
			if c, ok := columnOf[fl.ID]; ok {
				col = c
			} else if isFSLLeaf(fl) && len(fl.Children) == 1 {
				if c, ok := columnOf[fl.Children[0].ID]; ok {
					col = c
				}
			}
			if col >= len(f.columns) {
				return f.corruptf(-1, "field %q maps to column %d of %d", fl.Name, col, len(f.columns))
			}
			li, err := newLeafInfo(path, col)
			if err != nil {
				return err
			}
			lr := &leafReader{f: f, info: li}
			if col >= 0 {
				lr.stream = f.pageStream(col, 0, opts)
			}
			idx := len(d.leaves)
			d.leaves = append(d.leaves, lr)
			d.leafOf[fl] = lr
			for _, p := range path {
				d.under[p] = append(d.under[p], idx)
			}
			return nil
		}
		switch fl.Type.(type) {
		case *arrow.StructType, *arrow.ListType, *arrow.LargeListType, *arrow.MapType:
		default:
			return unsupportedf("field %q of type %v has children", fl.Name, fl.Type)
		}
		for _, c := range fl.Children {
			if err := walk(c, path); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(fld, nil); err != nil {
		return nil, err
	}
	return d, nil
}

// isFSLLeaf reports whether fl is a fixed-size list stored as one leaf.
func isFSLLeaf(fl *Field) bool {
	_, ok := fl.Type.(*arrow.FixedSizeListType)
	return ok
}

// leafReader yields whole rows of one leaf column.
type leafReader struct {
	f      *File
	info   *leafInfo
	stream *pageStream // nil when the file has no column for the leaf
	page   *leafPage
	pageNo int // index of page within the column
}

func (lr *leafReader) load(ctx context.Context) error {
	idx := lr.stream.next
	p, err := lr.stream.nextPage(ctx)
	if err != nil {
		return err
	}
	if p == nil {
		return lr.f.pageErr(lr.info.col, idx, corruptf("column ends before the file's last row"))
	}
	pg, err := decodePage(lr.info, p.info.enc, p.bufs, p.info.rows, lr.f.version)
	if err != nil {
		return lr.f.pageErr(lr.info.col, idx, err)
	}
	if pg.copied {
		p.recycle()
	}
	lr.page, lr.pageNo = pg, idx
	return nil
}

// next returns the next n rows of the leaf.
func (lr *leafReader) next(ctx context.Context, n int) (leafBatch, error) {
	var first leafBatch
	var parts []leafBatch
	for n > 0 {
		if lr.page == nil || lr.page.rowsLeft() == 0 {
			if err := ctx.Err(); err != nil {
				return leafBatch{}, err
			}
			if err := lr.load(ctx); err != nil {
				return leafBatch{}, err
			}
			continue
		}
		k := min(n, lr.page.rowsLeft())
		b := lr.page.take(k)
		n -= k
		if parts == nil && n == 0 {
			first = b
			break
		}
		parts = append(parts, b)
	}
	if parts != nil {
		b, err := concatBatches(lr.info, parts)
		if err != nil {
			return leafBatch{}, lr.f.pageErr(lr.info.col, lr.pageNo, err)
		}
		first = b
	}
	if err := lr.f.resolveBlobs(ctx, lr.info, &first.vals); err != nil {
		return leafBatch{}, lr.f.pageErr(lr.info.col, lr.pageNo, err)
	}
	return first, nil
}

// skip moves past n rows, dropping whole pages unread.
func (lr *leafReader) skip(ctx context.Context, n int) error {
	for n > 0 {
		if lr.page != nil && lr.page.rowsLeft() > 0 {
			k := min(n, lr.page.rowsLeft())
			lr.page.skip(k)
			n -= k
			continue
		}
		info := lr.stream.peekInfo()
		if info == nil {
			return lr.f.pageErr(lr.info.col, lr.stream.next, corruptf("column ends before the file's last row"))
		}
		if info.rows <= uint64(n) {
			n -= int(info.rows)
			lr.stream.skipPage()
			lr.page = nil
			continue
		}
		if err := lr.load(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pageRows is the rows left in the current page of the leaf, or in the
// next page when it has none; 0 at the end of the column.
func (lr *leafReader) pageRows() int {
	if lr.page != nil && lr.page.rowsLeft() > 0 {
		return lr.page.rowsLeft()
	}
	if info := lr.stream.peekInfo(); info != nil {
		return int(info.rows)
	}
	return 0
}

var _ pageRower = (*decoder21)(nil)

func (d *decoder21) pageRows() int {
	n := 0
	for _, lr := range d.leaves {
		if lr.stream == nil {
			continue
		}
		if k := lr.pageRows(); k > 0 && (n == 0 || k < n) {
			n = k
		}
	}
	return n
}

func (d *decoder21) skip(ctx context.Context, n int) error {
	for _, lr := range d.leaves {
		if lr.stream == nil {
			continue
		}
		if err := lr.skip(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder21) next(ctx context.Context, n int) (arrow.Array, error) {
	batches := make([]*leafBatch, len(d.leaves))
	present := 0
	for i, lr := range d.leaves {
		if lr.stream == nil {
			continue
		}
		b, err := lr.next(ctx, n)
		if err != nil {
			return nil, err
		}
		batches[i] = &b
		present++
	}
	if present == 0 {
		return NullArray(d.fld.Type, n)
	}
	// Fast path: a top-level leaf.
	if len(d.leaves) == 1 && len(d.leaves[0].info.path) == 1 {
		lr, b := d.leaves[0], batches[0]
		valid := bitmapFromDef(b.def, b.constDef, b.nlev)
		data, err := leafData(lr.info, &b.vals, valid)
		if err != nil {
			return nil, d.f.pageErr(lr.info.col, lr.pageNo, err)
		}
		return array.MakeFromData(data), nil
	}
	outs := make([][]layerOut, len(d.leaves))
	for i, b := range batches {
		if b == nil {
			continue
		}
		li := d.leaves[i].info
		def := b.def
		if def == nil && b.constDef != 0 {
			def = make([]uint16, b.nlev)
			for j := range def {
				def[j] = b.constDef
			}
		}
		o, err := li.walkLevels(b.rep, def, b.nlev, b.vals.n)
		if err != nil {
			return nil, d.f.pageErr(li.col, d.leaves[i].pageNo, err)
		}
		outs[i] = o
	}
	data, err := d.build(d.fld, 0, n, batches, outs)
	if err != nil {
		return nil, d.f.pageErr(-1, -1, err)
	}
	return array.MakeFromData(data), nil
}

// build assembles the array of field fl at path position p, with length
// slots.
func (d *decoder21) build(fl *Field, p, length int, batches []*leafBatch, outs [][]layerOut) (arrow.ArrayData, error) {
	rep := -1
	for _, i := range d.under[fl] {
		if batches[i] != nil {
			rep = i
			break
		}
	}
	if rep < 0 {
		return nullData(fl.Type, length)
	}
	lo := &outs[rep][p]
	if lo.valid.n != length {
		return nil, corruptf("field %q: leaf %q gives %d slots, want %d", fl.Name, d.leaves[rep].info.field.Name, lo.valid.n, length)
	}
	var validity *memory.Buffer
	nulls := 0
	if lo.valid.nulls > 0 {
		validity = memory.NewBufferBytes(lo.valid.bits)
		nulls = lo.valid.nulls
	}
	if lr := d.leafOf[fl]; lr != nil {
		var vb []byte
		if validity != nil {
			vb = lo.valid.bits
		}
		b := batches[rep]
		if b.vals.n != length {
			return nil, corruptf("leaf %q has %d values for %d slots", fl.Name, b.vals.n, length)
		}
		return leafData(lr.info, &b.vals, bitmapWith(vb, nulls))
	}
	switch t := fl.Type.(type) {
	case *arrow.StructType:
		children := make([]arrow.ArrayData, len(fl.Children))
		for i, c := range fl.Children {
			cd, err := d.build(c, p+1, length, batches, outs)
			if err != nil {
				return nil, err
			}
			children[i] = cd
		}
		return array.NewData(t, length, []*memory.Buffer{validity}, children, nulls, 0), nil
	case *arrow.ListType, *arrow.LargeListType, *arrow.MapType:
		offs := lo.offs
		if len(offs) != length+1 {
			return nil, corruptf("list %q has %d offsets for %d slots", fl.Name, len(offs), length)
		}
		child, err := d.build(fl.Children[0], p+1, int(offs[length]), batches, outs)
		if err != nil {
			return nil, err
		}
		if _, isMap := t.(*arrow.MapType); isMap {
			// Arrow's map arrays have entries and keys without nulls.
			if child.NullN() != 0 || len(child.Children()) != 2 || child.Children()[0].NullN() != 0 {
				return nil, corruptf("map %q has null entries or keys", fl.Name)
			}
		}
		var ob *memory.Buffer
		if _, large := t.(*arrow.LargeListType); large {
			ob = memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(offs))
		} else {
			o32, err := toInt32Offsets(offs)
			if err != nil {
				return nil, err
			}
			ob = memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(o32))
		}
		return array.NewData(t, length, []*memory.Buffer{validity, ob}, []arrow.ArrayData{child}, nulls, 0), nil
	}
	return nil, unsupportedf("field %q of type %v", fl.Name, fl.Type)
}

// bitmap is a validity bitmap with its null count (bits nil: all valid).
type bitmap struct {
	bits  []byte
	nulls int
}

func bitmapWith(bits []byte, nulls int) bitmap {
	if nulls == 0 {
		return bitmap{}
	}
	return bitmap{bits: bits, nulls: nulls}
}

// bitmapFromDef builds the validity of a top-level leaf: level 0 is valid.
func bitmapFromDef(def []uint16, constDef uint16, n int) bitmap {
	if def == nil {
		if constDef == 0 {
			return bitmap{}
		}
		return bitmap{bits: make([]byte, (n+7)/8), nulls: n}
	}
	bits := make([]byte, (n+7)/8)
	nulls := 0
	i := 0
	for ; i+8 <= n; i += 8 {
		d := def[i : i+8 : i+8]
		var b byte
		for j, v := range d {
			if v == 0 {
				b |= 1 << j
			}
		}
		bits[i/8] = b
		nulls += 8 - popcount8(b)
	}
	for ; i < n; i++ {
		if def[i] == 0 {
			bits[i/8] |= 1 << (i % 8)
		} else {
			nulls++
		}
	}
	if nulls == 0 {
		return bitmap{}
	}
	return bitmap{bits: bits, nulls: nulls}
}

func popcount8(b byte) int {
	n := 0
	for b != 0 {
		b &= b - 1
		n++
	}
	return n
}

// leafData builds the Arrow data of a leaf from its values and validity.
func leafData(li *leafInfo, v *vals, valid bitmap) (arrow.ArrayData, error) {
	if v.constant {
		e, err := v.expand()
		if err != nil {
			return nil, err
		}
		v = &e
	}
	if li.packed != nil && li.packed.blob {
		return blobData(li, v, valid)
	}
	if li.packed != nil {
		return packedData(li, v, valid)
	}
	n := v.n
	var vbuf *memory.Buffer
	if valid.bits != nil {
		vbuf = memory.NewBufferBytes(valid.bits)
	}
	t := li.field.Type
	switch v.kind {
	case kindFixed:
		data := v.data
		if v.zero {
			data = make([]byte, n*v.width)
		}
		if fsl, ok := t.(*arrow.FixedSizeListType); ok {
			m := n * int(fsl.Len())
			var ib *memory.Buffer
			inulls := 0
			if v.items != nil && !v.zero {
				bits := make([]byte, (m+7)/8)
				bitutil.CopyBitmap(v.items, v.ioff, m, bits, 0)
				if inulls = m - bitutil.CountSetBits(bits, 0, m); inulls > 0 {
					ib = memory.NewBufferBytes(bits)
				}
			}
			child := array.NewData(fsl.Elem(), m, []*memory.Buffer{ib, memory.NewBufferBytes(data)}, nil, inulls, 0)
			return array.NewData(t, n, []*memory.Buffer{vbuf}, []arrow.ArrayData{child}, valid.nulls, 0), nil
		}
		return array.NewData(t, n, []*memory.Buffer{vbuf, memory.NewBufferBytes(data)}, nil, valid.nulls, 0), nil
	case kindBool:
		data := v.data
		if v.zero {
			data = make([]byte, (n+7)/8)
		} else if v.boff != 0 {
			b := newValBuilder(kindBool, 0, n)
			b.appendBits(v.data, v.boff, n)
			data = b.data
		}
		return array.NewData(t, n, []*memory.Buffer{vbuf, memory.NewBufferBytes(data)}, nil, valid.nulls, 0), nil
	case kindVar:
		offs := v.offs
		var data []byte
		if v.zero {
			offs = make([]int64, n+1)
		} else {
			data = v.data[offs[0]:offs[n]]
		}
		if isUTF8Type(t) && !v.zero {
			if err := checkUTF8(offs[:n+1], offs[0], data); err != nil {
				return nil, err
			}
		}
		var ob *memory.Buffer
		switch t.ID() {
		case arrow.LARGE_STRING, arrow.LARGE_BINARY:
			o := make([]int64, n+1)
			for i := range o {
				o[i] = offs[i] - offs[0]
			}
			ob = memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(o))
		default:
			o, err := toInt32Offsets(offs)
			if err != nil {
				return nil, err
			}
			ob = memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(o))
		}
		return array.NewData(t, n, []*memory.Buffer{vbuf, ob, memory.NewBufferBytes(data)}, nil, valid.nulls, 0), nil
	}
	return nil, unsupportedf("values of kind %v", v.kind)
}
