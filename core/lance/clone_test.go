package lance

import (
	"reflect"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// fillAll sets every exported field of the struct v points to (recursively
// for sub-messages, to depth 2) to a non-default value, so a copy that
// forgets a field is caught. Oneof fields (interfaces) are left unset.
func fillAll(v reflect.Value, depth int) {
	s := v.Elem()
	for i := 0; i < s.NumField(); i++ {
		if !s.Type().Field(i).IsExported() {
			continue
		}
		f := s.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			if f.Type().Elem().Kind() == reflect.Uint8 { // bytes
				f.SetBytes([]byte{7})
				continue
			}
			e := reflect.New(f.Type().Elem()).Elem()
			fillValue(e, 1, depth)
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), e))
		case reflect.Map:
			k := reflect.New(f.Type().Key()).Elem()
			e := reflect.New(f.Type().Elem()).Elem()
			fillValue(k, 1, depth)
			fillValue(e, 3, depth)
			f.Set(reflect.MakeMap(f.Type()))
			f.SetMapIndex(k, e)
		case reflect.Interface:
		default:
			fillValue(f, 7, depth)
		}
	}
}

// fillValue sets a scalar, pointer or sub-message value to something other
// than its zero value.
func fillValue(f reflect.Value, n, depth int) {
	switch f.Kind() {
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int32, reflect.Int64:
		f.SetInt(int64(n))
	case reflect.Uint32, reflect.Uint64:
		f.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		f.SetFloat(float64(n))
	case reflect.String:
		f.SetString(string(rune('a' + n)))
	case reflect.Slice: // bytes
		f.SetBytes([]byte{byte(n)})
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		if p.Elem().Kind() == reflect.Struct {
			if depth > 0 {
				fillAll(p, depth-1)
			}
		} else {
			fillValue(p.Elem(), n, depth)
		}
		f.Set(p)
	}
}

func TestShallowCloneManifest(t *testing.T) {
	m := &tablepb.Manifest{}
	fillAll(reflect.ValueOf(m), 2)
	if err := m.UnmarshalVT([]byte{0xf8, 0x7f, 0x01}); err != nil { // unknown field 2047, varint 1
		t.Fatal(err)
	}
	s := reflect.ValueOf(m).Elem()
	for i := 0; i < s.NumField(); i++ {
		if s.Type().Field(i).IsExported() && s.Field(i).IsZero() {
			t.Fatalf("fillAll left %s unset", s.Type().Field(i).Name)
		}
	}
	c := shallowClone(m)
	if !c.EqualVT(m) {
		t.Fatalf("clone differs:\n%v\n%v", c, m)
	}
	if b, _ := c.MarshalVT(); len(b) == 0 || b[len(b)-3] != 0xf8 {
		t.Fatalf("clone lost the unknown field: % x", b)
	}
	before := m.CloneVT()
	// Growing or editing the clone's lists and maps leaves m alone.
	cs := reflect.ValueOf(c).Elem()
	for i := 0; i < cs.NumField(); i++ {
		f := cs.Field(i)
		if !cs.Type().Field(i).IsExported() {
			continue
		}
		switch {
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() != reflect.Uint8:
			f.Index(0).Set(reflect.Zero(f.Type().Elem()))
		case f.Kind() == reflect.Map:
			for _, k := range f.MapKeys() {
				f.SetMapIndex(k, reflect.Value{})
			}
		}
	}
	c.Fragments = append(c.Fragments, &tablepb.DataFragment{Id: 99})
	c.Version++
	if !m.EqualVT(before) {
		t.Fatal("changing the clone changed the original")
	}
}
