package kv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/kvtest"
	"github.com/kv0/kv0/core/store"
)

var ctx = context.Background()

func quiet() *kv.Options {
	return &kv.Options{FlushInterval: -1, RefreshInterval: -1}
}

func TestIteratorConcurrentWrites(t *testing.T) {
	log := kvtest.NewLog(store.NewMemory(), "", nil)
	db, err := kv.Open(ctx, log, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 5000 {
		db.Put(ctx, fmt.Appendf(nil, "k%06d", i*2), []byte("v"), nil)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Appendf(nil, "k%06d", (i*7919)%10000)
			switch i % 3 {
			case 0:
				db.Put(ctx, k, []byte("w"), nil)
			case 1:
				db.Delete(ctx, k, nil)
			default:
				db.DeleteRange(ctx, k, append(k, 'z'), nil)
			}
		}
	}()
	for round := range 20 {
		it, _ := db.NewIter(ctx, nil)
		var prev []byte
		forward := round%2 == 0
		ok := it.First()
		if !forward {
			ok = it.Last()
		}
		for ; ok; ok = map[bool]func() bool{true: it.Next, false: it.Prev}[forward]() {
			k := bytes.Clone(it.Key())
			if prev != nil && (forward && bytes.Compare(k, prev) <= 0 || !forward && bytes.Compare(k, prev) >= 0) {
				t.Fatalf("key %q after %q (forward %v)", k, prev, forward)
			}
			prev = k
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestErrorsAndReadOnly(t *testing.T) {
	log := kvtest.NewLog(store.NewMemory(), "", nil)
	db, _ := kv.Open(ctx, log, quiet())
	db.Put(ctx, []byte("a"), []byte("1"), &kv.WriteOptions{Sync: true})
	db.Put(ctx, []byte("a"), []byte("2"), &kv.WriteOptions{Sync: true})
	if _, err := db.Get(ctx, []byte("zz")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	ro, _ := kv.Open(ctx, log, &kv.Options{ReadOnly: true, RefreshInterval: -1})
	for name, err := range map[string]error{
		"put":     ro.Put(ctx, []byte("x"), nil, nil),
		"delete":  ro.Delete(ctx, []byte("x"), nil),
		"range":   ro.DeleteRange(ctx, []byte("a"), []byte("b"), nil),
		"write":   ro.Write(ctx, ro.NewBatch(), nil),
		"compact": ro.CompactRange(ctx, nil, nil),
	} {
		if !errors.Is(err, kv.ErrNotSupported) {
			t.Errorf("read-only %s: %v", name, err)
		}
	}
	// Time travel: version 1 holds the first value.
	old, err := kv.Open(ctx, log, &kv.Options{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := old.Get(ctx, []byte("a")); string(v) != "1" {
		t.Fatalf("version 1: a = %q", v)
	}
	if err := old.Put(ctx, []byte("x"), nil, nil); !errors.Is(err, kv.ErrNotSupported) {
		t.Fatalf("put on an old version: %v", err)
	}
	vs, err := db.Versions(ctx)
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions %v, %v", vs, err)
	}
	old.Close()
	ro.Close()
	db.Close()
	if _, err := db.Get(ctx, []byte("a")); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if err := db.Close(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	// Store failures surface as ErrStoreIO wrapping the cause.
	fs := &kvtest.FaultStore{Store: store.NewMemory()}
	cause := errors.New("disk on fire")
	db, _ = kv.Open(ctx, kvtest.NewLog(fs, "", nil), quiet())
	fs.SetFail(func(op, key string) error { return cause })
	err = db.Put(ctx, []byte("k"), []byte("v"), &kv.WriteOptions{Sync: true})
	if !errors.Is(err, kv.ErrStoreIO) || !errors.Is(err, cause) {
		t.Fatalf("sync put on a failing store: %v", err)
	}
	if v, err := db.Get(ctx, []byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("read-your-writes after a failed commit: %q, %v", v, err)
	}
	fs.SetFail(nil)
	if err := db.Close(); err != nil {
		t.Fatalf("close retries the commit: %v", err)
	}
}

// A value kept in the log must stay readable after another writer
// compacted and cleaned up the version it came from.
func TestLazyValueAfterCleanup(t *testing.T) {
	log := kvtest.NewLog(store.NewMemory(), "", nil)
	big := bytes.Repeat([]byte("x"), 10000)
	a, _ := kv.Open(ctx, log, quiet())
	defer a.Close()
	a.Put(ctx, []byte("big"), big, &kv.WriteOptions{Sync: true})
	b, _ := kv.Open(ctx, log, &kv.Options{FlushInterval: -1, RefreshInterval: -1, ValueCacheSize: -1})
	defer b.Close()
	a.Put(ctx, []byte("other"), []byte("1"), nil)
	if err := a.CompactRange(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CleanupOldVersions(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*kv.DB{a, b} {
		v, err := db.Get(ctx, []byte("big"))
		if err != nil || !bytes.Equal(v, big) {
			t.Fatalf("big: %d bytes, %v", len(v), err)
		}
	}
	vals, err := b.MultiGet(ctx, [][]byte{[]byte("big"), []byte("nope"), []byte("other")})
	if err != nil || !bytes.Equal(vals[0], big) || vals[1] != nil || string(vals[2]) != "1" {
		t.Fatalf("multiget: %v", err)
	}
}

// slowLog delays Take so concurrent misses overlap, and counts calls.
type slowLog struct {
	kv.OpLog
	takes atomic.Int64
}

func (s *slowLog) Take(ctx context.Context, v uint64, addrs []uint64) ([][]byte, error) {
	s.takes.Add(1)
	time.Sleep(20 * time.Millisecond)
	return s.OpLog.Take(ctx, v, addrs)
}

func TestSharedMisses(t *testing.T) {
	inner := kvtest.NewLog(store.NewMemory(), "", nil)
	w, _ := kv.Open(ctx, inner, quiet())
	w.Put(ctx, []byte("big"), bytes.Repeat([]byte("y"), 5000), &kv.WriteOptions{Sync: true})
	w.Close()
	sl := &slowLog{OpLog: inner}
	db, _ := kv.Open(ctx, sl, quiet())
	defer db.Close()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := db.Get(ctx, []byte("big")); err != nil || len(v) != 5000 {
				t.Errorf("get: %d, %v", len(v), err)
			}
		}()
	}
	wg.Wait()
	if n := sl.takes.Load(); n != 1 {
		t.Fatalf("%d reads for one value; want 1", n)
	}
}

func TestIntervalFlushAndBufferSize(t *testing.T) {
	log := kvtest.NewLog(store.NewMemory(), "", nil)
	db, _ := kv.Open(ctx, log, &kv.Options{FlushInterval: 50 * time.Millisecond, RefreshInterval: -1})
	db.Put(ctx, []byte("k"), []byte("v"), nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, _ := log.Latest(ctx); v > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no interval flush")
		}
		time.Sleep(10 * time.Millisecond)
	}
	db.Close()

	log2 := kvtest.NewLog(store.NewMemory(), "", nil)
	db, _ = kv.Open(ctx, log2, &kv.Options{FlushInterval: -1, RefreshInterval: -1, WriteBufferSize: 1000})
	defer db.Close()
	for i := range 100 {
		db.Put(ctx, fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte("v"), 50), nil)
	}
	// A full buffer is committed in the background: wait for the commits
	// (a deadline, not a timing assertion).
	deadline = time.Now().Add(5 * time.Second)
	for {
		v, _ := log2.Latest(ctx)
		if v >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commits for 5 KB with a 1000-byte buffer", v)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A DB dropped without Close is flushed by its cleanup and does not stay
// registered with the background goroutine.
func TestDroppedHandleFlushed(t *testing.T) {
	log := kvtest.NewLog(store.NewMemory(), "", nil)
	func() {
		db, _ := kv.Open(ctx, log, quiet())
		db.Put(ctx, []byte("k"), []byte("v"), nil)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		if v, _ := log.Latest(ctx); v > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("dropped handle never flushed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRefreshSeesOtherWriters(t *testing.T) {
	log := kvtest.NewLog(store.NewMemory(), "", nil)
	a, _ := kv.Open(ctx, log, quiet())
	b, _ := kv.Open(ctx, log, &kv.Options{FlushInterval: -1, RefreshInterval: 50 * time.Millisecond})
	defer a.Close()
	defer b.Close()
	a.Put(ctx, []byte("k"), []byte("from a"), &kv.WriteOptions{Sync: true})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, err := b.Get(ctx, []byte("k")); err == nil && string(v) == "from a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never saw a's commit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Last writer (by seq) wins for both.
	b.Put(ctx, []byte("k"), []byte("from b"), &kv.WriteOptions{Sync: true})
	a.Refresh(ctx)
	if v, _ := a.Get(ctx, []byte("k")); string(v) != "from b" {
		t.Fatalf("a sees %q", v)
	}
}

func ExampleDB() {
	db, err := kv.Open(context.Background(), kvtest.NewLog(store.NewMemory(), "", nil), nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	b := db.NewBatch()
	b.Put([]byte("apple"), []byte("red"))
	b.Put([]byte("banana"), []byte("yellow"))
	b.Put([]byte("cherry"), []byte("dark red"))
	_ = db.Write(context.Background(), b, nil)
	_ = db.Delete(context.Background(), []byte("banana"), nil)
	it, _ := db.NewIter(context.Background(), &kv.IterOptions{LowerBound: []byte("a"), UpperBound: []byte("d")})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	_ = it.Close()
	// Output:
	// apple=red
	// cherry=dark red
}

// scanCounter counts ScanFragments calls.
type scanCounter struct {
	kv.OpLog
	scans atomic.Int64
}

func (s *scanCounter) ScanFragments(ctx context.Context, version uint64, frags []uint64, fn func([]kv.Row) error) error {
	s.scans.Add(1)
	return s.OpLog.ScanFragments(ctx, version, frags, fn)
}

// A file compaction (here after each flush past two fragments) rereads the
// rewritten fragments only when the view may hold values kept in the log,
// whose addresses change.
func TestCompactionRereadsOnlyForLazyValues(t *testing.T) {
	for _, big := range []bool{false, true} {
		log := &scanCounter{OpLog: kvtest.NewLog(store.NewMemory(), "", nil)}
		opts := quiet()
		opts.MaxFragments = 2
		db, err := kv.Open(ctx, log, opts)
		if err != nil {
			t.Fatal(err)
		}
		before := log.scans.Load()
		for i := range 4 {
			v := []byte("small")
			if big && i == 2 {
				v = bytes.Repeat([]byte("b"), 5000)
			}
			if err := db.Put(ctx, fmt.Appendf(nil, "k%d", i), v, &kv.WriteOptions{Sync: true}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.CleanupOldVersions(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if got := log.scans.Load() - before; (got > 0) != big {
			t.Fatalf("big value %v: %d rereads after the compaction", big, got)
		}
		for i := range 4 {
			v, err := db.Get(ctx, fmt.Appendf(nil, "k%d", i))
			if err != nil || (len(v) == 5000) != (big && i == 2) {
				t.Fatalf("k%d after compaction and cleanup: %d bytes, %v", i, len(v), err)
			}
		}
		db.Close()
	}
}

// countingBlocks is a BlockAllocator that counts the blocks not freed.
type countingBlocks struct{ live atomic.Int64 }

func (c *countingBlocks) Alloc(n int) []byte { c.live.Add(1); return make([]byte, n) }
func (c *countingBlocks) Free([]byte)        { c.live.Add(-1) }

// Writes racing Close either succeed before it or fail with ErrClosed, and
// every block the handle allocated is freed once Close returns.
func TestWritesRacingClose(t *testing.T) {
	for round := range 20 {
		blocks := &countingBlocks{}
		opts := quiet()
		opts.Blocks = blocks
		db, err := kv.Open(ctx, kvtest.NewLog(store.NewMemory(), "", nil), opts)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var acked atomic.Int64
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					err := db.Put(ctx, fmt.Appendf(nil, "w%d-%06d", w, i), bytes.Repeat([]byte("v"), 200), nil)
					if errors.Is(err, kv.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("put: %v", err)
						return
					}
					acked.Add(1)
				}
			}()
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := blocks.live.Load(); n != 0 {
			t.Fatalf("round %d: %d blocks not freed after Close (%d writes acknowledged)", round, n, acked.Load())
		}
	}
}

// Compacting a log nothing was ever committed to does nothing.
func TestCompactNothingCommitted(t *testing.T) {
	log := kvtest.NewLog(store.NewMemory(), "", nil)
	db, err := kv.Open(ctx, log, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CompactRange(ctx, nil, nil); err != nil {
		t.Fatalf("compact with nothing committed: %v", err)
	}
	if vs, err := db.Versions(ctx); err != nil || len(vs) != 0 {
		t.Fatalf("versions after compacting nothing: %v, %v", vs, err)
	}
}
