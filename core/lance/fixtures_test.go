package lance

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// fixtureDir holds datasets written by lance itself (see its README.md).
const fixtureDir = "../../tests/testdata/lance-samples"

// loadFixture copies the fixture folder name (e.g. "default") into a new
// memory store, keys relative to the folder: "kv.lance/_versions/…".
func loadFixture(t testing.TB, name string) *store.Memory {
	t.Helper()
	dir := filepath.Join(fixtureDir, name)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("fixture %s missing: %v", dir, err)
	}
	st := store.NewMemory()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return st.Put(t.Context(), filepath.ToSlash(rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	st.ResetCounters()
	return st
}
