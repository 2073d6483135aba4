package genoneofs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"
)

// TestUpToDate regenerates oneofs.go for every lancepb package in memory
// and fails when a committed file differs, is missing or should not exist:
// run `go generate ./core/internal/lancepb` after changing the .proto files.
func TestUpToDate(t *testing.T) {
	root := "../.."
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if m, _ := filepath.Glob(filepath.Join(dir, "*.pb.go")); !e.IsDir() || len(m) == 0 {
			continue
		}
		p, err := Parse(os.DirFS(dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		want := Generate(p)
		got, err := os.ReadFile(filepath.Join(dir, FileName))
		switch {
		case errors.Is(err, fs.ErrNotExist) && want == nil:
		case err != nil && want != nil:
			t.Errorf("%s: %v (run go generate ./core/internal/lancepb)", dir, err)
		case err == nil && want == nil:
			t.Errorf("%s: %s lists no wrappers any more: remove it (go generate ./core/internal/lancepb)", dir, FileName)
		case err != nil:
			t.Errorf("%s: %v", dir, err)
		case !bytes.Equal(got, want):
			t.Errorf("%s/%s is stale: run go generate ./core/internal/lancepb", dir, FileName)
		}
		if want != nil {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no package with oneofs")
	}
}

// TestParse parses a small package in the shape protoc-gen-go-lite writes.
func TestParse(t *testing.T) {
	src := `package demo

type M struct {
	unknownFields []byte
	Kind isM_Kind ` + "`protobuf_oneof:\"kind\"`" + `
	Opt *uint64 ` + "`protobuf:\"varint,3,opt,name=opt,proto3,oneof\"`" + `
}

type isM_Kind interface {
	isM_Kind()
}

type M_A struct {
	A uint64 ` + "`protobuf:\"varint,1,opt,name=a,proto3,oneof\"`" + `
}

type M_B struct {
	B *M ` + "`protobuf:\"bytes,2,opt,name=b,proto3,oneof\"`" + `
}

func (*M_A) isM_Kind() {}

func (*M_B) isM_Kind() {}

// Not wrappers: a method with a body, a method of another interface name.
func (*M) isM_Kind() { println() }

func (*M_A) isOther() {}

type Entry struct {
	unknownFields []byte
}

func (m *M) UnmarshalVT(b []byte) error { return nil }
`
	fsys := fstest.MapFS{
		"demo.pb.go": {Data: []byte(src)},
		"other.go":   {Data: []byte("package demo\n\nfunc (*Entry) UnmarshalVT([]byte) error { return nil }\n")},
	}
	p, err := Parse(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := &Package{
		Name:     "demo",
		Messages: []Message{{Name: "M", Oneofs: []Oneof{{Field: "Kind", Interface: "isM_Kind"}}}},
		Wrappers: []Wrapper{{Name: "M_A", Interface: "isM_Kind"}, {Name: "M_B", Interface: "isM_Kind"}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("Parse = %+v, want %+v", p, want)
	}
	out := string(Generate(p))
	for _, s := range []string{"// Code generated", "DO NOT EDIT.", "package demo", "(*M_A)(nil),", "(*M_B)(nil),"} {
		if !bytes.Contains([]byte(out), []byte(s)) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if Generate(&Package{Name: "demo"}) != nil {
		t.Error("output for a package without wrappers")
	}
}
