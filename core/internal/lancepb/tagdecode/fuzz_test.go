package tagdecode

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"
)

// fuzzRoots are the message types FuzzUnmarshal decodes, chosen by its
// first argument: those kv0 reads from Lance files.
var fuzzRoots = []reflect.Type{
	reflect.TypeFor[tablepb.Manifest](),
	reflect.TypeFor[tablepb.Transaction](),
	reflect.TypeFor[tablepb.IndexSection](),
	reflect.TypeFor[file2pb.ColumnMetadata](),
	reflect.TypeFor[filepb.FileDescriptor](),
	reflect.TypeFor[wktpb.Any](),
	reflect.TypeFor[enc20pb.ArrayEncoding](),
	reflect.TypeFor[enc20pb.ColumnEncoding](),
	reflect.TypeFor[enc21pb.PageLayout](),
	reflect.TypeFor[enc21pb.CompressiveEncoding](),
}

// FuzzUnmarshal decodes its input as the message type fuzzRoots[root %
// len(fuzzRoots)] with both decoders: they must both accept it or both
// refuse it, and when they accept it, give the same message. The seeds are
// the fixtures' messages of these types, and random ones.
func FuzzUnmarshal(f *testing.F) {
	index := map[reflect.Type]int{}
	for i, t := range fuzzRoots {
		index[t] = i
	}
	if samples := fixtureSamplesIfAny(); len(samples) > 0 {
		for _, s := range samples {
			if i, ok := index[s.typ]; ok {
				f.Add(uint8(i), s.b)
			}
		}
	}
	g := newRandGen(rand.New(rand.NewPCG(1, 2)))
	for i, t := range fuzzRoots {
		for range 4 {
			b, err := g.message(t, 2).Interface().(vtMessage).MarshalVT()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), b)
		}
	}
	f.Fuzz(func(t *testing.T, root uint8, b []byte) {
		typ := fuzzRoots[int(root)%len(fuzzRoots)]
		if _, _, _, err := compareDecoders(typ, b); err != nil {
			t.Fatal(err)
		}
	})
}

// fixtureSamplesIfAny is fixtureSamples without the test's skip when there
// are no fixtures.
func fixtureSamplesIfAny() []sample {
	samplesOnce.Do(func() { samplesList, samplesErr = walkFixtures() })
	if samplesErr != nil {
		return nil
	}
	return samplesList
}
