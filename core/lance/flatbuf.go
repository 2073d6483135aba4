package lance

import "encoding/binary"

// A minimal, bounds-checked flatbuffers reader: just what the Arrow IPC
// footer and record batch messages of a deletion file need. Every accessor
// checks its offsets against the buffer, so hostile input yields errors.
//
//	table:   i32 soffset to its vtable (vtable = table - soffset), then fields
//	vtable:  u16 vtable size, u16 table size, u16 offset per field (0 = absent)
//	refs:    u32 offset, relative to where it is stored, to a table or vector
//	vector:  u32 element count, then the elements

type fbTable struct {
	buf  []byte
	pos  int // table start in buf
	base int // offset of buf in the file, for error messages
	vt   int // vtable start
	vtn  int // vtable size in bytes
}

// fbRoot returns the root table of buf; base is buf's offset in the file.
func fbRoot(buf []byte, base int) (fbTable, error) {
	if len(buf) < 4 {
		return fbTable{}, errAt(base, "flatbuffer of %d bytes", len(buf))
	}
	return fbAt(buf, int(binary.LittleEndian.Uint32(buf)), base)
}

func fbAt(buf []byte, pos, base int) (fbTable, error) {
	if pos < 0 || pos > len(buf)-4 {
		return fbTable{}, errAt(base, "flatbuffer table offset %d outside %d bytes", pos, len(buf))
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(buf[pos:])))
	if vt < 0 || vt > len(buf)-4 {
		return fbTable{}, errAt(base+pos, "flatbuffer vtable offset %d outside %d bytes", vt, len(buf))
	}
	vtn := int(binary.LittleEndian.Uint16(buf[vt:]))
	if vtn < 4 || vtn%2 != 0 || vtn > len(buf)-vt {
		return fbTable{}, errAt(base+vt, "flatbuffer vtable of %d bytes", vtn)
	}
	return fbTable{buf: buf, pos: pos, base: base, vt: vt, vtn: vtn}, nil
}

// field returns the position of field i and whether it is present with at
// least size bytes in the buffer.
func (t fbTable) field(i, size int) (int, bool) {
	o := 4 + 2*i
	if o+2 > t.vtn {
		return 0, false
	}
	off := int(binary.LittleEndian.Uint16(t.buf[t.vt+o:]))
	if off == 0 {
		return 0, false
	}
	p := t.pos + off
	if p+size > len(t.buf) {
		return 0, false
	}
	return p, true
}

func (t fbTable) u8(i int, def uint8) uint8 {
	if p, ok := t.field(i, 1); ok {
		return t.buf[p]
	}
	return def
}

func (t fbTable) i32(i int, def int32) int32 {
	if p, ok := t.field(i, 4); ok {
		return int32(binary.LittleEndian.Uint32(t.buf[p:]))
	}
	return def
}

func (t fbTable) i64(i int, def int64) int64 {
	if p, ok := t.field(i, 8); ok {
		return int64(binary.LittleEndian.Uint64(t.buf[p:]))
	}
	return def
}

// ref follows the u32 offset stored in field i.
func (t fbTable) ref(i int) (int, bool, error) {
	p, ok := t.field(i, 4)
	if !ok {
		return 0, false, nil
	}
	target := p + int(binary.LittleEndian.Uint32(t.buf[p:]))
	if target < 0 || target > len(t.buf)-4 {
		return 0, true, errAt(t.base+p, "flatbuffer reference outside %d bytes", len(t.buf))
	}
	return target, true, nil
}

// table returns the sub-table in field i, which must be present.
func (t fbTable) table(i int) (fbTable, error) {
	p, ok, err := t.ref(i)
	if err != nil {
		return fbTable{}, err
	}
	if !ok {
		return fbTable{}, errAt(t.base+t.pos, "flatbuffer field %d missing", i)
	}
	return fbAt(t.buf, p, t.base)
}

// optTable returns the sub-table in field i, if present and well formed.
func (t fbTable) optTable(i int) (fbTable, bool) {
	p, ok, err := t.ref(i)
	if err != nil || !ok {
		return fbTable{}, false
	}
	s, err := fbAt(t.buf, p, t.base)
	return s, err == nil
}

type fbVector struct {
	t    fbTable
	pos  int // first element, relative to the file
	at   int // first element, in t.buf
	n    int
	size int
}

// vector returns the vector in field i, whose elements are size bytes each
// (4 for tables). An absent vector is empty.
func (t fbTable) vector(i, size int) (fbVector, error) {
	p, ok, err := t.ref(i)
	if err != nil || !ok {
		return fbVector{}, err
	}
	n := int(binary.LittleEndian.Uint32(t.buf[p:]))
	if n < 0 || n > (len(t.buf)-p-4)/size {
		return fbVector{}, errAt(t.base+p, "flatbuffer vector of %d elements outside %d bytes", n, len(t.buf))
	}
	return fbVector{t: t, pos: t.base + p + 4, at: p + 4, n: n, size: size}, nil
}

func (v fbVector) elem(i int) []byte { return v.t.buf[v.at+i*v.size : v.at+(i+1)*v.size] }

// tableAt follows the table reference in element i of a vector of tables.
func (v fbVector) tableAt(i int) (fbTable, error) {
	p := v.at + 4*i
	return fbAt(v.t.buf, p+int(binary.LittleEndian.Uint32(v.t.buf[p:])), v.t.base)
}
