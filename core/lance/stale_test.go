package lance

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// A writer holding an old version commits after a cleanup removed the
// versions that followed it. A create-only put of the next version would
// succeed beside newer versions and never be seen; the commit must instead
// land on top of the newest version (an append), or fail with a conflict
// (anything whose checks needed the removed transactions).
func TestCommitAfterCleanupRemovedNextVersions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		st     func() store.Store
		tagged bool
	}{
		{"listing", func() store.Store { return store.NewMemory() }, false},
		{"listing, old version tagged", func() store.Store { return store.NewMemory() }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st()
			stale := mustCreate(t, st, "t", 0, 10, WriteOptions{}) // version 1, held by the stale writer
			if tc.tagged {
				if err := stale.CreateTag(ctx, "keep", 1); err != nil {
					t.Fatal(err)
				}
			}
			fresh := stale
			for i := int64(1); i <= 3; i++ { // versions 2-4 by another writer
				fresh = mustAppend(t, fresh, 10*i, 10*i+10)
			}
			if _, err := CleanupOldVersions(ctx, st, "t", 0, CleanupOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(ctx, st, "t", OpenOptions{Version: 2}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("version 2 still there after cleanup: %v", err)
			}
			// A delete needs the removed versions' transactions: refused.
			if _, _, err := stale.Delete(ctx, "id = 3"); !errors.Is(err, ErrConflict) {
				t.Fatalf("stale delete: %v, want a conflict", err)
			}
			// An append lands on the newest version.
			nd := mustAppend(t, stale, 100, 105)
			if nd.Version() != 5 {
				t.Fatalf("stale append committed version %d, want 5", nd.Version())
			}
			latest, err := Open(ctx, st, "t", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := append(seq(0, 40), seq(100, 105)...)
			if got := ids(t, latest); !slices.Equal(got, want) {
				t.Fatalf("newest version holds %v, want %v", got, want)
			}
		})
	}
}
