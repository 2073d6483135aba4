package lancefile

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/store"
)

// Builders for hand-made 2.0 pages and files.

func ae20(e any) *enc20pb.ArrayEncoding {
	switch v := e.(type) {
	case *enc20pb.Flat:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Flat{Flat: v}}
	case *enc20pb.Nullable:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Nullable{Nullable: v}}
	case *enc20pb.Binary:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Binary{Binary: v}}
	case *enc20pb.Dictionary:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Dictionary{Dictionary: v}}
	case *enc20pb.List:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_List{List: v}}
	case *enc20pb.FixedSizeList:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_FixedSizeList{FixedSizeList: v}}
	case *enc20pb.Bitpacked:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Bitpacked{Bitpacked: v}}
	case *enc20pb.BitpackedForNonNeg:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_BitpackedForNonNeg{BitpackedForNonNeg: v}}
	case *enc20pb.Constant:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Constant{Constant: v}}
	case *enc20pb.Fsst:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Fsst{Fsst: v}}
	case *enc20pb.SimpleStruct:
		return &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_Struct{Struct: v}}
	}
	panic("ae20: unknown encoding")
}

func flatE(bits uint64, buf uint32) *enc20pb.ArrayEncoding {
	return ae20(&enc20pb.Flat{BitsPerValue: bits, Buffer: &enc20pb.Buffer{BufferIndex: buf}})
}

func noNullsE(v *enc20pb.ArrayEncoding) *enc20pb.ArrayEncoding {
	return ae20(&enc20pb.Nullable{Nullability: &enc20pb.Nullable_NoNulls{NoNulls: &enc20pb.Nullable_NoNull{Values: v}}})
}

func someNullsE(valid, v *enc20pb.ArrayEncoding) *enc20pb.ArrayEncoding {
	return ae20(&enc20pb.Nullable{Nullability: &enc20pb.Nullable_SomeNulls{SomeNulls: &enc20pb.Nullable_SomeNull{Validity: valid, Values: v}}})
}

func allNullsE() *enc20pb.ArrayEncoding {
	return ae20(&enc20pb.Nullable{Nullability: &enc20pb.Nullable_AllNulls{AllNulls: &enc20pb.Nullable_AllNull{}}})
}

// binaryE is the layout lance writes for strings: u64 end offsets in
// buffer idx, bytes in buffer idx+1.
func binaryE(idx uint32, adj uint64) *enc20pb.ArrayEncoding {
	return ae20(&enc20pb.Binary{Indices: noNullsE(flatE(64, idx)), Bytes: flatE(8, idx+1), NullAdjustment: adj})
}

func listE(adj, items uint64) *enc20pb.ArrayEncoding {
	return ae20(&enc20pb.List{Offsets: noNullsE(flatE(64, 0)), NullOffsetAdjustment: adj, NumItems: items})
}

func le64(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

func le32(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func le16(vs ...uint16) []byte {
	b := make([]byte, 2*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

// bitsLSB packs booleans LSB first.
func bitsLSB(vs ...bool) []byte {
	b := make([]byte, (len(vs)+7)/8)
	for i, v := range vs {
		if v {
			b[i/8] |= 1 << (i % 8)
		}
	}
	return b
}

type testPage20 struct {
	rows uint64
	enc  *enc20pb.ArrayEncoding
	bufs [][]byte
}

func anyBytes20(t testing.TB, enc *enc20pb.ArrayEncoding) []byte {
	t.Helper()
	v, err := enc.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	a := &wktpb.Any{TypeUrl: "/lance.encodings.ArrayEncoding", Value: v}
	b, err := a.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildFile20 lays out a 2.0 container (footer 0.3) holding the given
// columns, with colBufs as column-level buffers of column 0 and no global
// buffers. Buffers are 64-byte aligned as lance writes them.
func buildFile20(t testing.TB, cols [][]testPage20, colBufs ...[]byte) []byte {
	t.Helper()
	var out []byte
	put := func(b []byte) (off, size uint64) {
		for len(out)%64 != 0 {
			out = append(out, 0x48)
		}
		off = uint64(len(out))
		out = append(out, b...)
		return off, uint64(len(b))
	}
	var metas []*file2pb.ColumnMetadata
	for ci, pages := range cols {
		cm := &file2pb.ColumnMetadata{Encoding: &file2pb.Encoding{Location: &file2pb.Encoding_Direct{Direct: &file2pb.DirectEncoding{Encoding: []byte{0x0a, 0x00}}}}}
		if ci == 0 {
			for _, b := range colBufs {
				o, s := put(b)
				cm.BufferOffsets = append(cm.BufferOffsets, o)
				cm.BufferSizes = append(cm.BufferSizes, s)
			}
		}
		for _, p := range pages {
			pg := &file2pb.ColumnMetadata_Page{Length: p.rows, Encoding: &file2pb.Encoding{Location: &file2pb.Encoding_Direct{
				Direct: &file2pb.DirectEncoding{Encoding: anyBytes20(t, p.enc)}}}}
			for _, b := range p.bufs {
				o, s := put(b)
				pg.BufferOffsets = append(pg.BufferOffsets, o)
				pg.BufferSizes = append(pg.BufferSizes, s)
			}
			cm.Pages = append(cm.Pages, pg)
		}
		metas = append(metas, cm)
	}
	colMetaStart := uint64(len(out))
	var cmo []byte
	for _, cm := range metas {
		b, err := cm.MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		cmo = binary.LittleEndian.AppendUint64(cmo, uint64(len(out)))
		cmo = binary.LittleEndian.AppendUint64(cmo, uint64(len(b)))
		out = append(out, b...)
	}
	cmoStart := uint64(len(out))
	out = append(out, cmo...)
	gboStart := uint64(len(out))
	out = binary.LittleEndian.AppendUint64(out, colMetaStart)
	out = binary.LittleEndian.AppendUint64(out, cmoStart)
	out = binary.LittleEndian.AppendUint64(out, gboStart)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(cols)))
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = binary.LittleEndian.AppendUint16(out, 3)
	return append(out, "LANC"...)
}

// schema20 builds a schema from (id, parent, name, logical type) rows.
func schema20(t testing.TB, rows ...[4]any) *Schema {
	t.Helper()
	var pf []*filepb.Field
	for _, r := range rows {
		pf = append(pf, &filepb.Field{Id: int32(r[0].(int)), ParentId: int32(r[1].(int)), Name: r[2].(string), LogicalType: r[3].(string), Nullable: true})
	}
	s, err := SchemaFromProto(pf, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Walk(func(f *Field) {
		if f.Err != nil {
			t.Fatal(f.Err)
		}
	})
	return s
}

// readLog is a store that records the ranges read from it.
type readLog struct {
	*store.Memory
	mu    sync.Mutex
	reads [][2]int64
}

func (r *readLog) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	r.mu.Lock()
	r.reads = append(r.reads, [2]int64{off, off + int64(len(p))})
	r.mu.Unlock()
	return r.Memory.ReadAt(ctx, key, p, off)
}

func (r *readLog) touched(off, end int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rd := range r.reads {
		if rd[0] < end && off < rd[1] {
			return true
		}
	}
	return false
}

// newMemWith returns a memory store holding data under "f.lance".
func newMemWith(t testing.TB, data []byte) *store.Memory {
	t.Helper()
	st := store.NewMemory()
	if err := st.Put(context.Background(), "f.lance", data); err != nil {
		t.Fatal(err)
	}
	return st
}
