package lance

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/kv0/kv0/core/store"
)

// addFixtureSeeds adds every fixture file matching pattern (a glob under
// the fixture folder) to the corpus.
func addFixtureSeeds(f *testing.F, pattern string) {
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, pattern))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzManifest: arbitrary bytes as a manifest never panic, whether the
// reader gets the whole file in its tail read or needs a second read, and
// the inline transaction section is read safely too.
func FuzzManifest(f *testing.F) {
	addFixtureSeeds(f, "*/*.lance/_versions/*.manifest")
	f.Add(encodeManifest(f, testManifest(3), deleteTxn("x = 1")))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		for _, tail := range []int{len(data), min(len(data), 40)} {
			read := func(off int64, n int) ([]byte, error) {
				if off < 0 || n < 0 || off+int64(n) > int64(len(data)) {
					t.Fatalf("read [%d, +%d) of %d bytes", off, n, len(data))
				}
				return data[off : off+int64(n)], nil
			}
			mf, err := decodeManifest("m", int64(len(data)), data[len(data)-tail:], read)
			if err != nil {
				continue
			}
			mem := store.NewMemory()
			mem.Put(ctx, "m", data)
			if mf.m.TransactionSection != nil {
				mf.section(ctx, mem, mf.m.GetTransactionSection())
			}
			if d, err := newDataset(mem, keys{}, mf); err == nil {
				d.CountRows(ctx)
				d.Fragments()
				d.DataFormat()
			}
		}
	})
}

// FuzzArrowDeletions: arbitrary bytes as an .arrow deletion file never
// panic, and whatever decodes respects the fragment size.
func FuzzArrowDeletions(f *testing.F) {
	addFixtureSeeds(f, "*/*.lance/_deletions/*.arrow")
	f.Add(arrowBytes(f, []uint32{3, 1, 2}))
	f.Add(arrowBytes(f, []uint32{3, 1, 2, 99}, ipc.WithZstd()))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, phys := range []uint64{0, 100} {
			bm, err := parseArrowDeletions(data, phys)
			if err == nil && phys > 0 && !bm.IsEmpty() && uint64(bm.Maximum()) >= phys {
				t.Fatalf("offset %d in %d rows", bm.Maximum(), phys)
			}
		}
	})
}

// FuzzBitmapDeletions: arbitrary bytes as a .bin deletion file never panic.
func FuzzBitmapDeletions(f *testing.F) {
	addFixtureSeeds(f, "*/*.lance/_deletions/*.bin")
	f.Add(bitmapBytes(f, []uint32{1, 2, 3, 70000}, false))
	f.Add(bitmapBytes(f, []uint32{1, 2, 3, 4, 5, 6, 7, 8}, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		bm, err := parseBitmapDeletions(data, 1<<20)
		if err == nil && !bm.IsEmpty() && bm.Maximum() >= 1<<20 {
			t.Fatalf("offset %d", bm.Maximum())
		}
	})
}
