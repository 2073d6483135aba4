package lance

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// Deletion files list the physical offsets of deleted rows in one fragment.
// Lance writes small sets as an Arrow IPC file and large ones (over 5000
// rows) as a portable Roaring bitmap:
//
//	_deletions/{fragment}-{read_version}-{id}.arrow
//	  "ARROW1\0\0" | messages | footer (flatbuffer) | i32 footer len | "ARROW1"
//	  one record batch, one non-null UInt32 column "row_id", in any order;
//	  buffers optionally ZSTD-compressed (i64 uncompressed length prefix)
//	_deletions/{fragment}-{read_version}-{id}.bin
//	  Roaring portable serialization (cookie 12346 or 12347, container
//	  headers, optional offsets, array / bitmap / run containers)

// deletionSet is the set of deleted physical offsets of one fragment. A nil
// *deletionSet is the empty set.
type deletionSet struct{ bm *roaring.Bitmap }

func (s *deletionSet) count() uint64 {
	if s == nil {
		return 0
	}
	return s.bm.GetCardinality()
}

func (s *deletionSet) contains(off uint64) bool {
	return s != nil && off <= 0xffffffff && s.bm.Contains(uint32(off))
}

// deletedRun returns how many consecutive rows starting at pos are deleted,
// stopping at end.
func (s *deletionSet) deletedRun(pos, end uint64) uint64 {
	if s == nil || pos >= end {
		return 0
	}
	it := s.bm.Iterator()
	it.AdvanceIfNeeded(uint32(pos))
	n := uint64(0)
	for pos+n < end && it.HasNext() && uint64(it.PeekNext()) == pos+n {
		it.Next()
		n++
	}
	return n
}

// liveRuns returns the live [from, to) runs within [pos, pos+n), as offsets
// relative to pos, or nil when every row in the range is live.
func (s *deletionSet) liveRuns(pos uint64, n int) [][2]int {
	if s == nil || n == 0 {
		return nil
	}
	it := s.bm.Iterator()
	it.AdvanceIfNeeded(uint32(pos))
	var runs [][2]int
	next := 0 // first row not yet assigned to a run
	deleted := false
	for it.HasNext() {
		d := uint64(it.PeekNext())
		if d >= pos+uint64(n) {
			break
		}
		it.Next()
		deleted = true
		r := int(d - pos)
		if r > next {
			runs = append(runs, [2]int{next, r})
		}
		next = r + 1
	}
	if !deleted {
		return nil
	}
	if next < n {
		runs = append(runs, [2]int{next, n})
	}
	if runs == nil {
		runs = [][2]int{} // everything deleted
	}
	return runs
}

// loadDeletions reads the deletion file of f, whose fragment has phys
// physical rows (0 when unknown). Fragments without one give nil.
func (d *Dataset) loadDeletions(ctx context.Context, f *Fragment, phys uint64) (*deletionSet, error) {
	del := f.pb.GetDeletionFile()
	if del == nil {
		return nil, nil
	}
	if del.BaseId != nil {
		return nil, fmt.Errorf("%w: fragment %d: deletion file %s lives under external base path %d",
			ErrUnsupportedFeature, f.ID, f.DeletionFile, del.GetBaseId())
	}
	key := d.k.deletion(deletionFileName(f.ID, del))
	b, err := readSmall(ctx, d.st, key)
	if err != nil {
		return nil, err
	}
	var bm *roaring.Bitmap
	switch del.GetFileType() {
	case tablepb.DeletionFile_ARROW_ARRAY:
		bm, err = parseArrowDeletions(b, phys)
	case tablepb.DeletionFile_BITMAP:
		bm, err = parseBitmapDeletions(b, phys)
	default:
		return nil, corruptErr(d.mf.key, -1, "fragment %d: unknown deletion file type %d", f.ID, del.GetFileType())
	}
	if err != nil {
		return nil, corruptErr(key, offsetOf(err), "%v", err)
	}
	if n := del.GetNumDeletedRows(); n > 0 && bm.GetCardinality() != n {
		return nil, corruptErr(key, -1, "deletion file holds %d rows, manifest %s says %d", bm.GetCardinality(), d.mf.key, n)
	}
	return &deletionSet{bm}, nil
}

// offsetError carries the byte offset of a parse failure.
type offsetError struct {
	off int64
	msg string
}

func (e *offsetError) Error() string { return e.msg }

func errAt(off int, format string, args ...any) error {
	return &offsetError{int64(off), fmt.Sprintf(format, args...)}
}

func offsetOf(err error) int64 {
	var oe *offsetError
	if errors.As(err, &oe) {
		return oe.off
	}
	return -1
}

// maxDeletedRows bounds a deletion set when the fragment size is unknown:
// offsets are u32.
const maxDeletedRows = 1 << 32

// parseBitmapDeletions decodes a portable Roaring bitmap. It first walks the
// container headers to check that every container fits in data, so the
// decoder never allocates more than the file justifies, then checks that all
// offsets are below phys (when phys > 0).
func parseBitmapDeletions(data []byte, phys uint64) (*roaring.Bitmap, error) {
	const (
		cookieRuns   = 12347
		cookieNoRuns = 12346
	)
	u16 := func(p int) int { return int(binary.LittleEndian.Uint16(data[p:])) }
	if len(data) < 4 {
		return nil, errAt(0, "roaring bitmap of %d bytes is too short", len(data))
	}
	cookie := binary.LittleEndian.Uint32(data)
	var (
		size   int
		p      int
		runMap []byte
	)
	switch {
	case cookie&0xffff == cookieRuns:
		size = int(cookie>>16) + 1
		p = 4 + (size+7)/8
		if p > len(data) {
			return nil, errAt(4, "truncated run-container bitmap")
		}
		runMap = data[4:p]
	case cookie == cookieNoRuns:
		if len(data) < 8 {
			return nil, errAt(4, "truncated container count")
		}
		n := binary.LittleEndian.Uint32(data[4:])
		if n > 1<<16 {
			return nil, errAt(4, "%d containers (at most 65536)", n)
		}
		size, p = int(n), 8
	default:
		return nil, errAt(0, "not a portable roaring bitmap (cookie 0x%08x)", cookie)
	}
	descStart := p
	if len(data)-p < 4*size {
		return nil, errAt(p, "truncated container headers")
	}
	p += 4 * size
	if runMap == nil || size >= 4 { // offset header
		if len(data)-p < 4*size {
			return nil, errAt(p, "truncated container offsets")
		}
		p += 4 * size
	}
	prevKey := -1
	for i := 0; i < size; i++ {
		key, card := u16(descStart+4*i), u16(descStart+4*i+2)+1
		if key <= prevKey {
			return nil, errAt(descStart+4*i, "container keys out of order")
		}
		prevKey = key
		var n int
		bitmap, array := false, false
		switch {
		case runMap != nil && runMap[i/8]&(1<<(i%8)) != 0:
			if len(data)-p < 2 {
				return nil, errAt(p, "truncated run container %d", i)
			}
			if u16(p) == 0 {
				return nil, errAt(p, "run container %d holds no runs", i)
			}
			n = 2 + 4*u16(p)
		case card <= 4096:
			n, array = 2*card, true
		default:
			n, bitmap = 8192, true
		}
		if len(data)-p < n {
			return nil, errAt(p, "container %d needs %d bytes, %d left", i, n, len(data)-p)
		}
		if array {
			// Members strictly increasing, so that each counts once.
			for k := 1; k < card; k++ {
				if u16(p+2*k) <= u16(p+2*k-2) {
					return nil, errAt(p+2*k, "array container %d is not strictly increasing", i)
				}
			}
		}
		if bitmap {
			// The decoder trusts the header's cardinality, which the
			// deleted-row count and the scan's arithmetic rely on: it must
			// be the number of bits the container sets.
			set := 0
			for w := p; w < p+n; w += 8 {
				set += bits.OnesCount64(binary.LittleEndian.Uint64(data[w:]))
			}
			if set != card {
				return nil, errAt(descStart+4*i, "bitmap container %d claims %d members but sets %d bits", i, card, set)
			}
		}
		p += n
	}
	bm := roaring.New()
	if err := safeRoaring(bm, data); err != nil {
		return nil, err
	}
	if phys == 0 {
		return bm, nil
	}
	max, empty, err := safeMaximum(bm)
	if err != nil {
		return nil, err
	}
	if !empty && uint64(max) >= phys {
		return nil, errAt(-1, "deleted offset %d in a fragment of %d rows", max, phys)
	}
	return bm, nil
}

// safeMaximum returns the largest member of bm, guarding against decoder
// panics on containers the structural check let through.
func safeMaximum(bm *roaring.Bitmap) (max uint32, empty bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errAt(0, "roaring bitmap: %v", r)
		}
	}()
	if bm.IsEmpty() {
		return 0, true, nil
	}
	return bm.Maximum(), false, nil
}

// safeRoaring runs the Roaring decoder, turning any panic on malformed input
// into an error: the structure was checked above, but the decoder is not our
// code and input may come from anywhere.
func safeRoaring(bm *roaring.Bitmap, data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errAt(0, "roaring bitmap: %v", r)
		}
	}()
	if _, err := bm.ReadFrom(bytes.NewReader(data)); err != nil {
		return errAt(0, "roaring bitmap: %v", err)
	}
	return nil
}

// zstdDec decodes ZSTD-compressed IPC buffers. DecodeAll is safe for
// concurrent use.
var zstdDec = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<32))
})

// parseArrowDeletions decodes an Arrow IPC file holding one non-null UInt32
// column, the deleted offsets (any order, duplicates tolerated).
func parseArrowDeletions(data []byte, phys uint64) (*roaring.Bitmap, error) {
	const magic = "ARROW1"
	n := len(data)
	if n < 8+4+len(magic) || string(data[:6]) != magic || string(data[n-6:]) != magic {
		return nil, errAt(0, "not an Arrow IPC file (missing ARROW1 magic)")
	}
	footLen := int64(int32(binary.LittleEndian.Uint32(data[n-10:])))
	if footLen <= 0 || footLen > int64(n-10-8) {
		return nil, errAt(n-10, "footer length %d in a file of %d bytes", footLen, n)
	}
	footStart := n - 10 - int(footLen)
	foot, err := fbRoot(data[footStart:n-10], footStart)
	if err != nil {
		return nil, err
	}
	// Footer: 1 schema, 2 dictionaries, 3 record batches.
	schema, err := foot.table(1)
	if err != nil {
		return nil, err
	}
	if err := checkDeletionSchema(schema); err != nil {
		return nil, err
	}
	if dicts, _ := foot.vector(2, 24); dicts.n > 0 {
		return nil, errAt(footStart, "deletion file has dictionaries")
	}
	blocks, err := foot.vector(3, 24)
	if err != nil {
		return nil, err
	}
	// Offsets are u32 and below the fragment's row count. When that is not
	// known, bound the set by what a compressed file of this size could
	// plausibly hold, so hostile input cannot ask for huge buffers.
	limit := min(uint64(maxDeletedRows), 256*uint64(n))
	if phys > 0 {
		limit = min(uint64(maxDeletedRows), phys)
	}
	bm := roaring.New()
	var total uint64
	for i := 0; i < blocks.n; i++ {
		b := blocks.elem(i)
		off := int64(binary.LittleEndian.Uint64(b))
		metaLen := int64(int32(binary.LittleEndian.Uint32(b[8:])))
		bodyLen := int64(binary.LittleEndian.Uint64(b[16:]))
		if off < 8 || metaLen < 8 || bodyLen < 0 || off > int64(footStart) || metaLen > int64(footStart)-off ||
			bodyLen > int64(footStart)-off-metaLen {
			return nil, errAt(blocks.pos+24*i, "record batch block %d [%d, +%d, +%d) outside the file", i, off, metaLen, bodyLen)
		}
		vals, err := readDeletionBatch(data, int(off), int(metaLen), int(bodyLen), limit-total)
		if err != nil {
			return nil, err
		}
		total += uint64(len(vals))
		for _, v := range vals {
			if phys > 0 && uint64(v) >= phys {
				return nil, errAt(int(off), "deleted offset %d in a fragment of %d rows", v, phys)
			}
		}
		bm.AddMany(vals)
	}
	return bm, nil
}

// checkDeletionSchema requires one field of type Int(32, unsigned).
func checkDeletionSchema(schema fbTable) error {
	fields, err := schema.vector(1, 4)
	if err != nil {
		return err
	}
	if fields.n != 1 {
		return errAt(schema.pos, "deletion file schema has %d fields, want 1", fields.n)
	}
	field, err := fields.tableAt(0)
	if err != nil {
		return err
	}
	const typeInt = 2
	if tt := field.u8(2, 0); tt != typeInt {
		return errAt(field.pos, "deletion file column has Arrow type id %d, want Int", tt)
	}
	it, err := field.table(3)
	if err != nil {
		return err
	}
	if w, signed := it.i32(0, 0), it.u8(1, 0); w != 32 || signed != 0 {
		return errAt(it.pos, "deletion file column is Int(%d, signed=%v), want UInt32", w, signed != 0)
	}
	return nil
}

// readDeletionBatch decodes one record batch message at off and returns its
// values. At most limit values are accepted.
func readDeletionBatch(data []byte, off, metaLen, bodyLen int, limit uint64) ([]uint32, error) {
	meta := data[off : off+metaLen]
	p := 0
	if binary.LittleEndian.Uint32(meta) == 0xffffffff { // continuation marker
		p = 4
	}
	flen := int(int32(binary.LittleEndian.Uint32(meta[p:])))
	p += 4
	if flen <= 0 || flen > len(meta)-p {
		return nil, errAt(off, "message length %d in a block of %d bytes", flen, metaLen)
	}
	msg, err := fbRoot(meta[p:p+flen], off+p)
	if err != nil {
		return nil, err
	}
	const headerRecordBatch = 3
	if ht := msg.u8(1, 0); ht != headerRecordBatch {
		return nil, errAt(msg.pos, "message header type %d, want a record batch", ht)
	}
	rb, err := msg.table(2)
	if err != nil {
		return nil, err
	}
	length := rb.i64(0, 0)
	if length < 0 || uint64(length) > limit {
		return nil, errAt(rb.pos, "record batch of %d rows (at most %d expected)", length, limit)
	}
	nodes, err := rb.vector(1, 16)
	if err != nil {
		return nil, err
	}
	if nodes.n != 1 {
		return nil, errAt(rb.pos, "record batch has %d field nodes, want 1", nodes.n)
	}
	node := nodes.elem(0)
	if nl, nc := int64(binary.LittleEndian.Uint64(node)), int64(binary.LittleEndian.Uint64(node[8:])); nl != length || nc != 0 {
		return nil, errAt(nodes.pos, "field node of %d rows with %d nulls, want %d rows and no nulls", nl, nc, length)
	}
	bufs, err := rb.vector(2, 16)
	if err != nil {
		return nil, err
	}
	if bufs.n != 2 {
		return nil, errAt(rb.pos, "record batch has %d buffers, want 2", bufs.n)
	}
	codec := -1
	if c, ok := rb.optTable(3); ok {
		codec = int(c.u8(0, 0))
		if method := c.u8(1, 0); method != 0 {
			return nil, errAt(c.pos, "unknown body compression method %d", method)
		}
	}
	body := data[off+metaLen : off+metaLen+bodyLen]
	db := bufs.elem(1)
	bOff, bLen := int64(binary.LittleEndian.Uint64(db)), int64(binary.LittleEndian.Uint64(db[8:]))
	if bOff < 0 || bLen < 0 || bOff > int64(len(body)) || bLen > int64(len(body))-bOff {
		return nil, errAt(bufs.pos+16, "data buffer [%d, +%d) outside a body of %d bytes", bOff, bLen, len(body))
	}
	buf := body[bOff : bOff+bLen]
	want := 4 * int(length)
	if codec >= 0 && len(buf) > 0 {
		if len(buf) < 8 {
			return nil, errAt(off+metaLen+int(bOff), "compressed buffer of %d bytes", len(buf))
		}
		ulen := int64(binary.LittleEndian.Uint64(buf))
		if ulen == -1 {
			buf = buf[8:]
		} else {
			if ulen < int64(want) || ulen > int64(want)+64 {
				return nil, errAt(off+metaLen+int(bOff), "buffer claims %d uncompressed bytes for %d values", ulen, length)
			}
			const codecZSTD = 1
			if codec != codecZSTD {
				return nil, errAt(off+metaLen+int(bOff), "unsupported IPC compression codec %d (kv0 reads ZSTD)", codec)
			}
			dec, err := zstdDec()
			if err != nil {
				return nil, err
			}
			out, err := dec.DecodeAll(buf[8:], make([]byte, 0, ulen))
			if err != nil {
				return nil, errAt(off+metaLen+int(bOff), "zstd: %v", err)
			}
			if int64(len(out)) != ulen {
				return nil, errAt(off+metaLen+int(bOff), "zstd gave %d bytes, want %d", len(out), ulen)
			}
			buf = out
		}
	}
	if len(buf) < want {
		return nil, errAt(off+metaLen+int(bOff), "data buffer of %d bytes for %d values", len(buf), length)
	}
	vals := make([]uint32, length)
	for i := range vals {
		vals[i] = binary.LittleEndian.Uint32(buf[4*i:])
	}
	return vals, nil
}
