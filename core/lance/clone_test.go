package lance

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// fillAll sets every field of msg (recursively for sub-messages, to depth
// 2) to a non-default value, so a copy that forgets a field is caught.
func fillAll(msg protoreflect.Message, depth int) {
	fields := msg.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && !fd.HasOptionalKeyword() {
			if msg.WhichOneof(fd.ContainingOneof()) != nil {
				continue
			}
		}
		switch {
		case fd.IsList():
			l := msg.Mutable(fd).List()
			if fd.Kind() == protoreflect.MessageKind {
				e := l.NewElement()
				if depth > 0 {
					fillAll(e.Message(), depth-1)
				}
				l.Append(e)
			} else {
				l.Append(scalar(fd, 1))
				l.Append(scalar(fd, 2))
			}
		case fd.IsMap():
			m := msg.Mutable(fd).Map()
			k := scalar(fd.MapKey(), 1).MapKey()
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				m.Set(k, m.NewValue())
			} else {
				m.Set(k, scalar(fd.MapValue(), 3))
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			v := msg.NewField(fd)
			if depth > 0 {
				fillAll(v.Message(), depth-1)
			}
			msg.Set(fd, v)
		default:
			msg.Set(fd, scalar(fd, 7))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor, n int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n % 2))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(n))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(string(rune('a' + n)))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{byte(n)})
	}
	panic(fd.Kind().String())
}

func TestShallowCloneManifest(t *testing.T) {
	m := &tablepb.Manifest{}
	fillAll(m.ProtoReflect(), 2)
	m.ProtoReflect().SetUnknown(protoreflect.RawFields{0xf8, 0x7f, 0x01}) // field 2047, varint 1
	c := shallowClone(m)
	if !proto.Equal(c, m) {
		t.Fatalf("clone differs:\n%v\n%v", c, m)
	}
	before := proto.Clone(m)
	// Growing or editing the clone's lists and maps leaves m alone.
	c.Fragments = append(c.Fragments, &tablepb.DataFragment{Id: 99})
	c.Fragments[0] = &tablepb.DataFragment{Id: 98}
	c.Config["x"] = "y"
	for k := range c.TableMetadata {
		delete(c.TableMetadata, k)
	}
	c.Fields = append(c.Fields[:0], nil)
	c.Version++
	if !proto.Equal(m, before) {
		t.Fatal("changing the clone changed the original")
	}
}
