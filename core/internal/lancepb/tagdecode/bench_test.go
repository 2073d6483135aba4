package tagdecode

import (
	"reflect"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// BenchmarkUnmarshal compares the generated decoder with Unmarshal on the
// largest manifest and the largest column metadata of the fixtures.
func BenchmarkUnmarshal(b *testing.B) {
	samples := fixtureSamples(b)
	for _, c := range []struct {
		name string
		typ  reflect.Type
	}{
		{"manifest", reflect.TypeFor[tablepb.Manifest]()},
		{"column_metadata", reflect.TypeFor[file2pb.ColumnMetadata]()},
	} {
		var data []byte
		for _, s := range samples {
			if s.typ == c.typ && len(s.b) > len(data) {
				data = s.b
			}
		}
		if data == nil {
			b.Fatalf("no %v in the fixtures", c.typ)
		}
		b.Run(c.name+"/generated", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := newMessage(c.typ).UnmarshalVT(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/tagdecode", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Unmarshal(data, newMessage(c.typ)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
