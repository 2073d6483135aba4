package fsstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kv0/kv0/native/fsstore"
)

// BenchmarkReadAt reads 4 KiB pages of a data file three folders deep, as
// a scan reads a Lance data file.
func BenchmarkReadAt(b *testing.B) {
	root := b.TempDir()
	dir := filepath.Join(root, "t.lance", "data", "x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.lance"), make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	st, err := fsstore.OpenExisting(root)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	p := make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		if err := st.ReadAt(ctx, "t.lance/data/x/f.lance", p, int64(i%256)*4096); err != nil {
			b.Fatal(err)
		}
	}
}
