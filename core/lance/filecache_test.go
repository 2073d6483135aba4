package lance

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/store"
)

// A FileBuffer hook sees each file's share of the input rows; the buffer
// comes back from DataFileBuffer, and reading it opens the footer that the
// fragment's reads then reuse.
func TestFileBufferAndCache(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	var mu sync.Mutex
	var calls [][2]uint64
	opts := WriteOptions{MaxRowsPerFile: 3000, FileBuffer: func(first, rows uint64) []byte {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, [2]uint64{first, rows})
		if first == 3000 {
			return nil // this file gets no buffer
		}
		return fmt.Appendf(nil, "rows %d+%d", first, rows)
	}}
	mustCreate(t, st, "t.lance", 0, 10_000, opts)
	want := [][2]uint64{{0, 3000}, {3000, 3000}, {6000, 3000}, {9000, 1000}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("FileBuffer calls %v, want %v", calls, want)
	}

	files := NewFileCache(8)
	d, err := Open(ctx, st, "t.lance", OpenOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range d.Fragments() {
		st.ResetCounters()
		b, err := d.DataFileBuffer(ctx, f.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		wantBuf := fmt.Sprintf("rows %d+%d", want[i][0], want[i][1])
		if i == 1 {
			wantBuf = ""
		}
		if string(b) != wantBuf {
			t.Fatalf("fragment %d: buffer %q, want %q", f.ID, b, wantBuf)
		}
		if got := st.Counters().Reads; got != 1 {
			t.Fatalf("fragment %d: DataFileBuffer made %d reads, want 1 (the tail)", f.ID, got)
		}
		if b, err := d.DataFileBuffer(ctx, f.ID, 2); err != nil || b != nil {
			t.Fatalf("buffer 2: %q, %v", b, err)
		}
		// The range read reuses the opened file: these files are smaller
		// than the tail read, so their pages came with it and the read makes
		// no request at all.
		st.ResetCounters()
		rec, err := d.ReadRange(ctx, f.ID, 10, 20, []string{"id"})
		if err != nil {
			t.Fatal(err)
		}
		got := rec.Column(0).(*array.Int64).Int64Values()
		if len(got) != 10 || got[0] != int64(want[i][0])+10 {
			t.Fatalf("fragment %d: ReadRange ids %v", f.ID, got)
		}
		rec.Release()
		if c := st.Counters(); c.Reads != 0 {
			t.Fatalf("fragment %d: ReadRange after DataFileBuffer made %d reads, want 0", f.ID, c.Reads)
		}
	}
	// A second Open sharing the cache opens no file again.
	d2, err := Open(ctx, st, "t.lance", OpenOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	st.ResetCounters()
	if n := len(ids(t, d2)); n != 10_000 {
		t.Fatalf("scan of the second open: %d rows", n)
	}
	if c := st.Counters(); c.Reads != 0 {
		t.Fatalf("scan through a warm cache of whole small files made %d reads", c.Reads)
	}
	if files.Len() != 4 {
		t.Fatalf("cache holds %d files, want 4", files.Len())
	}
}

func TestFileCacheEvictsAndSharesOpens(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	mustCreate(t, st, "t.lance", 0, 10_000, WriteOptions{MaxRowsPerFile: 1000})
	files := NewFileCache(3)
	d, err := Open(ctx, st, "t.lance", OpenOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	st.ResetCounters()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.DataFileBuffer(ctx, d.Fragments()[0].ID, 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if c := st.Counters(); c.Reads != 1 {
		t.Fatalf("8 concurrent opens of one file made %d reads, want 1", c.Reads)
	}
	if n := len(ids(t, d)); n != 10_000 {
		t.Fatalf("scan: %d rows", n)
	}
	if files.Len() != 3 {
		t.Fatalf("cache of 3 holds %d files", files.Len())
	}
	// A failed open is not cached: a missing file errors each time.
	if err := st.Delete(ctx, "t.lance/"+d.Fragments()[5].Files[0].Path); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := d.DataFileBuffer(ctx, d.Fragments()[5].ID, 1); err == nil {
			t.Fatal("reading a deleted data file succeeded")
		}
	}
}
