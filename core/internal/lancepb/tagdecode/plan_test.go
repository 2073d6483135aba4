package tagdecode

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kv0/kv0/core/internal/lancepb/internal/genoneofs"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// lancepbDir is the directory of the lancepb packages.
const lancepbDir = ".."

// parsedPackages returns what genoneofs finds in the source of every
// lancepb package, by package name.
func parsedPackages(t *testing.T) map[string]*genoneofs.Package {
	t.Helper()
	entries, err := os.ReadDir(lancepbDir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*genoneofs.Package{}
	for _, e := range entries {
		dir := filepath.Join(lancepbDir, e.Name())
		if m, _ := filepath.Glob(filepath.Join(dir, "*.pb.go")); !e.IsDir() || len(m) == 0 {
			continue
		}
		p, err := genoneofs.Parse(os.DirFS(dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out[p.Name] = p
	}
	if len(out) < 6 {
		t.Fatalf("found only %d lancepb packages", len(out))
	}
	return out
}

// TestAllTypesReached checks that the types the tests reach from their
// roots are all the message types of the lancepb packages, so that the
// tests over allMessageTypes cover each of them.
func TestAllTypesReached(t *testing.T) {
	reached := map[string]bool{}
	for _, typ := range allMessageTypes() {
		reached[typ.String()] = true
	}
	n := 0
	for _, p := range parsedPackages(t) {
		for _, m := range p.Messages {
			name := p.Name + "." + m.Name
			n++
			if !reached[name] {
				t.Errorf("message %s is not reachable from the test roots: add it to roots", name)
			}
			delete(reached, name)
		}
	}
	for name := range reached {
		t.Errorf("%s: reached, but not a message of the lancepb sources", name)
	}
	t.Logf("%d message types", n)
}

// TestPlans builds the plan of every message type.
func TestPlans(t *testing.T) {
	for _, typ := range allMessageTypes() {
		p, err := planFor(reflect.PointerTo(typ))
		if err != nil {
			t.Errorf("%v: %v", typ, err)
			continue
		}
		if p.typ != typ {
			t.Errorf("%v: plan of %v", typ, p.typ)
		}
	}
}

// TestOneofWrappers checks that every oneof field of every message type has
// wrapper types, and that each wrapper belongs to exactly one oneof field:
// by reflection over the types, and in the source.
func TestOneofWrappers(t *testing.T) {
	claims := map[reflect.Type][]string{}
	fields := 0
	for _, typ := range allMessageTypes() {
		for i := range typ.NumField() {
			sf := typ.Field(i)
			if _, ok := sf.Tag.Lookup("protobuf_oneof"); !ok {
				continue
			}
			fields++
			n := 0
			for _, w := range allWrappers() {
				if wt := reflect.TypeOf(w); wt.Implements(sf.Type) {
					claims[wt] = append(claims[wt], typ.String()+"."+sf.Name)
					n++
				}
			}
			if n == 0 {
				t.Errorf("%v.%s: no oneof wrapper type", typ, sf.Name)
			}
		}
	}
	for _, w := range allWrappers() {
		wt := reflect.TypeOf(w)
		if c := claims[wt]; len(c) != 1 {
			t.Errorf("wrapper %v is claimed by %d oneof fields %v, want 1", wt, len(c), c)
		}
	}
	if fields == 0 || len(claims) == 0 {
		t.Fatal("no oneof fields")
	}

	// The source: the wrappers are those tagdecode knows, each wrapper's
	// interface is that of one oneof field, and each oneof field's
	// interface has wrappers.
	known := map[string]bool{}
	for _, w := range allWrappers() {
		known[reflect.TypeOf(w).Elem().String()] = true
	}
	for _, p := range parsedPackages(t) {
		for _, w := range p.Wrappers {
			if name := p.Name + "." + w.Name; !known[name] {
				t.Errorf("wrapper %s of the source is not in tagdecode's lists (stale oneofs.go, or a package missing from wrappers)", name)
			}
			delete(known, p.Name+"."+w.Name)
		}
	}
	for name := range known {
		t.Errorf("wrapper %s is not in the source", name)
	}
	for _, p := range parsedPackages(t) {
		byIface := map[string]int{}
		for _, m := range p.Messages {
			for _, o := range m.Oneofs {
				byIface[o.Interface]++
			}
		}
		wrapped := map[string]int{}
		for _, w := range p.Wrappers {
			if byIface[w.Interface] != 1 {
				t.Errorf("%s.%s: interface %s is that of %d oneof fields, want 1", p.Name, w.Name, w.Interface, byIface[w.Interface])
			}
			wrapped[w.Interface]++
		}
		for iface := range byIface {
			if wrapped[iface] == 0 {
				t.Errorf("%s: oneof interface %s has no wrapper", p.Name, iface)
			}
		}
	}
	t.Logf("%d oneof fields, %d wrappers", fields, len(claims))
}

// Types tagdecode cannot plan.
type (
	noUnknown struct {
		A uint64 `protobuf:"varint,1,opt,name=a,proto3"`
	}
	fixedField struct {
		unknownFields []byte
		A             uint32 `protobuf:"fixed32,1,opt,name=a,proto3"`
	}
	requiredField struct {
		unknownFields []byte
		A             uint32 `protobuf:"varint,1,req,name=a"`
	}
	untagged struct {
		unknownFields []byte
		A             uint32
	}
	otherUnexported struct {
		unknownFields []byte
		sizeCache     int32
	}
	badKind struct {
		unknownFields []byte
		A             float64 `protobuf:"varint,1,opt,name=a,proto3"`
	}
	wrongEncoding struct {
		unknownFields []byte
		A             string `protobuf:"varint,1,opt,name=a,proto3"`
	}
	sameNumber struct {
		unknownFields []byte
		A             uint64 `protobuf:"varint,1,opt,name=a,proto3"`
		B             uint64 `protobuf:"varint,1,opt,name=b,proto3"`
	}
	isNoWrapper_X interface{ isNoWrapper_X() }
	noWrapper     struct {
		unknownFields []byte
		X             isNoWrapper_X `protobuf_oneof:"x"`
	}
	nestedBad struct {
		unknownFields []byte
		N             *fixedField `protobuf:"bytes,1,opt,name=n,proto3"`
	}
)

// TestPlanErrors checks that Unmarshal refuses, with an error and without a
// panic, what it cannot decode into.
func TestPlanErrors(t *testing.T) {
	for _, c := range []struct {
		m    any
		want string
	}{
		{nil, "not a pointer"},
		{tablepb.Manifest{}, "not a pointer"},
		{new(uint64), "not a pointer"},
		{new(noUnknown), "unknownFields"},
		{new(fixedField), "fixed32"},
		{new(requiredField), "cardinality"},
		{new(untagged), "no protobuf tag"},
		{new(otherUnexported), "sizeCache"},
		{new(badKind), "float64"},
		{new(wrongEncoding), "mismatch"},
		{new(sameNumber), "used twice"},
		{new(noWrapper), "no oneof wrapper"},
		{new(nestedBad), "fixed32"},
		{(*tablepb.Manifest)(nil), "nil"},
	} {
		for range 2 { // the second time, from the cache
			err := Unmarshal([]byte{8, 1}, c.m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%T: error %v, want one about %q", c.m, err, c.want)
			}
		}
	}
	// The failures do not disturb the plans of other types.
	if err := Unmarshal(nil, new(tablepb.Manifest)); err != nil {
		t.Fatal(err)
	}
}

// Types of TestConcurrentPlans, planned there first.
type (
	concA struct {
		unknownFields []byte
		N             *concB `protobuf:"bytes,1,opt,name=n,proto3"`
		V             uint64 `protobuf:"varint,2,opt,name=v,proto3"`
	}
	concB struct {
		unknownFields []byte
		A             *concA   `protobuf:"bytes,1,opt,name=a,proto3"`
		S             []string `protobuf:"bytes,2,rep,name=s,proto3"`
	}
)

// TestConcurrentPlans decodes into a new (recursive) type from several
// goroutines at once, for the race detector to watch the plan cache.
func TestConcurrentPlans(t *testing.T) {
	b := cat(lenField(1, lenField(1, tag(2, protowire.VarintType), vint(7)), lenField(2, []byte("x"))), tag(2, protowire.VarintType), vint(3))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var m concA
			if err := Unmarshal(b, &m); err != nil {
				t.Error(err)
			} else if m.V != 3 || m.N == nil || m.N.A == nil || m.N.A.V != 7 || len(m.N.S) != 1 || m.N.S[0] != "x" {
				t.Errorf("decoded %+v", m)
			}
		})
	}
	wg.Wait()
}
