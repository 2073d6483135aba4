package lance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

// appendOne appends one row on top of d (opening the latest version when d
// is nil), retrying lost races until it commits, and returns the version it
// committed.
func appendOne(ctx context.Context, st store.Store, root string, d *Dataset, id int64) (*Dataset, error) {
	for {
		if d == nil {
			var err error
			if d, err = Open(ctx, st, root, OpenOptions{}); err != nil {
				return nil, err
			}
		}
		rec := idBatch(id, id+1)
		nd, err := d.Append(ctx, Batches(rec), WriteOptions{Commit: CommitOptions{MaxRetries: 1000}})
		rec.Release()
		if errors.Is(err, ErrConflict) {
			d = nil
			continue
		}
		return nd, err
	}
}

// TestConcurrentWriterChild is the body of a writer process started by
// TestConcurrentAppends; it does nothing otherwise.
func TestConcurrentWriterChild(t *testing.T) {
	dir := os.Getenv("KV0_LANCE_CHILD_DIR")
	if dir == "" {
		t.Skip("only run as a child process")
	}
	w, _ := strconv.Atoi(os.Getenv("KV0_LANCE_CHILD_WRITER"))
	n, _ := strconv.Atoi(os.Getenv("KV0_LANCE_CHILD_COMMITS"))
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.NoSync = true
	var d *Dataset
	for i := 0; i < n; i++ {
		if d, err = appendOne(context.Background(), st, "t.lance", d, int64(w*100000+i)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentAppends runs 8 writers (half goroutines, half processes)
// appending 200 one-row commits each to one local dataset while a
// compactor runs, then checks that every row is present exactly once and
// that versions are contiguous.
func TestConcurrentAppends(t *testing.T) {
	commits := 200
	if testing.Short() {
		commits = 20
	}
	const writers = 8
	dir := t.TempDir()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.NoSync = true
	ctx := context.Background()
	// tests/interop has lancedb 0.31 (lance 8) check the copy it leaves,
	// which lance 8 reads in format 2.1 only.
	format := DefaultDataFormat
	if os.Getenv("KV0_LANCE_CONCURRENCY_OUT") != "" {
		format = DataFormat21
	}
	if _, err := Create(ctx, st, "t.lance", wSchema, Batches(), WriteOptions{DataFormat: format}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		if w%2 == 0 {
			go func() {
				defer wg.Done()
				var d *Dataset
				for i := 0; i < commits; i++ {
					var err error
					if d, err = appendOne(ctx, st, "t.lance", d, int64(w*100000+i)); err != nil {
						errs <- err
						return
					}
				}
			}()
			continue
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentWriterChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KV0_LANCE_CHILD_DIR="+dir, fmt.Sprintf("KV0_LANCE_CHILD_WRITER=%d", w),
			fmt.Sprintf("KV0_LANCE_CHILD_COMMITS=%d", commits))
		go func() {
			defer wg.Done()
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("writer process %d: %v\n%s", w, err, out)
			}
		}()
	}
	stop := make(chan struct{})
	var compactions atomic.Int64
	var cwg sync.WaitGroup
	cwg.Add(1)
	go func() {
		defer cwg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			d, err := Open(ctx, st, "t.lance", OpenOptions{})
			if err != nil {
				errs <- err
				return
			}
			_, stats, err := d.Compact(ctx, CompactOptions{TargetRowsPerFragment: 64, Commit: CommitOptions{MaxRetries: 1000}})
			if err != nil && !errors.Is(err, ErrConflict) {
				errs <- fmt.Errorf("compactor: %w", err)
				return
			}
			if err == nil && stats.FragmentsRemoved > 0 {
				compactions.Add(1)
			}
		}
	}()
	wg.Wait()
	close(stop)
	cwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d, err := Open(ctx, st, "t.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(t, d)
	slices.Sort(got)
	var want []int64
	for w := 0; w < writers; w++ {
		for i := 0; i < commits; i++ {
			want = append(want, int64(w*100000+i))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d rows, want %d (duplicates or losses)", len(got), len(want))
	}
	refs, err := ListVersions(ctx, st, "t.lance")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range refs {
		if r.Version != uint64(i+1) {
			t.Fatalf("versions not contiguous at %d: %d", i+1, r.Version)
		}
	}
	appends := 0
	for _, r := range refs {
		dv, err := Open(ctx, st, "t.lance", OpenOptions{Version: r.Version})
		if err != nil {
			t.Fatal(err)
		}
		if operationName(txnOf(t, dv)) == "Append" {
			appends++
		}
	}
	if appends != writers*commits {
		t.Fatalf("%d append versions, want %d", appends, writers*commits)
	}
	t.Logf("%d versions, %d compactions, %d fragments at the end", len(refs), compactions.Load(), len(d.Fragments()))
	if p := os.Getenv("KV0_LANCE_CONCURRENCY_OUT"); p != "" {
		// Leave a copy for the lancedb check in tests/interop.
		_ = os.CopyFS(filepath.Join(p, "t.lance"), os.DirFS(filepath.Join(dir, "t.lance")))
	}
}
