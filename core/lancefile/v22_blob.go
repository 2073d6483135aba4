package lancefile

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// Blob columns, whose values live out of line and are addressed by
// descriptors.
//
// Legacy blobs (2.1's BlobLayout; lance-encoding:blob on a large_binary
// field): the page's inner layout holds one description per item, a
// PackedStruct of u64 position and u64 size. A value is the size bytes at
// offset position of the data file itself; size 0 is an empty value when
// position is 0, and otherwise a null whose levels position carries
// (repetition in bits 0-15, definition in bits 16-31).
//
// Blob v2 (2.2; a struct<data: large_binary, uri: utf8> field with the
// lance.blob.v2 extension, which lancedb's blob() declares): the field's
// column holds descriptors, VariablePackedStruct rows of
//
//	kind u8 | position u64 | size u64 | blob_id u32 | blob_uri (string)
//
// kind 0: the bytes [position, position+size) of the data file itself;
// kind 1: those bytes of a sidecar file shared by several blobs;
// kind 2: a sidecar file holding the blob alone (position 0);
// kind 3: an external object named by blob_uri.
// Sidecars are data/<data file name without .lance>/<blob_id as 32 binary
// digits, least significant first>.blob.
//
// kv0 reads a blob column as the values of its type: a legacy column as
// large_binary, a blob v2 column as struct<data, uri>, data holding the
// bytes of stored blobs and uri the name of external ones (whose bytes kv0
// does not fetch). Pages keep descriptors; each batch read resolves its
// own, so memory follows the batch, not the page.

// Marks of vals that hold blob descriptors instead of values.
const (
	blobLegacy uint8 = 1 + iota // 16-byte (position, size) descriptions
)

// blobKinds of blob v2 descriptors.
const (
	blobInline    = 0
	blobPacked    = 1
	blobDedicated = 2
	blobExternal  = 3
)

// blobDescLeaf is the leaf a legacy blob page's inner layout is decoded as.
var blobDescLeaf = func() *leafInfo {
	u64 := func(name string) *Field { return &Field{Name: name, Type: arrow.PrimitiveTypes.Uint64} }
	pos, size := u64("position"), u64("size")
	st := &Field{Name: "description", Children: []*Field{pos, size},
		Type: arrow.StructOf(pos.ArrowField(), size.ArrowField())}
	li, err := newLeafInfo([]*Field{st}, 0)
	if err != nil {
		panic(err)
	}
	return li
}()

// isBlobV2 reports whether f is a blob v2 column (lancedb's blob()).
func isBlobV2(f *Field) bool {
	return f.Metadata["ARROW:extension:name"] == "lance.blob.v2"
}

// blobDescriptorLayout is the packed layout of a blob v2 column's
// descriptors.
func blobDescriptorLayout(f *Field) (*packedLayout, error) {
	st, ok := f.Type.(*arrow.StructType)
	if !ok || st.NumFields() != 2 {
		return nil, unsupportedf("blob v2 column %q of type %v (kv0 reads struct<data: large_binary, uri: utf8>)", f.Name, f.Type)
	}
	if i, ok := st.FieldIdx("data"); !ok || st.Field(i).Type.ID() != arrow.LARGE_BINARY {
		return nil, unsupportedf("blob v2 column %q of type %v (kv0 reads struct<data: large_binary, uri: utf8>)", f.Name, f.Type)
	}
	if i, ok := st.FieldIdx("uri"); !ok || st.Field(i).Type.ID() != arrow.STRING {
		return nil, unsupportedf("blob v2 column %q of type %v (kv0 reads struct<data: large_binary, uri: utf8>)", f.Name, f.Type)
	}
	return &packedLayout{kind: kindVar, blob: true, members: []packedMember{
		{kind: kindFixed, width: 1}, {kind: kindFixed, width: 8}, {kind: kindFixed, width: 8},
		{kind: kindFixed, width: 4}, {kind: kindVar},
	}}, nil
}

// decodeBlobPage decodes a legacy blob page into descriptors (vals marked
// blobLegacy, one 16-byte value per item) and the items' levels.
func decodeBlobPage(li *leafInfo, bl *enc21pb.BlobLayout, bufs [][]byte, rows uint64) (*leafPage, error) {
	if li.packed != nil || li.kind != kindVar {
		return nil, corruptf("blob page for field %q of type %v", li.field.Name, li.field.Type)
	}
	dm, err := li.defMap(bl.GetLayers())
	if err != nil {
		return nil, err
	}
	inner := bl.GetInnerLayout().GetMiniBlockLayout()
	if inner == nil {
		return nil, unsupportedf("blob page with an inner layout of %T", bl.GetInnerLayout().GetLayout())
	}
	dp, err := decodeMiniBlockPage(blobDescLeaf, inner, bufs, inner.GetNumItems())
	if err != nil {
		return nil, err
	}
	if dp.rep != nil || dp.def != nil || (dp.def == nil && dp.constDef != 0) {
		return nil, corruptf("blob descriptions with levels of their own")
	}
	n := dp.vals.n
	if uint64(n) != rows {
		return nil, corruptf("%d blob descriptions for %d rows", n, rows)
	}
	d := dp.vals.data
	var def []uint16
	for i := 0; i < n; i++ {
		pos, size := binary.LittleEndian.Uint64(d[16*i:]), binary.LittleEndian.Uint64(d[16*i+8:])
		if size != 0 || pos == 0 {
			continue
		}
		if pos&0xffff != 0 {
			return nil, unsupportedf("legacy blob column %q inside a list", li.field.Name)
		}
		if def == nil {
			def = make([]uint16, n)
		}
		def[i] = uint16(pos >> 16)
	}
	pg := &leafPage{li: li, rows: int(rows), nlev: n, copied: true}
	if def != nil {
		if err := applyDefMap(def, dm); err != nil {
			return nil, err
		}
		pg.def = def
	}
	offs := make([]int64, n+1)
	for i := range offs {
		offs[i] = int64(16 * i)
	}
	pg.vals = vals{kind: kindVar, n: n, data: d[:16*n], offs: offs, blob: blobLegacy}
	return pg, nil
}

// blobExt holds what a resolved blob v2 batch has besides the bytes.
type blobExt struct {
	uris     vals   // blob_uri of external blobs, empty for the others
	external []bool // nil when no blob is external
}

// blobRead is one range of one object that a batch's blobs need.
type blobRead struct {
	key       string
	off, size uint64
	slot      int
}

// resolveBlobs replaces the descriptors of a batch of a blob column by the
// blobs' bytes.
func (f *File) resolveBlobs(ctx context.Context, li *leafInfo, v *vals) error {
	if v.zero {
		return nil
	}
	v2 := li.packed != nil && li.packed.blob
	if !v2 && v.blob != blobLegacy {
		return nil
	}
	if v.constant {
		return corruptf("constant blob descriptors")
	}
	n := v.n
	reads := make([]blobRead, 0, n)
	var ext *blobExt
	if v2 {
		ext = &blobExt{}
		ub := newValBuilder(kindVar, 0, n)
		for i := 0; i < n; i++ {
			row := v.data[v.offs[i]:v.offs[i+1]]
			if len(row) < 25 {
				return corruptf("blob descriptor of %d bytes", len(row))
			}
			kind := row[0]
			pos, size := binary.LittleEndian.Uint64(row[1:]), binary.LittleEndian.Uint64(row[9:])
			id := binary.LittleEndian.Uint32(row[17:])
			ul := int(binary.LittleEndian.Uint32(row[21:]))
			if ul != len(row)-25 {
				return corruptf("blob descriptor of %d bytes with a uri of %d", len(row), ul)
			}
			uri := row[25:]
			switch kind {
			case blobInline:
				reads = append(reads, blobRead{f.key, pos, size, i})
			case blobPacked, blobDedicated:
				reads = append(reads, blobRead{sidecarKey(f.key, id), pos, size, i})
			case blobExternal:
				if ext.external == nil {
					ext.external = make([]bool, n)
				}
				ext.external[i] = true
				for len(ub.offs) <= i {
					ub.appendVar(nil)
				}
				ub.appendVar(uri)
				continue
			default:
				return unsupportedf("blob v2 column %q: blob kind %d", li.field.Name, kind)
			}
		}
		for len(ub.offs) <= n {
			ub.appendVar(nil)
		}
		ext.uris = ub.finish()
	} else {
		for i := 0; i < n; i++ {
			d := v.data[v.offs[i]:v.offs[i+1]]
			switch len(d) {
			case 0: // from an all-null page
				continue
			case 16:
			default:
				return corruptf("blob description of %d bytes", len(d))
			}
			pos, size := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:])
			if size > 0 {
				reads = append(reads, blobRead{f.key, pos, size, i})
			}
		}
	}
	got, err := f.readBlobs(ctx, reads, n)
	if err != nil {
		return err
	}
	b := newValBuilder(kindVar, 0, n)
	for i := 0; i < n; i++ {
		b.appendVar(got[i])
	}
	*v = b.finish()
	v.ext = ext
	return nil
}

// sidecarKey is the key of blob v2 sidecar file id of data file key.
func sidecarKey(key string, id uint32) string {
	var name [32]byte
	for i := range name {
		name[i] = '0' + byte(id>>i&1)
	}
	return strings.TrimSuffix(key, ".lance") + "/" + string(name[:]) + ".blob"
}

// maxBlobBatch bounds the bytes of the blobs of one batch.
const maxBlobBatch = 1 << 34

// readBlobs reads the ranges of reads, returning the bytes of each slot
// (nil for slots without a read). Ranges are checked against the objects'
// sizes before anything is allocated for them.
func (f *File) readBlobs(ctx context.Context, reads []blobRead, n int) ([][]byte, error) {
	out := make([][]byte, n)
	var total uint64
	byKey := map[string][]int{}
	for k, r := range reads {
		size := uint64(f.size)
		if r.key != f.key {
			s, err := f.sidecarSize(ctx, r.key)
			if err != nil {
				return nil, err
			}
			size = s
		}
		if r.off > size || r.size > size-r.off {
			return nil, &FormatError{File: r.key, Column: -1, Page: -1, Offset: int64(min(r.off, 1<<62)), Err: ErrCorrupt,
				Msg: "blob [" + uitoa(r.off) + ", +" + uitoa(r.size) + ") outside an object of " + uitoa(size) + " bytes"}
		}
		total += r.size
		if total > maxBlobBatch {
			return nil, unsupportedf("a batch of blobs of more than %d bytes; read fewer rows at a time", uint64(maxBlobBatch))
		}
		byKey[r.key] = append(byKey[r.key], k)
	}
	keys := make([]string, 0, len(byKey))
	for key := range byKey {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		idx := byKey[key]
		slices.SortFunc(idx, func(a, b int) int {
			if reads[a].off < reads[b].off {
				return -1
			}
			if reads[a].off > reads[b].off {
				return 1
			}
			return 0
		})
		ranges := make([]bufRange, len(idx))
		for j, k := range idx {
			ranges[j] = bufRange{reads[k].off, reads[k].size}
		}
		bufs := make([][]byte, len(idx))
		if err := f.readKeyRanges(ctx, key, ranges, bufs); err != nil {
			return nil, &FormatError{File: key, Column: -1, Page: -1, Offset: -1, Err: err}
		}
		for j, k := range idx {
			out[reads[k].slot] = bufs[j]
		}
	}
	return out, nil
}

// sidecarSize returns the size of a sidecar object, asking the store once
// per File.
func (f *File) sidecarSize(ctx context.Context, key string) (uint64, error) {
	f.sideMu.Lock()
	s, ok := f.sideSizes[key]
	f.sideMu.Unlock()
	if ok {
		return s, nil
	}
	info, err := f.st.Stat(ctx, key)
	if err != nil {
		return 0, &FormatError{File: key, Column: -1, Page: -1, Offset: -1, Err: err, Msg: "blob sidecar of " + f.key}
	}
	f.sideMu.Lock()
	if f.sideSizes == nil {
		f.sideSizes = map[string]uint64{}
	}
	f.sideSizes[key] = uint64(info.Size)
	f.sideMu.Unlock()
	return uint64(info.Size), nil
}

// readKeyRanges reads ranges (sorted by offset) of object key: the data
// file through readRanges, other objects (sidecars) with one request per
// run of nearby ranges.
func (f *File) readKeyRanges(ctx context.Context, key string, ranges []bufRange, out [][]byte) error {
	if key == f.key {
		return f.readRanges(ctx, ranges, out)
	}
	for i := 0; i < len(ranges); {
		start, end := ranges[i].off, ranges[i].off+ranges[i].size
		j := i + 1
		for j < len(ranges) && ranges[j].off <= end+coalesceGap {
			end = max(end, ranges[j].off+ranges[j].size)
			j++
		}
		if end > start {
			buf := make([]byte, end-start)
			if err := f.st.ReadAt(ctx, key, buf, int64(start)); err != nil {
				return err
			}
			for k := i; k < j; k++ {
				o := ranges[k].off - start
				out[k] = buf[o : o+ranges[k].size : o+ranges[k].size]
			}
		} else {
			for k := i; k < j; k++ {
				out[k] = []byte{}
			}
		}
		i = j
	}
	return nil
}

func uitoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// blobData builds the struct<data, uri> array of a blob v2 column from a
// resolved batch.
func blobData(li *leafInfo, v *vals, valid bitmap) (arrow.ArrayData, error) {
	st := li.field.Type.(*arrow.StructType)
	n := v.n
	isValid := func(i int) bool { return valid.bits == nil || valid.bits[i/8]&(1<<(i%8)) != 0 }
	var ext *blobExt
	if !v.zero {
		ext = v.ext
	}
	children := make([]arrow.ArrayData, st.NumFields())
	for j, fld := range st.Fields() {
		external := fld.Name == "uri"
		var cv vals
		switch {
		case v.zero:
			cv = vals{kind: kindVar, n: n, zero: true}
		case external && ext != nil:
			cv = ext.uris
		case external:
			cv = vals{kind: kindVar, n: n, zero: true}
		default:
			cv = *v
			cv.ext = nil
		}
		bits := make([]byte, (n+7)/8)
		nulls := 0
		for i := 0; i < n; i++ {
			ext := ext != nil && ext.external != nil && ext.external[i]
			if isValid(i) && !v.zero && ext == external {
				bits[i/8] |= 1 << (i % 8)
			} else {
				nulls++
			}
		}
		cd, err := leafData(&leafInfo{field: &Field{Name: fld.Name, Type: fld.Type}, kind: kindVar}, &cv, bitmapWith(bits, nulls))
		if err != nil {
			return nil, err
		}
		children[j] = cd
	}
	var vb *memory.Buffer
	if valid.bits != nil {
		vb = memory.NewBufferBytes(valid.bits)
	}
	return array.NewData(st, n, []*memory.Buffer{vb}, children, valid.nulls, 0), nil
}
