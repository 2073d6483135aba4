package lancefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
)

// WriterOptions tune a Writer. The zero value picks the defaults.
type WriterOptions struct {
	// MaxPageBytes closes a column's page once its buffered values and
	// levels reach this many bytes (default 1 MiB).
	MaxPageBytes int
	// MaxPageRows closes a column's page at this many rows (default 128Ki).
	MaxPageRows int
	// Version is the file format: V2_1 or V2_2. The zero value writes
	// V2_2, what current Lance writes; lance 8 and older read only V2_1.
	Version Version
}

// Default page bounds.
const (
	DefaultMaxPageBytes = 1 << 20
	DefaultMaxPageRows  = 128 << 10
)

// parallelRows is the batch size from which Write encodes columns
// concurrently.
const parallelRows = 16 << 10

// Writer builds one Lance data file in format 2.1 or 2.2 in memory. Each leaf field
// becomes one column; pages are encoded as rows arrive, so memory holds the
// encoded file plus at most one open page per column. A Writer is not safe
// for concurrent use.
//
// The file it produces:
//
//	+---------------------------+ 0
//	| page buffers              |  each padded with 0x48 to 64 bytes
//	| far global buffers        |  AddFarGlobalBuffer, if any
//	+---------------------------+
//	| extra global buffers      |  AddGlobalBuffer, if any
//	| FileDescriptor            |  global buffer 0: schema and row count
//	+---------------------------+
//	| ColumnMetadata × columns  |
//	| CMO table, GBO table      |
//	| 40-byte footer, 2.1 / 2.2 |
//	+---------------------------+
type Writer struct {
	schema *Schema
	opts   WriterOptions
	cols   []*leafCol
	byTop  [][]*leafCol // leaf columns of each top-level field
	rows   uint64
	segs   [][]byte // page buffers placed so far, with their padding
	size   int      // bytes placed so far (segs and those taken)
	taken  int      // bytes handed out by TakePlaced
	extra  [][]byte // global buffers 1, 2, ... (AddGlobalBuffer, AddFarGlobalBuffer)
	far    []bool   // which of extra go after the pages instead of the metadata
	done   bool
}

// AddGlobalBuffer stores b in the file as global buffer 1 + the number of
// buffers added before, placed in the metadata region just before the
// FileDescriptor, so a reader's tail read usually covers it. Lance readers
// ignore global buffers other than 0; kv0 uses them for per-file indexes.
// It returns the buffer's index. b must not be modified until Finish.
func (w *Writer) AddGlobalBuffer(b []byte) int {
	w.extra = append(w.extra, b)
	w.far = append(w.far, false)
	return len(w.extra)
}

// AddFarGlobalBuffer is AddGlobalBuffer for a buffer that a reader fetches
// in parts, on demand: it is placed right after the page buffers, so that
// however large it is, the metadata and the buffers of AddGlobalBuffer stay
// within a reader's tail read.
func (w *Writer) AddFarGlobalBuffer(b []byte) int {
	w.extra = append(w.extra, b)
	w.far = append(w.far, true)
	return len(w.extra)
}

// NewWriter returns a Writer for schema, whose fields carry their dataset
// field ids. A field of a type the writer cannot store fails with
// ErrUnsupportedType naming the column.
func NewWriter(schema *Schema, opts WriterOptions) (*Writer, error) {
	if opts.MaxPageBytes <= 0 {
		opts.MaxPageBytes = DefaultMaxPageBytes
	}
	if opts.MaxPageRows <= 0 {
		opts.MaxPageRows = DefaultMaxPageRows
	}
	switch opts.Version {
	case Version{}:
		opts.Version = V2_2
	case V2_1, V2_2:
	default:
		return nil, fmt.Errorf("%w: kv0 writes data files of format 2.1 or 2.2, not %s", ErrUnsupportedVersion, opts.Version)
	}
	w := &Writer{schema: schema, opts: opts, byTop: make([][]*leafCol, len(schema.Fields))}
	for i, f := range schema.Fields {
		if err := w.addLeaves(i, f, nil); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *Writer) addLeaves(top int, f *Field, path []pathNode) error {
	if f.Err != nil {
		return f.Err
	}
	if f.Type == nil {
		return fmt.Errorf("%w: column %q has no type", ErrUnsupportedType, f.Name)
	}
	switch t := f.Type.(type) {
	case *arrow.StructType:
		if len(f.Children) != t.NumFields() || len(f.Children) == 0 {
			return fmt.Errorf("%w: struct column %q: %d schema members for %d Arrow members", ErrUnsupportedType, f.Name, len(f.Children), t.NumFields())
		}
		for i, c := range f.Children {
			p := append(append([]pathNode(nil), path...), pathNode{kind: nodeItem, child: i})
			if err := w.addLeaves(top, c, p); err != nil {
				return err
			}
		}
		return nil
	case *arrow.ListType, *arrow.LargeListType:
		if len(f.Children) != 1 {
			return fmt.Errorf("%w: list column %q needs one item field", ErrUnsupportedType, f.Name)
		}
		k := nodeList
		if _, ok := t.(*arrow.LargeListType); ok {
			k = nodeLargeList
		}
		p := append(append([]pathNode(nil), path...), pathNode{kind: k})
		return w.addLeaves(top, f.Children[0], p)
	}
	if len(f.Children) > 0 {
		return fmt.Errorf("%w: column %q of type %s has children", ErrUnsupportedType, f.Name, f.Type)
	}
	p := append(append([]pathNode(nil), path...), pathNode{kind: nodeItem})
	c, err := newLeafCol(top, p, f)
	if err != nil {
		return err
	}
	c.v22 = w.opts.Version == V2_2
	w.cols = append(w.cols, c)
	w.byTop[top] = append(w.byTop[top], c)
	return nil
}

// Write adds the rows of rec. Its columns match the schema's top-level
// fields by position and must have the same Arrow types. Write copies what
// it needs; rec may be released afterwards.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.done {
		return errors.New("lancefile: Write after Finish")
	}
	if int(rec.NumCols()) != len(w.schema.Fields) {
		return fmt.Errorf("lancefile: record has %d columns, schema has %d fields", rec.NumCols(), len(w.schema.Fields))
	}
	for i, f := range w.schema.Fields {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
			return fmt.Errorf("lancefile: column %q: record type %s, schema type %s", f.Name, rec.Column(i).DataType(), f.Type)
		}
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	for i, f := range w.schema.Fields {
		if err := validateUTF8(f.Name, rec.Column(i)); err != nil {
			return err
		}
	}
	errs := make([]error, len(w.cols))
	run := func(i int) {
		c := w.cols[i]
		errs[i] = c.add(rec.Column(c.top), 0, n, &w.opts)
		c.ownValues()
	}
	w.parallel(n, run)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.rows += uint64(n)
	w.placePending()
	return nil
}

// BreakPages closes every column's open page, so that the next row written
// starts a new page in every column. A reader of rows that begin and end at
// page breaks decodes (and fetches) nothing else. Pages cost metadata, so
// break only around rows that are read on their own.
func (w *Writer) BreakPages() error {
	if w.done {
		return errors.New("lancefile: BreakPages after Finish")
	}
	errs := make([]error, len(w.cols))
	w.parallel(parallelRows, func(i int) {
		if w.cols[i].rows > 0 {
			errs[i] = w.cols[i].flush()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.placePending()
	return nil
}

// parallel runs fn for every column, concurrently for large batches.
func (w *Writer) parallel(rows int, fn func(i int)) {
	if rows < parallelRows || len(w.cols) == 1 {
		for i := range w.cols {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for i := range w.cols {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

// placePending appends the pages encoded since the last call to the file,
// column by column, so the output does not depend on goroutine timing.
func (w *Writer) placePending() {
	for _, c := range w.cols {
		for _, p := range c.pending {
			ep := encodedPage{rows: p.rows, firstRow: p.firstRow, layout: p.layout}
			for _, b := range p.bufs {
				ep.offs = append(ep.offs, uint64(w.size))
				ep.sizes = append(ep.sizes, uint64(len(b)))
				if len(b) > 0 {
					w.segs = append(w.segs, b)
					w.size += len(b)
				}
				if pad := -w.size & 63; pad > 0 {
					w.segs = append(w.segs, padding[:pad])
					w.size += pad
				}
			}
			c.pages = append(c.pages, ep)
		}
		clear(c.pending)
		c.pending = c.pending[:0]
	}
}

var padding = bytes.Repeat([]byte{0x48}, 64)

// padBuffer pads b with 0x48 to a multiple of 64 bytes, as Lance does.
func padBuffer(b []byte) []byte {
	for len(b)%64 != 0 {
		b = append(b, 0x48)
	}
	return b
}

// TakePlaced returns the bytes of the file placed since the start or the
// previous call (whole page buffers with their padding, in file order) and
// forgets them: a caller that writes them out at once keeps no more than
// the open pages in memory. FinishParts then returns only the rest of the
// file. The slices are not modified afterwards.
func (w *Writer) TakePlaced() [][]byte {
	parts := w.segs
	w.segs, w.taken = nil, w.size
	return parts
}

// Placed returns how many bytes of pages are placed and not yet taken.
func (w *Writer) Placed() int { return w.size - w.taken }

// Version returns the format of the file being written.
func (w *Writer) Version() Version { return w.opts.Version }

// Rows returns the number of rows written so far.
func (w *Writer) Rows() uint64 { return w.rows }

// EstimatedSize returns about how many bytes Finish would return now: the
// pages encoded so far, the open pages at their unencoded size, and the
// metadata. Use it to roll over to a new file at a size bound.
func (w *Writer) EstimatedSize() int64 {
	n := int64(w.size) + 1024
	for _, c := range w.cols {
		n += int64(c.pageBytes()) + 64*int64(len(c.pages)+1)
	}
	return n
}

// FieldIDs returns the ids of the fields that own columns (the leaves, in
// schema pre-order): what a manifest's DataFile lists as fields.
func (w *Writer) FieldIDs() []int32 {
	ids := make([]int32, len(w.cols))
	for i, c := range w.cols {
		ids[i] = c.field.ID
	}
	return ids
}

// ColumnIndices returns the column index of each of FieldIDs: 0..n-1.
func (w *Writer) ColumnIndices() []int32 {
	idx := make([]int32, len(w.cols))
	for i := range idx {
		idx[i] = int32(i)
	}
	return idx
}

// Finish flushes the open pages and returns the complete file (after
// TakePlaced, the rest of it). The Writer cannot be used afterwards.
func (w *Writer) Finish() ([]byte, error) {
	parts, size, err := w.FinishParts()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, size)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// FinishParts is Finish without joining the file: the file is the
// concatenation of what TakePlaced returned and parts (the page buffers,
// then the metadata), size bytes in all. The parts are the Writer's own memory (and the buffers given to AddFarGlobalBuffer), never the caller's Arrow
// buffers, and are not modified afterwards. The Writer cannot be used
// afterwards.
func (w *Writer) FinishParts() (parts [][]byte, size int64, err error) {
	if w.done {
		return nil, 0, errors.New("lancefile: Finish called twice")
	}
	w.done = true
	errs := make([]error, len(w.cols))
	w.parallel(int(min(w.rows, 1<<30)), func(i int) {
		if w.cols[i].rows > 0 {
			errs[i] = w.cols[i].flush()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	w.placePending()

	// Global buffer 0: the FileDescriptor.
	fd, err := (&filepb.FileDescriptor{Schema: schemaProto(w.schema), Length: w.rows}).MarshalVT()
	if err != nil {
		return nil, 0, err
	}
	metaSize := len(fd) + 64 + 40 + 32*len(w.cols) + 16*len(w.extra)
	for i, b := range w.extra {
		if !w.far[i] {
			metaSize += len(b) + 64
		}
	}
	for _, c := range w.cols {
		metaSize += 64 + 128*len(c.pages)
	}
	// The metadata follows the page buffers, 64-byte aligned (placePending
	// pads each buffer); its positions are relative to the file.
	pad64 := func() {
		if pad := -w.size & 63; pad > 0 {
			w.segs = append(w.segs, padding[:pad])
			w.size += pad
		}
	}
	pad64()
	type span struct{ pos, size uint64 }
	extra := make([]span, len(w.extra))
	for i, b := range w.extra {
		if w.far[i] && len(b) > 0 {
			extra[i] = span{uint64(w.size), uint64(len(b))}
			w.segs = append(w.segs, b)
			w.size += len(b)
			pad64()
		} else if w.far[i] {
			extra[i] = span{uint64(w.size), 0}
		}
	}
	base := uint64(w.size)
	out := make([]byte, 0, metaSize)
	// Extra global buffers first, so that a large one does not push the
	// FileDescriptor out of a reader's tail read.
	for i, b := range w.extra {
		if w.far[i] {
			continue
		}
		extra[i] = span{base + uint64(len(out)), uint64(len(b))}
		out = append(out, b...)
		out = padBuffer(out)
	}
	gboPos := base + uint64(len(out))
	out = append(out, fd...)
	out = padBuffer(out)

	colEnc, err := marshalAny("/lance.encodings.ColumnEncoding", &enc20pb.ColumnEncoding{
		ColumnEncoding: &enc20pb.ColumnEncoding_Values{Values: &wktpb.Empty{}}})
	if err != nil {
		return nil, 0, err
	}
	colMetaStart := base + uint64(len(out))
	cmo := make([]span, len(w.cols))
	for i, c := range w.cols {
		cm := &file2pb.ColumnMetadata{Encoding: &file2pb.Encoding{Location: &file2pb.Encoding_Direct{
			Direct: &file2pb.DirectEncoding{Encoding: colEnc}}}}
		for _, p := range c.pages {
			cm.Pages = append(cm.Pages, &file2pb.ColumnMetadata_Page{
				BufferOffsets: p.offs,
				BufferSizes:   p.sizes,
				Length:        p.rows,
				Priority:      p.firstRow,
				Encoding: &file2pb.Encoding{Location: &file2pb.Encoding_Direct{
					Direct: &file2pb.DirectEncoding{Encoding: p.layout}}},
			})
		}
		b, err := cm.MarshalVT()
		if err != nil {
			return nil, 0, err
		}
		cmo[i] = span{base + uint64(len(out)), uint64(len(b))}
		out = append(out, b...)
	}
	cmoStart := base + uint64(len(out))
	for _, s := range cmo {
		out = binary.LittleEndian.AppendUint64(out, s.pos)
		out = binary.LittleEndian.AppendUint64(out, s.size)
	}
	gboStart := base + uint64(len(out))
	out = binary.LittleEndian.AppendUint64(out, gboPos)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(fd)))
	for _, e := range extra {
		out = binary.LittleEndian.AppendUint64(out, e.pos)
		out = binary.LittleEndian.AppendUint64(out, e.size)
	}
	out = binary.LittleEndian.AppendUint64(out, colMetaStart)
	out = binary.LittleEndian.AppendUint64(out, cmoStart)
	out = binary.LittleEndian.AppendUint64(out, gboStart)
	out = binary.LittleEndian.AppendUint32(out, uint32(1+len(w.extra)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(w.cols)))
	out = binary.LittleEndian.AppendUint16(out, uint16(w.opts.Version.Major))
	out = binary.LittleEndian.AppendUint16(out, uint16(w.opts.Version.Minor))
	out = append(out, magic...)
	parts = append(w.segs, out)
	w.segs = nil
	return parts, int64(base) + int64(len(out)), nil
}

// pendingPage is an encoded page waiting to be placed in the file.
type pendingPage struct {
	bufs     [][]byte
	rows     uint64
	firstRow uint64
	layout   []byte
}

// add shreds rows [lo, hi) of the top-level array a, closing pages as they
// fill.
func (c *leafCol) add(a arrow.Array, lo, hi int, o *WriterOptions) error {
	for lo < hi {
		step := c.stepRows(a, lo, hi, o)
		c.addRows(a, lo, lo+step)
		lo += step
		if c.full(o) {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// stepRows returns how many rows to add before checking the page bounds.
func (c *leafCol) stepRows(a arrow.Array, lo, hi int, o *WriterOptions) int {
	n := min(hi-lo, o.MaxPageRows-c.rows)
	if c.maxRep > 0 {
		return max(1, min(n, 64))
	}
	budget := o.MaxPageBytes - c.pageBytes()
	switch {
	case len(c.path) > 1:
		n = min(n, 4096)
	case c.vk == valFixed:
		n = min(n, budget/c.width)
	case c.vk == valVar:
		// Binary search the rows whose bytes fit the budget.
		data := a.Data()
		ob := data.Buffers()[1].Bytes()
		off := data.Offset()
		at := func(i int) int {
			if c.large {
				return int(binary.LittleEndian.Uint64(ob[8*(off+i):]))
			}
			return int(int32(binary.LittleEndian.Uint32(ob[4*(off+i):])))
		}
		base := at(lo)
		n = sort.Search(n, func(k int) bool { return at(lo+k+1)-base+4*(k+1) > budget })
	}
	return max(1, n)
}

// listRunLimit bounds the levels without a value that may pile up in front
// of a value (or at the end of a page), so every mini-block chunk fits.
const listRunLimit = 1024

func (c *leafCol) full(o *WriterOptions) bool {
	if c.rows >= o.MaxPageRows || c.pageBytes() >= o.MaxPageBytes {
		return true
	}
	if c.maxRep > 0 {
		if c.items == 0 && c.levels >= listRunLimit {
			return true
		}
		if c.items > 0 && c.trailing >= listRunLimit {
			return true
		}
	}
	return false
}

// flush encodes the open page and queues it for placement.
func (c *leafCol) flush() error {
	if c.rows == 0 {
		return nil
	}
	po, err := c.encodePage()
	if err != nil {
		return err
	}
	layout, err := marshalAny("/lance.encodings21.PageLayout", po.layout)
	if err != nil {
		return err
	}
	c.pending = append(c.pending, pendingPage{bufs: po.bufs, rows: uint64(c.rows), firstRow: c.firstRow, layout: layout})
	c.resetPage()
	return nil
}
