package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

func TestResolveRun(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	w, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"alpha", "twin", "twin"} {
		run, err := w.StartRun(ctx, tracking.RunSpec{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, arg := range []string{ids[0], "alpha"} {
		if in, err := inspect.ResolveRun(ctx, r, arg); err != nil || in.ID != ids[0] {
			t.Errorf("ResolveRun(%q) = %s, %v; want %s", arg, in.ID, err, ids[0])
		}
	}
	if in, err := inspect.ResolveRun(ctx, r, ids[2]); err != nil || in.ID != ids[2] {
		t.Errorf("ResolveRun(id of a twin) = %s, %v", in.ID, err)
	}
	if _, err := inspect.ResolveRun(ctx, r, "twin"); !errors.Is(err, inspect.ErrInvalid) || !strings.Contains(err.Error(), "2 runs") {
		t.Errorf("an ambiguous name: %v", err)
	}
	if _, err := inspect.ResolveRun(ctx, r, "nobody"); !errors.Is(err, tracking.ErrNotFound) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("no such run: %v", err)
	}
}
