package tagdecode

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// shape is how a field holds its values.
type shape uint8

const (
	shScalar     shape = iota // a value: T (string, []byte and varint kinds)
	shOptional                // a proto3 optional value: *T
	shRepeated                // []T of a varint kind, string or []byte
	shMessage                 // *M
	shRepMessage              // []*M
	shMap                     // map[K]V
	shOneof                   // a member of a oneof: the interface field holds *Wrapper{T}
)

// kind is how one value is encoded and stored.
type kind uint8

const (
	kVarint64 kind = iota // uint64 or int64 from a varint
	kVarint32             // uint32, int32 or an enum: the varint truncated to 32 bits
	kBool                 // bool: the varint is not zero
	kString               // string: length-delimited bytes, copied
	kBytes                // []byte: length-delimited bytes, copied
	kMessage              // a message: length-delimited, decoded by its plan
)

// noCompare makes a struct type incomparable, which spares the binary the
// equality function the compiler would write for it.
type noCompare [0]func()

// plan is how to decode one message type: its fields by number.
type plan struct {
	_          noCompare
	name       string       // the Go type, e.g. tablepb.Manifest, for errors
	typ        reflect.Type // the struct type
	unknownOff uintptr      // offset of the unknownFields []byte field
	byNum      []*field     // the fields by number
	err        error        // why the type cannot be decoded (cached plans only)
}

// maxFieldNumber bounds the field numbers of a planned type, which index
// plan.byNum (lancepb's are below 200).
const maxFieldNumber = 4096

// field is how to decode the values of one field number.
type field struct {
	_     noCompare
	num   int32
	name  string // the proto field name, for errors
	shape shape
	kind  kind
	off   uintptr // offset of the struct field in the message
	sub   *plan   // kMessage: the message type's plan

	// Oneof members: the wrapper type, the offset of its one field and the
	// first word of an interface value of the oneof's type that holds a
	// *wrapper (the interface's method table for that type), which both
	// tells whether the oneof holds this member and sets it.
	wrap     reflect.Type
	innerOff uintptr
	tab      unsafe.Pointer

	m *mapField // shMap
}

// mapField is how to decode the entries of a map field.
type mapField struct {
	_               noCompare
	typ, keyT, valT reflect.Type
	key, val        kind
	valSub          *plan // val == kMessage: the value message's plan
}

func (p *plan) field(num int32) *field {
	if uint32(num) < uint32(len(p.byNum)) {
		return p.byNum[num]
	}
	return nil
}

var (
	cache   sync.Map // reflect.Type of *M → *plan (with err set when M cannot be decoded)
	buildMu sync.Mutex
	built   = map[reflect.Type]*plan{} // struct type → complete plan; guarded by buildMu
)

// planFor returns the plan of the message type t (a pointer type).
func planFor(t reflect.Type) (*plan, error) {
	v, ok := cache.Load(t)
	if !ok {
		v = buildPlan(t)
	}
	p := v.(*plan)
	if p.err != nil {
		return nil, p.err
	}
	return p, nil
}

func buildPlan(t reflect.Type) any {
	buildMu.Lock()
	defer buildMu.Unlock()
	if v, ok := cache.Load(t); ok {
		return v
	}
	var p *plan
	var err error
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		err = errors.New("not a pointer to a message struct")
	} else {
		b := &builder{pending: map[reflect.Type]*plan{}}
		if p, err = b.plan(t.Elem()); err == nil {
			for st, bp := range b.pending {
				built[st] = bp
			}
		}
	}
	if err != nil {
		name := "nil"
		if t != nil {
			name = t.String()
		}
		p = &plan{err: errors.New("tagdecode: cannot decode into " + name + ": " + err.Error())}
	}
	cache.Store(t, p)
	return p
}

// builder builds the plans of a message type and of the types it holds; its
// plans join the shared ones only when all of them are complete.
type builder struct {
	pending map[reflect.Type]*plan
}

var bytesType = reflect.TypeFor[[]byte]()

// fail returns the error "where: what".
func fail(where, what string) error { return errors.New(where + ": " + what) }

func (b *builder) plan(st reflect.Type) (*plan, error) {
	if p := built[st]; p != nil {
		return p, nil
	}
	if p := b.pending[st]; p != nil {
		return p, nil // being built: a recursive message type
	}
	p := &plan{name: st.String(), typ: st}
	b.pending[st] = p
	hasUnknown := false
	var fields []*field
	for i := range st.NumField() {
		sf := st.Field(i)
		where := p.name + "." + sf.Name
		if sf.Name == "unknownFields" && sf.Type == bytesType {
			p.unknownOff, hasUnknown = sf.Offset, true
			continue
		}
		if !sf.IsExported() {
			return nil, fail(where, "unexpected unexported field")
		}
		if _, ok := sf.Tag.Lookup("protobuf_oneof"); ok {
			fs, err := b.oneof(where, sf)
			if err != nil {
				return nil, err
			}
			fields = append(fields, fs...)
			continue
		}
		f, err := b.field(sf.Type, sf.Tag.Get("protobuf"), false)
		if err == nil && f.shape == shMap {
			f.m, err = b.mapField(sf)
		}
		if err != nil {
			return nil, fail(where, err.Error())
		}
		f.off = sf.Offset
		fields = append(fields, f)
	}
	if !hasUnknown {
		return nil, fail(p.name, "no unknownFields []byte field: not a generated message")
	}
	n := int32(0)
	for _, f := range fields {
		n = max(n, f.num+1)
	}
	p.byNum = make([]*field, n)
	for _, f := range fields {
		if p.byNum[f.num] != nil {
			return nil, fail(p.name, "field number "+strconv.Itoa(int(f.num))+" used twice")
		}
		p.byNum[f.num] = f
	}
	return p, nil
}

// field parses the protobuf struct tag ("varint,3,opt,name=version,proto3")
// of a field of Go type t. With single, t is the type of one value: the one
// field of a oneof wrapper, or a map's key or value.
func (b *builder) field(t reflect.Type, tag string, single bool) (*field, error) {
	if tag == "" {
		return nil, errors.New("no protobuf tag")
	}
	bad := func(what string) (*field, error) {
		return nil, errors.New("protobuf tag \"" + tag + "\" on " + t.String() + ": " + what)
	}
	parts := strings.Split(tag, ",")
	if len(parts) < 3 {
		return bad("malformed")
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil || num <= 0 || num > maxFieldNumber {
		return bad("unsupported field number")
	}
	f := &field{num: int32(num)}
	for _, o := range parts[3:] {
		if n, ok := strings.CutPrefix(o, "name="); ok {
			f.name = n
		}
	}
	// Required fields (proto2) would need the presence checks of the
	// generated code; groups and fixed-size or zigzag encodings do not occur
	// in lancepb.
	rep := parts[2] == "rep"
	if !rep && parts[2] != "opt" {
		return bad("unsupported cardinality")
	}
	varint := parts[0] == "varint"
	if !varint && parts[0] != "bytes" {
		return bad("unsupported encoding")
	}
	elem := t // the type of one value
	switch {
	case single:
		f.shape = shOneof
	case t.Kind() == reflect.Map:
		f.shape, f.kind = shMap, kMessage
		if !rep || varint {
			return bad("mismatch")
		}
		return f, nil
	case t.Kind() == reflect.Pointer && t.Elem().Kind() != reflect.Struct:
		f.shape, elem = shOptional, t.Elem()
	case t.Kind() == reflect.Pointer:
		f.shape = shMessage
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Pointer:
		f.shape, elem = shRepMessage, t.Elem()
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		f.shape, elem = shRepeated, t.Elem()
	default:
		f.shape = shScalar
	}
	if f.kind, f.sub, err = b.kind(elem); err != nil {
		return nil, err
	}
	if rep != (f.shape == shRepeated || f.shape == shRepMessage) || (f.kind <= kBool) != varint ||
		(f.kind == kMessage && f.shape == shOptional) {
		return bad("mismatch")
	}
	return f, nil
}

// kind returns how a value of Go type t is stored (and for messages, t
// being *M, M's plan).
func (b *builder) kind(t reflect.Type) (kind, *plan, error) {
	switch t.Kind() {
	case reflect.Uint64, reflect.Int64:
		return kVarint64, nil, nil
	case reflect.Uint32, reflect.Int32:
		return kVarint32, nil, nil
	case reflect.Bool:
		return kBool, nil, nil
	case reflect.String:
		return kString, nil, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return kBytes, nil, nil
		}
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			sub, err := b.plan(t.Elem())
			return kMessage, sub, err
		}
	}
	return 0, nil, errors.New("unsupported Go type " + t.String())
}

func (b *builder) mapField(sf reflect.StructField) (*mapField, error) {
	t := sf.Type
	m := &mapField{typ: t, keyT: t.Key(), valT: t.Elem()}
	kf, err := b.field(m.keyT, sf.Tag.Get("protobuf_key"), true)
	if err != nil {
		return nil, err
	}
	vf, err := b.field(m.valT, sf.Tag.Get("protobuf_val"), true)
	if err != nil {
		return nil, err
	}
	if kf.num != 1 || vf.num != 2 || kf.kind >= kBytes {
		return nil, errors.New("unsupported map key or value")
	}
	m.key, m.val, m.valSub = kf.kind, vf.kind, vf.sub
	return m, nil
}

// oneof returns the fields of the members of the oneof field sf, one for
// each wrapper type whose pointer implements the field's interface type.
func (b *builder) oneof(where string, sf reflect.StructField) ([]*field, error) {
	it := sf.Type
	if it.Kind() != reflect.Interface || it.NumMethod() == 0 {
		return nil, fail(where, "oneof field of type "+it.String())
	}
	var fs []*field
	for _, pkg := range wrappers {
		for _, w := range pkg {
			wt := reflect.TypeOf(w)
			if !wt.Implements(it) {
				continue
			}
			ws := wt.Elem()
			if ws.Kind() != reflect.Struct || ws.NumField() != 1 {
				return nil, fail(where, "oneof wrapper "+wt.String()+" is not a struct of one field")
			}
			inner := ws.Field(0)
			f, err := b.field(inner.Type, inner.Tag.Get("protobuf"), true)
			if err != nil {
				return nil, fail(where, err.Error())
			}
			f.off, f.wrap, f.innerOff = sf.Offset, ws, inner.Offset
			// The method table word: store a *wrapper in an interface of
			// the field's type, read the words back, check the layout.
			holder, wp := reflect.New(it), reflect.New(ws)
			holder.Elem().Set(wp)
			words := (*[2]unsafe.Pointer)(holder.UnsafePointer())
			if words[0] == nil || words[1] != wp.UnsafePointer() {
				return nil, fail(where, "unexpected interface layout")
			}
			f.tab = words[0]
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return nil, fail(where, "no oneof wrapper type implements "+it.String()+" (is oneofs.go up to date?)")
	}
	return fs, nil
}
