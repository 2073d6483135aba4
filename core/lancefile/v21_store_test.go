package lancefile

import (
	"context"
	"os"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// loadOSFile copies a local file into a memory store and opens it.
func openOSFile(t testing.TB, path string) *File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	ctx := context.Background()
	if err := st.Put(ctx, "f.lance", b); err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, st, "f.lance", int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
