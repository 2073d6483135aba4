package lancefile

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// Structs stored whole in one column.
//
// A struct whose field metadata asks for packing (lance-encoding:packed) is
// written as one column instead of one per member. With fixed-width members
// only, each value is its members' bytes back to back (PackedStruct, in
// mini-block pages, 2.1 and 2.2). With a variable-width member it goes to
// full-zip pages whose values are VariablePackedStruct rows (2.2): for each
// member, in order, either its fixed-width value or a length and that many
// bytes, compressed per value by the member's encoding (plain or FSST).
// Blob v2 descriptors are such rows too (v22_blob.go).
//
// The decoders turn both into one canonical row per value, kept as
// variable-width values for VariablePackedStruct (fixed members as their
// bytes, variable members as a u32 length and their bytes) and as
// fixed-width values for PackedStruct; leafData splits the rows into the
// members' arrays.

// packedLayout describes the values of a struct stored whole in a column.
type packedLayout struct {
	kind    valKind // kindFixed (PackedStruct) or kindVar (canonical rows)
	width   int     // kindFixed: bytes a value
	members []packedMember
	blob    bool // a blob v2 column, whose column holds descriptors
}

// packedMember is one member of a packed struct.
type packedMember struct {
	kind  valKind // kindFixed or kindVar
	width int     // kindFixed: bytes a value
}

// isStructField reports whether f is a struct.
func isStructField(f *Field) bool {
	_, ok := f.Type.(*arrow.StructType)
	return ok
}

// newPackedLayout describes struct field f stored in a column of its own.
func newPackedLayout(f *Field) (*packedLayout, error) {
	if isBlobV2(f) {
		return blobDescriptorLayout(f)
	}
	pl := &packedLayout{kind: kindFixed}
	for _, c := range f.Children {
		switch t := c.Type.(type) {
		case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType:
			pl.members = append(pl.members, packedMember{kind: kindVar})
			pl.kind = kindVar
		case *arrow.BooleanType:
			return nil, unsupportedf("packed struct %q has a boolean member %q", f.Name, c.Name)
		case arrow.FixedWidthDataType:
			if t.BitWidth()%8 != 0 {
				return nil, unsupportedf("packed struct %q has a member %q of type %v", f.Name, c.Name, c.Type)
			}
			pl.members = append(pl.members, packedMember{kind: kindFixed, width: t.BitWidth() / 8})
			pl.width += t.BitWidth() / 8
		default:
			return nil, unsupportedf("packed struct %q has a member %q of type %v", f.Name, c.Name, c.Type)
		}
	}
	if len(pl.members) == 0 {
		return nil, unsupportedf("packed struct %q has no members", f.Name)
	}
	if pl.kind == kindVar {
		pl.width = 0
	}
	return pl, nil
}

// varPacked is a compiled VariablePackedStruct: how each member of a row is
// stored.
type varPacked struct {
	fields []vpField
}

type vpField struct {
	width int       // fixed-width member: bytes
	lenW  int       // variable-width member: bytes of its length
	fsst  fsstTable // variable-width member compressed with FSST, else nil
}

// compileVarPacked compiles a VariablePackedStruct (per-value role only).
func compileVarPacked(vps *enc21pb.VariablePackedStruct) (*codec, error) {
	vp := &varPacked{}
	for i, fe := range vps.GetFields() {
		switch l := fe.GetLayout().(type) {
		case *enc21pb.VariablePackedStruct_FieldEncoding_BitsPerValue:
			b := l.BitsPerValue
			f := fe.GetValue().GetFlat()
			if b == 0 || b%8 != 0 || b > 1<<12 || f == nil || f.GetBitsPerValue() != b || f.Data != nil {
				return nil, unsupportedf("packed struct member %d of %d bits encoded as %s", i, b, encName(fe.GetValue()))
			}
			vp.fields = append(vp.fields, vpField{width: int(b / 8)})
		case *enc21pb.VariablePackedStruct_FieldEncoding_BitsPerLength:
			b := l.BitsPerLength
			if b != 8 && b != 16 && b != 32 && b != 64 {
				return nil, unsupportedf("packed struct member %d with %d-bit lengths", i, b)
			}
			vf := vpField{lenW: int(b / 8)}
			switch c := fe.GetValue().GetCompression().(type) {
			case *enc21pb.CompressiveEncoding_Variable:
			case *enc21pb.CompressiveEncoding_Fsst:
				t, err := parseFsst(c.Fsst.GetSymbolTable())
				if err != nil {
					return nil, err
				}
				vf.fsst = t
			default:
				return nil, unsupportedf("packed struct member %d encoded as %s", i, encName(fe.GetValue()))
			}
			vp.fields = append(vp.fields, vf)
		default:
			return nil, corruptf("packed struct member %d without a layout", i)
		}
	}
	if len(vp.fields) == 0 {
		return nil, corruptf("VariablePackedStruct without members")
	}
	return &codec{kind: cVarPacked, out: kindVar, vp: vp}, nil
}

// check verifies that the page's rows have the members the field needs.
func (vp *varPacked) check(pl *packedLayout, name string) error {
	if pl == nil || pl.kind != kindVar {
		return corruptf("VariablePackedStruct values for field %q, which is not a packed struct with a variable-width member", name)
	}
	if len(vp.fields) != len(pl.members) {
		return corruptf("packed struct %q has %d members, its pages %d", name, len(pl.members), len(vp.fields))
	}
	for i, m := range pl.members {
		f := vp.fields[i]
		if (m.kind == kindFixed) != (f.width > 0) || (m.kind == kindFixed && m.width != f.width) {
			return corruptf("packed struct %q member %d stored with %d bytes a value, want %d", name, i, f.width, m.width)
		}
	}
	return nil
}

// transcode turns the stored rows of a full-zip page (raw, one value a
// visible item; empty for null items) into canonical rows appended to out.
func (vp *varPacked) transcode(raw *valBuilder, out *valBuilder) error {
	nf := len(vp.fields)
	parts := make([][]byte, raw.n*nf)
	for r := 0; r < raw.n; r++ {
		row := raw.data[raw.offs[r]:raw.offs[r+1]]
		if len(row) == 0 {
			continue // a null item: every member stays empty
		}
		at := 0
		for j, f := range vp.fields {
			if f.width > 0 {
				if f.width > len(row)-at {
					return corruptf("packed struct row %d: member %d overruns the row's %d bytes", r, j, len(row))
				}
				parts[r*nf+j] = row[at : at+f.width]
				at += f.width
				continue
			}
			if f.lenW > len(row)-at {
				return corruptf("packed struct row %d: length of member %d overruns the row's %d bytes", r, j, len(row))
			}
			l := readUint(row[at:], f.lenW)
			at += f.lenW
			if l > uint64(len(row)-at) {
				return corruptf("packed struct row %d: member %d of %d bytes overruns the row's %d bytes", r, j, l, len(row))
			}
			parts[r*nf+j] = row[at : at+int(l)]
			at += int(l)
		}
		if at != len(row) {
			return corruptf("packed struct row %d has %d bytes after its members", r, len(row)-at)
		}
	}
	for j, f := range vp.fields {
		if f.fsst == nil {
			continue
		}
		src := newValBuilder(kindVar, 0, raw.n)
		for r := 0; r < raw.n; r++ {
			src.appendVar(parts[r*nf+j])
		}
		dec := newValBuilder(kindVar, 0, raw.n)
		if err := fsstDecodeInto(f.fsst, src.data, src.offs, dec); err != nil {
			return err
		}
		for r := 0; r < raw.n; r++ {
			parts[r*nf+j] = dec.data[dec.offs[r]:dec.offs[r+1]]
		}
	}
	var lenBuf [4]byte
	for r := 0; r < raw.n; r++ {
		for j, f := range vp.fields {
			p := parts[r*nf+j]
			if f.width > 0 {
				if p == nil {
					out.data = append(out.data, make([]byte, f.width)...)
				} else {
					out.data = append(out.data, p...)
				}
				continue
			}
			if uint64(len(p)) > 1<<32-1 {
				return unsupportedf("packed struct member of %d bytes", len(p))
			}
			binary.LittleEndian.PutUint32(lenBuf[:], uint32(len(p)))
			out.data = append(out.data, lenBuf[:]...)
			out.data = append(out.data, p...)
		}
		out.offs = append(out.offs, int64(len(out.data)))
		out.n++
	}
	return nil
}

// checkPackedStruct verifies that PackedStruct values fit the field.
func checkPackedStruct(li *leafInfo, c *codec) error {
	pl := li.packed
	if pl == nil || pl.kind != kindFixed {
		return corruptf("PackedStruct values for field %q, which is not a packed struct of fixed-width members", li.field.Name)
	}
	if len(c.packedWidths) != len(pl.members) {
		return corruptf("packed struct %q has %d members, its pages %d", li.field.Name, len(pl.members), len(c.packedWidths))
	}
	for i, m := range pl.members {
		if c.packedWidths[i] != m.width {
			return corruptf("packed struct %q member %d stored with %d bytes a value, want %d", li.field.Name, i, c.packedWidths[i], m.width)
		}
	}
	return nil
}

// packedData builds the struct array of a packed struct leaf from its
// values: canonical rows or fixed-width packed values.
func packedData(li *leafInfo, v *vals, valid bitmap) (arrow.ArrayData, error) {
	pl := li.packed
	n := v.n
	st, ok := li.field.Type.(*arrow.StructType)
	if !ok || len(li.field.Children) != len(pl.members) {
		return nil, corruptf("packed struct %q does not match its type %v", li.field.Name, li.field.Type)
	}
	builders := make([]*valBuilder, len(pl.members))
	for j, m := range pl.members {
		builders[j] = newValBuilder(m.kind, m.width, n)
	}
	switch {
	case v.zero:
		for j, m := range pl.members {
			if m.kind == kindFixed {
				clear(builders[j].grow(n))
			} else {
				for range n {
					builders[j].appendVar(nil)
				}
			}
		}
	case pl.kind == kindFixed:
		if len(v.data) < n*pl.width {
			return nil, corruptf("packed struct values of %d bytes for %d rows", len(v.data), n)
		}
		off := 0
		for j, m := range pl.members {
			dst := builders[j].grow(n)
			for r := 0; r < n; r++ {
				copy(dst[r*m.width:(r+1)*m.width], v.data[r*pl.width+off:])
			}
			off += m.width
		}
	default:
		for r := 0; r < n; r++ {
			row := v.data[v.offs[r]:v.offs[r+1]]
			at := 0
			for j, m := range pl.members {
				if m.kind == kindFixed {
					if m.width > len(row)-at {
						return nil, corruptf("packed struct row of %d bytes", len(row))
					}
					copy(builders[j].grow(1), row[at:at+m.width])
					at += m.width
					continue
				}
				if 4 > len(row)-at {
					return nil, corruptf("packed struct row of %d bytes", len(row))
				}
				l := int(binary.LittleEndian.Uint32(row[at:]))
				at += 4
				if l > len(row)-at {
					return nil, corruptf("packed struct row of %d bytes", len(row))
				}
				builders[j].appendVar(row[at : at+l])
				at += l
			}
		}
	}
	children := make([]arrow.ArrayData, len(pl.members))
	for j, c := range li.field.Children {
		ci := &leafInfo{field: c, kind: pl.members[j].kind, width: pl.members[j].width}
		mv := builders[j].finish()
		cd, err := leafData(ci, &mv, bitmap{})
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
