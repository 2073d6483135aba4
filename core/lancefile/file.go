package lancefile

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/internal/lancepb"
	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/store"
)

// The 2.x container, as kv0 reads it. All integers are little-endian.
//
//	+---------------------------+ 0
//	| page buffers              |  each 64-byte aligned
//	+---------------------------+ gbo[0].position
//	| global buffers            |  buffer 0 = FileDescriptor (schema, rows)
//	+---------------------------+ column_meta_start
//	| ColumnMetadata protobufs  |  one per column
//	+---------------------------+ cmo_table_start
//	| CMO table                 |  per column: u64 position, u64 size
//	+---------------------------+ gbo_table_start
//	| GBO table                 |  per global buffer: u64 position, u64 size
//	+---------------------------+ size-40
//	| u64 column_meta_start     |
//	| u64 cmo_table_start       |
//	| u64 gbo_table_start       |
//	| u32 num_global_buffers    |
//	| u32 num_columns           |
//	| u16 major | u16 minor     |  (2,2) = 2.2; (2,1) = 2.1; (0,3) or (2,0) = 2.0
//	| "LANC"                    |
//	+---------------------------+ size

const (
	footerSize = 40
	magic      = "LANC"
	// tailRead is how much of a file's end Open reads in one request. It
	// usually covers the footer, the tables, the column metadata and the
	// FileDescriptor of files of modest width.
	tailRead = 64 << 10
	// maxMetadata bounds the metadata region Open accepts, so a hostile
	// footer cannot make it allocate more than a file could justify.
	maxMetadata = 256 << 20
)

// Version is a data file format version.
type Version struct{ Major, Minor int }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Format versions kv0 reads (2.0 to 2.2) and writes (2.1, 2.2).
var (
	V2_0 = Version{2, 0}
	V2_1 = Version{2, 1}
	V2_2 = Version{2, 2}
)

// File is an opened Lance 2.x data file: its footer and column metadata,
// ready for page reads. A File is safe for concurrent use.
type File struct {
	st      store.Store
	key     string
	size    int64
	version Version
	numRows uint64 // from the FileDescriptor, when present
	schema  *Schema
	columns []column
	global  []bufRange
	// globals holds the bytes of global buffers 1 and up that the tail read
	// covered (nil for the others); whole is the entire file when the tail
	// read covered it, so page reads of small files cost no request.
	globals [][]byte
	whole   []byte

	byIDOnce sync.Once
	byID     map[int32]*Field // the fields of schema by id, built on first use

	sideMu    sync.Mutex
	sideSizes map[string]uint64 // sizes of the blob sidecar files read so far
}

type bufRange struct{ off, size uint64 }

type column struct {
	pages []pageInfo
	bufs  []bufRange // column-level buffers
}

type pageInfo struct {
	bufs     []bufRange
	rows     uint64
	firstRow uint64 // sum of the lengths of the pages before it
	enc      []byte // serialized google.protobuf.Any
}

// Open reads the footer and metadata of the data file key. size is the file
// size when known (a manifest's file_size_bytes or a listing); zero makes Open
// ask the store. Open costs one request when size is known and the metadata
// fits in the last 64 KiB, two otherwise.
func Open(ctx context.Context, st store.Store, key string, size int64) (*File, error) {
	f := &File{st: st, key: key, size: size}
	if size <= 0 {
		info, err := st.Stat(ctx, key)
		if err != nil {
			return nil, &FormatError{File: key, Column: -1, Page: -1, Offset: -1, Err: err}
		}
		f.size = info.Size
	}
	if f.size < footerSize {
		return nil, f.corruptf(-1, "file of %d bytes is too small to hold a footer", f.size)
	}
	n := min(f.size, tailRead)
	tail := make([]byte, n)
	if err := st.ReadAt(ctx, key, tail, f.size-n); err != nil {
		if size > 0 && errors.Is(err, store.ErrShortObject) {
			// The size came from the caller (a manifest's file_size_bytes).
			return nil, &FormatError{File: key, Column: -1, Page: -1, Offset: f.size - n, Err: fmt.Errorf("%w: %w", ErrCorrupt, err),
				Msg: fmt.Sprintf("the file is shorter than the %d bytes recorded for it", size)}
		}
		return nil, &FormatError{File: key, Column: -1, Page: -1, Offset: f.size - n, Err: err}
	}
	tailStart := f.size - n
	foot := tail[n-footerSize:]
	if string(foot[36:40]) != magic {
		return nil, f.corruptf(f.size-4, "missing LANC magic")
	}
	major, minor := int(binary.LittleEndian.Uint16(foot[32:])), int(binary.LittleEndian.Uint16(foot[34:]))
	switch {
	case major == 2 && minor == 1:
		f.version = V2_1
	case major == 2 && minor == 2:
		f.version = V2_2
	case (major == 2 && minor == 0) || (major == 0 && minor == 3):
		f.version = V2_0
	default:
		return nil, versionError(key, major, minor)
	}
	colMetaStart := binary.LittleEndian.Uint64(foot[0:])
	cmoStart := binary.LittleEndian.Uint64(foot[8:])
	gboStart := binary.LittleEndian.Uint64(foot[16:])
	numGlobal := uint64(binary.LittleEndian.Uint32(foot[24:]))
	numCols := uint64(binary.LittleEndian.Uint32(foot[28:]))
	end := uint64(f.size - footerSize)
	if colMetaStart > cmoStart || cmoStart > gboStart || gboStart > end ||
		cmoStart+16*numCols != gboStart || gboStart+16*numGlobal != end {
		return nil, f.corruptf(f.size-footerSize, "inconsistent footer (column metadata %d, CMO %d, GBO %d, %d columns, %d global buffers)",
			colMetaStart, cmoStart, gboStart, numCols, numGlobal)
	}
	// The metadata region runs from the column metadata (or global buffer 0,
	// if it comes later and we want the schema) to the footer.
	metaStart := colMetaStart
	if end-metaStart > maxMetadata {
		return nil, f.corruptf(int64(metaStart), "metadata region of %d bytes is implausibly large", end-metaStart)
	}
	var meta []byte // bytes [metaStart, size)
	if int64(metaStart) >= tailStart {
		meta = tail[int64(metaStart)-tailStart:]
	} else {
		meta = make([]byte, uint64(f.size)-metaStart)
		if err := st.ReadAt(ctx, key, meta[:tailStart-int64(metaStart)], int64(metaStart)); err != nil {
			return nil, &FormatError{File: key, Column: -1, Page: -1, Offset: int64(metaStart), Err: err}
		}
		copy(meta[tailStart-int64(metaStart):], tail)
	}
	at := func(off uint64) []byte { return meta[off-metaStart:] }

	f.global = make([]bufRange, numGlobal)
	for i := range f.global {
		b := at(gboStart + 16*uint64(i))
		f.global[i] = bufRange{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])}
		if r := f.global[i]; r.off > uint64(f.size) || r.size > uint64(f.size)-r.off {
			return nil, f.corruptf(int64(gboStart)+16*int64(i), "global buffer %d out of bounds", i)
		}
	}
	f.globals = make([][]byte, numGlobal)
	for i := 1; i < len(f.global); i++ {
		if g := f.global[i]; int64(g.off) >= tailStart {
			f.globals[i] = bytes.Clone(tail[int64(g.off)-tailStart:][:g.size])
		}
	}
	if tailStart == 0 {
		f.whole = tail
	}
	f.columns = make([]column, numCols)
	for i := range f.columns {
		b := at(cmoStart + 16*uint64(i))
		pos, sz := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		if pos < colMetaStart || pos > cmoStart || sz > cmoStart-pos {
			return nil, f.corruptf(int64(cmoStart)+16*int64(i), "column %d metadata [%d, +%d) outside the metadata region", i, pos, sz)
		}
		var cm file2pb.ColumnMetadata
		if err := lancepb.Unmarshal(at(pos)[:sz], &cm); err != nil {
			return nil, f.corruptf(int64(pos), "column %d metadata: %v", i, err)
		}
		if err := f.loadColumn(i, &cm); err != nil {
			return nil, err
		}
	}
	// The FileDescriptor (global buffer 0) carries the schema and row count;
	// read it when it is already in hand.
	if numGlobal > 0 {
		g := f.global[0]
		if g.off >= metaStart || int64(g.off) >= tailStart {
			var buf []byte
			if g.off >= metaStart {
				buf = at(g.off)[:g.size]
			} else {
				buf = tail[int64(g.off)-tailStart:][:g.size]
			}
			var fd filepb.FileDescriptor
			if err := lancepb.Unmarshal(buf, &fd); err != nil {
				return nil, f.corruptf(int64(g.off), "file descriptor: %v", err)
			}
			f.numRows = fd.GetLength()
			if fd.GetSchema() != nil {
				if s, err := SchemaFromProto(fd.GetSchema().GetFields(), fd.GetSchema().GetMetadata()); err == nil {
					f.schema = s
				}
			}
		}
	}
	return f, nil
}

func (f *File) loadColumn(i int, cm *file2pb.ColumnMetadata) error {
	c := &f.columns[i]
	var err error
	if c.bufs, err = f.ranges(cm.GetBufferOffsets(), cm.GetBufferSizes()); err != nil {
		return f.pageErr(i, -1, err)
	}
	c.pages = make([]pageInfo, len(cm.GetPages()))
	var row uint64
	for j, p := range cm.GetPages() {
		bufs, err := f.ranges(p.GetBufferOffsets(), p.GetBufferSizes())
		if err != nil {
			return f.pageErr(i, j, err)
		}
		enc := p.GetEncoding().GetDirect().GetEncoding()
		if enc == nil {
			return f.pageErr(i, j, fmt.Errorf("%w: page encoding is not stored inline", ErrUnsupportedEncoding))
		}
		if p.GetLength() > uint64(f.size)*8+1<<20 && p.GetLength() > 1<<40 {
			return f.pageErr(i, j, fmt.Errorf("implausible page length %d", p.GetLength()))
		}
		c.pages[j] = pageInfo{bufs: bufs, rows: p.GetLength(), firstRow: row, enc: enc}
		row += p.GetLength()
	}
	return nil
}

func (f *File) ranges(offs, sizes []uint64) ([]bufRange, error) {
	if len(offs) != len(sizes) {
		return nil, fmt.Errorf("%d buffer offsets but %d sizes", len(offs), len(sizes))
	}
	out := make([]bufRange, len(offs))
	for i := range offs {
		if offs[i] > uint64(f.size) || sizes[i] > uint64(f.size)-offs[i] {
			return nil, fmt.Errorf("buffer %d [%d, +%d) outside a file of %d bytes", i, offs[i], sizes[i], f.size)
		}
		out[i] = bufRange{offs[i], sizes[i]}
	}
	return out, nil
}

// NumGlobalBuffers returns the number of global buffers in the file. Buffer
// 0 is the FileDescriptor (schema and row count); writers may add others,
// which Lance readers ignore.
func (f *File) NumGlobalBuffers() int { return len(f.global) }

// GlobalBuffer returns the bytes of global buffer i. Buffers that Open's
// tail read covered cost no request. The caller must not modify the result.
func (f *File) GlobalBuffer(ctx context.Context, i int) ([]byte, error) {
	if i < 0 || i >= len(f.global) {
		return nil, fmt.Errorf("lancefile: %s: global buffer %d of %d", f.key, i, len(f.global))
	}
	if i < len(f.globals) && f.globals[i] != nil {
		return f.globals[i], nil
	}
	out := make([][]byte, 1)
	if err := f.readRanges(ctx, f.global[i:i+1], out); err != nil {
		return nil, &FormatError{File: f.key, Column: -1, Page: -1, Offset: int64(f.global[i].off), Err: err}
	}
	return out[0], nil
}

// Part is a byte range within a global buffer: Len bytes from offset Off.
type Part struct{ Off, Len uint64 }

// GlobalBufferParts returns the given parts of global buffer i (for a
// buffer a reader fetches piecemeal, see Writer.AddFarGlobalBuffer). Parts
// close together in the file are fetched in one request; a part of a
// buffer that Open's tail read covered costs none. A part outside the
// buffer is an error matching ErrCorrupt. The caller may modify the result.
func (f *File) GlobalBufferParts(ctx context.Context, i int, parts []Part) ([][]byte, error) {
	if i < 0 || i >= len(f.global) {
		return nil, fmt.Errorf("lancefile: %s: global buffer %d of %d", f.key, i, len(f.global))
	}
	g := f.global[i]
	out := make([][]byte, len(parts))
	order := make([]int, len(parts))
	for k, p := range parts {
		if p.Off > g.size || p.Len > g.size-p.Off {
			return nil, f.corruptf(int64(g.off), "part [%d, +%d) outside global buffer %d of %d bytes", p.Off, p.Len, i, g.size)
		}
		order[k] = k
	}
	if i < len(f.globals) && f.globals[i] != nil {
		for k, p := range parts {
			out[k] = bytes.Clone(f.globals[i][p.Off : p.Off+p.Len])
		}
		return out, nil
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(parts[a].Off, parts[b].Off) })
	ranges := make([]bufRange, len(parts))
	got := make([][]byte, len(parts))
	for k, j := range order {
		ranges[k] = bufRange{g.off + parts[j].Off, parts[j].Len}
	}
	if err := f.readRanges(ctx, ranges, got); err != nil {
		return nil, &FormatError{File: f.key, Column: -1, Page: -1, Offset: int64(g.off), Err: err}
	}
	for k, j := range order {
		out[j] = got[k]
	}
	return out, nil
}

// Key returns the store key of the file.
func (f *File) Key() string { return f.key }

// Size returns the file size in bytes.
func (f *File) Size() int64 { return f.size }

// Version returns the file's format version (2.0, 2.1 or 2.2).
func (f *File) Version() Version { return f.version }

// NumColumns returns the number of columns in the file.
func (f *File) NumColumns() int { return len(f.columns) }

// NumRows returns the number of rows: from the file descriptor when Open had
// it in hand, else the row count of column 0.
func (f *File) NumRows() uint64 {
	if f.numRows > 0 || len(f.columns) == 0 {
		return f.numRows
	}
	return f.columnRows(0)
}

func (f *File) columnRows(col int) uint64 {
	ps := f.columns[col].pages
	if len(ps) == 0 {
		return 0
	}
	last := ps[len(ps)-1]
	return last.firstRow + last.rows
}

// Schema returns the schema stored in the file itself, or nil when Open did
// not read it. Datasets use the manifest's schema instead.
func (f *File) Schema() *Schema { return f.schema }

// SchemaField returns the field with id id in the schema stored in the file
// itself, or nil when that schema has no such field or Open did not read it
// (see Schema).
func (f *File) SchemaField(id int32) *Field {
	if f.schema == nil {
		return nil
	}
	f.byIDOnce.Do(func() {
		f.byID = map[int32]*Field{}
		f.schema.Walk(func(x *Field) { f.byID[x.ID] = x })
	})
	return f.byID[id]
}

// arrayEncoding20 decodes the page encoding of a 2.0 page.
func arrayEncoding20(enc []byte) (*enc20pb.ArrayEncoding, error) {
	var a wktpb.Any
	if err := lancepb.Unmarshal(enc, &a); err != nil {
		return nil, fmt.Errorf("page encoding: %v", err)
	}
	if a.GetTypeUrl() != "/lance.encodings.ArrayEncoding" {
		return nil, fmt.Errorf("%w: page encoding %q in a 2.0 file", ErrUnsupportedEncoding, a.GetTypeUrl())
	}
	var ae enc20pb.ArrayEncoding
	if err := lancepb.Unmarshal(a.GetValue(), &ae); err != nil {
		return nil, fmt.Errorf("array encoding: %v", err)
	}
	return &ae, nil
}
