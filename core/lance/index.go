package lance

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
)

// IndexInfo describes one index recorded in a version's manifest.
type IndexInfo struct {
	Name string
	UUID string
	// Type is the index details' message name without its package, e.g.
	// "BTreeIndexDetails".
	Type string
	// Columns are the indexed top-level columns (by field id).
	Columns []string
	// DatasetVersion is the version the index was built on.
	DatasetVersion uint64
	// Fragments are the fragment ids the index covers; rows of other
	// fragments are found by scanning.
	Fragments []uint64
	// Files are the index's files under _indices/<uuid>/ with their sizes.
	Files map[string]int64
}

// Indices returns the indices of d's version.
func (d *Dataset) Indices(ctx context.Context) ([]IndexInfo, error) {
	idx, err := readIndices(ctx, d)
	if err != nil {
		return nil, err
	}
	byID := map[int32]string{}
	for _, f := range d.schema.Fields {
		f.Walk(func(x *lancefile.Field) { byID[x.ID] = x.Name })
	}
	out := make([]IndexInfo, 0, len(idx))
	for _, im := range idx {
		in := IndexInfo{Name: im.GetName(), DatasetVersion: im.GetDatasetVersion(), Files: map[string]int64{}}
		if u := im.GetUuid().GetUuid(); len(u) == 16 {
			in.UUID = uuidString([16]byte(u))
		}
		if t := im.GetIndexDetails().GetTypeUrl(); t != "" {
			in.Type = t[max(0, lastDot(t)+1):]
		}
		for _, id := range im.GetFields() {
			in.Columns = append(in.Columns, byID[id])
		}
		bm := roaring.New()
		if _, err := bm.FromUnsafeBytes(slices.Clone(im.GetFragmentBitmap())); err == nil {
			for _, v := range bm.ToArray() {
				in.Fragments = append(in.Fragments, uint64(v))
			}
		}
		for _, f := range im.GetFiles() {
			in.Files[f.GetPath()] = int64(f.GetSizeBytes())
		}
		out = append(out, in)
	}
	return out, nil
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

// BTree index layout (Lance's scalar BTree, index version 0): two ordinary
// data files under _indices/<uuid>/.
//
//	page_data.lance    values (the column's type, nullable), ids (u64 row
//	                   addresses), sorted by value then address
//	page_lookup.lance  min, max (the column's type, nullable), null_count
//	                   u32, page_idx u32: one row per run of btreePageRows
//	                   rows of page_data; schema metadata batch_size and
//	                   range_partitioned
const (
	btreePageRows   = 4096
	btreeDataFile   = "page_data.lance"
	btreeLookupFile = "page_lookup.lance"
	btreeDetailsURL = "/lance.table.BTreeIndexDetails"
)

// btreeKey is one indexed row: the value (as ordered bits) and its address.
type btreeKey struct {
	v    uint64
	addr uint64
}

// CreateBTreeIndex builds a Lance BTree scalar index named name (column +
// "_idx" when empty) on a top-level integer column (int32, int64, uint32,
// uint64) over every live row of d, and commits it as a CreateIndex
// transaction that replaces any index of the same name. lance then uses it
// for filters on the column and scans the fragments added after d.
func (d *Dataset) CreateBTreeIndex(ctx context.Context, column, name string) (*Dataset, error) {
	if err := checkWritable(d); err != nil {
		return nil, err
	}
	fld := d.schema.Field(column)
	if fld == nil {
		return nil, fmt.Errorf("lance: index: no column %q", column)
	}
	switch fld.Type.ID() {
	case arrow.INT32, arrow.INT64, arrow.UINT32, arrow.UINT64:
	default:
		return nil, fmt.Errorf("lance: index: column %q has type %s (kv0 indexes integer columns)", column, fld.Type)
	}
	if name == "" {
		name = column + "_idx"
	}
	// Collect (value, address) of every live row.
	var keys []btreeKey
	covered := roaring.New()
	for i := range d.frags {
		f := &d.frags[i]
		covered.Add(uint32(f.ID))
		fr, err := d.openFragment(ctx, f, []*lancefile.Field{fld})
		if err != nil {
			return nil, err
		}
		for fr.pos < fr.rows {
			n := int(min(fr.rows-fr.pos, 1<<16))
			base := fr.pos
			cols, err := fr.next(ctx, n)
			if err != nil {
				return nil, err
			}
			keys = appendKeys(keys, cols[0], f.ID<<32|base, fr.del, base)
			releaseAll(cols)
		}
	}
	slices.SortFunc(keys, func(a, b btreeKey) int { return cmp.Or(cmp.Compare(a.v, b.v), cmp.Compare(a.addr, b.addr)) })

	// Index files have the dataset's format, as lance writes them (2.1
	// for datasets of formats kv0 does not write).
	iv := lancefile.V2_1
	if v, err := writeVersion(d.DataFormat()); err == nil {
		iv = v
	}
	data, lookup, err := encodeBTree(keys, fld.Type, iv)
	if err != nil {
		return nil, err
	}
	u := newUUID()
	dir := joinKey(d.k.root, indicesDir, uuidString(u))
	for _, file := range []struct {
		name string
		b    []byte
	}{{btreeDataFile, data}, {btreeLookupFile, lookup}} {
		if err := d.st.Put(ctx, joinKey(dir, file.name), file.b); err != nil {
			return nil, fmt.Errorf("lance: writing index file: %w", err)
		}
	}
	bm, err := covered.ToBytes()
	if err != nil {
		return nil, err
	}
	zero := int32(0)
	created := uint64(time.Now().UnixMilli())
	im := &tablepb.IndexMetadata{
		Uuid:           &tablepb.UUID{Uuid: u[:]},
		Fields:         []int32{fld.ID},
		Name:           name,
		DatasetVersion: d.Version(),
		FragmentBitmap: bm,
		IndexDetails:   &wktpb.Any{TypeUrl: btreeDetailsURL},
		IndexVersion:   &zero,
		CreatedAt:      &created,
		Files: []*tablepb.IndexFile{
			{Path: btreeDataFile, SizeBytes: uint64(len(data))},
			{Path: btreeLookupFile, SizeBytes: uint64(len(lookup))},
		},
	}
	cur, err := readIndices(ctx, d)
	if err != nil {
		return nil, err
	}
	var removed []*tablepb.IndexMetadata
	for _, old := range cur {
		if old.GetName() == name {
			removed = append(removed, old)
		}
	}
	txn := newTransaction(d.Version())
	txn.Operation = &tablepb.Transaction_CreateIndex_{CreateIndex: &tablepb.Transaction_CreateIndex{
		NewIndices: []*tablepb.IndexMetadata{im}, RemovedIndices: removed}}
	return commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn})
}

func joinKey(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += "/"
		}
		out += p
	}
	return out
}

// appendKeys appends the live rows of a (rows base.. of a fragment whose
// first address is addr0) as keys. Signed values are mapped to unsigned
// ones of the same order.
func appendKeys(keys []btreeKey, a arrow.Array, addr0 uint64, del *deletionSet, base uint64) []btreeKey {
	n := a.Len()
	val := func(i int) uint64 {
		switch x := a.(type) {
		case *array.Int64:
			return uint64(x.Value(i)) ^ 1<<63
		case *array.Int32:
			return uint64(int64(x.Value(i))) ^ 1<<63
		case *array.Uint64:
			return x.Value(i)
		case *array.Uint32:
			return uint64(x.Value(i))
		}
		return 0
	}
	for i := 0; i < n; i++ {
		if del.contains(base+uint64(i)) || a.IsNull(i) {
			continue // nulls are not indexed (kv0 indexes non-null columns)
		}
		keys = append(keys, btreeKey{val(i), addr0 + uint64(i)})
	}
	return keys
}

// encodeBTree writes the two files of a BTree index over sorted keys.
func encodeBTree(keys []btreeKey, typ arrow.DataType, v lancefile.Version) (data, lookup []byte, err error) {
	mem := memory.DefaultAllocator
	build := func(vs []btreeKey) arrow.Array {
		switch typ.ID() {
		case arrow.INT64:
			b := array.NewInt64Builder(mem)
			defer b.Release()
			for _, k := range vs {
				b.Append(int64(k.v ^ 1<<63))
			}
			return b.NewArray()
		case arrow.INT32:
			b := array.NewInt32Builder(mem)
			defer b.Release()
			for _, k := range vs {
				b.Append(int32(int64(k.v ^ 1<<63)))
			}
			return b.NewArray()
		case arrow.UINT32:
			b := array.NewUint32Builder(mem)
			defer b.Release()
			for _, k := range vs {
				b.Append(uint32(k.v))
			}
			return b.NewArray()
		default:
			b := array.NewUint64Builder(mem)
			defer b.Release()
			for _, k := range vs {
				b.Append(k.v)
			}
			return b.NewArray()
		}
	}
	dataSchema := arrow.NewSchema([]arrow.Field{
		{Name: "values", Type: typ, Nullable: true},
		{Name: "ids", Type: arrow.PrimitiveTypes.Uint64},
	}, nil)
	dw, err := newIndexWriter(dataSchema, v)
	if err != nil {
		return nil, nil, err
	}
	lookupSchema := arrow.NewSchema([]arrow.Field{
		{Name: "min", Type: typ, Nullable: true},
		{Name: "max", Type: typ, Nullable: true},
		{Name: "null_count", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "page_idx", Type: arrow.PrimitiveTypes.Uint32},
	}, func() *arrow.Metadata {
		m := arrow.NewMetadata([]string{"batch_size", "range_partitioned"}, []string{strconv.Itoa(btreePageRows), "false"})
		return &m
	}())
	lw, err := newIndexWriter(lookupSchema, v)
	if err != nil {
		return nil, nil, err
	}
	var mins, maxs []btreeKey
	const chunk = 16 * btreePageRows
	for lo := 0; lo < len(keys); lo += chunk {
		hi := min(lo+chunk, len(keys))
		vals := build(keys[lo:hi])
		ib := array.NewUint64Builder(mem)
		for _, k := range keys[lo:hi] {
			ib.Append(k.addr)
		}
		ids := ib.NewArray()
		ib.Release()
		rec := array.NewRecordBatch(dataSchema, []arrow.Array{vals, ids}, int64(hi-lo))
		err := dw.Write(rec)
		rec.Release()
		vals.Release()
		ids.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	for lo := 0; lo < len(keys); lo += btreePageRows {
		hi := min(lo+btreePageRows, len(keys))
		mins = append(mins, keys[lo])
		maxs = append(maxs, keys[hi-1])
	}
	mi, ma := build(mins), build(maxs)
	nb := array.NewUint32Builder(mem)
	pb := array.NewUint32Builder(mem)
	for i := range mins {
		nb.Append(0)
		pb.Append(uint32(i))
	}
	nc, pi := nb.NewArray(), pb.NewArray()
	nb.Release()
	pb.Release()
	rec := array.NewRecordBatch(lookupSchema, []arrow.Array{mi, ma, nc, pi}, int64(len(mins)))
	err = lw.Write(rec)
	rec.Release()
	for _, a := range []arrow.Array{mi, ma, nc, pi} {
		a.Release()
	}
	if err != nil {
		return nil, nil, err
	}
	if data, err = dw.Finish(); err != nil {
		return nil, nil, err
	}
	if lookup, err = lw.Finish(); err != nil {
		return nil, nil, err
	}
	return data, lookup, nil
}

func newIndexWriter(s *arrow.Schema, v lancefile.Version) (*lancefile.Writer, error) {
	ls, err := lancefile.SchemaFromArrow(s, 0)
	if err != nil {
		return nil, err
	}
	return lancefile.NewWriter(ls, lancefile.WriterOptions{Version: v})
}

// applyCreateIndex applies a CreateIndex operation to the indices of the
// version it builds on: the removed ones (by uuid) go, the new ones join.
func applyCreateIndex(idx []*tablepb.IndexMetadata, op *tablepb.Transaction_CreateIndex) []*tablepb.IndexMetadata {
	gone := map[string]bool{}
	for _, r := range op.GetRemovedIndices() {
		gone[string(r.GetUuid().GetUuid())] = true
	}
	out := slices.DeleteFunc(slices.Clone(idx), func(im *tablepb.IndexMetadata) bool { return gone[string(im.GetUuid().GetUuid())] })
	return append(out, op.GetNewIndices()...)
}
