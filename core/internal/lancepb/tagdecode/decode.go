package tagdecode

import (
	"errors"
	"reflect"
	"strconv"
	"unsafe"

	protobuf_go_lite "github.com/aperturerobotics/protobuf-go-lite"
)

// Unmarshal decodes the protobuf encoding b into m, which must be a non-nil
// pointer to a message type of the lancepb packages, with the semantics of
// its generated UnmarshalVT method: like it, it merges b into what m already
// holds. The errors say what is wrong with b (or that m's type cannot be
// decoded), not which file b came from.
func Unmarshal(b []byte, m any) error {
	p, err := planFor(reflect.TypeOf(m))
	if err != nil {
		return err
	}
	ptr := reflect.ValueOf(m).UnsafePointer()
	if ptr == nil {
		return errors.New("tagdecode: Unmarshal into a nil " + p.name)
	}
	return p.decode(b, ptr, 0)
}

// maxDepth bounds the nesting of messages.
const maxDepth = 10000

var (
	errTruncated = errors.New("truncated varint")
	errOverflow  = errors.New("varint of more than 64 bits")
	errTooDeep   = errors.New("messages nested more than " + strconv.Itoa(maxDepth) + " deep")
	errPastEnd   = errors.New("runs past the end")
	errPastEntry = errors.New("runs past the end of the entry")
)

// decodeError says what is wrong with the bytes of a message. Its text is
// made only when asked for, which keeps the code that returns it small.
type decodeError struct {
	_    noCompare
	msg  string // the message type
	f    *field // the field being decoded, if any
	at   int    // offset in the message, if >= 0
	wt   int    // with f: a wire type f does not take, if >= 0
	what string
	err  error
}

func (e *decodeError) Error() string {
	s := e.msg
	if e.f != nil {
		s += " field " + strconv.Itoa(int(e.f.num)) + " (" + e.f.name + ")"
	}
	if e.at >= 0 {
		s += " at byte " + strconv.Itoa(e.at)
	}
	if e.wt >= 0 {
		want := "2"
		if e.f.kind <= kBool {
			want = "0"
			if e.f.shape == shRepeated {
				want = "0 or 2"
			}
		}
		s += ": wire type " + strconv.Itoa(e.wt) + ", want " + want
	}
	if e.what != "" {
		s += ": " + e.what
	}
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}

func (e *decodeError) Unwrap() error { return e.err }

// The error constructors stay out of line (go:noinline): they are off the
// paths that decode, and each inlined copy would cost code size.
//
//go:noinline
func (p *plan) errAt(at int, what string, err error) error {
	return &decodeError{msg: p.name, at: at, wt: -1, what: what, err: err}
}

//go:noinline
func (f *field) err(p *plan, err error) error {
	return &decodeError{msg: p.name, f: f, at: -1, wt: -1, err: err}
}

//go:noinline
func (f *field) wireErr(p *plan, wt int) error {
	return &decodeError{msg: p.name, f: f, at: -1, wt: wt}
}

// pathError is an error in the message held by a field: "field: error".
type pathError struct {
	_    noCompare
	name string
	err  error
}

func (e *pathError) Error() string { return e.name + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// lengthError is a length that runs past the end of the bytes.
type lengthError struct {
	_    noCompare
	n    uint64
	left int
}

func (e *lengthError) Error() string {
	return "length " + strconv.FormatUint(e.n, 10) + " runs past the end (" + strconv.Itoa(e.left) + " bytes left)"
}

// varint reads the varint at b[i:] and returns it and the index after it.
func varint(b []byte, i int) (uint64, int, error) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1, nil
	}
	return varintSlow(b, i)
}

// varintSlow is varint for values of more than one byte. Like the generated
// code, it takes a tenth byte of 0 or 1 and refuses any other.
func varintSlow(b []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); shift < 63; shift += 7 {
		if i >= len(b) {
			return 0, 0, errTruncated
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
	if i >= len(b) {
		return 0, 0, errTruncated
	}
	if b[i] > 1 {
		return 0, 0, errOverflow
	}
	return v | uint64(b[i])<<63, i + 1, nil
}

// readLen reads the length prefix at b[i:] and returns the bounds of the
// bytes it announces, which must lie within b.
func readLen(b []byte, i int) (start, end int, err error) {
	l, i, err := varint(b, i)
	if err != nil {
		return 0, 0, err
	}
	if l > uint64(len(b)-i) {
		return 0, 0, &lengthError{n: l, left: len(b) - i}
	}
	return i, i + int(l), nil
}

func (p *plan) alloc() unsafe.Pointer { return reflect.New(p.typ).UnsafePointer() }

// decode decodes the message b into m, a *p.typ; depth counts the messages
// that enclose it.
func (p *plan) decode(b []byte, m unsafe.Pointer, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	for i := 0; i < len(b); {
		start := i
		var tag uint64
		var err error
		if tag, i, err = varint(b, i); err != nil {
			return p.errAt(start, "field tag", err)
		}
		// The generated code takes the field number as an int32, so that
		// numbers of 2^31 and above wrap around.
		wt, num := int(tag&7), int32(tag>>3)
		if wt == 4 {
			return p.errAt(start, "end-group tag outside a group", nil)
		}
		if num <= 0 {
			return p.errAt(start, "invalid field number", nil)
		}
		if f := p.field(num); f != nil {
			i, err = f.decode(p, b, i, wt, m, depth)
		} else {
			i, err = p.skip(b, start, m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// skip skips the unknown field at b[start:] the way the generated code does
// (with the same helper), appends it to m's unknown fields and returns the
// index after it.
func (p *plan) skip(b []byte, start int, m unsafe.Pointer) (int, error) {
	n, err := protobuf_go_lite.Skip(b[start:])
	if err == nil && (n <= 0 || n > len(b)-start) {
		err = errPastEnd // a fixed-size value or a length cut short
	}
	if err != nil {
		return 0, p.errAt(start, "unknown field", err)
	}
	uf := (*[]byte)(unsafe.Add(m, p.unknownOff))
	*uf = append(*uf, b[start:start+n]...)
	return start + n, nil
}

// decode decodes the value of f at b[i:], whose tag had wire type wt, into
// the message m, and returns the index after it.
func (f *field) decode(p *plan, b []byte, i, wt int, m unsafe.Pointer, depth int) (int, error) {
	fp := unsafe.Add(m, f.off)
	if f.kind <= kBool {
		switch {
		case wt == 0:
		case wt == 2 && f.shape == shRepeated:
			return f.packed(p, b, i, fp)
		default:
			return 0, f.wireErr(p, wt)
		}
		v, i, err := varint(b, i)
		if err != nil {
			return 0, f.err(p, err)
		}
		switch f.shape {
		case shScalar:
			storeVarint(f.kind, fp, v)
		case shOptional:
			*(*unsafe.Pointer)(fp) = newVarint(f.kind, v)
		case shRepeated:
			appendVarint(f.kind, fp, v)
		case shOneof:
			w := reflect.New(f.wrap).UnsafePointer()
			storeVarint(f.kind, unsafe.Add(w, f.innerOff), v)
			f.setOneof(fp, w)
		}
		return i, nil
	}
	if wt != 2 {
		return 0, f.wireErr(p, wt)
	}
	start, end, err := readLen(b, i)
	if err != nil {
		return 0, f.err(p, err)
	}
	data := b[start:end]
	switch f.kind {
	case kString:
		s := string(data)
		switch f.shape {
		case shScalar:
			*(*string)(fp) = s
		case shOptional:
			ps := new(string)
			*ps = s
			*(*unsafe.Pointer)(fp) = unsafe.Pointer(ps)
		case shRepeated:
			ss := (*[]string)(fp)
			*ss = append(*ss, s)
		case shOneof:
			w := reflect.New(f.wrap).UnsafePointer()
			*(*string)(unsafe.Add(w, f.innerOff)) = s
			f.setOneof(fp, w)
		}
	case kBytes:
		switch f.shape {
		case shScalar:
			// As generated: reuse the field's array; never nil once set.
			bp := (*[]byte)(fp)
			nb := append((*bp)[:0], data...)
			if nb == nil {
				nb = []byte{}
			}
			*bp = nb
		case shRepeated:
			bs := (*[][]byte)(fp)
			*bs = append(*bs, clone(data))
		case shOneof:
			w := reflect.New(f.wrap).UnsafePointer()
			*(*[]byte)(unsafe.Add(w, f.innerOff)) = clone(data)
			f.setOneof(fp, w)
		}
	case kMessage:
		switch f.shape {
		case shMessage:
			sp := (*unsafe.Pointer)(fp)
			if *sp == nil {
				*sp = f.sub.alloc()
			}
			err = f.sub.decode(data, *sp, depth+1)
		case shRepMessage:
			n := f.sub.alloc()
			s := (*[]unsafe.Pointer)(fp)
			*s = append(*s, n)
			err = f.sub.decode(data, n, depth+1)
		case shOneof:
			// A second occurrence of the member the oneof holds merges
			// into it; any other replaces what the oneof holds.
			if words := (*[2]unsafe.Pointer)(fp); words[0] == f.tab && words[1] != nil {
				ip := (*unsafe.Pointer)(unsafe.Add(words[1], f.innerOff))
				if *ip == nil {
					*ip = f.sub.alloc()
				}
				err = f.sub.decode(data, *ip, depth+1)
			} else {
				n := f.sub.alloc()
				if err = f.sub.decode(data, n, depth+1); err == nil {
					w := reflect.New(f.wrap).UnsafePointer()
					*(*unsafe.Pointer)(unsafe.Add(w, f.innerOff)) = n
					f.setOneof(fp, w)
				}
			}
		case shMap:
			// The entry's key and value are read from b, not data: the
			// generated code checks their lengths against the end of the
			// enclosing message only.
			err = f.m.decode(b, start, end, fp, depth)
		}
		if err != nil {
			return 0, &pathError{name: f.name, err: err}
		}
	}
	return end, nil
}

// clone returns a copy of b that is not nil.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// setOneof stores the wrapper w (of f's member type) in the oneof field at fp.
func (f *field) setOneof(fp, w unsafe.Pointer) {
	*(*[2]unsafe.Pointer)(fp) = [2]unsafe.Pointer{f.tab, w}
}

// packed decodes the packed varints of f at b[i:]. As in the generated code,
// the last varint may run past the announced length (up to the end of b),
// and decoding goes on after it.
func (f *field) packed(p *plan, b []byte, i int, fp unsafe.Pointer) (int, error) {
	start, end, err := readLen(b, i)
	if err != nil {
		return 0, f.err(p, err)
	}
	reserve(f.kind, fp, b[start:end])
	for i = start; i < end; {
		var v uint64
		if v, i, err = varint(b, i); err != nil {
			return 0, f.err(p, err)
		}
		appendVarint(f.kind, fp, v)
	}
	return i, nil
}

// reserve makes room, in the slice at fp if it is empty, for the varints in
// data (one per byte below 0x80), as the generated code does.
func reserve(k kind, fp unsafe.Pointer, data []byte) {
	n := 0
	for _, c := range data {
		if c < 0x80 {
			n++
		}
	}
	if n == 0 {
		return
	}
	switch k {
	case kVarint64:
		if s := (*[]uint64)(fp); len(*s) == 0 {
			*s = make([]uint64, 0, n)
		}
	case kVarint32:
		if s := (*[]uint32)(fp); len(*s) == 0 {
			*s = make([]uint32, 0, n)
		}
	case kBool:
		if s := (*[]bool)(fp); len(*s) == 0 {
			*s = make([]bool, 0, n)
		}
	}
}

func storeVarint(k kind, p unsafe.Pointer, v uint64) {
	switch k {
	case kVarint64:
		*(*uint64)(p) = v
	case kVarint32:
		*(*uint32)(p) = uint32(v)
	case kBool:
		*(*bool)(p) = v != 0
	}
}

func newVarint(k kind, v uint64) unsafe.Pointer {
	switch k {
	case kVarint64:
		x := new(uint64)
		*x = v
		return unsafe.Pointer(x)
	case kVarint32:
		x := new(uint32)
		*x = uint32(v)
		return unsafe.Pointer(x)
	default:
		x := new(bool)
		*x = v != 0
		return unsafe.Pointer(x)
	}
}

func appendVarint(k kind, p unsafe.Pointer, v uint64) {
	switch k {
	case kVarint64:
		s := (*[]uint64)(p)
		*s = append(*s, v)
	case kVarint32:
		s := (*[]uint32)(p)
		*s = append(*s, uint32(v))
	case kBool:
		s := (*[]bool)(p)
		*s = append(*s, v != 0)
	}
}

// value holds a map key or value while its entry is decoded, in the field
// of its kind.
type value struct {
	u32 uint32 // kVarint32
	b   bool   // kBool
	u   uint64 // kVarint64
	s   string
	by  []byte
	p   unsafe.Pointer // kMessage
}

// ptr returns the address of the field of v that holds a value of kind k.
func (v *value) ptr(k kind) unsafe.Pointer {
	switch k {
	case kVarint32:
		return unsafe.Pointer(&v.u32)
	case kBool:
		return unsafe.Pointer(&v.b)
	case kVarint64:
		return unsafe.Pointer(&v.u)
	case kString:
		return unsafe.Pointer(&v.s)
	case kBytes:
		return unsafe.Pointer(&v.by)
	default:
		return unsafe.Pointer(&v.p)
	}
}

// decode decodes the map entry b[i:end] into the map at fp. As in the
// generated code, the key and value fields are recognised by number alone,
// whatever their wire type, their lengths are checked against the end of b
// only, and a missing key or value is the zero value (a nil message).
func (m *mapField) decode(b []byte, i, end int, fp unsafe.Pointer, depth int) error {
	var key, val value
	for i < end {
		entryStart := i
		tag, j, err := varint(b, i)
		if err != nil {
			return &pathError{name: "map entry", err: err}
		}
		i = j
		switch int32(tag >> 3) {
		case 1:
			i, err = m.value(m.key, nil, &key, b, i, depth)
		case 2:
			i, err = m.value(m.val, m.valSub, &val, b, i, depth)
		default:
			var n int
			if n, err = protobuf_go_lite.Skip(b[entryStart:]); err == nil && (n <= 0 || n > end-entryStart) {
				err = errPastEntry
			}
			i = entryStart + n
		}
		if err != nil {
			return &pathError{name: "map entry", err: err}
		}
	}
	mv := reflect.NewAt(m.typ, fp).Elem()
	if mv.IsNil() {
		mv.Set(reflect.MakeMap(m.typ))
	}
	mv.SetMapIndex(reflect.NewAt(m.keyT, key.ptr(m.key)).Elem(), reflect.NewAt(m.valT, val.ptr(m.val)).Elem())
	return nil
}

// value decodes a map key or value of kind k at b[i:] into v.
func (m *mapField) value(k kind, sub *plan, v *value, b []byte, i, depth int) (int, error) {
	if k <= kBool {
		u, i, err := varint(b, i)
		v.u, v.u32, v.b = u, uint32(u), u != 0
		return i, err
	}
	start, end, err := readLen(b, i)
	if err != nil {
		return 0, err
	}
	switch k {
	case kString:
		v.s = string(b[start:end])
	case kBytes:
		v.by = clone(b[start:end])
	case kMessage:
		v.p = sub.alloc()
		if err := sub.decode(b[start:end], v.p, depth+1); err != nil {
			return 0, err
		}
	}
	return end, nil
}
