package tagdecode

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

var seedFlag = flag.Uint64("tagdecode.seed", 0, "seed of TestRandomMessages (0: from the clock)")

// TestRandomMessages builds random messages of every message type (random
// scalars, strings and bytes, nested and repeated messages, oneofs, maps,
// optional fields and unknown fields of every wire type), encodes them
// with the generated MarshalVT and with an encoder of its own that writes
// the same message the ways protobuf allows (repeated varints unpacked or
// packed in several runs, a message field in several occurrences that
// merge, earlier values a later one overrides, map entries without key or
// value or with their fields out of order, fields in any order, field
// numbers and varints in long forms), and checks that both decoders give
// the message back.
func TestRandomMessages(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -tagdecode.seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0x7a6))
	g := newRandGen(r)
	n := 100
	if testing.Short() {
		n = 20
	}
	for _, typ := range allMessageTypes() {
		for i := range n {
			orig := g.message(typ, 0)
			m := orig.Interface().(vtMessage)
			b, err := m.MarshalVT()
			if err != nil {
				t.Fatalf("%v: MarshalVT: %v", typ, err)
			}
			checkEncoding(t, fmt.Sprintf("%v #%d, MarshalVT", typ, i), m, b)
			e := &encoder{g: g, messy: false}
			if own := e.encode(orig.Elem()); len(own) != len(b) {
				// The plain encoding is MarshalVT's but for the order of
				// fields and map entries: the lengths must match.
				t.Fatalf("%v #%d: the test encoder writes %d bytes, MarshalVT %d", typ, i, len(own), len(b))
			}
			e.messy = true
			for j := range 3 {
				checkEncoding(t, fmt.Sprintf("%v #%d, messy encoding %d", typ, i, j), m, e.encode(orig.Elem()))
			}
		}
	}
}

// checkEncoding checks that both decoders decode b, an encoding of m, to m.
func checkEncoding(t *testing.T, what string, m vtMessage, b []byte) {
	t.Helper()
	typ := reflect.TypeOf(m).Elem()
	gen, tag, ok, err := compareDecoders(typ, b)
	if err != nil {
		t.Fatalf("%s: %v\ninput %x", what, err, b)
	}
	if !ok {
		t.Fatalf("%s: both decoders refuse it\ninput %x", what, b)
	}
	if !m.EqualMessageVT(gen) {
		t.Fatalf("%s: the generated decoder does not give the message back (a test bug): %s\ninput %x", what, firstDiff(m, gen), b)
	}
	if !m.EqualMessageVT(tag) || !tag.EqualMessageVT(m) {
		t.Fatalf("%s: tagdecode does not give the message back: %s\ninput %x", what, firstDiff(m, tag), b)
	}
}

// pbTag is a parsed protobuf struct tag (parsed here again, apart from the
// code under test).
type pbTag struct {
	varint bool // else length-delimited
	num    int
	oneof  bool // a oneof member, or proto3 optional (then []byte fields are present when not nil)
}

func parsePBTag(s string) pbTag {
	parts := strings.Split(s, ",")
	num, err := strconv.Atoi(parts[1])
	if err != nil {
		panic(s)
	}
	return pbTag{varint: parts[0] == "varint", num: num, oneof: slices.Contains(parts, "oneof")}
}

// randGen builds random messages.
type randGen struct {
	r        *rand.Rand
	wrappers map[reflect.Type][]reflect.Type // oneof interface → wrapper pointer types
	known    map[reflect.Type]map[int]bool   // message struct type → its field numbers
}

func newRandGen(r *rand.Rand) *randGen {
	g := &randGen{r: r, wrappers: map[reflect.Type][]reflect.Type{}, known: map[reflect.Type]map[int]bool{}}
	for _, typ := range allMessageTypes() {
		nums := map[int]bool{}
		for i := range typ.NumField() {
			sf := typ.Field(i)
			if tag, ok := sf.Tag.Lookup("protobuf"); ok {
				nums[parsePBTag(tag).num] = true
			}
			if _, ok := sf.Tag.Lookup("protobuf_oneof"); ok {
				for _, w := range allWrappers() {
					if wt := reflect.TypeOf(w); wt.Implements(sf.Type) {
						g.wrappers[sf.Type] = append(g.wrappers[sf.Type], wt)
						nums[parsePBTag(wt.Elem().Field(0).Tag.Get("protobuf")).num] = true
					}
				}
			}
		}
		g.known[typ] = nums
	}
	return g
}

const maxRandDepth = 4

// message returns a random *typ.
func (g *randGen) message(typ reflect.Type, depth int) reflect.Value {
	p := reflect.New(typ)
	v := p.Elem()
	for i := range typ.NumField() {
		sf, fv := typ.Field(i), v.Field(i)
		switch {
		case sf.Name == "unknownFields":
			if g.r.IntN(3) == 0 {
				var u []byte
				for range 1 + g.r.IntN(3) {
					u = g.unknownRecord(u, g.known[typ], 0)
				}
				reflect.NewAt(sf.Type, unsafe.Pointer(fv.UnsafeAddr())).Elem().SetBytes(u)
			}
		case sf.Type.Kind() == reflect.Interface:
			if g.r.IntN(3) == 0 {
				continue
			}
			ws := g.wrappers[sf.Type]
			wt := ws[g.r.IntN(len(ws))]
			inner := wt.Elem().Field(0).Type
			if isMessagePtr(inner) && depth >= maxRandDepth {
				continue
			}
			w := reflect.New(wt.Elem())
			w.Elem().Field(0).Set(g.value(inner, depth+1))
			fv.Set(w)
		case sf.Type.Kind() == reflect.Map:
			if depth >= maxRandDepth {
				continue
			}
			n := g.r.IntN(4)
			if n == 0 {
				continue
			}
			m := reflect.MakeMap(sf.Type)
			for range n {
				m.SetMapIndex(g.value(sf.Type.Key(), depth+1), g.value(sf.Type.Elem(), depth+1))
			}
			fv.Set(m)
		case isMessagePtr(sf.Type):
			if depth < maxRandDepth && g.r.IntN(2) == 0 {
				fv.Set(g.message(sf.Type.Elem(), depth+1))
			}
		case sf.Type.Kind() == reflect.Pointer: // optional
			if g.r.IntN(2) == 0 {
				x := reflect.New(sf.Type.Elem())
				x.Elem().Set(g.value(sf.Type.Elem(), depth))
				fv.Set(x)
			}
		case sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() != reflect.Uint8:
			n := g.r.IntN(5)
			if isMessagePtr(sf.Type.Elem()) && depth >= maxRandDepth {
				n = 0
			}
			for range n {
				fv.Set(reflect.Append(fv, g.value(sf.Type.Elem(), depth+1)))
			}
		default:
			if g.r.IntN(3) != 0 {
				fv.Set(g.value(sf.Type, depth))
			}
		}
	}
	return p
}

// value returns a random value of a scalar, string, bytes or message type.
func (g *randGen) value(t reflect.Type, depth int) reflect.Value {
	if isMessagePtr(t) {
		return g.message(t.Elem(), depth)
	}
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Uint64, reflect.Uint32:
		v.SetUint(g.u64())
	case reflect.Int64, reflect.Int32:
		v.SetInt(int64(g.u64()))
	case reflect.Bool:
		v.SetBool(g.r.IntN(2) == 0)
	case reflect.String:
		v.SetString(string(g.bytes()))
	case reflect.Slice:
		v.SetBytes(g.bytes())
	default:
		panic(t)
	}
	return v
}

// u64 returns a random number, often 0, small or near the top (SetUint and
// SetInt truncate it to the field's size).
func (g *randGen) u64() uint64 {
	switch g.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return uint64(g.r.IntN(128))
	case 2:
		return uint64(g.r.IntN(1 << 21))
	case 3:
		return ^uint64(0) - uint64(g.r.IntN(4))
	case 4:
		return 1<<31 + uint64(g.r.IntN(4)) - 2
	default:
		return g.r.Uint64()
	}
}

// bytes returns random bytes (valid UTF-8 or not), sometimes none.
func (g *randGen) bytes() []byte {
	n := g.r.IntN(12)
	if n == 0 {
		if g.r.IntN(2) == 0 {
			return nil
		}
		return []byte{}
	}
	b := make([]byte, n)
	for i := range b {
		if g.r.IntN(3) == 0 {
			b[i] = byte(g.r.Uint32())
		} else {
			b[i] = 'a' + byte(g.r.IntN(26))
		}
	}
	return b
}

// unknownRecord appends a random field of a number not in known, of any
// wire type, groups included (nested up to depth 2).
func (g *randGen) unknownRecord(b []byte, known map[int]bool, depth int) []byte {
	var num protowire.Number
	for {
		if g.r.IntN(4) == 0 {
			num = protowire.Number(1 + g.r.IntN(int(protowire.MaxValidNumber)))
		} else {
			num = protowire.Number(1 + g.r.IntN(200))
		}
		if num < protowire.FirstReservedNumber || num > protowire.LastReservedNumber {
			if !known[int(num)] {
				break
			}
		}
	}
	wt := g.r.IntN(5)
	if depth >= 2 && wt == 4 {
		wt = 0
	}
	switch wt {
	case 0:
		b = protowire.AppendTag(b, num, protowire.VarintType)
		b = protowire.AppendVarint(b, g.u64())
	case 1:
		b = protowire.AppendTag(b, num, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, g.r.Uint64())
	case 2:
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, g.bytes())
	case 3:
		b = protowire.AppendTag(b, num, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, g.r.Uint32())
	case 4:
		b = protowire.AppendTag(b, num, protowire.StartGroupType)
		for range g.r.IntN(3) {
			b = g.unknownRecord(b, nil, depth+1)
		}
		b = protowire.AppendTag(b, num, protowire.EndGroupType)
	}
	return b
}

// encoder writes messages in protobuf's wire format from their struct
// tags. Plain, it writes what MarshalVT writes (map entries aside, which
// come in any order); messy, it writes the same message in other ways a
// decoder must accept (see TestRandomMessages).
type encoder struct {
	g     *randGen
	messy bool
}

func (e *encoder) encode(v reflect.Value) []byte { return bytes.Join(e.records(v), nil) }

func (e *encoder) chance(n int) bool { return e.messy && e.g.r.IntN(n) == 0 }

// records returns the encoding of the struct v as a list of fields.
func (e *encoder) records(v reflect.Value) [][]byte {
	typ := v.Type()
	var groups [][][]byte // the fields' records; each field's stay in order
	var unknown [][]byte
	for i := range typ.NumField() {
		sf, fv := typ.Field(i), v.Field(i)
		if sf.Name == "unknownFields" {
			u := reflect.NewAt(sf.Type, unsafe.Pointer(fv.UnsafeAddr())).Elem().Bytes()
			for len(u) > 0 {
				_, _, n := protowire.ConsumeField(u)
				if n < 0 {
					panic("bad unknown field")
				}
				unknown = append(unknown, u[:n])
				u = u[n:]
			}
			continue
		}
		if sf.Type.Kind() == reflect.Interface {
			if fv.IsNil() {
				continue
			}
			inner := fv.Elem().Elem().Field(0)
			tag := parsePBTag(fv.Elem().Elem().Type().Field(0).Tag.Get("protobuf"))
			var recs [][]byte
			if e.chance(4) {
				// Another member first, which the real one replaces.
				ws := e.g.wrappers[sf.Type]
				if ow := ws[e.g.r.IntN(len(ws))]; ow != fv.Elem().Type() {
					oi := ow.Elem().Field(0)
					recs = e.single(recs, parsePBTag(oi.Tag.Get("protobuf")), e.g.value(oi.Type, maxRandDepth), true)
				}
			}
			groups = append(groups, e.single(recs, tag, inner, true))
			continue
		}
		tag := parsePBTag(sf.Tag.Get("protobuf"))
		var recs [][]byte
		switch {
		case sf.Type.Kind() == reflect.Map:
			keys := fv.MapKeys()
			kt := parsePBTag(sf.Tag.Get("protobuf_key"))
			vt := parsePBTag(sf.Tag.Get("protobuf_val"))
			for _, k := range keys {
				if e.chance(4) {
					// An earlier entry of the same key, which the real one replaces.
					recs = append(recs, e.entry(tag, kt, vt, k, e.g.value(sf.Type.Elem(), maxRandDepth)))
				}
				recs = append(recs, e.entry(tag, kt, vt, k, fv.MapIndex(k)))
			}
		case sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() != reflect.Uint8:
			if tag.varint {
				recs = e.varints(recs, tag, fv)
			} else {
				for j := range fv.Len() {
					recs = e.elem(recs, tag, fv.Index(j))
				}
			}
		case isMessagePtr(sf.Type):
			if !fv.IsNil() {
				recs = e.single(recs, tag, fv, true)
			}
		case sf.Type.Kind() == reflect.Pointer:
			if !fv.IsNil() {
				recs = e.single(recs, tag, fv.Elem(), true)
			}
		case tag.oneof && fv.Kind() == reflect.Slice:
			// An optional []byte is present when not nil.
			if !fv.IsNil() {
				recs = e.single(recs, tag, fv, true)
			}
		default:
			recs = e.single(recs, tag, fv, false)
		}
		groups = append(groups, recs)
	}
	groups = append(groups, unknown)
	if !e.messy {
		return slices.Concat(groups...)
	}
	// Interleave the fields at random, each field's records in order.
	var out [][]byte
	for {
		var left []int
		for i, g := range groups {
			if len(g) > 0 {
				left = append(left, i)
			}
		}
		if len(left) == 0 {
			return out
		}
		i := left[e.g.r.IntN(len(left))]
		out = append(out, groups[i][0])
		groups[i] = groups[i][1:]
	}
}

// tag returns a field's tag; messy, sometimes with a field number 2^32·k
// higher, which the generated decoders take as the same field number.
func (e *encoder) tag(num int, wt protowire.Type) []byte {
	x := uint64(num)<<3 | uint64(wt)
	if e.chance(16) {
		x += uint64(1+e.g.r.IntN(3)) << 35
	}
	return e.varint(nil, x)
}

// varint appends x; messy, sometimes in a longer form than needed.
func (e *encoder) varint(b []byte, x uint64) []byte {
	if !e.chance(10) {
		return protowire.AppendVarint(b, x)
	}
	n := protowire.SizeVarint(x)
	pad := e.g.r.IntN(11 - n)
	if pad == 0 {
		return protowire.AppendVarint(b, x)
	}
	for range n + pad - 1 {
		b = append(b, byte(x&0x7f|0x80))
		x >>= 7
	}
	return append(b, byte(x))
}

// varintValue returns the varint of v, a varint kind; messy, 32-bit values
// sometimes carry other upper bits (which decoders drop) and true is any
// number but 0.
func (e *encoder) varintValue(v reflect.Value) uint64 {
	switch v.Kind() {
	case reflect.Bool:
		if !v.Bool() {
			return 0
		}
		if e.chance(2) {
			return e.g.r.Uint64() | 1<<uint(e.g.r.IntN(64))
		}
		return 1
	case reflect.Int32, reflect.Uint32:
		var x uint64
		if v.Kind() == reflect.Uint32 {
			x = v.Uint()
		} else {
			x = uint64(v.Int()) // sign-extended, as protobuf writes it
		}
		if e.chance(3) {
			x = uint64(uint32(x)) | e.g.r.Uint64()<<32
		}
		return x
	case reflect.Int64:
		return uint64(v.Int())
	default:
		return v.Uint()
	}
}

func isZero(v reflect.Value) bool {
	if v.Kind() == reflect.Slice {
		return v.Len() == 0
	}
	return v.IsZero()
}

// single appends the records of one value v of a field: always when
// present, else only when v is not the zero value (proto3). Messy, a
// scalar may come after another value it overrides, and a message in
// several occurrences, which merge.
func (e *encoder) single(recs [][]byte, tag pbTag, v reflect.Value, present bool) [][]byte {
	return e.value(recs, tag, v, present, true, true)
}

// elem appends the record of an element of a repeated field: one record,
// as another would add an element.
func (e *encoder) elem(recs [][]byte, tag pbTag, v reflect.Value) [][]byte {
	return e.value(recs, tag, v, true, false, false)
}

// entryValue appends the records of a map entry's value: in one
// occurrence when a message, as a second would replace the first.
func (e *encoder) entryValue(recs [][]byte, tag pbTag, v reflect.Value) [][]byte {
	return e.value(recs, tag, v, true, false, true)
}

func (e *encoder) value(recs [][]byte, tag pbTag, v reflect.Value, present, split, dup bool) [][]byte {
	if !present && isZero(v) && !e.chance(4) {
		return recs
	}
	if isMessagePtr(v.Type()) {
		sub := e.records(v.Elem())
		if split && len(sub) >= 2 && e.chance(2) {
			k := 1 + e.g.r.IntN(len(sub)-1)
			recs = append(recs, e.lenRecord(tag.num, bytes.Join(sub[:k], nil)))
			return append(recs, e.lenRecord(tag.num, bytes.Join(sub[k:], nil)))
		}
		return append(recs, e.lenRecord(tag.num, bytes.Join(sub, nil)))
	}
	if dup && e.chance(5) {
		recs = append(recs, e.scalar(tag, e.g.value(v.Type(), 0)))
	}
	return append(recs, e.scalar(tag, v))
}

// scalar returns the record of a varint, string or bytes value.
func (e *encoder) scalar(tag pbTag, v reflect.Value) []byte {
	if tag.varint {
		return e.varint(e.tag(tag.num, protowire.VarintType), e.varintValue(v))
	}
	if v.Kind() == reflect.String {
		return e.lenRecord(tag.num, []byte(v.String()))
	}
	return e.lenRecord(tag.num, v.Bytes())
}

func (e *encoder) lenRecord(num int, data []byte) []byte {
	b := e.tag(num, protowire.BytesType)
	b = e.varint(b, uint64(len(data)))
	return append(b, data...)
}

// varints appends the records of a repeated varint field: packed; messy,
// in runs, each packed (sometimes an empty run) or not.
func (e *encoder) varints(recs [][]byte, tag pbTag, v reflect.Value) [][]byte {
	if v.Len() == 0 {
		if e.chance(8) {
			recs = append(recs, e.lenRecord(tag.num, nil))
		}
		return recs
	}
	for i := 0; i < v.Len(); {
		n := v.Len() - i
		if e.messy {
			n = 1 + e.g.r.IntN(n)
		}
		if e.chance(2) {
			for j := i; j < i+n; j++ {
				recs = append(recs, e.varint(e.tag(tag.num, protowire.VarintType), e.varintValue(v.Index(j))))
			}
		} else {
			var p []byte
			for j := i; j < i+n; j++ {
				p = e.varint(p, e.varintValue(v.Index(j)))
			}
			recs = append(recs, e.lenRecord(tag.num, p))
		}
		i += n
		if e.chance(8) {
			recs = append(recs, e.lenRecord(tag.num, nil))
		}
	}
	return recs
}

// entry returns the record of one map entry. Messy, a zero key or value
// may be left out, the value may come first, a field may come after
// another value it overrides, and the entry may hold an unknown field.
func (e *encoder) entry(tag, kt, vt pbTag, k, v reflect.Value) []byte {
	var key, val [][]byte
	if !isZero(k) || !e.chance(2) {
		key = e.single(nil, kt, k, true)
	}
	switch {
	case isMessagePtr(v.Type()) && (v.IsNil() || (len(e.records(v.Elem())) == 0 && e.chance(2))):
		// A missing message value decodes as nil, which EqualVT takes for
		// an empty message.
	case isMessagePtr(v.Type()) || !isZero(v) || !e.chance(2):
		val = e.entryValue(nil, vt, v)
	}
	fields := [][][]byte{key, val}
	if e.chance(3) {
		fields[0], fields[1] = val, key
	}
	if e.chance(4) {
		fields = slices.Insert(fields, e.g.r.IntN(3), [][]byte{e.g.unknownRecord(nil, entryNumbers, 0)})
	}
	var b []byte
	for _, f := range fields {
		b = append(b, bytes.Join(f, nil)...)
	}
	return e.lenRecord(tag.num, b)
}

// entryNumbers are the field numbers of a map entry.
var entryNumbers = map[int]bool{1: true, 2: true}
