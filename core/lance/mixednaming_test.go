package lance

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
)

// warnings collects what a Warn callback receives.
type warnings []error

func (w *warnings) add(err error) { *w = append(*w, err) }

// TestMixedNaming: in a dataset with V2 manifest names, V1 names (a stray
// "7.manifest" holding junk, a copy of version 2 as "10.manifest", which
// sorts before every V2 name) are ignored by every listing, each with a
// warning naming the file; a V1 name whose version also has its V2 name (a
// migration between copy and delete) is ignored silently; a V1-named
// dataset is listed as before.
func TestMixedNaming(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 4, NamingV2, 4)
	k := keys{root: "t.lance"}
	v2, err := store.ReadAll(ctx, mem, k.manifest(2, NamingV2))
	if err != nil {
		t.Fatal(err)
	}
	mem.Put(ctx, k.manifest(7, NamingV1), []byte("junk"))
	mem.Put(ctx, k.manifest(10, NamingV1), v2)
	mem.Put(ctx, k.manifest(3, NamingV1), []byte("left by a migration"))
	stray := []string{k.manifest(10, NamingV1), k.manifest(7, NamingV1)}
	check := func(what string, w warnings) {
		t.Helper()
		var keys []string
		for _, err := range w {
			if !errors.Is(err, ErrMixedNaming) {
				t.Errorf("%s: warning %v does not match ErrMixedNaming", what, err)
			}
			for _, s := range stray {
				if strings.Contains(err.Error(), s) {
					keys = append(keys, s)
				}
			}
		}
		if !slices.Equal(keys, stray) || len(w) != len(stray) {
			t.Errorf("%s: warnings %v, want one for each of %v", what, w, stray)
		}
	}

	var w warnings
	refs, err := ListVersions(ctx, mem, "t.lance", ListOptions{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, r := range refs {
		got = append(got, r.Version)
		if r.Naming != NamingV2 {
			t.Errorf("version %d listed under %s", r.Version, r.Key)
		}
	}
	if !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("ListVersions: %v", got)
	}
	check("ListVersions", w)

	w = nil
	log, err := Log(ctx, mem, "t.lance", ListOptions{Warn: w.add})
	if err != nil || len(log) != 4 || log[3].Version != 4 {
		t.Fatalf("Log: %v, %v", log, err)
	}
	check("Log", w)

	w = nil
	if v, err := LatestVersion(ctx, mem, "t.lance", ListOptions{Warn: w.add}); err != nil || v != 4 {
		t.Fatalf("LatestVersion: %d, %v", v, err)
	}
	check("LatestVersion", w) // "10.manifest" sorts first: a full listing

	w = nil
	d, err := Open(ctx, mem, "t.lance", OpenOptions{Warn: w.add})
	if err != nil || d.Version() != 4 {
		t.Fatalf("Open: %v", err)
	}
	check("Open", w)

	// Without a callback the listing is the same, silently.
	if refs, err := ListVersions(ctx, mem, "t.lance"); err != nil || len(refs) != 4 {
		t.Fatalf("ListVersions without Warn: %v, %v", refs, err)
	}

	w = nil
	if _, err := CleanupOldVersions(ctx, mem, "t.lance", time.Hour, CleanupOptions{Warn: w.add}); err != nil {
		t.Fatalf("CleanupOldVersions: %v", err)
	}
	check("CleanupOldVersions", w)
	for _, s := range stray {
		if _, err := mem.Stat(ctx, s); err != nil {
			t.Errorf("cleanup touched %s: %v", s, err)
		}
	}

	// A V1-named dataset is not affected.
	v1 := store.NewMemory()
	putVersions(t, v1, "t.lance", 3, NamingV1, 3)
	w = nil
	refs, err = ListVersions(ctx, v1, "t.lance", ListOptions{Warn: w.add})
	if err != nil || len(refs) != 3 || refs[2].Naming != NamingV1 || len(w) != 0 {
		t.Fatalf("V1 dataset: %v, %v, warnings %v", refs, err, w)
	}
}
