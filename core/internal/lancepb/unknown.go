package lancepb

import (
	"encoding/binary"
	"reflect"
)

// UnknownField looks through m and every message it holds for a field
// that kv0's .proto files do not declare, which the decoders keep aside
// instead of failing on. It returns the name of the first message type that
// has one and that field's number; found is false when there is none.
//
// Readers call it where an ignored field could change what the message
// means: Lance's page layouts and encodings carry no feature flags, so a
// field a newer writer added may be one that reinterprets the rest of the
// message.
func UnknownField(m Message) (message string, field uint64, found bool) {
	return unknownIn(reflect.ValueOf(m), 0)
}

// maxUnknownDepth bounds the walk; the decoders refuse deeper nesting.
const maxUnknownDepth = 100

func unknownIn(v reflect.Value, depth int) (string, uint64, bool) {
	if depth > maxUnknownDepth {
		return "", 0, false
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "", 0, false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !t.Field(i).IsExported() {
				if t.Field(i).Name == "unknownFields" && f.Kind() == reflect.Slice && f.Len() > 0 {
					return t.Name(), firstTag(f.Bytes()), true
				}
				continue
			}
			switch f.Kind() {
			case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map:
				if name, num, ok := unknownIn(f, depth+1); ok {
					return name, num, true
				}
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Pointer {
			return "", 0, false // scalars and bytes
		}
		for i := 0; i < v.Len(); i++ {
			if name, num, ok := unknownIn(v.Index(i), depth+1); ok {
				return name, num, true
			}
		}
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.Pointer {
			return "", 0, false
		}
		it := v.MapRange()
		for it.Next() {
			if name, num, ok := unknownIn(it.Value(), depth+1); ok {
				return name, num, true
			}
		}
	}
	return "", 0, false
}

// firstTag returns the field number of the first field in raw protobuf
// bytes (the decoders stored them, so they start with a valid tag).
func firstTag(b []byte) uint64 {
	tag, n := binary.Uvarint(b)
	if n <= 0 {
		return 0
	}
	return tag >> 3
}
