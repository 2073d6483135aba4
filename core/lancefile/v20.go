package lancefile

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
)

// Field decoders for Lance 2.0 files.
//
// In a 2.0 file every field owns a column, in pre-order: a list field's
// column holds its offsets and its item field's column(s) follow; a struct
// field's column is a header (encoding SimpleStruct, no buffers) followed by
// its members' columns. Structs have no validity in 2.0.
//
// Columns page independently. A list page stores, per row, the END offset of
// its items relative to the page (no leading 0); a null list stores
// end + null_offset_adjustment. The items of list page p start in the item
// column at Σ num_items of the list pages before it, so whole list pages can
// be skipped without reading them.
//
//	list column  | page 0: 3 rows, num_items 5 | page 1: 2 rows, num_items 4 |
//	item column  | page 0: 6 rows       | page 1: 3 rows  |
//	               items 0..4 → list page 0, items 5..8 → list page 1
//
// Field decoders are not safe for concurrent use; the Reader runs each one
// from a single goroutine at a time.

// newDecoder20 returns the decoder of one top-level field of a 2.0 file.
func newDecoder20(f *File, fld *Field, columnOf map[int32]int, opts ReadOptions) (fieldDecoder, error) {
	return buildDecoder20(f, fld, columnOf, opts, false)
}

// buildDecoder20 builds the decoder of fld. nested is true under a list,
// where row counts come from the file rather than from the caller, so rows
// that no buffer backs are materialized only up to maxUnbacked20 at a time.
func buildDecoder20(f *File, fld *Field, columnOf map[int32]int, opts ReadOptions, nested bool) (fieldDecoder, error) {
	if fld.Err != nil {
		return nil, fld.Err
	}
	if fld.Type == nil {
		return nil, fmt.Errorf("%w: column %q", ErrUnsupportedType, fld.Name)
	}
	col, ok := columnOf[fld.ID]
	if ok && (col < 0 || col >= len(f.columns)) {
		return nil, f.corruptf(-1, "field %q maps to column %d of %d", fld.Name, col, len(f.columns))
	}
	switch fld.Type.ID() {
	case arrow.STRUCT:
		// The header column carries nothing; members decode on their own,
		// and a member missing from this file reads as nulls. A struct
		// this file knows nothing of (added later) is null as a whole.
		stored := false
		fld.Walk(func(c *Field) {
			if _, in := columnOf[c.ID]; in {
				stored = true
			}
		})
		if !stored {
			return &nullDecoder20{dt: fld.Type, nested: nested}, nil
		}
		if ok {
			// Lance packs a struct into its own column (PackedStruct) when
			// the field's metadata asks for it; kv0 does not read those.
			for pi, p := range f.columns[col].pages {
				if p.rows == 0 {
					continue
				}
				ae, err := arrayEncoding20(p.enc)
				if err != nil {
					return nil, f.pageErr(col, pi, err)
				}
				if _, simple := ae.GetArrayEncoding().(*enc20pb.ArrayEncoding_Struct); !simple {
					return nil, f.pageErr(col, pi, fmt.Errorf("%w: struct %q stored as %T", ErrUnsupportedEncoding, fld.Name, ae.GetArrayEncoding()))
				}
				break
			}
		}
		d := &structDecoder20{dt: fld.Type}
		for _, c := range fld.Children {
			cd, err := buildDecoder20(f, c, columnOf, opts, nested)
			if err != nil {
				return nil, err
			}
			d.children = append(d.children, cd)
		}
		return d, nil
	case arrow.LIST, arrow.LARGE_LIST:
		if !ok {
			return &nullDecoder20{dt: fld.Type, nested: nested}, nil
		}
		if len(fld.Children) != 1 {
			return nil, fmt.Errorf("%w: list %q without one item field", ErrUnsupportedType, fld.Name)
		}
		items, err := buildDecoder20(f, fld.Children[0], columnOf, opts, true)
		if err != nil {
			return nil, err
		}
		return &listDecoder20{col: newColumn20(f, col, opts), dt: fld.Type, items: items}, nil
	}
	if !ok {
		return &nullDecoder20{dt: fld.Type, nested: nested}, nil
	}
	if fixedBits20(fld.Type) == 0 && !isBinaryLike20(fld.Type) && fld.Type.ID() != arrow.FIXED_SIZE_LIST {
		return nil, fmt.Errorf("%w: column %q of type %v", ErrUnsupportedType, fld.Name, fld.Type)
	}
	return &leafDecoder20{col: newColumn20(f, col, opts), dt: fld.Type, nested: nested}, nil
}

// nullDecoder20 reads a field this file does not store: all nulls.
type nullDecoder20 struct {
	dt     arrow.DataType
	nested bool
}

func (d *nullDecoder20) next(ctx context.Context, n int) (arrow.Array, error) {
	return makeNulls20(d.dt, n, d.nested)
}

func (d *nullDecoder20) skip(ctx context.Context, n int) error { return nil }

// structDecoder20 zips its members' arrays; 2.0 structs are never null.
type structDecoder20 struct {
	dt       arrow.DataType
	children []fieldDecoder
}

func (d *structDecoder20) next(ctx context.Context, n int) (arrow.Array, error) {
	kids := make([]arrow.ArrayData, len(d.children))
	for i, c := range d.children {
		a, err := c.next(ctx, n)
		if err != nil {
			return nil, err
		}
		if a.Len() != n {
			return nil, fmt.Errorf("%w: struct member decoded %d rows, want %d", ErrCorrupt, a.Len(), n)
		}
		kids[i] = a.Data()
		defer a.Release()
	}
	data := array.NewData(d.dt, n, []*memory.Buffer{nil}, kids, 0, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

func (d *structDecoder20) skip(ctx context.Context, n int) error {
	for _, c := range d.children {
		if err := c.skip(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// column20 walks the pages of one column, skipping empty pages, and resolves
// the column and file buffers its pages refer to.
type column20 struct {
	f      *File
	col    int
	stream *pageStream
	page   int // index of the page last returned or skipped

	colBufs  [][]byte
	fileBufs map[uint32][]byte
}

func newColumn20(f *File, col int, opts ReadOptions) *column20 {
	return &column20{f: f, col: col, stream: f.pageStream(col, 0, opts), page: -1}
}

// peek returns the next non-empty page's metadata without reading it, or
// nil at the end of the column.
func (c *column20) peek() *pageInfo {
	for {
		info := c.stream.peekInfo()
		if info == nil || info.rows > 0 {
			return info
		}
		c.skipPage()
	}
}

func (c *column20) skipPage() {
	c.stream.skipPage()
	c.page++
}

// nextPage reads the next non-empty page, or returns nil at the end.
func (c *column20) nextPage(ctx context.Context) (*page, error) {
	if c.peek() == nil {
		return nil, nil
	}
	p, err := c.stream.nextPage(ctx)
	c.page++
	if err != nil {
		return nil, c.f.pageErr(c.col, c.page, err)
	}
	return p, nil
}

func (c *column20) errf(format string, args ...any) error {
	return c.f.pageErr(c.col, c.page, fmt.Errorf(format, args...))
}

// resolver returns the buffer resolver for a page.
func (c *column20) resolver(ctx context.Context, p *page) bufResolver20 {
	return &colResolver20{ctx: ctx, c: c, p: p}
}

type colResolver20 struct {
	ctx context.Context
	c   *column20
	p   *page
}

func (r *colResolver20) buffer(b *enc20pb.Buffer) ([]byte, error) {
	c := r.c
	switch b.GetBufferType() {
	case enc20pb.Buffer_page:
		return pageBufs20(r.p.bufs).buffer(b)
	case enc20pb.Buffer_column:
		if c.colBufs == nil {
			ranges := c.f.columns[c.col].bufs
			bufs := make([][]byte, len(ranges))
			if err := c.f.readRanges(r.ctx, ranges, bufs); err != nil {
				return nil, err
			}
			c.colBufs = bufs
		}
		if i := int(b.GetBufferIndex()); i < len(c.colBufs) {
			return c.colBufs[i], nil
		}
		return nil, fmt.Errorf("column buffer %d of %d", b.GetBufferIndex(), len(c.colBufs))
	case enc20pb.Buffer_file:
		i := b.GetBufferIndex()
		if int(i) >= len(c.f.global) {
			return nil, fmt.Errorf("file buffer %d of %d", i, len(c.f.global))
		}
		if buf, ok := c.fileBufs[i]; ok {
			return buf, nil
		}
		out := make([][]byte, 1)
		if err := c.f.readRanges(r.ctx, c.f.global[i:i+1], out); err != nil {
			return nil, err
		}
		if c.fileBufs == nil {
			c.fileBufs = make(map[uint32][]byte)
		}
		c.fileBufs[i] = out[0]
		return out[0], nil
	}
	return nil, fmt.Errorf("%w: buffer type %v", ErrUnsupportedEncoding, b.GetBufferType())
}

// leafDecoder20 reads a field stored in one column: primitives, strings,
// binaries and fixed-size lists.
type leafDecoder20 struct {
	col    *column20
	dt     arrow.DataType
	nested bool    // under a list: see buildDecoder20
	cur    chunk20 // the current page's rows, nil before the next page
	pos    int     // rows of cur already consumed
}

// chunk20 is one decoded page of a leaf column.
type chunk20 interface {
	len() int
	slice(i, j int) (arrow.Array, error)
}

type arrayChunk20 struct{ arr arrow.Array }

func (c arrayChunk20) len() int { return c.arr.Len() }
func (c arrayChunk20) slice(i, j int) (arrow.Array, error) {
	return array.NewSlice(c.arr, int64(i), int64(j)), nil
}

// nullChunk20 is an all-null page, materialized only as far as it is read.
type nullChunk20 struct {
	dt     arrow.DataType
	n      int
	capped bool
}

func (c nullChunk20) len() int { return c.n }
func (c nullChunk20) slice(i, j int) (arrow.Array, error) {
	return makeNulls20(c.dt, j-i, c.capped)
}

// decodeLeafPage20 decodes the n rows of a leaf page.
// Within a list (nested), an all-null page materializes at most
// maxUnbacked20 rows per read.
func decodeLeafPage20(res bufResolver20, enc *enc20pb.ArrayEncoding, n uint64, dt arrow.DataType, nested bool) (chunk20, error) {
	if n > math.MaxInt32*8 {
		return nil, fmt.Errorf("page of %d rows", n)
	}
	if nn, ok := enc.GetArrayEncoding().(*enc20pb.ArrayEncoding_Nullable); ok {
		if _, ok := nn.Nullable.GetNullability().(*enc20pb.Nullable_AllNulls); ok {
			return nullChunk20{dt: dt, n: int(n), capped: nested}, nil
		}
	}
	if de, ok := enc.GetArrayEncoding().(*enc20pb.ArrayEncoding_Dictionary); ok {
		return (&decoder20{res: res}).dictionaryPage(de.Dictionary, int(n), dt)
	}
	if _, ok := enc.GetArrayEncoding().(*enc20pb.ArrayEncoding_List); ok {
		return nil, fmt.Errorf("%w: %v stored as a list of bytes (early 2.0 layout)", ErrUnsupportedEncoding, dt)
	}
	arr, err := (&decoder20{res: res}).decode(enc, int(n), dt)
	if err != nil {
		return nil, err
	}
	if arr.Len() != int(n) {
		return nil, fmt.Errorf("page decoded %d rows, want %d", arr.Len(), n)
	}
	return arrayChunk20{arr}, nil
}

func (d *leafDecoder20) load(ctx context.Context) error {
	p, err := d.col.nextPage(ctx)
	if err != nil {
		return err
	}
	if p == nil {
		return d.col.errf("column ends before the rows asked for")
	}
	ae, err := arrayEncoding20(p.info.enc)
	if err != nil {
		return d.col.f.pageErr(d.col.col, d.col.page, err)
	}
	c, err := decodeLeafPage20(d.col.resolver(ctx, p), ae, p.info.rows, d.dt, d.nested)
	if err != nil {
		return d.col.f.pageErr(d.col.col, d.col.page, err)
	}
	d.cur, d.pos = c, 0
	return nil
}

func (d *leafDecoder20) next(ctx context.Context, n int) (arrow.Array, error) {
	var parts []arrow.Array
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for left := n; left > 0; {
		if d.cur == nil {
			if err := d.load(ctx); err != nil {
				return nil, err
			}
		}
		k := min(left, d.cur.len()-d.pos)
		a, err := d.cur.slice(d.pos, d.pos+k)
		if err != nil {
			return nil, d.col.f.pageErr(d.col.col, d.col.page, err)
		}
		parts = append(parts, a)
		d.pos += k
		left -= k
		if d.pos == d.cur.len() {
			d.cur = nil
		}
	}
	return concat20(d.dt, parts)
}

// concat20 joins parts into one array (zero-copy when there is one part).
func concat20(dt arrow.DataType, parts []arrow.Array) (arrow.Array, error) {
	switch len(parts) {
	case 0:
		return NullArray(dt, 0)
	case 1:
		parts[0].Retain()
		return parts[0], nil
	}
	out, err := Concat(parts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return out, nil
}

func (d *leafDecoder20) skip(ctx context.Context, n int) error {
	for left := uint64(n); left > 0; {
		if d.cur == nil {
			info := d.col.peek()
			if info == nil {
				return d.col.errf("column ends before the rows skipped")
			}
			if info.rows <= left {
				d.col.skipPage()
				left -= info.rows
				continue
			}
			if err := d.load(ctx); err != nil {
				return err
			}
		}
		k := min(left, uint64(d.cur.len()-d.pos))
		d.pos += int(k)
		left -= k
		if d.pos == d.cur.len() {
			d.cur = nil
		}
	}
	return nil
}

// listDecoder20 reads a list field: offsets from its own column, items
// from the item field's decoder.
type listDecoder20 struct {
	col   *column20
	dt    arrow.DataType
	items fieldDecoder

	cur     *listPage20 // nil before the next page
	pos     int         // rows of cur consumed
	base    uint64      // item index where the next unread page's items start
	itemPos uint64      // items consumed from the item decoder so far
}

// listPage20 is one decoded page of a list column.
type listPage20 struct {
	offs  []uint64 // n+1 item offsets relative to base, offs[0] = 0
	valid []byte   // nil when no list is null
	base  uint64   // index of the page's first item in the item column
}

// listEncoding20 returns the List message of a list page's encoding.
func listEncoding20(enc []byte) (*enc20pb.List, error) {
	ae, err := arrayEncoding20(enc)
	if err != nil {
		return nil, err
	}
	l, ok := ae.GetArrayEncoding().(*enc20pb.ArrayEncoding_List)
	if !ok {
		return nil, fmt.Errorf("%w: list column page encoded as %T", ErrUnsupportedEncoding, ae.GetArrayEncoding())
	}
	return l.List, nil
}

// decodeListPage20 decodes the offsets of an n-row list page.
func decodeListPage20(res bufResolver20, l *enc20pb.List, n uint64) (offs []uint64, valid []byte, err error) {
	if n > math.MaxInt32*8 {
		return nil, nil, fmt.Errorf("page of %d rows", n)
	}
	ends, err := (&decoder20{res: res}).uints(l.GetOffsets(), int(n))
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets: %w", err)
	}
	offs, valid, err = endOffsets20(ends, l.GetNullOffsetAdjustment(), l.GetNumItems())
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets: %w", err)
	}
	return offs, valid, nil
}

func (d *listDecoder20) load(ctx context.Context) error {
	p, err := d.col.nextPage(ctx)
	if err != nil {
		return err
	}
	if p == nil {
		return d.col.errf("column ends before the rows asked for")
	}
	l, err := listEncoding20(p.info.enc)
	if err != nil {
		return d.col.f.pageErr(d.col.col, d.col.page, err)
	}
	offs, valid, err := decodeListPage20(d.col.resolver(ctx, p), l, p.info.rows)
	if err != nil {
		return d.col.f.pageErr(d.col.col, d.col.page, err)
	}
	d.cur, d.pos = &listPage20{offs: offs, valid: valid, base: d.base}, 0
	if d.base+l.GetNumItems() < d.base {
		return d.col.errf("item count overflows")
	}
	d.base += l.GetNumItems()
	return nil
}

func (d *listDecoder20) next(ctx context.Context, n int) (arrow.Array, error) {
	large := d.dt.ID() == arrow.LARGE_LIST
	limit := uint64(math.MaxInt32)
	if large {
		limit = 1 << 40
	}
	offs := make([]uint64, n+1)
	var valid []byte
	var items []arrow.Array
	defer func() {
		for _, a := range items {
			a.Release()
		}
	}()
	for row := 0; row < n; {
		if d.cur == nil {
			if err := d.load(ctx); err != nil {
				return nil, err
			}
		}
		pg := d.cur
		k := min(n-row, len(pg.offs)-1-d.pos)
		start, end := pg.base+pg.offs[d.pos], pg.base+pg.offs[d.pos+k]
		if start < d.itemPos {
			return nil, d.col.errf("list items overlap (item %d already read, page wants %d)", d.itemPos, start)
		}
		if start > d.itemPos {
			if err := d.items.skip(ctx, int(min(start-d.itemPos, math.MaxInt))); err != nil {
				return nil, err
			}
			d.itemPos = start
		}
		if cnt := end - start; cnt > 0 {
			if offs[row]+cnt > limit {
				return nil, d.col.errf("%d list items in one batch", offs[row]+cnt)
			}
			a, err := d.items.next(ctx, int(cnt))
			if err != nil {
				return nil, err
			}
			items = append(items, a)
			if a.Len() != int(cnt) {
				return nil, d.col.errf("list items decoded %d rows, want %d", a.Len(), cnt)
			}
			d.itemPos = end
		}
		for j := range k {
			offs[row+j+1] = offs[row] + pg.offs[d.pos+j+1] - pg.offs[d.pos]
		}
		if pg.valid != nil {
			if valid == nil {
				valid = make([]byte, (n+7)/8)
				bitutil.SetBitsTo(valid, 0, int64(row), true)
			}
			bitutil.CopyBitmap(pg.valid, d.pos, k, valid, row)
		} else if valid != nil {
			bitutil.SetBitsTo(valid, int64(row), int64(k), true)
		}
		row += k
		d.pos += k
		if d.pos == len(pg.offs)-1 {
			d.cur = nil
		}
	}
	var itemType arrow.DataType
	if large {
		itemType = d.dt.(*arrow.LargeListType).Elem()
	} else {
		itemType = d.dt.(*arrow.ListType).Elem()
	}
	child, err := concat20(itemType, items)
	if err != nil {
		return nil, err
	}
	defer child.Release()
	var ob []byte
	if large {
		o := make([]int64, n+1)
		for i, v := range offs {
			o[i] = int64(v)
		}
		ob = arrow.Int64Traits.CastToBytes(o)
	} else {
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
	data := array.NewData(d.dt, n, []*memory.Buffer{vb, memory.NewBufferBytes(ob)}, []arrow.ArrayData{child.Data()}, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// skip moves past n lists. Whole pages are skipped without reading them;
// the item decoder catches up lazily on the next read.
func (d *listDecoder20) skip(ctx context.Context, n int) error {
	for left := uint64(n); left > 0; {
		if d.cur == nil {
			info := d.col.peek()
			if info == nil {
				return d.col.errf("column ends before the rows skipped")
			}
			if info.rows <= left {
				l, err := listEncoding20(info.enc)
				if err != nil {
					return d.col.f.pageErr(d.col.col, d.col.page+1, err)
				}
				if d.base+l.GetNumItems() < d.base {
					return d.col.errf("item count overflows")
				}
				d.base += l.GetNumItems()
				d.col.skipPage()
				left -= info.rows
				continue
			}
			if err := d.load(ctx); err != nil {
				return err
			}
		}
		k := min(left, uint64(len(d.cur.offs)-1-d.pos))
		d.pos += int(k)
		left -= k
		if d.pos == len(d.cur.offs)-1 {
			d.cur = nil
		}
	}
	return nil
}
