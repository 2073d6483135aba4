package lancefile

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	protolite "github.com/aperturerobotics/protobuf-go-lite"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
)

// Fuzz targets for the 2.1 page decoders: arbitrary buffers and layouts,
// read through the whole reader for a handful of schemas. Nothing may panic
// or allocate beyond what the inputs justify; errors are fine. Seeds are
// real pages, so run with a short minimization time, e.g.
//
//	go test -run XXX -fuzz '^FuzzMiniBlock$' -fuzztime 1m -fuzzminimizetime 2s

// fuzzSchemas are the fields a fuzzed page is read as; the page's column is
// the field's only leaf.
var fuzzSchemas = [][][3]string{
	{{"x", "uint64", ""}},
	{{"x", "int32", ""}},
	{{"x", "bool", ""}},
	{{"x", "string", ""}},
	{{"l", "list", ""}, {"item", "string", "0"}},
	{{"s", "struct", ""}, {"a", "int32", "0"}},
	{{"l", "list.struct", ""}, {"item", "struct", "0"}, {"a", "int32", "1"}},
	{{"l", "list", ""}, {"item", "list", "0"}, {"item", "int64", "1"}},
	{{"v", "fixed_size_list:float:2", ""}},
	{{"b", "large_binary", ""}},
}

func fuzzRead(t *testing.T, layout *enc21pb.PageLayout, bufs [][]byte, rows uint16, schema uint8) {
	// A watchdog turns a hang into a crash, so the fuzzer keeps the input.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			panic("fuzzRead hangs:\n" + string(buf[:runtime.Stack(buf, true)]))
		}
	}()
	f := testFile21(t, [][]tPage{{{rows: uint64(rows), bufs: bufs, layout: layout}}})
	s := tSchema(t, fuzzSchemas[int(schema)%len(fuzzSchemas)]...)
	leaf := int32(-1)
	s.Walk(func(fl *Field) {
		if fl.IsLeaf() {
			leaf = fl.ID
		}
	})
	for _, skip := range []int{0, 2} {
		r, err := f.NewReader(s.Fields, map[int32]int{leaf: 0}, ReadOptions{})
		if err != nil {
			return
		}
		if err := r.Skip(context.Background(), skip); err != nil {
			continue
		}
		batch := 3
		if rows > 64 {
			batch = 1000
		}
		for r.Rows() > 0 {
			cols, err := r.Next(context.Background(), batch)
			if err != nil {
				break
			}
			if err := array.ValidateFull(cols[0]); err != nil {
				t.Fatalf("decoded an invalid array: %v", err)
			}
		}
	}
}

// seedPages returns the pages of the hand-built tests and, when present, of
// the lance-written datasets.
func seedPages(t testing.TB) []tPage {
	var out []tPage
	out = append(out, listUtf8Pages()...)
	meta, data := chunks([]int{0}, chunk(3, nil, u16le(0, 1, 0), u32le(5, 0, 7)))
	out = append(out, tPage{rows: 3, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		DefCompression: flatEnc(16), ValueCompression: flatEnc(32), Layers: []enc21pb.RepDefLayer{lNullItem}, NumBuffers: 1, NumItems: 3})})
	dir := os.Getenv("KV0_V21DATA")
	if dir == "" {
		dir = "/tmp/v21data"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.lance", "data", "*.lance"))
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil || len(b) > 4<<20 {
			continue
		}
		f := openOSFile(t, fn)
		for c := range f.columns {
			for i := range f.columns[c].pages {
				p, err := f.readPage(context.Background(), c, i)
				if err != nil {
					continue
				}
				pl, err := pageLayout(p.info.enc, f.version)
				size := 0
				for _, b := range p.bufs {
					size += len(b)
				}
				// Big inputs make the fuzzer's minimization crawl.
				if err != nil || p.info.rows > 5000 || size > 16<<10 {
					continue
				}
				out = append(out, tPage{rows: p.info.rows, bufs: p.bufs, layout: pl})
			}
		}
	}
	return out
}

func fuzzBufs(b0, b1, b2 []byte) [][]byte { return [][]byte{b0, b1, b2} }

func addSeed(f *testing.F, p tPage, want func(*enc21pb.PageLayout) protolite.Message) {
	m := want(p.layout)
	if m == nil {
		return
	}
	lb, err := m.MarshalVT()
	if err != nil {
		return
	}
	var b [3][]byte
	for i := range min(3, len(p.bufs)) {
		b[i] = p.bufs[i]
	}
	// The page's own schema is unknown here; a few schemas per seed keep
	// the corpus small.
	for s := range 3 {
		f.Add(lb, b[0], b[1], b[2], uint16(p.rows), uint8(int(p.rows)+s))
	}
}

func FuzzMiniBlock(f *testing.F) {
	for _, p := range seedPages(f) {
		addSeed(f, p, func(l *enc21pb.PageLayout) protolite.Message {
			if m := l.GetMiniBlockLayout(); m != nil {
				return m
			}
			return nil
		})
	}
	f.Fuzz(func(t *testing.T, layout, b0, b1, b2 []byte, rows uint16, schema uint8) {
		var mb enc21pb.MiniBlockLayout
		if mb.UnmarshalVT(layout) != nil {
			return
		}
		fuzzRead(t, miniLayout(&mb), fuzzBufs(b0, b1, b2), rows, schema)
	})
}

func FuzzFullZip(f *testing.F) {
	for _, p := range seedPages(f) {
		addSeed(f, p, func(l *enc21pb.PageLayout) protolite.Message {
			if m := l.GetFullZipLayout(); m != nil {
				return m
			}
			return nil
		})
	}
	f.Add([]byte{}, []byte{0, 3, 0, 0, 0, 'a', 'b', 'c', 1}, []byte{}, []byte{}, uint16(2), uint8(3))
	f.Fuzz(func(t *testing.T, layout, b0, b1, b2 []byte, rows uint16, schema uint8) {
		var fz enc21pb.FullZipLayout
		if fz.UnmarshalVT(layout) != nil {
			return
		}
		fuzzRead(t, fullZip(&fz), fuzzBufs(b0, b1, b2), rows, schema)
	})
}

func FuzzAllNull(f *testing.F) {
	lb, _ := (&enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{lNullItem, lNullEmpty}}).MarshalVT()
	f.Add(lb, u16le(1, 1, 1), u16le(2, 3, 1), []byte{}, uint16(3), uint8(4))
	lb, _ = (&enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{lNullItem}}).MarshalVT()
	f.Add(lb, []byte{}, []byte{}, []byte{}, uint16(5), uint8(0))
	f.Fuzz(func(t *testing.T, layout, b0, b1, b2 []byte, rows uint16, schema uint8) {
		var an enc21pb.ConstantLayout
		if an.UnmarshalVT(layout) != nil {
			return
		}
		fuzzRead(t, allNull(an.GetLayers()...), fuzzBufs(b0, b1, b2), rows, schema)
	})
}
