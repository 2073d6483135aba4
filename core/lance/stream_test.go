package lance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// streamStore is a memory store that is a store.Streamer: it records how
// each streamed object arrived and can fail an append.
type streamStore struct {
	*store.Memory
	mu       sync.Mutex
	appends  map[string]int // appends before commit, per key
	aborted  int
	failWith error // returned by the second append of an object
}

type streamWriter struct {
	s    *streamStore
	key  string
	data []byte
	n    int
	done bool
}

func (s *streamStore) CreateNoSync(ctx context.Context, key string) (store.ObjectWriter, error) {
	return &streamWriter{s: s, key: key}, nil
}

func (w *streamWriter) Append(p []byte) error {
	w.n++
	if w.n == 2 && w.s.failWith != nil {
		return w.s.failWith
	}
	// Nothing is visible before Commit.
	if _, err := w.s.Stat(context.Background(), w.key); !errors.Is(err, store.ErrNotFound) {
		return errors.New("object visible before commit")
	}
	w.data = append(w.data, p...)
	return nil
}

func (w *streamWriter) Commit(ctx context.Context) error {
	w.done = true
	w.s.mu.Lock()
	w.s.appends[w.key] = w.n
	w.s.mu.Unlock()
	return w.s.Put(ctx, w.key, w.data)
}

func (w *streamWriter) Abort() {
	if !w.done {
		w.done = true
		w.s.mu.Lock()
		w.s.aborted++
		w.s.mu.Unlock()
	}
}

// A data file larger than streamBytes reaches a streaming store in pieces
// as it is encoded, and reads back whole; a failed piece fails the write
// and leaves no data file.
func TestWriteStreamsLargeFiles(t *testing.T) {
	defer func(old int) { streamBytes = old }(streamBytes)
	streamBytes = 16 << 10
	ctx := context.Background()
	st := &streamStore{Memory: store.NewMemory(), appends: map[string]int{}}
	rec := idBatch(0, 200_000)
	defer rec.Release()
	d, err := Create(ctx, st, "t.lance", wSchema, Batches(rec), WriteOptions{MaxRowsPerFile: 120_000})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, d); !slices.Equal(got, seq(0, 200_000)) {
		t.Fatalf("read back %d ids", len(got))
	}
	if len(st.appends) != 2 {
		t.Fatalf("streamed files: %v, want both data files", st.appends)
	}
	for key, n := range st.appends {
		if n < 3 {
			t.Fatalf("%s arrived in %d pieces", key, n)
		}
	}

	st.failWith = errors.New("disk full")
	rec2 := idBatch(200_000, 300_000)
	defer rec2.Release()
	if _, err := d.Append(ctx, Batches(rec2), WriteOptions{}); !errors.Is(err, st.failWith) {
		t.Fatalf("append with a failing store: %v", err)
	}
	if st.aborted == 0 {
		t.Fatal("the failed file was not aborted")
	}
	objs, err := st.List(ctx, store.ListOptions{Prefix: "t.lance/data/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		var names []string
		for _, o := range objs {
			names = append(names, o.Key)
		}
		t.Fatalf("data files after the failed append: %s", strings.Join(names, ", "))
	}
}
