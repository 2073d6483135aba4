package tracking

import (
	"context"
	"errors"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// Strings that are not UTF-8 are refused where they enter, so they can never
// wedge a flush (the utf8 columns refuse them).
func TestInvalidUTF8Refused(t *testing.T) {
	ctx := context.Background()
	r := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1})
	bad := "x\xffy"
	if _, err := r.StartRun(ctx, RunSpec{Name: bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("StartRun: %v", err)
	}
	if _, err := r.StartRun(ctx, RunSpec{Tags: []string{"ok", bad}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("StartRun with a bad tag: %v", err)
	}
	run, err := r.StartRun(ctx, RunSpec{Name: "fine"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Track(1, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Track: %v", err)
	}
	if err := run.SetParams(map[string]any{bad: 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetParams: %v", err)
	}
	if err := run.Update(RunPatch{Name: &bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Update: %v", err)
	}
	if err := r.UpdateRun(ctx, run.ID(), RunPatch{Experiment: &bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("UpdateRun: %v", err)
	}
	if err := r.PutRecord("evals", run.ID(), bad, 1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("PutRecord: %v", err)
	}
	// Nothing was buffered: the flush succeeds.
	if err := run.Track(1, "loss"); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
