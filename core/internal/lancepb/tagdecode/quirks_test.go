package tagdecode

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// Builders of wire bytes for the cases below.
func tag(num int, wt protowire.Type) []byte {
	return protowire.AppendTag(nil, protowire.Number(num), wt)
}
func vint(x uint64) []byte { return protowire.AppendVarint(nil, x) }
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
func lenField(num int, data ...[]byte) []byte {
	d := cat(data...)
	return cat(tag(num, protowire.BytesType), vint(uint64(len(d))), d)
}

// fragment returns a DataFragment with the id.
func fragment(id uint64) []byte { return cat(tag(1, protowire.VarintType), vint(id)) }

// TestQuirks decodes inputs made to reach the corners of the generated
// decoders (lengths that run past a map entry or a packed field, field
// numbers that wrap around, long varints, groups, wrong wire types, oneof
// and message merges, truncations) with both decoders, which must agree;
// accepted says whether the generated one accepts the input, so that each
// case does reach the corner it is about.
func TestQuirks(t *testing.T) {
	manifest := reflect.TypeFor[tablepb.Manifest]()
	txn := reflect.TypeFor[tablepb.Transaction]()
	colmeta := reflect.TypeFor[file2pb.ColumnMetadata]()
	update := reflect.TypeFor[tablepb.Transaction_UpdateConfig]()
	version := cat(tag(3, protowire.VarintType), vint(5)) // Manifest.version = 5
	for _, c := range []struct {
		name     string
		typ      reflect.Type
		b        []byte
		accepted bool
	}{
		{"empty", manifest, nil, true},
		{"scalar, last wins", manifest, cat(version, tag(3, protowire.VarintType), vint(7)), true},
		{"field number wraps around int32", manifest, cat(vint((3+1<<32)<<3), vint(9)), true},
		{"field number 0", manifest, cat(vint(0), vint(1)), false},
		{"field number wraps to negative", manifest, cat(vint(uint64(1<<31)<<3), vint(1)), false},
		{"ten-byte varint ending in 1", manifest, cat(tag(3, protowire.VarintType), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), true},
		{"ten-byte varint ending in 2", manifest, cat(tag(3, protowire.VarintType), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}), false},
		{"eleven-byte varint", manifest, cat(tag(3, protowire.VarintType), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), false},
		{"truncated varint", manifest, cat(tag(3, protowire.VarintType), []byte{0x80}), false},
		{"overlong zero", manifest, cat(tag(3, protowire.VarintType), []byte{0x80, 0x80, 0x00}), true},
		{"wrong wire type", manifest, cat(tag(3, protowire.BytesType), vint(0)), false},
		{"start group on a known field", manifest, cat(tag(3, protowire.StartGroupType), tag(3, protowire.EndGroupType)), false},
		{"wire type 6", manifest, cat(vint(3<<3 | 6)), false},
		{"unknown field, wire type 7", manifest, cat(vint(99<<3 | 7)), false},
		{"end group outside a group", manifest, tag(99, protowire.EndGroupType), false},
		{"unknown group", manifest, cat(tag(99, protowire.StartGroupType), version, lenField(5, []byte("x")), tag(98, protowire.StartGroupType), tag(98, protowire.EndGroupType), tag(99, protowire.EndGroupType), version), true},
		{"unknown group, other end number", manifest, cat(tag(99, protowire.StartGroupType), tag(7, protowire.EndGroupType)), true},
		{"unknown group without end", manifest, cat(tag(99, protowire.StartGroupType), version), false},
		{"unknown fixed64 cut short", manifest, cat(tag(99, protowire.Fixed64Type), []byte{1, 2, 3}), false},
		{"unknown fixed32 and fixed64", manifest, cat(tag(99, protowire.Fixed32Type), []byte{1, 2, 3, 4}, tag(98, protowire.Fixed64Type), make([]byte, 8)), true},
		{"unknown length past the end", manifest, cat(tag(99, protowire.BytesType), vint(5), []byte("abc")), false},
		{"unknown length of 2^63", manifest, cat(tag(99, protowire.BytesType), vint(1<<63), []byte("abc")), false},
		{"string length past the end", manifest, cat(tag(8, protowire.BytesType), vint(5), []byte("abc")), false},
		{"string length of 2^64-1", manifest, cat(tag(8, protowire.BytesType), vint(^uint64(0)), []byte("abc")), false},
		{"invalid UTF-8", manifest, lenField(8, []byte{0xff, 0xfe}), true},
		{"optional, then again", manifest, cat(tag(6, protowire.VarintType), vint(1), tag(6, protowire.VarintType), vint(0)), true},
		{"optional uint32 from a large varint", manifest, cat(tag(11, protowire.VarintType), vint(1<<40|3)), true},
		{"message field twice merges", manifest, cat(lenField(13, lenField(1, []byte("lib"))), lenField(13, lenField(2, []byte("1.0")))), true},
		{"empty bytes", reflect.TypeFor[tablepb.UUID](), lenField(1), true},
		{"nested length past its message", manifest, lenField(13, lenField(1, []byte("lib"))[:4]), false},
		{"map entry", manifest, lenField(16, lenField(1, []byte("k")), lenField(2, []byte("v"))), true},
		{"map entry without key or value", manifest, cat(lenField(16), lenField(16, lenField(2, []byte("v"))), lenField(5, lenField(1, []byte("k")))), true},
		{"map entry, value first, key twice", manifest, lenField(16, lenField(2, []byte("v")), lenField(1, []byte("a")), lenField(1, []byte("b"))), true},
		{"map entry with an unknown field", manifest, lenField(16, lenField(1, []byte("k")), tag(3, protowire.VarintType), vint(1), lenField(2, []byte("v"))), true},
		// The entry's unknown varint ends in the next field's tag.
		{"map entry with an unknown field past the entry", manifest, cat(tag(16, protowire.BytesType), vint(2), tag(3, protowire.VarintType), []byte{0x80}, version), false},
		{"map entry with a group", manifest, lenField(16, tag(3, protowire.StartGroupType), tag(3, protowire.EndGroupType), lenField(1, []byte("k"))), true},
		{"map entry with an end group", manifest, lenField(16, tag(3, protowire.EndGroupType)), false},
		// The entry's length is 2, its key's 2 more: the key takes the
		// next field's bytes, which are then decoded again.
		{"map key past its entry", manifest, cat(tag(16, protowire.BytesType), vint(2), tag(1, protowire.BytesType), vint(2), version), true},
		{"map key past the message", manifest, cat(tag(16, protowire.BytesType), vint(2), tag(1, protowire.BytesType), vint(3), version), false},
		{"map key with wire type 0", manifest, cat(lenField(16, tag(1, protowire.VarintType), vint(1), []byte("k"))), true},
		{"map key field number wraps", manifest, lenField(16, vint((1+1<<32)<<3|2), vint(1), []byte("k")), true},
		{"map of messages", update, lenField(4, tag(1, protowire.VarintType), vint(7), lenField(2, lenField(1, lenField(1, []byte("k")), lenField(2, []byte("v"))))), true},
		{"map of messages, value twice", update, lenField(4, lenField(2, lenField(1)), tag(1, protowire.VarintType), vint(1<<33|7), lenField(2)), true},
		{"map of messages, no value", update, lenField(9, tag(1, protowire.VarintType), vint(^uint64(0))), true},
		{"map of messages, value past the entry", update, cat(tag(9, protowire.BytesType), vint(2), tag(2, protowire.BytesType), vint(2), tag(15, protowire.VarintType), vint(1)), true},
		{"packed", colmeta, lenField(3, vint(1), vint(300), vint(1<<63)), true},
		{"packed and not", colmeta, cat(lenField(3, vint(1)), tag(3, protowire.VarintType), vint(2), lenField(3), lenField(3, vint(3))), true},
		// The packed field's length is 1, its varint 2 bytes long: decoding
		// goes on after the varint.
		{"packed varint past its field", colmeta, cat(tag(3, protowire.BytesType), vint(1), vint(300), lenField(4, vint(5))), true},
		{"packed varint past the message", colmeta, cat(tag(3, protowire.BytesType), vint(1), []byte{0x80}), false},
		{"repeated varint, wire type 1", colmeta, cat(tag(3, protowire.Fixed64Type), make([]byte, 8)), false},
		{"oneof", txn, lenField(100, lenField(1)), true},
		{"oneof message twice merges", txn, cat(lenField(100, lenField(1, fragment(1))), lenField(100, lenField(1, fragment(2)))), true},
		{"oneof, another member replaces", txn, cat(lenField(100, lenField(1, fragment(1))), lenField(101), lenField(100)), true},
		{"oneof scalar members", reflect.TypeFor[tablepb.DataFragment](), cat(lenField(5, []byte{1, 2}), lenField(6), lenField(5, []byte("x"))), true},
		{"oneof wrong wire type", txn, cat(tag(100, protowire.VarintType), vint(1)), false},
	} {
		b := append([]byte(nil), c.b...)
		if got := mustAgree(t, c.name, c.typ, b); got != c.accepted {
			t.Errorf("%s: accepted %v, want %v (the case misses its corner)", c.name, got, c.accepted)
		}
	}
}

// TestFixtureMutations decodes truncations and one-byte changes of the
// fixtures' messages with both decoders, which must agree.
func TestFixtureMutations(t *testing.T) {
	samples := fixtureSamples(t)
	seen := map[string]bool{}
	n := 0
	for _, s := range samples {
		if seen[string(s.b)] || len(s.b) > 4096 {
			continue
		}
		seen[string(s.b)] = true
		b := make([]byte, len(s.b))
		for cut := range len(s.b) {
			mustAgree(t, s.what, s.typ, s.b[:cut])
		}
		step := 1
		if testing.Short() {
			step = 7
		}
		for i := 0; i < len(s.b); i += step {
			for _, x := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff, s.b[i] ^ 0x80, s.b[i] + 1, s.b[i] - 1} {
				copy(b, s.b)
				b[i] = x
				mustAgree(t, s.what, s.typ, b)
				n++
			}
		}
	}
	t.Logf("%d mutations of %d messages", n, len(seen))
}
