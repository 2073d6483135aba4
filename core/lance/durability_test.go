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

// crashStore is a memory store that models a filesystem's durability: Put
// and PutIfAbsent are durable when they return, PutNoSync is visible but
// not durable until Sync, and crash returns what would survive.
type crashStore struct {
	*store.Memory
	mu       sync.Mutex
	durable  map[string][]byte
	dirty    map[string]bool // stored with PutNoSync, not synced yet
	failSync bool
	syncs    int
}

var _ store.Syncer = (*crashStore)(nil)

func newCrashStore() *crashStore {
	return &crashStore{Memory: store.NewMemory(), durable: map[string][]byte{}, dirty: map[string]bool{}}
}

func (s *crashStore) Put(ctx context.Context, key string, data []byte) error {
	if err := s.Memory.Put(ctx, key, data); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.durable[key] = slices.Clone(data)
	delete(s.dirty, key)
	return nil
}

func (s *crashStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.PutIfAbsentAfterSync(ctx, key, data)
}

func (s *crashStore) PutNoSync(ctx context.Context, key string, data []byte) error {
	if err := s.Memory.Put(ctx, key, data); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty[key] = true
	return nil
}

func (s *crashStore) Sync(ctx context.Context, keys ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncs++
	if s.failSync {
		return errInjected
	}
	for _, k := range keys {
		b, err := store.ReadAll(ctx, s.Memory, k)
		if err != nil {
			return err
		}
		s.durable[k] = b
		delete(s.dirty, k)
	}
	return nil
}

func (s *crashStore) PutIfAbsentAfterSync(ctx context.Context, key string, data []byte, synced ...string) error {
	if err := s.Sync(ctx, synced...); err != nil {
		return err
	}
	if err := s.Memory.PutIfAbsent(ctx, key, data); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.durable[key] = slices.Clone(data)
	return nil
}

func (s *crashStore) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	delete(s.durable, key)
	delete(s.dirty, key)
	s.mu.Unlock()
	return s.Memory.Delete(ctx, key)
}

// crash returns a store holding what survives a crash now.
func (s *crashStore) crash(t *testing.T) *store.Memory {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := store.NewMemory()
	for k, b := range s.durable {
		if err := m.Put(context.Background(), k, b); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestCommitDurability crashes after every acknowledged commit: the crashed
// store must open at that version and read every row, so every file a
// manifest references was durable before the manifest.
func TestCommitDurability(t *testing.T) {
	ctx := context.Background()
	st := newCrashStore()
	check := func(d *Dataset) {
		t.Helper()
		want := ids(t, d)
		c, err := Open(ctx, st.crash(t), "t.lance", OpenOptions{})
		if err != nil {
			t.Fatalf("after a crash at version %d: %v", d.Version(), err)
		}
		if c.Version() != d.Version() {
			t.Fatalf("after a crash: version %d, acknowledged %d", c.Version(), d.Version())
		}
		if got := ids(t, c); !slices.Equal(got, want) {
			t.Fatalf("after a crash at version %d: %d rows, want %d", d.Version(), len(got), len(want))
		}
	}
	d := mustCreate(t, st, "t.lance", 0, 100, WriteOptions{MaxRowsPerFile: 30})
	check(d)
	for i := int64(1); i <= 5; i++ {
		d = mustAppend(t, d, i*100, i*100+50)
		check(d)
	}
	d, _, err := d.Delete(ctx, "id < 20")
	if err != nil {
		t.Fatal(err)
	}
	check(d)
	if d, _, err = d.Compact(ctx, CompactOptions{TargetRowsPerFragment: 1000}); err != nil {
		t.Fatal(err)
	}
	check(d)
	if st.syncs == 0 {
		t.Fatal("the store's Sync was never used")
	}
	// Nothing written without sync is referenced but the hint.
	st.mu.Lock()
	for k := range st.dirty {
		if !strings.HasSuffix(k, hintFile) {
			st.mu.Unlock()
			t.Fatalf("%s was never synced", k)
		}
	}
	st.mu.Unlock()

	// A failing sync fails the commit, which then never happened.
	st.failSync = true
	rec := idBatch(1000, 1010)
	defer rec.Release()
	if _, err := d.Append(ctx, Batches(rec), WriteOptions{}); !errors.Is(err, errInjected) {
		t.Fatalf("append with a failing sync: %v", err)
	}
	st.failSync = false
	latest, err := d.Latest(ctx)
	if err != nil || latest.Version() != d.Version() {
		t.Fatalf("after a failed sync: %v, version %d want %d", err, latest.Version(), d.Version())
	}
	check(d)
}
