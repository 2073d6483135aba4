package tagdecode

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"
)

// vtMessage is what the generated code gives every message; the tests use
// its UnmarshalVT as the reference decoder.
type vtMessage interface {
	UnmarshalVT([]byte) error
	MarshalVT() ([]byte, error)
	EqualMessageVT(any) bool
}

// roots are the message types the tests start from: those kv0 decodes and
// those of the fuzz target. allMessageTypes adds every type they reach,
// and TestAllTypesReached checks that this covers every generated message.
var roots = []func() vtMessage{
	func() vtMessage { return new(tablepb.Manifest) },
	func() vtMessage { return new(tablepb.Transaction) },
	func() vtMessage { return new(tablepb.IndexSection) },
	func() vtMessage { return new(file2pb.ColumnMetadata) },
	func() vtMessage { return new(filepb.FileDescriptor) },
	func() vtMessage { return new(enc20pb.ArrayEncoding) },
	func() vtMessage { return new(enc20pb.ColumnEncoding) },
	func() vtMessage { return new(enc21pb.PageLayout) },
	func() vtMessage { return new(enc21pb.CompressiveEncoding) },
	func() vtMessage { return new(wktpb.Any) },
	func() vtMessage { return new(tablepb.BTreeIndexDetails) },
	func() vtMessage { return new(tablepb.UUID) },
}

// rootName names a root type for test and fuzz output.
func rootName(i int) string { return reflect.TypeOf(roots[i]()).Elem().String() }

// allMessageTypes returns the struct types of every message reachable from
// the roots (through fields, map values and oneof wrappers), sorted by name.
func allMessageTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			sf := t.Field(i)
			ft := sf.Type
			if ft.Kind() == reflect.Interface {
				for _, w := range allWrappers() {
					if wt := reflect.TypeOf(w); wt.Implements(ft) {
						if inner := wt.Elem().Field(0).Type; isMessagePtr(inner) {
							walk(inner.Elem())
						}
					}
				}
				continue
			}
			if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
				ft = ft.Elem()
			}
			if isMessagePtr(ft) {
				walk(ft.Elem())
			}
		}
	}
	for _, r := range roots {
		walk(reflect.TypeOf(r()).Elem())
	}
	var out []reflect.Type
	for t := range seen {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func isMessagePtr(t reflect.Type) bool {
	return t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct
}

func allWrappers() []any {
	var out []any
	for _, ws := range wrappers {
		out = append(out, ws...)
	}
	return out
}

// newMessage returns a new *t for the struct type t of a generated message.
func newMessage(t reflect.Type) vtMessage { return reflect.New(t).Interface().(vtMessage) }

// decodeBoth decodes b into a new *t with the generated code and with
// Unmarshal.
func decodeBoth(t reflect.Type, b []byte) (gen, tag vtMessage, genErr, tagErr error) {
	gen, tag = newMessage(t), newMessage(t)
	genErr = gen.UnmarshalVT(b)
	tagErr = Unmarshal(b, tag)
	return
}

// compareDecoders checks that both decoders accept b, or both refuse it,
// and that what they decode is the same message: EqualVT says so, and so
// does reflect.DeepEqual, which also looks at unknown fields and tells nil
// from empty. It returns the two results (nil when b was refused) and
// whether b was accepted.
func compareDecoders(t reflect.Type, b []byte) (gen, tag vtMessage, ok bool, err error) {
	gen, tag, genErr, tagErr := decodeBoth(t, b)
	switch {
	case (genErr == nil) != (tagErr == nil):
		return nil, nil, false, fmt.Errorf("%v: the generated decoder says %v, tagdecode says %v", t, genErr, tagErr)
	case genErr != nil:
		return nil, nil, false, nil
	case !gen.EqualMessageVT(tag) || !tag.EqualMessageVT(gen):
		return nil, nil, false, fmt.Errorf("%v: the decoders' messages differ (EqualVT)", t)
	case !reflect.DeepEqual(gen, tag):
		return nil, nil, false, fmt.Errorf("%v: the decoders' messages differ (DeepEqual): %s", t, firstDiff(gen, tag))
	}
	return gen, tag, true, nil
}

// mustAgree is compareDecoders for tests.
func mustAgree(tb testing.TB, what string, t reflect.Type, b []byte) (ok bool) {
	tb.Helper()
	_, _, ok, err := compareDecoders(t, b)
	if err != nil {
		tb.Fatalf("%s: %v\ninput %x", what, err, b)
	}
	return ok
}

// firstDiff describes the first difference reflect.DeepEqual would find
// between a and b, for failure messages ("" if none).
func firstDiff(a, b any) string {
	var walk func(path string, x, y reflect.Value) string
	walk = func(path string, x, y reflect.Value) string {
		if x.IsValid() != y.IsValid() || x.Kind() != y.Kind() {
			return path + ": different kinds"
		}
		switch x.Kind() {
		case reflect.Pointer, reflect.Interface:
			if x.IsNil() || y.IsNil() {
				if x.IsNil() != y.IsNil() {
					return fmt.Sprintf("%s: nil %v, nil %v", path, x.IsNil(), y.IsNil())
				}
				return ""
			}
			if x.Kind() == reflect.Interface && x.Elem().Type() != y.Elem().Type() {
				return fmt.Sprintf("%s: %v, %v", path, x.Elem().Type(), y.Elem().Type())
			}
			return walk(path, x.Elem(), y.Elem())
		case reflect.Struct:
			for i := range x.NumField() {
				if d := walk(path+"."+x.Type().Field(i).Name, x.Field(i), y.Field(i)); d != "" {
					return d
				}
			}
		case reflect.Slice:
			if x.IsNil() != y.IsNil() {
				return fmt.Sprintf("%s: nil %v, nil %v", path, x.IsNil(), y.IsNil())
			}
			if x.Len() != y.Len() {
				return fmt.Sprintf("%s: length %d, %d", path, x.Len(), y.Len())
			}
			for i := range x.Len() {
				if d := walk(fmt.Sprintf("%s[%d]", path, i), x.Index(i), y.Index(i)); d != "" {
					return d
				}
			}
		case reflect.Map:
			if x.Len() != y.Len() || x.IsNil() != y.IsNil() {
				return fmt.Sprintf("%s: %d entries (nil %v), %d (nil %v)", path, x.Len(), x.IsNil(), y.Len(), y.IsNil())
			}
			for _, k := range x.MapKeys() {
				yv := y.MapIndex(k)
				if !yv.IsValid() {
					return fmt.Sprintf("%s[%v]: missing", path, k)
				}
				if d := walk(fmt.Sprintf("%s[%v]", path, k), x.MapIndex(k), yv); d != "" {
					return d
				}
			}
		default:
			if fmt.Sprint(x) != fmt.Sprint(y) {
				return fmt.Sprintf("%s: %v, %v", path, x, y)
			}
		}
		return ""
	}
	return walk("", reflect.ValueOf(a), reflect.ValueOf(b))
}
